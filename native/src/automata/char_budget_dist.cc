// Distances to the end of rules with a character budget (GrammarAutomaton::char_min_dist /
// char_max_dist): nodes are (state, JSON decoder state) pairs, reached from the rule's start;
// an edge reads one byte and starts a character or not. The fewest characters to an end come
// from a 0-1 breadth-first search backwards from the ends; the most from the strongly connected
// components of the nodes that can end (every cycle starts a character, so a node that reaches
// a cycle can grow without bound).
#include "automata/char_budget_dist.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "automata/json_decoder.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

struct Edge {
  int32_t to;
  uint8_t starts;
};

// The (state, decoder) nodes of one rule reachable from its start, with their edges.
struct CharGraph {
  std::vector<std::pair<int32_t, int32_t>> nodes;  // (global state, decoder state)
  std::vector<std::vector<Edge>> out;
  std::vector<uint8_t> is_end;
};

CharGraph BuildCharGraph(const GrammarAutomaton& g, RuleId rule) {
  CharGraph cg;
  std::unordered_map<int64_t, int32_t> id;
  auto node = [&](int32_t s, int32_t u) {
    auto [it, inserted] = id.emplace(int64_t{s} * kNumDec + u, static_cast<int32_t>(cg.nodes.size()));
    if (inserted) {
      cg.nodes.emplace_back(s, u);
      cg.out.emplace_back();
      cg.is_end.push_back(g.state_final[s] && u == kB ? 1 : 0);
    }
    return it->second;
  };
  node(g.rule_start[rule], kB);
  for (size_t i = 0; i < cg.nodes.size(); ++i) {
    const auto [s, u] = cg.nodes[i];
    std::vector<Edge> edges;
    for (int32_t k = g.byte_edge_begin[s]; k < g.byte_edge_begin[s + 1]; ++k) {
      const DfaByteEdge& e = g.byte_edges[k];
      // One edge per run of bytes the decoder treats alike (a range of \S is a few runs).
      const bool well_formed = ForEachDecoderRun(u, e.lo, e.hi, [&](const DecoderRun& run) {
        edges.push_back({node(e.target, run.next), static_cast<uint8_t>(run.starts ? 1 : 0)});
      });
      if (!well_formed) {
        throw Error(ErrorKind::kGrammarSemantic,
                    "rule '" + g.rule_names[rule] + "': json_chars needs a body that reads JSON string content");
      }
    }
    std::sort(edges.begin(), edges.end(),
              [](const Edge& a, const Edge& b) { return a.to != b.to ? a.to < b.to : a.starts < b.starts; });
    edges.erase(std::unique(edges.begin(), edges.end(),
                            [](const Edge& a, const Edge& b) { return a.to == b.to && a.starts == b.starts; }),
                edges.end());
    cg.out[i] = std::move(edges);
  }
  return cg;
}

std::vector<int32_t> MinDistances(const CharGraph& cg) {
  const auto n = static_cast<int32_t>(cg.nodes.size());
  std::vector<std::vector<Edge>> in(n);
  for (int32_t v = 0; v < n; ++v) {
    for (const Edge& e : cg.out[v]) in[e.to].push_back({v, e.starts});
  }
  std::vector<int32_t> dist(n, kCharDistNone);
  std::deque<int32_t> queue;
  for (int32_t v = 0; v < n; ++v) {
    if (cg.is_end[v]) {
      dist[v] = 0;
      queue.push_back(v);
    }
  }
  while (!queue.empty()) {
    const int32_t w = queue.front();
    queue.pop_front();
    for (const Edge& e : in[w]) {
      const int32_t d = dist[w] + e.starts;
      if (d >= dist[e.to]) continue;
      dist[e.to] = d;
      if (e.starts) {
        queue.push_back(e.to);
      } else {
        queue.push_front(e.to);
      }
    }
  }
  return dist;
}

