// The mask entry of one automaton state: what the vocabulary walk found, independent of the
// grammar around the state's rule. The storage form is chosen once, when the core is built,
// and this is the one place that knows it: callers write or OR a core into a bitmask row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xg2 {

struct MaskCore {
  // Sorted ids of the accepted tokens, sorted ids of the rejected ones (the rest of the
  // normal tokens are accepted: the broad states, such as string contents), or a bitset.
  enum class Storage : uint8_t { kAcceptedIds = 0, kNotAcceptedIds = 1, kAcceptedBitset = 2 };
  Storage storage = Storage::kAcceptedIds;
  std::vector<int32_t> ids;      // sorted token ids (list forms)
  std::vector<uint32_t> bitset;  // accepted tokens (bitset form)
  int32_t num_accepted = 0;
  // The dead trie subtrees after which the rule may have completed inside a token, with the
  // offsets where it may complete.
  std::vector<int32_t> dead_nodes;         // trie nodes
  std::vector<int32_t> dead_offset_begin;  // size dead_nodes + 1
  std::vector<int32_t> dead_offsets;       // completion offsets (bytes into the token)

  size_t MemoryBytes() const;

  // Whether writing this core over a zeroed row is cheaper than ORing it in (a rejected-id
  // list: the normal tokens are copied and the few rejected ones cleared).
  bool PrefersOverwrite() const { return storage == Storage::kNotAcceptedIds; }
  // Sets the row to exactly this core's accepted tokens. `normal_tokens` is the tokenizer's
  // bitset of normal (non-special) tokens, `num_words` words long like the row.
  void WriteInto(uint32_t* words, const std::vector<uint32_t>& normal_tokens, int32_t num_words) const;
  // ORs this core's accepted tokens into the row; `scratch` holds the rejected-id form's row.
  void OrInto(uint32_t* words, const std::vector<uint32_t>& normal_tokens, int32_t num_words,
              std::vector<uint32_t>* scratch) const;
};

}  // namespace xg2
