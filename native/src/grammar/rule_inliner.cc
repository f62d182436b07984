#include "grammar/rule_inliner.h"

#include "grammar/expr_rewrite.h"
#include "support/scc.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <vector>

namespace xg2 {
namespace {

void CollectRefs(const Grammar& g, ExprId id, std::vector<RuleId>* out, std::vector<uint8_t>* seen) {
  std::vector<ExprId> stack{id};
  while (!stack.empty()) {
    ExprId e = stack.back();
    stack.pop_back();
    if ((*seen)[e]) continue;
    (*seen)[e] = 1;
    const Expr& x = g.expr(e);
    if (x.kind == ExprKind::kRuleRef) out->push_back(x.rule);
    for (ExprId c : x.children) stack.push_back(c);
  }
}

}  // namespace

Grammar InlineSmallRules(const Grammar& source, int max_inline_size) {
  Grammar g = source;
  int32_t n = g.num_rules();
  std::vector<std::vector<RuleId>> adj(n);
  for (RuleId r = 0; r < n; ++r) {
    if (g.rule(r).body == kNoExpr) continue;
    std::vector<uint8_t> seen(g.num_exprs(), 0);
    CollectRefs(g, g.rule(r).body, &adj[r], &seen);
    std::sort(adj[r].begin(), adj[r].end());
    adj[r].erase(std::unique(adj[r].begin(), adj[r].end()), adj[r].end());
  }
  // Reference occurrences per rule: inlining copies a rule's states into every site, and
  // each copy of a state that accepts many tokens costs a full trie walk at compile time.
  std::vector<int32_t> occurrences(n, 0);
  for (ExprId e = 0; e < g.num_exprs(); ++e) {
    if (g.expr(e).kind == ExprKind::kRuleRef) ++occurrences[g.expr(e).rule];
  }
  std::vector<uint8_t> recursive(n, 0);
  auto components = StronglyConnectedComponents(adj);
  for (const auto& comp : components) {
    if (comp.size() > 1) {
      for (RuleId r : comp) recursive[r] = 1;
    } else if (std::binary_search(adj[comp[0]].begin(), adj[comp[0]].end(), comp[0])) {
      recursive[comp[0]] = 1;
    }
  }

  // Rewrites in callee-first order, so a callee's body is final before callers inline it.
  std::vector<int64_t> inlined_size(n, -1);  // -1: not inlinable
  for (const auto& comp : components) {
    for (RuleId r : comp) {
      if (g.rule(r).body == kNoExpr) continue;
      std::unordered_map<ExprId, std::pair<ExprId, int64_t>> memo;  // expr -> (new id, size)
      std::function<std::pair<ExprId, int64_t>(ExprId)> rewrite = [&](ExprId id) -> std::pair<ExprId, int64_t> {
        auto it = memo.find(id);
        if (it != memo.end()) return it->second;
        const Expr x = g.expr(id);
        std::pair<ExprId, int64_t> result{id, 1};
        // An automaton's size is its states: keep a large one in its own rule.
        if (x.kind == ExprKind::kByteDfa) result.second = 1 + x.dfa->num_states();
        if (x.kind == ExprKind::kRuleRef) {
          RuleId callee = x.rule;
          if (inlined_size[callee] >= 0) result = {g.rule(callee).body, inlined_size[callee]};
        } else if (!x.children.empty()) {
          std::vector<ExprId> kids;
          bool changed = false;
          int64_t size = 1;
          for (ExprId c : x.children) {
            auto [nc, sz] = rewrite(c);
            changed |= nc != c;
            kids.push_back(nc);
            size += sz;
          }
          // A dispatch's automaton is large (text states x pattern prefixes): keep it in its rule.
          if (x.kind == ExprKind::kTagDispatch) size += int64_t{1} << 30;
          if (x.kind == ExprKind::kRepeat) {
            int64_t copies = x.max == kUnbounded ? std::max<int64_t>(x.min, 1) : x.max;
            size = 1 + (size - 1) * std::max<int64_t>(copies, 1);
          }
          ExprId nid = changed ? RebuildWithChildren(&g, id, x, kids) : id;
          result = {nid, size};
        }
        memo.emplace(id, result);
        return result;
      };
      auto [body, size] = rewrite(g.rule(r).body);
      if (body != g.rule(r).body) g.SetRuleBody(r, body);
      constexpr int kMaxSitesForLargeRule = 3;
      constexpr int64_t kTinyRuleSize = 2;
      if (!recursive[r] && r != g.root() && size <= max_inline_size &&
          (occurrences[r] <= kMaxSitesForLargeRule || size <= kTinyRuleSize)) {
        inlined_size[r] = size;
      }
    }
  }
  return g;
}

}  // namespace xg2
