// Structural hashes of rule automata, the keys of the cross-grammar mask cache.
//
// A rule's hash covers its DFA (final flags, byte edges, rule edges by the callee's hash) and,
// through the callees, everything it can reach; counted-loop rules hash their bounds and
// child. Recursive rules are hashed per strongly connected component by a breadth-first
// serialisation from each member, so identical structures hash alike in any grammar.
#pragma once

#include <cstdint>
#include <vector>

#include "automata/grammar_automaton.h"
#include "support/hash.h"

namespace xg2 {

struct RuleHashes {
  std::vector<Hash128> rule;         // per rule
  std::vector<int32_t> first_state;  // per rule: first global state of its DFA
};

RuleHashes ComputeRuleHashes(const GrammarAutomaton& g);

// Key of the mask entry of `state` (in loop context `loop_state`, or -1).
Hash128 MaskEntryKey(const GrammarAutomaton& g, const RuleHashes& hashes, int32_t state, int32_t loop_state);

// Per rule, a hash of what may follow the rule's completion in this grammar: its follow
// targets (rule hash and offset of each state), and through each target's rule the
// targets that follow that one in turn, to any depth (the FOLLOW closure that
// EarleyParser::AfterRule parses). Rules with equal fingerprints in any two grammars have
// the same follow language. Acyclic closures: iterated hashing until the labels settle;
// cyclic ones: a breadth-first serialisation of the follow graph from the rule (zero, i.e.
// none, beyond 256 rules). Empty (no fingerprints) when the grammar has any-order states
// among follow targets.
std::vector<Hash128> ComputeFollowFingerprints(const GrammarAutomaton& g, const RuleHashes& hashes);

}  // namespace xg2
