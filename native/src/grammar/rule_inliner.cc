#include "grammar/rule_inliner.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "grammar/expr_rewrite.h"
#include "support/scc.h"

namespace xg2 {
namespace {

// Rules referenced from `id`'s tree, each node visited once per call (seen[e] == stamp).
void CollectRefs(const Grammar& g, ExprId id, uint32_t stamp, std::vector<RuleId>* out, std::vector<uint32_t>* seen,
                 std::vector<ExprId>* stack) {
  stack->assign(1, id);
  while (!stack->empty()) {
    ExprId e = stack->back();
    stack->pop_back();
    if ((*seen)[e] == stamp) continue;
    (*seen)[e] = stamp;
    const Expr& x = g.expr(e);
    if (x.kind == ExprKind::kRuleRef) out->push_back(x.rule);
    for (ExprId c : x.children) stack->push_back(c);
  }
}

// Rewrites one rule body at a time, replacing references to inlinable rules by their bodies
// and measuring the result. Results are memoised per body (memo_stamp_[id] == stamp_), as a
// node shared by several rules may inline differently once more callees are final.
class BodyInliner {
 public:
  BodyInliner(Grammar* g, const std::vector<int64_t>& inlined_size) : g_(g), inlined_size_(inlined_size) {}

  // The rewritten body of `body` and its size in expression nodes.
  std::pair<ExprId, int64_t> Run(ExprId body) {
    ++stamp_;
    // Nodes created below get ids past the current end; they are never looked up.
    memo_.resize(g_->num_exprs());
    memo_stamp_.resize(g_->num_exprs(), 0);
    return Rewrite(body);
  }

 private:
  std::pair<ExprId, int64_t> Rewrite(ExprId id) {
    if (memo_stamp_[id] == stamp_) return memo_[id];
    const Expr& x = g_->expr(id);
    std::pair<ExprId, int64_t> result{id, 1};
    // An automaton's size is its states: keep a large one in its own rule.
    if (x.kind == ExprKind::kByteDfa) result.second = 1 + x.dfa->num_states();
    if (x.kind == ExprKind::kRuleRef) {
      RuleId callee = x.rule;
      if (inlined_size_[callee] >= 0) result = {g_->rule(callee).body, inlined_size_[callee]};
    } else if (!x.children.empty()) {
      std::vector<ExprId> kids;
      kids.reserve(x.children.size());
      bool changed = false;
      int64_t size = 1;
      for (size_t i = 0; i < g_->expr(id).children.size(); ++i) {
        const ExprId c = g_->expr(id).children[i];  // re-read: the arena may have grown
        auto [nc, sz] = Rewrite(c);
        changed |= nc != c;
        kids.push_back(nc);
        size += sz;
      }
      const Expr& e = g_->expr(id);
      // A dispatch's automaton is large (text states x pattern prefixes): keep it in its rule.
      if (e.kind == ExprKind::kTagDispatch) size += int64_t{1} << 30;
      if (e.kind == ExprKind::kRepeat) {
        int64_t copies = e.max == kUnbounded ? std::max<int64_t>(e.min, 1) : e.max;
        size = 1 + (size - 1) * std::max<int64_t>(copies, 1);
      }
      // (e is read before the arena grows: arguments are evaluated before the call.)
      ExprId nid = changed ? RebuildWithChildren(g_, id, e, kids) : id;
      result = {nid, size};
    }
    memo_[id] = result;
    memo_stamp_[id] = stamp_;
    return result;
  }

  Grammar* g_;
  const std::vector<int64_t>& inlined_size_;
  uint32_t stamp_ = 0;
  std::vector<std::pair<ExprId, int64_t>> memo_;
  std::vector<uint32_t> memo_stamp_;
};

}  // namespace

void InlineSmallRules(Grammar* grammar, int max_inline_size) {
  Grammar& g = *grammar;
  int32_t n = g.num_rules();
  std::vector<std::vector<RuleId>> adj(n);
  {
    std::vector<uint32_t> seen(g.num_exprs(), 0);
    std::vector<ExprId> stack;
    for (RuleId r = 0; r < n; ++r) {
      if (g.rule(r).body == kNoExpr) continue;
      CollectRefs(g, g.rule(r).body, static_cast<uint32_t>(r + 1), &adj[r], &seen, &stack);
      std::sort(adj[r].begin(), adj[r].end());
      adj[r].erase(std::unique(adj[r].begin(), adj[r].end()), adj[r].end());
    }
  }
  // Reference occurrences per rule: inlining copies a rule's states into every site, and
  // each copy of a state that accepts many tokens costs a full trie walk at compile time.
  std::vector<int32_t> occurrences(n, 0);
  for (ExprId e = 0; e < g.num_exprs(); ++e) {
    if (g.expr(e).kind == ExprKind::kRuleRef) ++occurrences[g.expr(e).rule];
  }
  std::vector<uint8_t> recursive(n, 0);
  auto components = StronglyConnectedComponents(adj);
  for (const auto& comp : components) {
    if (comp.size() > 1) {
      for (RuleId r : comp) recursive[r] = 1;
    } else if (std::binary_search(adj[comp[0]].begin(), adj[comp[0]].end(), comp[0])) {
      recursive[comp[0]] = 1;
    }
  }

  // Rewrites in callee-first order, so a callee's body is final before callers inline it.
  std::vector<int64_t> inlined_size(n, -1);  // -1: not inlinable
  BodyInliner inliner(&g, inlined_size);
  for (const auto& comp : components) {
    for (RuleId r : comp) {
      if (g.rule(r).body == kNoExpr) continue;
      auto [body, size] = inliner.Run(g.rule(r).body);
      if (body != g.rule(r).body) g.SetRuleBody(r, body);
      constexpr int kMaxSitesForLargeRule = 3;
      constexpr int64_t kTinyRuleSize = 2;
      // A rule with a temperature or a token budget stays a rule: the matcher finds it on the
      // parse stack.
      if (!recursive[r] && r != g.root() && !g.rule(r).keeps_identity() && size <= max_inline_size &&
          (occurrences[r] <= kMaxSitesForLargeRule || size <= kTinyRuleSize)) {
        inlined_size[r] = size;
      }
    }
  }
}

}  // namespace xg2
