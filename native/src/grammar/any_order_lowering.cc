#include "grammar/any_order_lowering.h"

#include <string>

#include "grammar/expr_rewrite.h"
#include "grammar/nullability.h"
#include "xg2/errors.h"

namespace xg2 {

std::vector<LoweredAnyOrder> LowerAnyOrder(Grammar* g) {
  std::vector<LoweredAnyOrder> out;
  bool any = false;
  for (ExprId e = 0; e < g->num_exprs() && !any; ++e) any = g->expr(e).kind == ExprKind::kAnyOrder;
  if (!any) return out;
  Nullability nullable(*g);
  LowerNodesBottomUp(g, [&](const Expr& e, const std::vector<ExprId>& kids, const std::string& owner) -> ExprId {
    if (e.kind != ExprKind::kAnyOrder) return kNoExpr;
    const AnyOrderSpec& spec = *e.any_order;
    LoweredAnyOrder lowered;
    lowered.spec = spec;
    lowered.rule = g->DeclareRule(owner + "_any_order");
    for (int32_t i = 0; i < spec.num_members(); ++i) {
      if (nullable.Expr(e.children[i + 1])) {
        throw Error(ErrorKind::kGrammarSemantic,
                    "an AnyOrder member of rule '" + owner + "' can match the empty string");
      }
      RuleId first = g->DeclareRule(owner + "_member");
      g->SetRuleBody(first, kids[i + 1]);
      RuleId rest = g->DeclareRule(owner + "_next_member");
      g->SetRuleBody(rest, g->AddSequence({kids[0], kids[i + 1]}));
      lowered.first.push_back(first);
      lowered.rest.push_back(rest);
    }
    // Placeholder with the node's nullability; the automaton decides its productivity from
    // the members' (a few required, optional and repeated ones counted against the bounds).
    const bool nullable_node = spec.num_required == 0 && spec.min_count == 0;
    g->SetRuleBody(lowered.rule, nullable_node ? g->AddEmpty() : g->AddChoice({}));
    out.push_back(std::move(lowered));
    return g->AddRuleRef(out.back().rule);
  });
  return out;
}

}  // namespace xg2
