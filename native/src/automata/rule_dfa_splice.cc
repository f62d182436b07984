// SplicedByteDfa and ConcatenatedRuleDfa (see rule_dfa.h): rule automata put together from
// automata already built, without the Thompson NFA and subset construction.
#include <algorithm>
#include <utility>
#include <vector>

#include "automata/rule_dfa.h"

namespace xg2 {

namespace {

// The automaton of combined states 0..n-1 (per state its byte edges, sorted by lo, and its
// rule edges, sorted by rule; `rules` may be empty: none), numbered breadth first from state
// 0, bytes before rules, as the subset construction numbers its states; unreachable states
// are dropped.
RuleDfa BreadthFirstRuleDfa(const std::vector<std::vector<DfaByteEdge>>& bytes,
                            const std::vector<std::vector<DfaRuleEdge>>& rules, const std::vector<uint8_t>& is_final) {
  const size_t n = bytes.size();
  std::vector<int32_t> order{0}, number(n, -1);
  number[0] = 0;
  auto visit = [&](int32_t c) {
    if (number[c] >= 0) return;
    number[c] = static_cast<int32_t>(order.size());
    order.push_back(c);
  };
  for (size_t k = 0; k < order.size(); ++k) {
    for (const auto& e : bytes[order[k]]) visit(e.target);
    if (!rules.empty())
      for (const auto& e : rules[order[k]]) visit(e.target);
  }
  RuleDfa dfa;
  for (int32_t c : order) dfa.AddState(is_final[c] != 0);
  for (int32_t c : order) {
    for (const auto& e : bytes[c]) dfa.AddByteEdge(e.lo, e.hi, number[e.target]);
    if (!rules.empty())
      for (const auto& e : rules[c]) dfa.AddRuleEdge(e.rule, number[e.target]);
    dfa.CloseState();
  }
  return dfa;
}

}  // namespace

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
  std::vector<uint8_t> is_final(total, 0);
  is_final[total - 1] = 1;
  *out = BreadthFirstRuleDfa(edges, {}, is_final);
  return true;
}

namespace {

// Whether the byte edges of two states (each sorted, disjoint) share a byte.
bool BytesOverlap(EdgeSpan<DfaByteEdge> a, EdgeSpan<DfaByteEdge> b) {
  const DfaByteEdge *x = a.begin(), *y = b.begin();
  while (x != a.end() && y != b.end()) {
    if (x->hi < y->lo)
      ++x;
    else if (y->hi < x->lo)
      ++y;
    else
      return true;
  }
  return false;
}

}  // namespace

bool ConcatenatedRuleDfa(const RuleDfa& prefix, const RuleDfa& body, RuleDfa* out) {
  const int32_t np = prefix.num_states(), nb = body.num_states();
  int32_t final_state = -1;
  for (int32_t s = 0; s < np; ++s) {
    if (!prefix.is_final[s]) continue;
    if (final_state >= 0) return false;
    final_state = s;
  }
  if (final_state < 0 || prefix.rule_edges(final_state).size() != 0) return false;
  for (const auto& e : body.byte_list)
    if (e.target == 0) return false;
  for (const auto& e : body.rule_list)
    if (e.target == 0) return false;
  if (BytesOverlap(prefix.byte_edges(final_state), body.byte_edges(0))) return false;
  // Combined states: the prefix's (its final state standing for the pair {final, body
  // start}), then the body's other states, np + s - 1 for body state s > 0.
  auto combined = [&](int32_t s) { return s == 0 ? final_state : np + s - 1; };
  const int32_t total = np + nb - 1;
  std::vector<std::vector<DfaByteEdge>> bytes(total);
  std::vector<std::vector<DfaRuleEdge>> rules(total);
  std::vector<uint8_t> is_final(total, 0);
  for (int32_t s = 0; s < np; ++s) {
    bytes[s].assign(prefix.byte_edges(s).begin(), prefix.byte_edges(s).end());
    rules[s].assign(prefix.rule_edges(s).begin(), prefix.rule_edges(s).end());
  }
  for (int32_t s = 0; s < nb; ++s) {
    const int32_t c = combined(s);
    for (const auto& e : body.byte_edges(s)) bytes[c].push_back({e.lo, e.hi, combined(e.target)});
    for (const auto& e : body.rule_edges(s)) rules[c].push_back({e.rule, combined(e.target)});
    is_final[c] = body.is_final[s];
  }
  // The pair's byte edges: the prefix's and the body start's, disjoint, in order of lo.
  std::sort(bytes[final_state].begin(), bytes[final_state].end(),
            [](const DfaByteEdge& x, const DfaByteEdge& y) { return x.lo < y.lo; });
  *out = BreadthFirstRuleDfa(bytes, rules, is_final);
  return true;
}

}  // namespace xg2
