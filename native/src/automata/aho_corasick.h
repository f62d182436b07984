// Aho-Corasick automaton over bytes: the string matcher behind TagDispatch (triggers, end
// strings and excluded strings found in free text in one left-to-right pass).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace xg2 {

class AhoCorasick {
 public:
  // Builds the trie of `patterns` (non-empty byte strings), its failure links and the full
  // goto table (every node, every byte).
  explicit AhoCorasick(const std::vector<std::string>& patterns);

  int32_t num_nodes() const { return static_cast<int32_t>(next_.size()); }
  int32_t root() const { return 0; }
  // The node after reading byte c at `node`: the longest suffix of the text read so far
  // that is a prefix of some pattern.
  int32_t Next(int32_t node, uint8_t c) const { return next_[node][c]; }
  // Patterns that end at the current position when the automaton is at `node` (the node's
  // own pattern and those of its failure chain), ascending.
  const std::vector<int32_t>& Matches(int32_t node) const { return matches_[node]; }
  // Length in bytes of the prefix `node` stands for.
  int32_t Depth(int32_t node) const { return depth_[node]; }

 private:
  std::vector<std::array<int32_t, 256>> next_;
  std::vector<std::vector<int32_t>> matches_;
  std::vector<int32_t> depth_;
};

}  // namespace xg2
