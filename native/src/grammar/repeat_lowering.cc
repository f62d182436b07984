#include "grammar/repeat_lowering.h"

#include "grammar/expr_rewrite.h"
#include "grammar/nullability.h"

#include <string>
#include <functional>
#include <unordered_map>

namespace xg2 {

std::vector<LoweredRepeat> LowerLargeRepeats(Grammar* g, int64_t max_unrolled) {
  std::vector<LoweredRepeat> out;
  auto is_large = [&](const Expr& e) {
    return e.kind == ExprKind::kRepeat &&
           (e.min > max_unrolled || (e.max != kUnbounded && e.max > max_unrolled));
  };
  // Most grammars have no large repetition: skip the nullability fixpoint and the rewrite.
  bool any_large = false;
  for (ExprId id = 0; id < g->num_exprs() && !any_large; ++id) any_large = is_large(g->expr(id));
  if (!any_large) return out;
  Nullability nullable(*g);
  std::unordered_map<ExprId, ExprId> memo;
  // Rewrites expression `id`, lowering large repeats; returns the (possibly new) id.
  std::function<ExprId(ExprId, const std::string&)> rewrite = [&](ExprId id, const std::string& owner) -> ExprId {
    auto it = memo.find(id);
    if (it != memo.end()) return it->second;
    const Expr e = g->expr(id);
    ExprId result = id;
    if (e.kind == ExprKind::kRepeat && is_large(e) && !nullable.Expr(e.children[0])) {
      ExprId child_body = rewrite(e.children[0], owner);
      RuleId child = g->DeclareRule(owner + "_item");
      g->SetRuleBody(child, child_body);
      RuleId rep = g->DeclareRule(owner + "_repeat");
      ExprId ref = g->AddRuleRef(child);
      // Placeholder with the loop's nullability and productivity; the automaton replaces it.
      g->SetRuleBody(rep, e.min == 0 ? g->AddRepeat(ref, 0, 1) : ref);
      out.push_back({rep, child, e.min, e.max});
      result = g->AddRuleRef(rep);
    } else if (!e.children.empty()) {
      std::vector<ExprId> kids;
      if (MapChildren(e, [&](ExprId c) { return rewrite(c, owner); }, &kids)) result = RebuildWithChildren(g, id, e, kids);
    }
    memo[id] = result;
    return result;
  };
  RewriteRuleBodies(g, rewrite);
  return out;
}

}  // namespace xg2
