// Which rules and expressions can match the empty string (least fixpoint over the grammar),
// for the passes that must know it before automata exist.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// Nullability of rules and expressions (least fixpoint).
class Nullability {
 public:
  explicit Nullability(const Grammar& g) : g_(g), rule_(g.num_rules(), 0) {
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

  // Whether rule r matches the empty string.
  bool Rule(RuleId r) const { return rule_[r] != 0; }

  bool Expr(ExprId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    const xg2::Expr& e = g_.expr(id);
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
      case ExprKind::kRuleRef: n = rule_[e.rule] != 0; break;
      case ExprKind::kRepeat: n = e.min == 0 || Expr(e.children[0]); break;
      case ExprKind::kTagDispatch:  // empty free text may end it (conservative otherwise)
        n = e.dispatch->plain_end && !e.dispatch->at_least_one;
        break;
      case ExprKind::kByteDfa: n = e.dfa->is_final[0] != 0; break;
      case ExprKind::kAnyOrder: n = e.any_order->num_required == 0 && e.any_order->min_count == 0; break;
    }
    memo_[id] = n;
    return n;
  }

 private:
  const Grammar& g_;
  std::vector<uint8_t> rule_;
  std::unordered_map<ExprId, bool> memo_;
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
