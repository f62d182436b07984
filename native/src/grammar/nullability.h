// Which rules and expressions can match the empty string (least fixpoint over the grammar),
// for the passes that must know it before automata exist.
#pragma once

#include <vector>

#include "grammar/rule_fixpoint.h"

namespace xg2 {

// Nullability of rules and expressions (least fixpoint).
class Nullability : public RuleFixpoint<Nullability> {
 public:
  explicit Nullability(const Grammar& g) : RuleFixpoint(g) { Solve(); }

  // Whether the expression matches the empty string (children and rules as solved so far).
  bool Eval(const xg2::Expr& e) {
    bool n = false;
    switch (e.kind) {
      case ExprKind::kEmpty: n = true; break;
      case ExprKind::kBytes: n = e.bytes.empty(); break;
      case ExprKind::kCharClass: n = false; break;
      case ExprKind::kSequence:
        n = true;
        for (ExprId c : e.children) n = n && Expr(c);
        break;
      case ExprKind::kChoice:
        for (ExprId c : e.children) n = n || Expr(c);
        break;
      case ExprKind::kRuleRef: n = Rule(e.rule); break;
      case ExprKind::kRepeat: n = e.min == 0 || Expr(e.children[0]); break;
      case ExprKind::kTagDispatch:  // empty free text may end it (conservative otherwise)
        n = e.dispatch->plain_end && !e.dispatch->at_least_one;
        break;
      case ExprKind::kByteDfa: n = e.dfa->is_final[0] != 0; break;
      case ExprKind::kAnyOrder: n = e.any_order->num_required == 0 && e.any_order->min_count == 0; break;
    }
    return n;
  }
};

// The rules of g that match the empty string, ascending.
inline std::vector<RuleId> NullableRuleIds(const Grammar& g) {
  Nullability nullable(g);
  std::vector<RuleId> ids;
  for (RuleId r = 0; r < g.num_rules(); ++r) {
    if (nullable.Rule(r)) ids.push_back(r);
  }
  return ids;
}

}  // namespace xg2
