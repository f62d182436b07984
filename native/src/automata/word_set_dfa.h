// The minimal DFA of a finite set of words, built as a trie and merged bottom up.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// A finite language given letter by letter, each letter with its spellings: byte strings in
// which a position may take a set of bytes (a hex digit in either case). Spellings leaving a
// node must be prefix-free (no spelling a prefix of another, as UTF-8 and JSON escapes are),
// so the trie stays deterministic. Building it is linear in the spellings' length, where the
// subset construction of the same union is not (a thousand property names of one object).
//
//   WordSetDfaBuilder b;
//   int32_t n = b.root();
//   n = b.AddLetter(n, 'a', {{{'a'}}, {{'\\'}, {'x'}}});  // "a" or "\x"
//   b.SetFinal(n);
//   ByteDfaSpec dfa = b.Minimal(1000);  // {"a", "\x"}
class WordSetDfaBuilder {
 public:
  // One spelling: per position, the bytes it takes there.
  using Spelling = std::vector<std::vector<uint8_t>>;

  WordSetDfaBuilder();
  int32_t root() const { return 0; }
  // The node after letter `letter` (a caller's id, e.g. a code point) read at `from`,
  // reached by each of `spellings`; made on first use. Throws Error(kInvalidArgument) where the
  // spellings would make the trie nondeterministic (kInvalidArgument).
  int32_t AddLetter(int32_t from, uint32_t letter, const std::vector<Spelling>& spellings);
  // The same for a letter whose one spelling is one byte (most letters of most words),
  // without building its spellings; AddLetter takes such a letter this way too.
  int32_t AddByteLetter(int32_t from, uint8_t byte);
  void SetFinal(int32_t node) { final_[node] = 1; }
  // The trie's minimal DFA, states numbered breadth first from the start, edges sorted and
  // merged into ranges. Throws Error(kLimitExceeded) past max_states states.
  ByteDfaSpec Minimal(int64_t max_states);

 private:
  int32_t NewNode();
  int32_t Child(int32_t from, uint8_t byte, int32_t to);
  int32_t Child(int32_t from, const std::vector<uint8_t>& bytes, int32_t to);

  std::vector<std::vector<std::pair<uint8_t, int32_t>>> edges_;  // per node, unordered
  std::vector<uint8_t> final_;
  std::vector<uint8_t> is_letter_;  // the end of a letter (else inside one's spelling)
  std::map<std::pair<int32_t, uint32_t>, int32_t> letter_child_;
};

}  // namespace xg2
