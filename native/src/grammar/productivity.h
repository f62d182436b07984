// Which rules can match some finite string (least fixpoint over the grammar), for front ends
// that refuse a grammar with an empty language before automata exist. Conservative: the
// elements whose language only their automaton knows (tag dispatch, byte DFAs, any-order
// groups) count as productive, so "not productive" is always true emptiness.
#pragma once

#include <vector>

#include "grammar/rule_fixpoint.h"

namespace xg2 {

class Productivity : public RuleFixpoint<Productivity> {
 public:
  explicit Productivity(const Grammar& g) : RuleFixpoint(g) { Solve(); }

  // Whether the expression matches some finite string (children and rules as solved so far).
  bool Eval(const xg2::Expr& e) {
    bool p = true;
    switch (e.kind) {
      case ExprKind::kCharClass: p = e.negated ? !CoversEveryCodepoint(e.ranges) : !e.ranges.empty(); break;
      case ExprKind::kSequence:
        for (ExprId c : e.children) p = p && Expr(c);
        break;
      case ExprKind::kChoice:
        p = false;
        for (ExprId c : e.children) p = p || Expr(c);
        break;
      case ExprKind::kRuleRef: p = Rule(e.rule); break;
      case ExprKind::kRepeat: p = e.min == 0 || Expr(e.children[0]); break;
      default: break;  // empty, bytes, and the automaton-only elements
    }
    return p;
  }

 private:
  static bool CoversEveryCodepoint(const std::vector<CodepointRange>& ranges) {  // sorted and merged
    return ranges.size() == 1 && ranges[0].lo == 0 && ranges[0].hi >= 0x10FFFF;
  }
};

}  // namespace xg2
