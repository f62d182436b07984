// What JSON-string text (tokenizer/text_slice.h) keeps alive from an automaton state: how many
// characters of every text string stay alive (TextBound, TextBoundOfCode), and whether that
// bound is exact (TextExact). The vocabulary walk takes text-only trie subtrees whole, or
// leaves them to TokenTrie::text_up_to, on their answers.
#pragma once

#include <cstdint>
#include <vector>

#include "automata/grammar_automaton.h"
#include "automata/lazy_dfa.h"

namespace xg2 {

// The most characters k such that the automaton stays alive from `state` (a character
// boundary) on every text string (tokenizer/text_slice.h) of up to k characters, at most
// kTextCharsCap - 1; kTextCharsCap if it does on all text. Every text token of at most k
// characters is then accepted (none lies in a dead subtree), so a walk may take a subtree
// whose tokens are all such text whole. A breadth-first search over the states text reaches
// at character boundaries, by the number of characters first reaching them: a string body
// reaches one or two, a bounded one (maxLength unrolled) one per length, and a state that
// rejects some text character fails at once.
// reached (optional) gets the boundary states the search met (when the bound is
// kTextCharsCap, it holds for each of them as well).
int32_t TextBound(const GrammarAutomaton& a, int32_t state, std::vector<int32_t>* reached = nullptr);

// Whether, from `state`, text of more than k characters always dies (after text of up to k
// characters, which TextBound(state) = k keeps alive, no byte of a text character has an
// edge), and no state text reaches is final or has rule edges. Then the accepted text
// tokens are exactly those of at most k characters, none of the others lies in a dead
// subtree that matters (nothing completes on the way), and a walk may leave every
// text-only subtree to TokenTrie::text_up_to. Levels of states by exact character count.
bool TextExact(const GrammarAutomaton& a, int32_t state, int32_t k);

// TextBound over the lazy DFA's codes from `start` (loop mode, where a state is a loop
// configuration): byte by byte, each (state, text state) pair inside a character expanded
// once.
int32_t TextBoundOfCode(LazyDfa& dfa, int32_t start);

}  // namespace xg2
