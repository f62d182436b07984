// Which rules can match some finite string (least fixpoint over the grammar), for front ends
// that refuse a grammar with an empty language before automata exist. Conservative: the
// elements whose language only their automaton knows (tag dispatch, byte DFAs, any-order
// groups) count as productive, so "not productive" is always true emptiness.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

class Productivity {
 public:
  explicit Productivity(const Grammar& g) : g_(g), rule_(g.num_rules(), 0) {
    bool changed = true;
    while (changed) {
      changed = false;
      memo_.clear();
      for (RuleId r = 0; r < g.num_rules(); ++r) {
        if (!rule_[r] && g.rule(r).body != kNoExpr && Expr(g.rule(r).body)) {
          rule_[r] = 1;
          changed = true;
        }
      }
    }
    memo_.clear();
  }

  // Whether rule r matches some finite string.
  bool Rule(RuleId r) const { return rule_[r] != 0; }

 private:
  bool Expr(ExprId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    const xg2::Expr& e = g_.expr(id);
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
      case ExprKind::kRuleRef: p = rule_[e.rule] != 0; break;
      case ExprKind::kRepeat: p = e.min == 0 || Expr(e.children[0]); break;
      default: break;  // empty, bytes, and the automaton-only elements
    }
    memo_[id] = p;
    return p;
  }

  static bool CoversEveryCodepoint(const std::vector<CodepointRange>& ranges) {  // sorted and merged
    return ranges.size() == 1 && ranges[0].lo == 0 && ranges[0].hi >= 0x10FFFF;
  }

  const Grammar& g_;
  std::vector<uint8_t> rule_;
  std::unordered_map<ExprId, bool> memo_;
};

}  // namespace xg2
