#include "grammar/repeat_lowering.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "grammar/expr_rewrite.h"
#include "grammar/nullability.h"

namespace xg2 {
namespace {

// Loops of up to max_span counts get one counter each; larger ones are split (see the header),
// so bounds such as a JSON Schema's maxLength 4294967295 fit the automaton's state ids.
class RepeatLowerer {
 public:
  RepeatLowerer(Grammar* g, int64_t max_span, std::vector<LoweredRepeat>* out)
      : g_(g), max_span_(std::max<int64_t>(max_span, 4)), out_(out) {}

  // item{min,max} (item: an expression that cannot match the empty string).
  ExprId Loop(ExprId item, int64_t min, int64_t max, const std::string& owner) {
    const int64_t span = (max == kUnbounded ? min : max) + 1;
    if (span <= max_span_) return Counted(item, min, max, owner);
    ExprId rest = max == kUnbounded ? Counted(item, 0, kUnbounded, owner) : UpTo(item, max - min, owner);
    return min == 0 ? rest : g_->AddSequence({Exactly(item, min, owner), rest});
  }

 private:
  // One counter: a repeat rule around a child rule of its own (the automaton maps each child
  // rule to one loop).
  ExprId Counted(ExprId item, int64_t min, int64_t max, const std::string& owner) {
    if (max == 0) return g_->AddEmpty();
    RuleId child = g_->DeclareRule(owner + "_item");
    g_->SetRuleBody(child, item);
    RuleId rep = g_->DeclareRule(owner + "_repeat");
    ExprId ref = g_->AddRuleRef(child);
    // Placeholder with the loop's nullability and productivity; the automaton replaces it.
    g_->SetRuleBody(rep, min == 0 ? g_->AddRepeat(ref, 0, 1) : ref);
    out_->push_back({rep, child, min, max});
    return g_->AddRuleRef(rep);
  }

  ExprId Exactly(ExprId item, int64_t n, const std::string& owner) {
    if (n + 1 <= max_span_) return Counted(item, n, n, owner);
    const int64_t b = BlockSize(n);
    ExprId blocks = Loop(Block(item, b, owner), n / b, n / b, owner);
    return n % b == 0 ? blocks : g_->AddSequence({blocks, Counted(item, n % b, n % b, owner)});
  }

  ExprId UpTo(ExprId item, int64_t n, const std::string& owner) {
    if (n + 1 <= max_span_) return Counted(item, 0, n, owner);
    const int64_t b = BlockSize(n), q = n / b, r = n % b;
    ExprId block = Block(item, b, owner);
    ExprId below = g_->AddSequence({Loop(block, 0, q - 1, owner), Counted(item, 0, b - 1, owner)});
    ExprId from = g_->AddSequence({Loop(block, q, q, owner), Counted(item, 0, r, owner)});
    return g_->AddChoice({below, from});
  }

  // A rule matching item{b} exactly, shared by the loops over the same item and size.
  ExprId Block(ExprId item, int64_t b, const std::string& owner) {
    auto [it, fresh] = blocks_.try_emplace({item, b}, kNoExpr);
    if (fresh) {
      RuleId block = g_->DeclareRule(owner + "_block");
      g_->SetRuleBody(block, Counted(item, b, b, owner));
      it->second = g_->AddRuleRef(block);
    }
    return it->second;
  }

  int64_t BlockSize(int64_t n) const {
    const auto root = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(n) + 1)));
    return std::max<int64_t>(2, std::min(root, max_span_ - 1));
  }

  Grammar* g_;
  int64_t max_span_;
  std::vector<LoweredRepeat>* out_;
  std::map<std::pair<ExprId, int64_t>, ExprId> blocks_;
};

}  // namespace

std::vector<LoweredRepeat> LowerLargeRepeats(Grammar* g, int64_t max_unrolled, int64_t max_counted_span) {
  std::vector<LoweredRepeat> out;
  auto is_large = [&](const Expr& e) {
    return e.kind == ExprKind::kRepeat && (e.min > max_unrolled || (e.max != kUnbounded && e.max > max_unrolled));
  };
  // Most grammars have no large repetition: skip the nullability fixpoint and the rewrite.
  bool any_large = false;
  for (ExprId id = 0; id < g->num_exprs() && !any_large; ++id) any_large = is_large(g->expr(id));
  if (!any_large) return out;
  Nullability nullable(*g);
  RepeatLowerer lowerer(g, max_counted_span, &out);
  LowerNodesBottomUp(g, [&](const Expr& e, const std::vector<ExprId>& kids, const std::string& owner) -> ExprId {
    if (!(e.kind == ExprKind::kRepeat && is_large(e) && !nullable.Expr(e.children[0]))) return kNoExpr;
    return lowerer.Loop(kids[0], e.min, e.max, owner);
  });
  return out;
}

}  // namespace xg2
