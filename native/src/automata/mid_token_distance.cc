#include "automata/mid_token_distance.h"

#include <algorithm>

#include "xg2/tokenizer.h"

namespace xg2 {

namespace {

// The most relaxation passes; a grammar that needs more gets the bound 0 everywhere (the
// walk is then never skipped, which is slower but exact).
constexpr int kMaxPasses = 64;

}  // namespace

std::vector<uint8_t> MidTokenEntryDistances(const GrammarAutomaton& g) {
  const int32_t n = g.num_states();
  std::vector<uint8_t> dist(static_cast<size_t>(n), kFarMidTokenEntry);
  bool any = false;
  for (int32_t s = 0; s < n; ++s) {
    if (g.ByteTarget(s, kMidTokenLead) >= 0) dist[s] = 0, any = true;
  }
  if (!any) return {};
  auto at = [&](int32_t t) -> int { return t < 0 || g.is_virtual(t) ? 0 : dist[t]; };
  // Relax until nothing changes: a byte of text costs 1, predicting a rule, skipping a
  // nullable one and returning to a caller cost nothing.
  for (int pass = 0;; ++pass) {
    bool changed = false;
    for (int32_t s = n - 1; s >= 0; --s) {
      int best = dist[s];
      for (int32_t k = g.byte_edge_begin[s]; k < g.byte_edge_begin[s + 1]; ++k) {
        if (g.byte_edges[k].lo < kMidTokenLead) best = std::min(best, at(g.byte_edges[k].target) + 1);
      }
      for (int32_t k = g.rule_edge_begin[s]; k < g.rule_edge_begin[s + 1]; ++k) {
        const DfaRuleEdge& e = g.rule_edges[k];
        for (int32_t p : g.rule_prediction_states[e.rule]) best = std::min(best, at(p));
        if (g.rule_nullable[e.rule]) best = std::min(best, at(e.target));
      }
      if (g.state_final[s]) {
        for (int32_t t : g.rule_follow_targets[g.state_rule[s]]) best = std::min(best, at(t));
      }
      if (best < dist[s]) {
        dist[s] = static_cast<uint8_t>(std::min<int>(best, kFarMidTokenEntry));
        changed = true;
      }
    }
    if (!changed) break;
    if (pass == kMaxPasses) {
      std::fill(dist.begin(), dist.end(), 0);
      break;
    }
  }
  return dist;
}

}  // namespace xg2
