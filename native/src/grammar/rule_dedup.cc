#include "grammar/rule_dedup.h"

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
    std::unordered_map<ExprId, Hash128> memo;
    std::function<Hash128(ExprId)> hash = [&](ExprId id) -> Hash128 {
      auto it = memo.find(id);
      if (it != memo.end()) return it->second;
      const Expr& e = source.expr(id);
      Hasher h;
      h.Add(static_cast<uint64_t>(e.kind));
      switch (e.kind) {
        case ExprKind::kEmpty: break;
        case ExprKind::kBytes:
          h.Add(e.bytes.size());
          for (unsigned char c : e.bytes) h.Add(c);
          break;
        case ExprKind::kCharClass:
          h.Add(e.negated);
          for (const auto& r : e.ranges) h.Add((static_cast<uint64_t>(r.lo) << 32) | r.hi);
          break;
        case ExprKind::kRuleRef: h.Add(static_cast<uint64_t>(rep[e.rule])); break;
        case ExprKind::kRepeat:
          h.Add(static_cast<uint64_t>(e.min));
          h.Add(static_cast<uint64_t>(e.max));
          break;
        case ExprKind::kTagDispatch: {
          const TagDispatchSpec& d = *e.dispatch;
          for (const auto* list : {&d.triggers, &d.ends, &d.excludes}) {
            h.Add(list->size());
            for (const std::string& str : *list) {
              h.Add(str.size());
              for (unsigned char c : str) h.Add(c);
            }
          }
          h.Add((d.loop ? 1u : 0u) | (d.plain_end ? 2u : 0u) | (d.at_least_one ? 4u : 0u));
          h.Add(static_cast<uint64_t>(d.max_chars));
          break;
        }
        default: break;
      }
      h.Add(e.children.size());
      for (ExprId c : e.children) h.Add(hash(c));
      Hash128 out = h.Finish();
      memo.emplace(id, out);
      return out;
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
