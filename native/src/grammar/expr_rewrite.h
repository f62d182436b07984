// Shared step of the grammar rewriting passes (dedup, inlining, repeat lowering): a copy of a
// composite expression with new children.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// A new node like `e` (a sequence, choice, repeat, tag dispatch or any-order node) over `children`; e's own id
// otherwise.
inline ExprId RebuildWithChildren(Grammar* g, ExprId id, const Expr& e, const std::vector<ExprId>& children) {
  switch (e.kind) {
    case ExprKind::kSequence: return g->AddSequence(children);
    case ExprKind::kChoice: return g->AddChoice(children);
    case ExprKind::kRepeat: return g->AddRepeat(children[0], e.min, e.max);
    case ExprKind::kTagDispatch: return g->AddTagDispatch(*e.dispatch, children);
    case ExprKind::kAnyOrder: return g->AddAnyOrder(*e.any_order, children);
    default: return id;
  }
}

// kids = the children of e mapped by fn; returns whether any changed.
template <class Fn>
bool MapChildren(const Expr& e, Fn&& fn, std::vector<ExprId>* kids) {
  bool changed = false;
  kids->clear();
  for (ExprId c : e.children) {
    kids->push_back(fn(c));
    changed |= kids->back() != c;
  }
  return changed;
}

// Replaces the body of every rule that exists now by rewrite(body, rule name), for passes that
// declare new rules as they go (the name is a copy: DeclareRule may move the rules).
template <class Rewrite>
void RewriteRuleBodies(Grammar* g, Rewrite&& rewrite) {
  const int32_t num_rules = g->num_rules();
  for (RuleId r = 0; r < num_rules; ++r) {
    if (g->rule(r).body == kNoExpr) continue;
    const std::string owner = g->rule(r).name;
    ExprId body = rewrite(g->rule(r).body, owner);
    if (body != g->rule(r).body) g->SetRuleBody(r, body);
  }
}

// Rewrites every rule body bottom-up: a node's children first, then lower(e, kids, owner) may
// replace the node (kNoExpr keeps it, rebuilt over kids if one changed). A node shared by
// several bodies is rewritten once. The lowering passes (repeats, any-order) share this.
// Only nodes with children are passed to `lower` (a leaf has nothing to lower).
template <class Lower>
void LowerNodesBottomUp(Grammar* g, Lower&& lower) {
  // Indexed by node id: only nodes that exist now are looked up (new nodes are results).
  std::vector<ExprId> memo(static_cast<size_t>(g->num_exprs()), kNoExpr);
  std::function<ExprId(ExprId, const std::string&)> rewrite = [&](ExprId id, const std::string& owner) -> ExprId {
    if (memo[id] != kNoExpr) return memo[id];
    if (g->expr(id).children.empty()) return memo[id] = id;
    const Expr e = g->expr(id);  // a copy: the arena may grow below
    std::vector<ExprId> kids;
    const bool changed = MapChildren(e, [&](ExprId c) { return rewrite(c, owner); }, &kids);
    ExprId result = lower(e, kids, owner);
    if (result == kNoExpr) result = changed ? RebuildWithChildren(g, id, e, kids) : id;
    memo[id] = result;
    return result;
  };
  RewriteRuleBodies(g, rewrite);
}

}  // namespace xg2
