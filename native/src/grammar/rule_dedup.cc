#include "grammar/rule_dedup.h"

#include "grammar/expr_hash.h"
#include "grammar/expr_rewrite.h"

#include <functional>
#include <unordered_map>
#include <vector>

#include "support/hash.h"

namespace xg2 {
namespace {

struct HashKey {
  size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 31)); }
};

}  // namespace

Grammar DeduplicateRules(const Grammar& source) {
  const int32_t n = source.num_rules();
  std::vector<RuleId> rep(n);
  for (RuleId r = 0; r < n; ++r) rep[r] = r;
  // Refine until stable: a body's hash names its callees by their current representatives.
  for (int round = 0; round < 64; ++round) {
    // Per expression: its hash this round (computed once; ids index the arena).
    std::vector<Hash128> memo(source.num_exprs());
    std::vector<uint8_t> done(source.num_exprs(), 0);
    std::function<Hash128(ExprId)> hash = [&](ExprId id) -> Hash128 {
      if (done[id]) return memo[id];
      const Expr& e = source.expr(id);
      Hasher h;
      HashExprFields(e, &h);
      if (e.kind == ExprKind::kRuleRef) h.Add(static_cast<uint64_t>(rep[e.rule]));
      h.Add(e.children.size());
      for (ExprId c : e.children) h.Add(hash(c));
      memo[id] = h.Finish();
      done[id] = 1;
      return memo[id];
    };
    std::unordered_map<Hash128, RuleId, HashKey> first;
    std::vector<RuleId> next(n);
    for (RuleId r = 0; r < n; ++r) {
      const Rule& rule = source.rule(r);
      if (rule.body == kNoExpr || rule.lookahead != kNoExpr) {
        next[r] = r;
        continue;
      }
      Hash128 key = hash(rule.body);
      auto [it, inserted] = first.emplace(key, r);
      // The root represents its class, so the grammar's start is unchanged.
      if (!inserted && r == source.root()) it->second = r;
    }
    for (RuleId r = 0; r < n; ++r) {
      const Rule& rule = source.rule(r);
      next[r] = (rule.body == kNoExpr || rule.lookahead != kNoExpr) ? r : first.at(hash(rule.body));
    }
    if (next == rep) break;
    rep = std::move(next);
  }
  bool any = false;
  for (RuleId r = 0; r < n; ++r) any |= rep[r] != r;
  if (!any) return source;
  // Redirect references.
  Grammar g = source;
  std::unordered_map<ExprId, ExprId> memo;
  std::function<ExprId(ExprId)> rewrite = [&](ExprId id) -> ExprId {
    auto it = memo.find(id);
    if (it != memo.end()) return it->second;
    const Expr e = g.expr(id);
    ExprId out = id;
    if (e.kind == ExprKind::kRuleRef) {
      if (rep[e.rule] != e.rule) out = g.AddRuleRef(rep[e.rule]);
    } else if (!e.children.empty()) {
      std::vector<ExprId> kids;
      bool changed = false;
      for (ExprId c : e.children) {
        ExprId nc = rewrite(c);
        changed |= nc != c;
        kids.push_back(nc);
      }
      if (changed) out = RebuildWithChildren(&g, id, e, kids);
    }
    memo.emplace(id, out);
    return out;
  };
  for (RuleId r = 0; r < n; ++r) {
    if (g.rule(r).body == kNoExpr) continue;
    ExprId body = rewrite(g.rule(r).body);
    if (body != g.rule(r).body) g.SetRuleBody(r, body);
  }
  return g;
}

}  // namespace xg2
