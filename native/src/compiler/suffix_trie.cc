#include "compiler/suffix_trie.h"

namespace xg2 {

SuffixTrie BuildSuffixTrie(const std::vector<std::pair<std::string, int32_t>>& pairs) {
  SuffixTrie t;
  t.byte.push_back(0);
  t.depth.push_back(0);
  t.subtree_end.push_back(0);
  t.token_begin.push_back(0);
  std::vector<int32_t> path{0};  // node ids along the current path, path[d] at depth d
  const std::string* prev = nullptr;
  for (const auto& [s, id] : pairs) {
    size_t common = 0;
    if (prev) {
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    }
    // Close the nodes deeper than the common prefix.
    while (path.size() > common + 1) {
      t.subtree_end[path.back()] = t.num_nodes();
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      int32_t node = t.num_nodes();
      t.byte.push_back(static_cast<uint8_t>(s[d]));
      t.depth.push_back(static_cast<int32_t>(d) + 1);
      t.subtree_end.push_back(0);
      t.token_begin.push_back(static_cast<int32_t>(t.tokens.size()));
      path.push_back(node);
    }
    t.tokens.push_back(id);
    prev = &s;
  }
  while (!path.empty()) {
    t.subtree_end[path.back()] = t.num_nodes();
    path.pop_back();
  }
  // token_begin[i] is where node i's tokens start; tokens are appended at the deepest node of
  // each string, which is the last node created or an existing one on the path.
  t.token_begin.push_back(static_cast<int32_t>(t.tokens.size()));
  return t;
}

}  // namespace xg2
