#include "grammar/repeat_lowering.h"

#include <string>

#include "grammar/expr_rewrite.h"
#include "grammar/nullability.h"

namespace xg2 {

std::vector<LoweredRepeat> LowerLargeRepeats(Grammar* g, int64_t max_unrolled) {
  std::vector<LoweredRepeat> out;
  auto is_large = [&](const Expr& e) {
    return e.kind == ExprKind::kRepeat && (e.min > max_unrolled || (e.max != kUnbounded && e.max > max_unrolled));
  };
  // Most grammars have no large repetition: skip the nullability fixpoint and the rewrite.
  bool any_large = false;
  for (ExprId id = 0; id < g->num_exprs() && !any_large; ++id) any_large = is_large(g->expr(id));
  if (!any_large) return out;
  Nullability nullable(*g);
  LowerNodesBottomUp(g, [&](const Expr& e, const std::vector<ExprId>& kids, const std::string& owner) -> ExprId {
    if (!(e.kind == ExprKind::kRepeat && is_large(e) && !nullable.Expr(e.children[0]))) return kNoExpr;
    RuleId child = g->DeclareRule(owner + "_item");
    g->SetRuleBody(child, kids[0]);
    RuleId rep = g->DeclareRule(owner + "_repeat");
    ExprId ref = g->AddRuleRef(child);
    // Placeholder with the loop's nullability and productivity; the automaton replaces it.
    g->SetRuleBody(rep, e.min == 0 ? g->AddRepeat(ref, 0, 1) : ref);
    out.push_back({rep, child, e.min, e.max});
    return g->AddRuleRef(rep);
  });
  return out;
}

}  // namespace xg2
