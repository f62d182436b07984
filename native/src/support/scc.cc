#include "support/scc.h"

#include <algorithm>
#include <utility>

namespace xg2 {

std::vector<std::vector<int32_t>> StronglyConnectedComponents(const std::vector<std::vector<int32_t>>& adj) {
  int32_t n = static_cast<int32_t>(adj.size());
  std::vector<int32_t> index(n, -1), low(n, 0), stack;
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<std::vector<int32_t>> out;
  int32_t counter = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<int32_t, size_t>> call{{root, 0}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!call.empty()) {
      auto& [v, next] = call.back();
      if (next < adj[v].size()) {
        int32_t w = adj[v][next++];
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = 1;
          call.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      } else {
        int32_t done = v;
        call.pop_back();
        if (!call.empty()) low[call.back().first] = std::min(low[call.back().first], low[done]);
        if (low[done] == index[done]) {
          std::vector<int32_t> comp;
          while (true) {
            int32_t w = stack.back();
            stack.pop_back();
            on_stack[w] = 0;
            comp.push_back(w);
            if (w == done) break;
          }
          out.push_back(std::move(comp));
        }
      }
    }
  }
  return out;
}

}  // namespace xg2
