#include "grammar/token_set.h"

#include <algorithm>
#include <string>

#include "xg2/errors.h"
#include "xg2/tokenizer.h"

namespace xg2 {

namespace {

// Builds the trie of the ids' 3 id bytes below a 0xFF edge (and, for an excluded set, a free
// region, below a 0xFE edge too: see MidTokenEntryBytes). Each trie node (a prefix of 1..2
// id bytes, or none) gets an edge per child byte; in the excluded form every other byte goes
// on to a state that takes any remaining bytes, so the automaton stays deterministic with
// O(3 * |ids|) states.
class TokenSetBuilder {
 public:
  TokenSetBuilder(const std::vector<int32_t>& ids, bool excluded) : ids_(ids), excluded_(excluded) {}

  ByteDfaSpec Build() {
    const int32_t start = NewState(false);
    const int32_t root = NewState(false);
    final_ = NewState(true);
    if (excluded_) {
      any_[1] = NewState(false);
      any_[2] = NewState(false);
      spec_.edges[any_[1]].push_back({0x00, 0xFF, final_});
      spec_.edges[any_[2]].push_back({0x00, 0xFF, any_[1]});
    }
    const uint8_t lead = excluded_ ? kMidTokenLead : kVirtualTokenLead;
    spec_.edges[start].push_back({lead, kVirtualTokenLead, root});
    size_t end = 0;
    while (end < ids_.size() && ids_[end] <= kMaxVirtualTokenId) ++end;
    AddChildren(root, 0, end, 2);
    return std::move(spec_);
  }

 private:
  int32_t NewState(bool final) {
    spec_.is_final.push_back(final ? 1 : 0);
    spec_.edges.emplace_back();
    return static_cast<int32_t>(spec_.is_final.size()) - 1;
  }

  static uint8_t ByteOf(int32_t id, int level) { return static_cast<uint8_t>(id >> (8 * level)); }

  // Edges of `state` for the ids [begin, end) (sharing the higher bytes), on byte `level`
  // (2: the first id byte, 0: the last).
  void AddChildren(int32_t state, size_t begin, size_t end, int level) {
    const int32_t rest = level == 0 ? final_ : excluded_ ? any_[level] : -1;
    int next_free = 0;  // first byte not yet given an edge
    for (size_t i = begin; i < end;) {
      const uint8_t b = ByteOf(ids_[i], level);
      size_t j = i;
      while (j < end && ByteOf(ids_[j], level) == b) ++j;
      if (excluded_ && b > next_free) {
        spec_.edges[state].push_back({static_cast<uint8_t>(next_free), static_cast<uint8_t>(b - 1), rest});
      }
      if (level == 0) {
        if (!excluded_) AppendOrMerge(&spec_.edges[state], b, final_);
      } else {
        const int32_t child = NewState(false);
        spec_.edges[state].push_back({b, b, child});
        AddChildren(child, i, j, level - 1);
      }
      next_free = b + 1;
      i = j;
    }
    if (excluded_ && next_free <= 0xFF) {
      spec_.edges[state].push_back({static_cast<uint8_t>(next_free), 0xFF, rest});
    }
  }

  static void AppendOrMerge(std::vector<ByteDfaEdge>* edges, uint8_t b, int32_t target) {
    if (!edges->empty() && edges->back().target == target && edges->back().hi + 1 == b) {
      edges->back().hi = b;
    } else {
      edges->push_back({b, b, target});
    }
  }

  const std::vector<int32_t>& ids_;
  const bool excluded_;
  ByteDfaSpec spec_;
  int32_t final_ = -1;
  int32_t any_[3] = {-1, -1, -1};  // any_[n]: any n more bytes, then final
};

}  // namespace

std::shared_ptr<const ByteDfaSpec> TokenSetDfa(std::vector<int32_t> ids, bool excluded) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (!ids.empty() && ids.front() < 0) {
    throw Error(ErrorKind::kInvalidArgument, "token id " + std::to_string(ids.front()) + " is negative");
  }
  ByteDfaSpec spec = TokenSetBuilder(ids, excluded).Build();
  spec.is_token_set = true;
  spec.tokens_excluded = excluded;
  spec.token_ids = std::move(ids);
  return std::make_shared<const ByteDfaSpec>(std::move(spec));
}

ExprId AddTokenTagDispatch(Grammar* g, const std::vector<std::pair<int32_t, ExprId>>& dispatches,
                           std::vector<int32_t> excludes, bool loop) {
  std::vector<ExprId> dispatched;
  for (const auto& [trigger, continuation] : dispatches) {
    excludes.push_back(trigger);
    dispatched.push_back(g->AddSequence({g->AddByteDfa(TokenSetDfa({trigger}, false)), continuation}));
  }
  const ExprId free = g->AddByteDfa(TokenSetDfa(std::move(excludes), true));
  if (dispatched.empty()) return g->AddRepeat(free, 0, kUnbounded);
  if (loop) {
    dispatched.push_back(free);
    return g->AddRepeat(g->AddChoice(std::move(dispatched)), 0, kUnbounded);
  }
  dispatched.push_back(g->AddEmpty());
  return g->AddSequence({g->AddRepeat(free, 0, kUnbounded), g->AddChoice(std::move(dispatched))});
}

int64_t MaxNamedTokenId(const Grammar& g) {
  int64_t max_id = -1;
  for (ExprId i = 0; i < g.num_exprs(); ++i) {
    const Expr& e = g.expr(i);
    if (e.kind != ExprKind::kByteDfa || !e.dfa->is_token_set || e.dfa->token_ids.empty()) continue;
    max_id = std::max<int64_t>(max_id, e.dfa->token_ids.back());
  }
  return max_id;
}

}  // namespace xg2
