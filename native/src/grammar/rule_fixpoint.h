// A least fixpoint of a boolean property over a grammar's rules (nullable, productive, ...):
// every rule starts false and becomes true once its body's value is true, until nothing
// changes. Derived classes give the value of one expression (Eval, CRTP), reading their
// children through Expr and rules through Rule.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

template <typename Derived>
class RuleFixpoint {
 public:
  // The property of rule r (after the fixpoint).
  bool Rule(RuleId r) const { return rule_[r] != 0; }

  // The property of an expression under the current rule values (memoised).
  bool Expr(ExprId id) {
    auto it = memo_.find(id);
    if (it != memo_.end()) return it->second;
    const bool v = static_cast<Derived*>(this)->Eval(g_.expr(id));
    memo_[id] = v;
    return v;
  }

 protected:
  explicit RuleFixpoint(const Grammar& g) : g_(g), rule_(g.num_rules(), 0) {}

  // Runs to the fixpoint; the derived constructor calls it.
  void Solve() {
    bool changed = true;
    while (changed) {
      changed = false;
      memo_.clear();
      for (RuleId r = 0; r < g_.num_rules(); ++r) {
        if (!rule_[r] && g_.rule(r).body != kNoExpr && Expr(g_.rule(r).body)) {
          rule_[r] = 1;
          changed = true;
        }
      }
    }
    memo_.clear();
  }

  const Grammar& g_;

 private:
  std::vector<uint8_t> rule_;
  std::unordered_map<ExprId, bool> memo_;
};

}  // namespace xg2
