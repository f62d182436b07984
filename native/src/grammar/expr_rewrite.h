// Shared step of the grammar rewriting passes (dedup, inlining, repeat lowering): a copy of a
// composite expression with new children.
#pragma once

#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// A new node like `e` (a sequence, choice, repeat or tag dispatch) over `children`; e's own id otherwise.
inline ExprId RebuildWithChildren(Grammar* g, ExprId id, const Expr& e, const std::vector<ExprId>& children) {
  switch (e.kind) {
    case ExprKind::kSequence: return g->AddSequence(children);
    case ExprKind::kChoice: return g->AddChoice(children);
    case ExprKind::kRepeat: return g->AddRepeat(children[0], e.min, e.max);
    case ExprKind::kTagDispatch: return g->AddTagDispatch(*e.dispatch, children);
    default: return id;
  }
}

}  // namespace xg2
