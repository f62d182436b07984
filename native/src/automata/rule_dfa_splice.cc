// SplicedByteDfa (see rule_dfa.h): the automaton of a format string without the Thompson NFA.
#include <algorithm>
#include <utility>
#include <vector>

#include "automata/rule_dfa.h"

namespace xg2 {

bool SplicedByteDfa(const Grammar& g, ExprId body, RuleDfa* out) {
  const Expr& e = g.expr(body);
  if (e.kind != ExprKind::kSequence || e.children.size() != 3) return false;
  const Expr& pre = g.expr(e.children[0]);
  const Expr& mid = g.expr(e.children[1]);
  const Expr& post = g.expr(e.children[2]);
  if (pre.kind != ExprKind::kBytes || mid.kind != ExprKind::kByteDfa || post.kind != ExprKind::kBytes) return false;
  if (pre.bytes.empty() || post.bytes.empty() || !mid.dfa) return false;
  const ByteDfaSpec& d = *mid.dfa;
  if (d.num_states() == 0) return false;
  const uint8_t first_post = static_cast<uint8_t>(post.bytes[0]);
  for (int32_t s = 0; s < d.num_states(); ++s) {
    if (!d.is_final[s]) continue;
    for (const auto& x : d.edges[s])
      if (x.lo <= first_post && first_post <= x.hi) return false;
  }
  // Combined states: the prefix chain, the automaton's states, the suffix chain.
  const int32_t np = static_cast<int32_t>(pre.bytes.size()), nd = d.num_states();
  const int32_t nq = static_cast<int32_t>(post.bytes.size());
  // State np + nd + i: the suffix read up to post[i]; the last one is the final state.
  const int32_t total = np + nd + nq;
  std::vector<std::vector<DfaByteEdge>> edges(total);
  for (int32_t i = 0; i < np; ++i) {
    const uint8_t c = static_cast<uint8_t>(pre.bytes[i]);
    edges[i].push_back({c, c, i + 1});
  }
  for (int32_t s = 0; s < nd; ++s) {
    for (const auto& x : d.edges[s]) edges[np + s].push_back({x.lo, x.hi, np + x.target});
    if (d.is_final[s]) {
      auto& es = edges[np + s];
      auto at =
          std::lower_bound(es.begin(), es.end(), first_post, [](const DfaByteEdge& x, uint8_t c) { return x.lo < c; });
      es.insert(at, {first_post, first_post, np + nd});
    }
  }
  for (int32_t i = 1; i < nq; ++i) {
    const uint8_t c = static_cast<uint8_t>(post.bytes[i]);
    edges[np + nd + i - 1].push_back({c, c, np + nd + i});
  }
  // Breadth-first renumbering from the start; unreachable states are dropped.
  std::vector<int32_t> order{0}, number(total, -1);
  number[0] = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    for (const auto& x : edges[order[k]]) {
      if (number[x.target] < 0) {
        number[x.target] = static_cast<int32_t>(order.size());
        order.push_back(x.target);
      }
    }
  }
  RuleDfa dfa;
  for (int32_t old : order) dfa.AddState(old == total - 1);
  for (int32_t old : order) {
    for (const auto& x : edges[old]) dfa.AddByteEdge(x.lo, x.hi, number[x.target]);
    dfa.CloseState();
  }
  *out = std::move(dfa);
  return true;
}

}  // namespace xg2
