#include "grammar/repeat_lowering.h"

#include "grammar/expr_rewrite.h"

#include <string>
#include <functional>
#include <unordered_map>

namespace xg2 {
namespace {

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
    }
    memo_[id] = n;
    return n;
  }

 private:
  const Grammar& g_;
  std::vector<uint8_t> rule_;
  std::unordered_map<ExprId, bool> memo_;
};

}  // namespace

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
      bool changed = false;
      for (ExprId c : e.children) {
        ExprId nc = rewrite(c, owner);
        changed |= nc != c;
        kids.push_back(nc);
      }
      if (changed) result = RebuildWithChildren(g, id, e, kids);
    }
    memo[id] = result;
    return result;
  };
  const int32_t num_rules = g->num_rules();
  for (RuleId r = 0; r < num_rules; ++r) {
    if (g->rule(r).body == kNoExpr) continue;
    const std::string owner = g->rule(r).name;  // a copy: DeclareRule may move the rules
    ExprId body = rewrite(g->rule(r).body, owner);
    if (body != g->rule(r).body) g->SetRuleBody(r, body);
  }
  return out;
}

}  // namespace xg2
