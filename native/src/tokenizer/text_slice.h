// The text slice of a vocabulary: tokens that are JSON-string text, that is non-empty valid
// UTF-8 (no overlong forms, surrogates or code points above U+10FFFF) without '"', '\\' or a
// C0 control character. Most of a vocabulary is text (121,825 of Llama-3's 128,000 tokens),
// and the states of free-text contexts (JSON string bodies) accept every text token: the mask
// cache checks that once per state and then skips the trie subtrees that hold only text
// tokens instead of walking them node by node (see VocabWalker in token_mask_cache.cc).
#pragma once

#include <cstdint>
#include <string>

namespace xg2 {

// A byte automaton over text: state 0 is a character boundary (also the start), the others are
// inside a multi-byte character. kTextDead where a byte cannot continue text.
constexpr int32_t kTextStates = 8;
constexpr int32_t kTextDead = -1;
int32_t TextStep(int32_t state, uint8_t byte);

// Whether a token's bytes are text (see above).
bool IsText(const std::string& bytes);

}  // namespace xg2
