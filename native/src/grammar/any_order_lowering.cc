#include "grammar/any_order_lowering.h"

#include <functional>
#include <string>
#include <unordered_map>

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
  std::unordered_map<ExprId, ExprId> memo;
  std::function<ExprId(ExprId, const std::string&)> rewrite = [&](ExprId id, const std::string& owner) -> ExprId {
    auto it = memo.find(id);
    if (it != memo.end()) return it->second;
    const Expr e = g->expr(id);
    ExprId result = id;
    std::vector<ExprId> kids;
    const bool changed = MapChildren(e, [&](ExprId c) { return rewrite(c, owner); }, &kids);
    if (e.kind == ExprKind::kAnyOrder) {
      const AnyOrderSpec& spec = *e.any_order;
      LoweredAnyOrder lowered;
      lowered.spec = spec;
      lowered.rule = g->DeclareRule(owner + "_any_order");
      for (int32_t i = 0; i < spec.num_members(); ++i) {
        if (nullable.Expr(e.children[i + 1])) {
          throw Error(ErrorKind::kGrammarSemantic, "an AnyOrder member of rule '" + owner +
                                                       "' can match the empty string");
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
      ExprId placeholder = nullable_node ? g->AddEmpty() : g->AddChoice({});
      g->SetRuleBody(lowered.rule, placeholder);
      out.push_back(std::move(lowered));
      result = g->AddRuleRef(out.back().rule);
    } else if (changed) {
      result = RebuildWithChildren(g, id, e, kids);
    }
    memo[id] = result;
    return result;
  };
  RewriteRuleBodies(g, rewrite);
  return out;
}

}  // namespace xg2
