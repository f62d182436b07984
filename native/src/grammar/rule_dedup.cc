#include "grammar/rule_dedup.h"

#include <unordered_map>
#include <vector>

#include "grammar/expr_hash.h"
#include "grammar/expr_rewrite.h"
#include "support/hash.h"

namespace xg2 {
namespace {

// Expressions reachable from rule bodies, in increasing id order: children always have
// smaller ids than their parent (the arena only appends), so this order is bottom-up.
std::vector<ExprId> LiveExprsBottomUp(const Grammar& g) {
  std::vector<uint8_t> live(g.num_exprs(), 0);
  std::vector<ExprId> stack;
  for (RuleId r = 0; r < g.num_rules(); ++r) {
    if (g.rule(r).body != kNoExpr) stack.push_back(g.rule(r).body);
  }
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = 1;
    for (ExprId c : g.expr(id).children) stack.push_back(c);
  }
  std::vector<ExprId> out;
  for (ExprId id = 0; id < g.num_exprs(); ++id) {
    if (live[id]) out.push_back(id);
  }
  return out;
}

}  // namespace

void DeduplicateRules(Grammar* grammar) {
  const Grammar& source = *grammar;
  const int32_t n = source.num_rules();
  std::vector<RuleId> rep(n);
  for (RuleId r = 0; r < n; ++r) rep[r] = r;
  // A node's own fields do not change between rounds: hash them once. Only nodes above a
  // rule reference change between rounds: rehash just those.
  const std::vector<ExprId> order = LiveExprsBottomUp(source);
  std::vector<Hash128> fields(source.num_exprs());
  std::vector<Hash128> hash(source.num_exprs());
  std::vector<uint8_t> above_ref(source.num_exprs(), 0);
  std::vector<ExprId> refreshed;  // the live nodes above a reference, bottom-up
  for (ExprId id : order) {
    const Expr& e = source.expr(id);
    Hasher h;
    HashExprFields(e, &h);
    fields[id] = h.Finish();
    bool ref = e.kind == ExprKind::kRuleRef;
    for (ExprId c : e.children) ref = ref || above_ref[c];
    above_ref[id] = ref ? 1 : 0;
    if (ref) refreshed.push_back(id);
  }
  auto rehash = [&](ExprId id) {
    const Expr& e = source.expr(id);
    Hasher h;
    h.Add(fields[id]);
    if (e.kind == ExprKind::kRuleRef) h.Add(static_cast<uint64_t>(rep[e.rule]));
    h.Add(e.children.size());
    for (ExprId c : e.children) h.Add(hash[c]);
    hash[id] = h.Finish();
  };
  for (ExprId id : order) rehash(id);
  std::vector<RuleId> next(n);
  std::unordered_map<Hash128, RuleId, Hash128Hasher> first;
  // Refine until stable: a body's hash names its callees by their current representatives.
  for (int round = 0; round < 64; ++round) {
    if (round > 0) {
      for (ExprId id : refreshed) rehash(id);
    }
    first.clear();
    for (RuleId r = 0; r < n; ++r) {
      const Rule& rule = source.rule(r);
      // A rule with a lookahead, a temperature or a token budget is more than its language:
      // kept apart.
      if (rule.body == kNoExpr || rule.lookahead != kNoExpr || rule.keeps_identity()) continue;
      auto [it, inserted] = first.emplace(hash[rule.body], r);
      // The root represents its class, so the grammar's start is unchanged.
      if (!inserted && r == source.root()) it->second = r;
    }
    for (RuleId r = 0; r < n; ++r) {
      const Rule& rule = source.rule(r);
      next[r] =
          (rule.body == kNoExpr || rule.lookahead != kNoExpr || rule.keeps_identity()) ? r : first.at(hash[rule.body]);
    }
    if (next == rep) break;
    rep.swap(next);
  }
  bool any = false;
  for (RuleId r = 0; r < n; ++r) any |= rep[r] != r;
  if (!any) return;
  // Redirect references, bottom-up: a node is rebuilt when a child was.
  Grammar& g = *grammar;
  std::vector<ExprId> renamed(source.num_exprs(), kNoExpr);
  std::vector<ExprId> kids;
  for (ExprId id : order) {
    const Expr& e = g.expr(id);
    ExprId out = id;
    if (e.kind == ExprKind::kRuleRef) {
      if (rep[e.rule] != e.rule) out = g.AddRuleRef(rep[e.rule]);
    } else if (!e.children.empty()) {
      kids.clear();
      bool changed = false;
      for (ExprId c : e.children) {
        kids.push_back(renamed[c]);
        changed |= renamed[c] != c;
      }
      // (e is read before the arena grows: arguments are evaluated before the call.)
      if (changed) out = RebuildWithChildren(&g, id, e, kids);
    }
    renamed[id] = out;
  }
  for (RuleId r = 0; r < n; ++r) {
    if (g.rule(r).body == kNoExpr) continue;
    ExprId body = renamed[g.rule(r).body];
    if (body != g.rule(r).body) g.SetRuleBody(r, body);
  }
}

}  // namespace xg2
