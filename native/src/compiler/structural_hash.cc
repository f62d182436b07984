#include "compiler/structural_hash.h"

#include "support/scc.h"

#include <algorithm>
#include <unordered_map>

namespace xg2 {
namespace {

// Callees of each rule (through its DFA's rule edges; a counted loop's callee is its child).
std::vector<std::vector<RuleId>> CalleeGraph(const GrammarAutomaton& g, const std::vector<int32_t>& first,
                                             const std::vector<int32_t>& count) {
  std::vector<std::vector<RuleId>> callees(g.num_rules());
  for (RuleId r = 0; r < g.num_rules(); ++r) {
    if (g.rule_repeat[r] >= 0) {
      callees[r].push_back(g.repeats[g.rule_repeat[r]].child);
      continue;
    }
    if (int32_t node = g.any_order->NodeOfRule(r); node >= 0) {
      const auto& n = g.any_order->nodes()[node];
      for (RuleId m : n.first) if (m >= 0) callees[r].push_back(m);
      for (RuleId m : n.rest) if (m >= 0) callees[r].push_back(m);
      continue;
    }
    for (int32_t s = first[r]; s < first[r] + count[r]; ++s) {
      for (int32_t k = g.rule_edge_begin[s]; k < g.rule_edge_begin[s + 1]; ++k) {
        callees[r].push_back(g.rule_edges[k].rule);
      }
    }
    std::sort(callees[r].begin(), callees[r].end());
    callees[r].erase(std::unique(callees[r].begin(), callees[r].end()), callees[r].end());
  }
  return callees;
}

}  // namespace

RuleHashes ComputeRuleHashes(const GrammarAutomaton& g) {
  const int32_t n = g.num_rules();
  RuleHashes out;
  out.rule.assign(n, Hash128{});
  std::vector<int32_t> first(n, 0), count(n, 0);
  for (int32_t s = g.num_states() - 1; s >= 0; --s) {
    first[g.state_rule[s]] = s;
    ++count[g.state_rule[s]];
  }
  out.first_state = first;
  auto callees = CalleeGraph(g, first, count);
  std::vector<int32_t> comp_of(n, -1);
  auto comps = StronglyConnectedComponents(callees);
  for (size_t c = 0; c < comps.size(); ++c)
    for (RuleId r : comps[c]) comp_of[r] = static_cast<int32_t>(c);
  std::vector<uint8_t> done(n, 0);

  // Serialises rule r into h; callees inside the component `comp` get local indices from
  // `local` (assigned on first sight, appended to `queue`), others their final hash.
  auto serialize = [&](RuleId r, int32_t comp, std::unordered_map<RuleId, int32_t>* local,
                       std::vector<RuleId>* queue, Hasher* h) {
    auto ref = [&](RuleId callee) {
      if (comp_of[callee] == comp) {
        auto it = local->find(callee);
        if (it == local->end()) {
          it = local->emplace(callee, static_cast<int32_t>(local->size())).first;
          queue->push_back(callee);
        }
        h->Add(1);
        h->Add(static_cast<uint64_t>(it->second));
      } else {
        h->Add(2);
        h->Add(out.rule[callee]);
      }
    };
    if (g.rule_repeat[r] >= 0) {
      const auto& rep = g.repeats[g.rule_repeat[r]];
      h->Add(0x5245504541540000ull);  // "REPEAT"
      h->Add(static_cast<uint64_t>(rep.min));
      h->Add(static_cast<uint64_t>(rep.max));
      ref(rep.child);
      return;
    }
    if (int32_t node = g.any_order->NodeOfRule(r); node >= 0) {
      const auto& n = g.any_order->nodes()[node];
      h->Add(0x414E594F52444552ull);  // "ANYORDER"
      h->Add((static_cast<uint64_t>(n.spec.num_required) << 40) ^
             (static_cast<uint64_t>(n.spec.num_optional) << 20) ^ static_cast<uint64_t>(n.spec.num_repeated));
      h->Add(static_cast<uint64_t>(n.spec.min_count));
      h->Add(static_cast<uint64_t>(n.spec.max_count));
      for (size_t i = 0; i < n.first.size(); ++i) {
        for (RuleId m : {n.first[i], n.rest[i]}) {
          if (m < 0) h->Add(3);
          else ref(m);
        }
      }
      return;
    }
    h->Add(static_cast<uint64_t>(count[r]));
    h->Add(g.rule_nullable[r]);
    for (int32_t s = first[r]; s < first[r] + count[r]; ++s) {
      h->Add(g.state_final[s]);
      h->Add(static_cast<uint64_t>(g.byte_edge_begin[s + 1] - g.byte_edge_begin[s]));
      for (int32_t k = g.byte_edge_begin[s]; k < g.byte_edge_begin[s + 1]; ++k) {
        const auto& e = g.byte_edges[k];
        h->Add((static_cast<uint64_t>(e.lo) << 40) | (static_cast<uint64_t>(e.hi) << 32) |
               static_cast<uint32_t>(e.target - first[r]));
      }
      h->Add(static_cast<uint64_t>(g.rule_edge_begin[s + 1] - g.rule_edge_begin[s]));
      for (int32_t k = g.rule_edge_begin[s]; k < g.rule_edge_begin[s + 1]; ++k) {
        ref(g.rule_edges[k].rule);
        h->Add(static_cast<uint32_t>(g.rule_edges[k].target - first[r]));
      }
    }
  };

  for (size_t c = 0; c < comps.size(); ++c) {
    for (RuleId r : comps[c]) {
      std::unordered_map<RuleId, int32_t> local{{r, 0}};
      std::vector<RuleId> queue{r};
      Hasher h;
      for (size_t q = 0; q < queue.size(); ++q) serialize(queue[q], static_cast<int32_t>(c), &local, &queue, &h);
      out.rule[r] = h.Finish();
    }
  }
  return out;
}

Hash128 MaskEntryKey(const GrammarAutomaton& g, const RuleHashes& hashes, int32_t state,
                     int32_t loop_state) {
  Hasher h;
  RuleId r = g.state_rule[state];
  h.Add(hashes.rule[r]);
  h.Add(static_cast<uint64_t>(state - hashes.first_state[r]));
  if (loop_state < 0) {
    h.Add(0);
  } else {
    const auto& rep = g.RepeatOf(loop_state);
    h.Add(hashes.rule[rep.rule]);
    int32_t off = loop_state - rep.base;
    h.Add(off == rep.span ? 1 : off == rep.span + 1 ? 2 : 3);
    h.Add(static_cast<uint64_t>(off));
  }
  return h.Finish();
}

}  // namespace xg2
