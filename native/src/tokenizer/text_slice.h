// The text slice of a vocabulary: tokens that are JSON-string text, that is non-empty valid
// UTF-8 (no overlong forms, surrogates or code points above U+10FFFF) without '"', '\\' or a
// C0 control character. Most of a vocabulary is text (121,825 of Llama-3's 128,000 tokens),
// and the states of free-text contexts (JSON string bodies) accept every text token: the mask
// cache checks that once per state and then skips the trie subtrees that hold only text
// tokens instead of walking them node by node (see compiler/text_analysis.h and VocabWalker
// in compiler/vocab_walk.cc).
#pragma once

#include <cstdint>
#include <string>

namespace xg2 {

// A byte automaton over text: state 0 is a character boundary (also the start), the others are
// inside a multi-byte character. kTextDead where a byte cannot continue text.
constexpr int32_t kTextStates = 8;
constexpr int32_t kTextDead = -1;
int32_t TextStep(int32_t state, uint8_t byte);

// The same automaton as byte ranges: the bytes [lo, hi] lead from a state to `next`.
struct TextRange {
  uint8_t lo, hi;
  int32_t next;
};
struct TextRanges {
  const TextRange* begin;
  const TextRange* end;
};
TextRanges TextRangesFrom(int32_t state);

// Whether a token's bytes are text (see above).
bool IsText(const std::string& bytes);
// The characters of valid UTF-8 (its bytes other than continuation bytes).
int32_t CountChars(const std::string& utf8);

// The trie's per-node text measure (TokenTrie::text_chars) saturates here: 255 means "all
// text, some token of at least 255 characters".
constexpr int32_t kTextCharsCap = 255;

}  // namespace xg2
