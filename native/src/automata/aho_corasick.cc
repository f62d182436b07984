#include "automata/aho_corasick.h"

#include <algorithm>

namespace xg2 {

AhoCorasick::AhoCorasick(const std::vector<std::string>& patterns) {
  std::array<int32_t, 256> none;
  none.fill(-1);
  next_.push_back(none);
  matches_.emplace_back();
  depth_.push_back(0);
  for (int32_t p = 0; p < static_cast<int32_t>(patterns.size()); ++p) {
    int32_t node = 0;
    for (unsigned char c : patterns[p]) {
      if (next_[node][c] < 0) {
        next_[node][c] = num_nodes();
        next_.push_back(none);
        matches_.emplace_back();
        depth_.push_back(depth_[node] + 1);
      }
      node = next_[node][c];
    }
    matches_[node].push_back(p);
  }
  // Breadth-first: a node's failure target is shallower, so it is complete when needed.
  std::vector<int32_t> fail(num_nodes(), 0);
  std::vector<int32_t> queue;
  for (int c = 0; c < 256; ++c) {
    int32_t child = next_[0][c];
    if (child < 0) {
      next_[0][c] = 0;
    } else {
      fail[child] = 0;
      queue.push_back(child);
    }
  }
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    int32_t node = queue[qi];
    const auto& inherited = matches_[fail[node]];
    if (!inherited.empty()) {
      auto& own = matches_[node];
      own.insert(own.end(), inherited.begin(), inherited.end());
      std::sort(own.begin(), own.end());
      own.erase(std::unique(own.begin(), own.end()), own.end());
    }
    for (int c = 0; c < 256; ++c) {
      int32_t child = next_[node][c];
      if (child < 0) {
        next_[node][c] = next_[fail[node]][c];
      } else {
        fail[child] = next_[fail[node]][c];
        queue.push_back(child);
      }
    }
  }
}

}  // namespace xg2
