// How far a token-level free region's mid-token entry is (see MidTokenEntryBytes): per
// automaton state, a lower bound on the text bytes after which some parse from there can be
// at a state that reads kMidTokenLead. The matcher walks the token trie for such entries only
// where the bound fits inside a token, which keeps the walk off free text that can reach a
// region only through a token read by id.
#pragma once

#include <cstdint>
#include <vector>

#include "automata/grammar_automaton.h"

namespace xg2 {

// Distances saturate here ("farther than any token").
constexpr uint8_t kFarMidTokenEntry = 255;

// The bounds, context-free: a rule's completion may go on in any of its callers
// (rule_follow_targets), and virtual states (counted loops, any-order) count 0. Empty when no
// state reads kMidTokenLead.
std::vector<uint8_t> MidTokenEntryDistances(const GrammarAutomaton& g);

}  // namespace xg2