// Most characters to an end over the nodes that can end (kCharDistUnbounded: no most), by
// Tarjan's algorithm, which closes components successors first.
std::vector<int32_t> MaxDistances(const CharGraph& cg, const std::vector<int32_t>& min_dist) {
  const auto n = static_cast<int32_t>(cg.nodes.size());
  auto live = [&](int32_t v) { return min_dist[v] != kCharDistNone; };
  std::vector<int32_t> index(n, -1), low(n, 0), max_dist(n, kCharDistNone);
  constexpr int32_t kNoneYet = -1;
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<int32_t> stack;
  std::vector<std::pair<int32_t, size_t>> calls;  // (node, next edge)
  int32_t counter = 0;
  for (int32_t root = 0; root < n; ++root) {
    if (!live(root) || index[root] >= 0) continue;
    calls.emplace_back(root, 0);
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = 1;
    while (!calls.empty()) {
      auto& [v, next] = calls.back();
      if (next < cg.out[v].size()) {
        const int32_t w = cg.out[v][next++].to;
        if (!live(w)) continue;
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = 1;
          calls.emplace_back(w, 0);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const int32_t done = v;
      calls.pop_back();
      if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
      if (low[done] != index[done]) continue;
      // A component: its successors outside it are final already.
      std::vector<int32_t> members;
      int32_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = 0;
        members.push_back(w);
      } while (w != done);
      bool cyclic = members.size() > 1;
      for (const Edge& e : cg.out[done]) cyclic = cyclic || e.to == done;
      for (int32_t m : members) {
        int32_t best = cg.is_end[m] ? 0 : kNoneYet;
        for (const Edge& e : cg.out[m]) {
          if (!live(e.to) || cyclic || best == kCharDistUnbounded) continue;
          const int32_t d = max_dist[e.to];
          best = d == kCharDistUnbounded ? kCharDistUnbounded : std::max(best, d + e.starts);
        }
        max_dist[m] = cyclic ? kCharDistUnbounded : best;
      }
    }
  }
  return max_dist;
}

}  // namespace

void ComputeCharBudgetDistances(GrammarAutomaton* g) {
  if (!g->has_char_budgets) return;
  g->state_char_dist.assign(static_cast<size_t>(g->num_states()), -1);
  g->rule_char_room.assign(static_cast<size_t>(g->num_rules()), 0);
  g->rule_char_least_growth.assign(static_cast<size_t>(g->num_rules()), kCharDistUnbounded);
  for (RuleId r = 0; r < g->num_rules(); ++r) {
    if (!g->HasCharBudget(r)) continue;
    const CharGraph cg = BuildCharGraph(*g, r);
    const std::vector<int32_t> min_dist = MinDistances(cg);
    const std::vector<int32_t> max_dist = MaxDistances(cg, min_dist);
    for (size_t v = 0; v < cg.nodes.size(); ++v) {
      const auto [s, u] = cg.nodes[v];
      if (g->state_char_dist[s] < 0) {
        g->state_char_dist[s] = static_cast<int32_t>(g->char_min_dist.size());
        g->char_min_dist.resize(g->char_min_dist.size() + kNumDec, kCharDistNone);
        g->char_max_dist.resize(g->char_max_dist.size() + kNumDec, kCharDistNone);
      }
      g->char_min_dist[g->state_char_dist[s] + u] = min_dist[v];
      g->char_max_dist[g->state_char_dist[s] + u] = max_dist[v];
      if (min_dist[v] == kCharDistNone) continue;
      g->rule_char_room[r] = std::max(g->rule_char_room[r], min_dist[v]);
      if (max_dist[v] != kCharDistUnbounded) {
        g->rule_char_least_growth[r] = g->rule_char_least_growth[r] == kCharDistUnbounded
                                           ? max_dist[v]
                                           : std::min(g->rule_char_least_growth[r], max_dist[v]);
      }
    }
  }
}

}  // namespace xg2
