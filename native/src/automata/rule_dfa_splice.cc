// SplicedByteDfa and ConcatenatedRuleDfa (see rule_dfa.h): rule automata put together from
// automata already built, without the Thompson NFA and subset construction.
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
  // Combined states: the prefix's (its final state standing for the pair), then the body's
  // other states, np + s - 1 for body state s > 0.
  auto combined_of_body = [&](int32_t s) { return s == 0 ? final_state : np + s - 1; };
  const int32_t total = np + nb - 1;
  std::vector<int32_t> number(total, -1), order{0};
  number[0] = 0;
  std::vector<DfaByteEdge> merged;
  // The edges of combined state c, in the subset construction's order: bytes by lo, then
  // rules by id.
  auto edges_of = [&](int32_t c, std::vector<DfaByteEdge>* bytes, EdgeSpan<DfaRuleEdge>* rules, bool* rules_in_body) {
    bytes->clear();
    *rules_in_body = c == final_state || c >= np;
    if (c == final_state) {
      const auto a = prefix.byte_edges(c), b = body.byte_edges(0);
      const DfaByteEdge *x = a.begin(), *y = b.begin();
      while (x != a.end() || y != b.end()) {
        if (y == b.end() || (x != a.end() && x->lo < y->lo))
          bytes->push_back(*x++);
        else
          bytes->push_back({y->lo, y->hi, combined_of_body(y->target)}), ++y;
      }
      *rules = body.rule_edges(0);
    } else if (c < np) {
      bytes->assign(prefix.byte_edges(c).begin(), prefix.byte_edges(c).end());
      *rules = prefix.rule_edges(c);
    } else {
      for (const auto& e : body.byte_edges(c - np + 1)) bytes->push_back({e.lo, e.hi, combined_of_body(e.target)});
      *rules = body.rule_edges(c - np + 1);
    }
  };
  auto target_of_rule = [&](const DfaRuleEdge& e, bool in_body) {
    return in_body ? combined_of_body(e.target) : e.target;
  };
  EdgeSpan<DfaRuleEdge> rules{nullptr, nullptr};
  bool rules_in_body = false;
  for (size_t k = 0; k < order.size(); ++k) {
    edges_of(order[k], &merged, &rules, &rules_in_body);
    auto visit = [&](int32_t c) {
      if (number[c] < 0) {
        number[c] = static_cast<int32_t>(order.size());
        order.push_back(c);
      }
    };
    for (const auto& e : merged) visit(e.target);
    for (const auto& e : rules) visit(target_of_rule(e, rules_in_body));
  }
  RuleDfa dfa;
  for (int32_t c : order)
    dfa.AddState(c == final_state ? body.is_final[0] != 0 : c < np ? false : body.is_final[c - np + 1] != 0);
  for (int32_t c : order) {
    edges_of(c, &merged, &rules, &rules_in_body);
    for (const auto& e : merged) dfa.AddByteEdge(e.lo, e.hi, number[e.target]);
    for (const auto& e : rules) dfa.AddRuleEdge(e.rule, number[target_of_rule(e, rules_in_body)]);
    dfa.CloseState();
  }
  *out = std::move(dfa);
  return true;
}

}  // namespace xg2
