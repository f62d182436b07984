// A compact byte trie over (string, token id) pairs, in preorder like TokenTrie: the mask
// cache stores, per state, the token suffixes that follow the point where the state's rule
// may end inside a token, so one walk from the rule's real continuation decides them all.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xg2 {

struct SuffixTrie {
  std::vector<uint8_t> byte;  // per node; node 0 is the root
  std::vector<int32_t> depth;
  std::vector<int32_t> subtree_end;
  std::vector<int32_t> token_begin;  // size num_nodes + 1; tokens ending at node i
  std::vector<int32_t> tokens;       // token ids
  int32_t num_nodes() const { return static_cast<int32_t>(byte.size()); }
  bool empty() const { return tokens.empty(); }
  size_t MemoryBytes() const {
    return byte.capacity() +
           (depth.capacity() + subtree_end.capacity() + token_begin.capacity() + tokens.capacity()) * sizeof(int32_t);
  }
};

// Builds the trie of `pairs` (sorted by string, then id; duplicates allowed). Strings must
// be non-empty.
SuffixTrie BuildSuffixTrie(const std::vector<std::pair<std::string, int32_t>>& pairs);

}  // namespace xg2
