// End forms (see end_forms.h): copies of the rules whose text may end with an extra text.
#include "grammar/end_forms.h"

#include <algorithm>
#include <map>

#include "grammar/nullability.h"
#include "grammar/rule_fixpoint.h"

namespace xg2 {

namespace {

// Which rules and expressions can end their text with an extra text of a rule in `base`: the
// rule itself, or a reference to one followed only by what can be empty.
class EndReach : public RuleFixpoint<EndReach> {
 public:
  EndReach(const Grammar& g, const std::vector<uint8_t>& base, Nullability* nullable)
      : RuleFixpoint(g), base_(base), nullable_(nullable) {
    Solve();
  }

  bool Eval(const xg2::Expr& e) {
    switch (e.kind) {
      case ExprKind::kSequence:
        for (size_t i = e.children.size(); i-- > 0;) {
          if (Expr(e.children[i])) return true;
          if (!nullable_->Expr(e.children[i])) return false;
        }
        return false;
      case ExprKind::kChoice:
        return std::any_of(e.children.begin(), e.children.end(), [&](ExprId c) { return Expr(c); });
      case ExprKind::kRuleRef: return base_[e.rule] != 0 || Rule(e.rule);
      case ExprKind::kRepeat: return e.max != 0 && Expr(e.children[0]);
      default: return false;  // terminals, dispatches and any-order objects end as they are
    }
  }

 private:
  const std::vector<uint8_t>& base_;
  Nullability* nullable_;
};

class EndFormBuilder {
 public:
  EndFormBuilder(Grammar* g, const std::vector<std::pair<RuleId, ExprId>>& ends)
      : g_(g), nullable_(*g), base_(g->num_rules(), 0), reach_(*g, MarkBase(ends), &nullable_) {}

  void Run() {
    const RuleId root = g_->root();
    const ExprId body = g_->rule(root).body;
    // The root is at the end of the input: it also takes its extra texts.
    const ExprId extra = base_[root] ? base_extra_.at(root) : reach_.Expr(body) ? Extra(body) : kNoExpr;
    if (extra != kNoExpr) g_->SetRuleBody(root, g_->AddChoice({body, extra}));
    while (!pending_.empty()) {
      const auto [rule, copy] = pending_.back();
      pending_.pop_back();
      g_->SetRuleBody(copy, base_[rule] ? base_extra_.at(rule) : Extra(g_->rule(rule).body));
    }
  }

 private:
  const std::vector<uint8_t>& MarkBase(const std::vector<std::pair<RuleId, ExprId>>& ends) {
    for (const auto& [rule, extra] : ends) {
      base_[rule] = 1;
      base_extra_[rule] = extra;
    }
    return base_;
  }

  // The texts of `id` that end with an extra text (reach_ says it has some).
  ExprId Extra(ExprId id) {
    const Expr e = g_->expr(id);  // a copy: the arena grows below
    std::vector<ExprId> alternatives;
    switch (e.kind) {
      case ExprKind::kSequence:
        // The extra text comes from the last part that has one, or from an earlier part when
        // every part after it is empty.
        for (size_t i = e.children.size(); i-- > 0;) {
          const ExprId child = e.children[i];
          if (reach_.Expr(child)) {
            std::vector<ExprId> parts(e.children.begin(), e.children.begin() + static_cast<std::ptrdiff_t>(i));
            parts.push_back(Extra(child));
            alternatives.push_back(parts.size() == 1 ? parts[0] : g_->AddSequence(std::move(parts)));
          }
          if (!nullable_.Expr(child)) break;
        }
        break;
      case ExprKind::kChoice:
        for (ExprId c : e.children) {
          if (reach_.Expr(c)) alternatives.push_back(Extra(c));
        }
        break;
      case ExprKind::kRepeat: {
        // Up to max - 1 whole iterations, then one that ends with an extra text.
        const int64_t lower = std::max<int64_t>(e.min - 1, 0);
        const int64_t upper = e.max == kUnbounded ? kUnbounded : e.max - 1;
        const ExprId last = Extra(e.children[0]);
        alternatives.push_back(upper == 0 ? last : g_->AddSequence({g_->AddRepeat(e.children[0], lower, upper), last}));
        break;
      }
      case ExprKind::kRuleRef: alternatives.push_back(g_->AddRuleRef(EndRule(e.rule))); break;
      default: break;
    }
    return alternatives.size() == 1 ? alternatives[0] : g_->AddChoice(std::move(alternatives));
  }

  // The copy of `rule` whose language is its texts that end with an extra text; its body is
  // made by Run (rules may reach themselves).
  RuleId EndRule(RuleId rule) {
    auto it = end_rule_.find(rule);
    if (it != end_rule_.end()) return it->second;
    const Rule source = g_->rule(rule);
    const RuleId copy = g_->DeclareRule(source.name + "_end");
    g_->SetRuleCapture(copy, source.capture);
    g_->SetRuleTemperature(copy, source.temperature);
    g_->SetRuleMaxTokens(copy, source.max_tokens);
    g_->SetRuleJsonChars(copy, source.json_min_chars, source.json_max_chars);
    g_->SetRuleMarkerSplit(copy, source.marker_split);
    g_->SetRuleEndOnly(copy, true);
    end_rule_[rule] = copy;
    pending_.emplace_back(rule, copy);
    return copy;
  }

  Grammar* g_;
  Nullability nullable_;
  std::vector<uint8_t> base_;
  std::map<RuleId, ExprId> base_extra_;
  EndReach reach_;
  std::map<RuleId, RuleId> end_rule_;
  std::vector<std::pair<RuleId, RuleId>> pending_;  // (rule, its copy) whose body is to make
};

}  // namespace

void AddEndForms(Grammar* g, const std::vector<std::pair<RuleId, ExprId>>& ends) {
  if (ends.empty() || g->root() < 0) return;
  EndFormBuilder(g, ends).Run();
}

}  // namespace xg2
