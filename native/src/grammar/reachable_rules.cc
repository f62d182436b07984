#include "grammar/reachable_rules.h"

namespace xg2 {

std::vector<uint8_t> RulesReachableFromRoot(const Grammar& g, const std::vector<std::vector<RuleId>>& extra_callees) {
  std::vector<uint8_t> reached(g.num_rules(), 0);
  if (g.root() < 0 || g.root() >= g.num_rules()) return reached;
  std::vector<uint8_t> seen(g.num_exprs(), 0);  // bodies share nodes: visit each once
  std::vector<RuleId> rules{g.root()};
  std::vector<ExprId> exprs;
  reached[g.root()] = 1;
  while (!rules.empty()) {
    const RuleId r = rules.back();
    rules.pop_back();
    if (g.rule(r).body != kNoExpr) exprs.push_back(g.rule(r).body);
    if (static_cast<size_t>(r) < extra_callees.size()) {
      for (RuleId c : extra_callees[r]) {
        if (!reached[c]) reached[c] = 1, rules.push_back(c);
      }
    }
    while (!exprs.empty()) {
      const ExprId id = exprs.back();
      exprs.pop_back();
      if (seen[id]) continue;
      seen[id] = 1;
      const Expr& e = g.expr(id);
      if (e.kind == ExprKind::kRuleRef && !reached[e.rule]) {
        reached[e.rule] = 1;
        rules.push_back(e.rule);
      }
      for (ExprId c : e.children) exprs.push_back(c);
    }
  }
  return reached;
}

}  // namespace xg2
