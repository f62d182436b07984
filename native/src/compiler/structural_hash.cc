#include "compiler/structural_hash.h"

#include <algorithm>
#include <unordered_map>

#include "grammar/expr_hash.h"
#include "support/scc.h"

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
      for (RuleId m : n.first)
        if (m >= 0) callees[r].push_back(m);
      for (RuleId m : n.rest)
        if (m >= 0) callees[r].push_back(m);
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

// A recursive component whose members x size passes this is serialised once, not once per
// member (see below): about 10 ms of hashing.
constexpr int64_t kMaxComponentSerializationWork = int64_t{4} << 20;
// Label refinement rounds for such a component (each reads it once); unsettled after these,
// members are named by place.
constexpr int kMaxLabelRounds = 32;

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

  // Serialises rule r into h; a callee inside the component `comp` is written by
  // in_component(callee, h), others by their final hash.
  auto serialize = [&](RuleId r, int32_t comp, const auto& in_component, Hasher* h) {
    auto ref = [&](RuleId callee) {
      if (comp_of[callee] == comp) {
        h->Add(1);
        in_component(callee, h);
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
      h->Add((static_cast<uint64_t>(n.spec.num_required) << 40) ^ (static_cast<uint64_t>(n.spec.num_optional) << 20) ^
             static_cast<uint64_t>(n.spec.num_repeated));
      h->Add(static_cast<uint64_t>(n.spec.min_count));
      h->Add(static_cast<uint64_t>(n.spec.max_count));
      HashPresenceRules(n.spec.presence, h);
      for (size_t i = 0; i < n.first.size(); ++i) {
        for (RuleId m : {n.first[i], n.rest[i]}) {
          if (m < 0)
            h->Add(3);
          else
            ref(m);
        }
      }
      return;
    }
    h->Add(static_cast<uint64_t>(count[r]));
    h->Add(g.rule_nullable[r]);
    if (g.HasCharBudget(r)) {         // a caller's walk into the rule is counted
      h->Add(0x4A534F4E43484152ull);  // "JSONCHAR"
      h->Add((static_cast<uint64_t>(static_cast<uint32_t>(g.rule_json_min_chars[r])) << 32) |
             static_cast<uint32_t>(g.rule_json_max_chars[r]));
    }
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

  // A breadth-first serialisation of component `comp` from `start`: in-component callees are
  // numbered in the order first met. Returns the hash; `local` gets each member's number.
  auto serialize_from = [&](RuleId start, int32_t comp, std::unordered_map<RuleId, int32_t>* local) {
    local->clear();
    local->emplace(start, 0);
    std::vector<RuleId> queue{start};
    auto numbered = [&](RuleId callee, Hasher* h) {
      auto it = local->find(callee);
      if (it == local->end()) {
        it = local->emplace(callee, static_cast<int32_t>(local->size())).first;
        queue.push_back(callee);
      }
      h->Add(static_cast<uint64_t>(it->second));
    };
    Hasher h;
    for (size_t q = 0; q < queue.size(); ++q) serialize(queue[q], comp, numbered, &h);
    return h.Finish();
  };
  // What one serialisation of a component reads: its states and edges.
  auto component_size = [&](const std::vector<RuleId>& members) {
    int64_t size = 0;
    for (RuleId r : members) {
      size += count[r] + 1;
      if (count[r] > 0) {
        size += g.byte_edge_begin[first[r] + count[r]] - g.byte_edge_begin[first[r]];
        size += g.rule_edge_begin[first[r] + count[r]] - g.rule_edge_begin[first[r]];
      }
    }
    return size;
  };
  // A large component: one serialisation from its lowest rule (linear, where one per member
  // is quadratic: a recursive meta-schema's hundreds of rules took seconds), and each member
  // named by its class under refined labels. Round 0 labels a member by its own states and
  // edges; each round adds its in-component callees' labels of the round before. Once a round
  // makes no new class, members of one class have the same unfolding, so the same masks: the
  // dozens of copies of an object member a schema's alternatives make share their entries.
  // Sound across grammars: the whole serialisation is in the hash (another grammar with the
  // same component reached from another first rule only misses the cross-grammar cache).
  auto out_of_place_hashes = [&](const std::vector<RuleId>& members, int32_t comp) {
    std::unordered_map<RuleId, int32_t> local;
    const Hash128 whole = serialize_from(*std::min_element(members.begin(), members.end()), comp, &local);
    std::unordered_map<RuleId, Hash128> label;
    for (RuleId r : members) label[r] = Hash128{};
    size_t classes = 1;
    bool stable = false;
    for (int round = 0; round < kMaxLabelRounds && !stable; ++round) {
      std::unordered_map<RuleId, Hash128> next;
      auto labelled = [&](RuleId callee, Hasher* h) { h->Add(label.at(callee)); };
      for (RuleId r : members) {
        Hasher h;
        serialize(r, comp, labelled, &h);
        next[r] = h.Finish();
      }
      std::unordered_map<Hash128, int, Hash128Hasher> distinct;
      for (const auto& [r, l] : next) distinct.emplace(l, 0);
      stable = round > 0 && distinct.size() == classes;
      classes = distinct.size();
      label = std::move(next);
    }
    for (RuleId r : members) {
      Hasher member;
      member.Add(0x5343434C41535321ull);  // "SCCLASS!"
      member.Add(whole);
      if (stable) {
        member.Add(label.at(r));
      } else {  // not settled: each member by its place in the serialisation
        member.Add(static_cast<uint64_t>(local.at(r)));
      }
      out.rule[r] = member.Finish();
    }
  };
  for (size_t c = 0; c < comps.size(); ++c) {
    if (comps[c].size() > 1 &&
        static_cast<int64_t>(comps[c].size()) * component_size(comps[c]) > kMaxComponentSerializationWork) {
      out_of_place_hashes(comps[c], static_cast<int32_t>(c));
      continue;
    }
    std::unordered_map<RuleId, int32_t> local;
    for (RuleId r : comps[c]) out.rule[r] = serialize_from(r, static_cast<int32_t>(c), &local);
  }
  return out;
}

Hash128 MaskEntryKey(const GrammarAutomaton& g, const RuleHashes& hashes, int32_t state, int32_t loop_state) {
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

std::vector<Hash128> ComputeFollowFingerprints(const GrammarAutomaton& g, const RuleHashes& hashes) {
  const int32_t num_rules = g.num_rules();
  // What a follow target state can still read, serialised breadth first from it (its rule's
  // states after it, callees by their hashes): the caller's states before the call do not
  // matter, so a tool's rules keep their fingerprints inside any set of tools.
  std::vector<int32_t> local(g.num_states(), -1), queue;
  constexpr size_t kMaxForwardStates = 64;
  auto forward = [&](int32_t t) {
    Hasher h;
    queue.assign(1, t);
    local[t] = 0;
    bool complete = true;
    auto number = [&](int32_t s) {
      if (local[s] < 0) {
        local[s] = static_cast<int32_t>(queue.size());
        queue.push_back(s);
      }
      return static_cast<uint64_t>(local[s]);
    };
    for (size_t q = 0; q < queue.size(); ++q) {
      if (queue.size() > kMaxForwardStates) {
        complete = false;
        break;
      }
      const int32_t s = queue[q];
      h.Add(g.state_final[s]);
      h.Add(static_cast<uint64_t>(g.byte_edge_begin[s + 1] - g.byte_edge_begin[s]));
      for (int32_t k = g.byte_edge_begin[s]; k < g.byte_edge_begin[s + 1]; ++k) {
        const auto& e = g.byte_edges[k];
        h.Add((static_cast<uint64_t>(e.lo) << 40) | (static_cast<uint64_t>(e.hi) << 32) | number(e.target));
      }
      h.Add(static_cast<uint64_t>(g.rule_edge_begin[s + 1] - g.rule_edge_begin[s]));
      for (int32_t k = g.rule_edge_begin[s]; k < g.rule_edge_begin[s + 1]; ++k) {
        h.Add(hashes.rule[g.rule_edges[k].rule]);
        h.Add(number(g.rule_edges[k].target));
      }
    }
    for (int32_t s : queue) local[s] = -1;
    if (complete) return h.Finish();
    // Longer: the whole rule and the position stand for it (as exact; a rule of that size is
    // usually the same object in every grammar that has it, while short remainders, such as
    // the end of a top-level choice, are what differ between grammars).
    Hasher whole;
    whole.Add(hashes.rule[g.state_rule[t]]);
    whole.Add(static_cast<uint64_t>(t - hashes.first_state[g.state_rule[t]]));
    return whole.Finish();
  };
  std::vector<std::vector<std::pair<Hash128, RuleId>>> targets(num_rules);
  std::unordered_map<int32_t, Hash128> forward_of;  // a state is the target of many calls
  for (RuleId r = 0; r < num_rules; ++r) {
    for (int32_t t : g.rule_follow_targets[r]) {
      Hash128 th;
      if (!g.is_virtual(t)) {
        auto it = forward_of.find(t);
        if (it == forward_of.end()) it = forward_of.emplace(t, forward(t)).first;
        th = it->second;
      } else if (g.is_loop_state(t)) {
        const auto& rep = g.RepeatOf(t);
        Hasher h;
        h.Add(hashes.rule[rep.rule]);
        h.Add(0x4C4F4F50ull);  // "LOOP"
        h.Add(static_cast<uint64_t>(t - rep.base));
        th = h.Finish();
      } else {
        return {};  // any-order states are made on demand: not fingerprinted
      }
      targets[r].push_back({th, g.RuleOf(t)});
    }
  }
  // A rule's label: per follow target, what the target reads and the label of the target's
  // rule (whose completion continues into its own follow targets).
  // Where the follow closure is acyclic the labels stop changing after its depth in rounds,
  // and the value is the hash of the unfolded closure, the same in any grammar. Where it has
  // a cycle (a rule called from inside a recursive rule) they never settle (see below).
  std::vector<Hash128> label(num_rules), next(num_rules);
  std::vector<Hash128> items;
  auto relabel = [&](RuleId r) {
    items.clear();
    for (const auto& [th, owner] : targets[r]) {
      Hasher h;
      h.Add(th);
      h.Add(label[owner]);
      items.push_back(h.Finish());
    }
    std::sort(items.begin(), items.end(),
              [](const Hash128& a, const Hash128& b) { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; });
    Hasher h;
    h.Add(0x464F4C4C4F57ull);  // "FOLLOW"
    h.Add(items.size());
    for (const auto& x : items) h.Add(x);
    return h.Finish();
  };
  // Labels settle within this many rounds for closures up to this deep; each round is a pass
  // over every follow target, and grammars with a cycle run them all.
  constexpr int32_t kMaxDepth = 24;
  for (int32_t round = 0; round <= std::min(num_rules, kMaxDepth); ++round) {
    bool settled = true;
    for (RuleId r = 0; r < num_rules; ++r) {
      next[r] = relabel(r);
      settled = settled && next[r] == label[r];
    }
    label.swap(next);
    if (settled) return label;
  }
  // Rules whose labels did not settle (cyclic or deep closures): the follow graph reachable
  // from the rule, serialised breadth first (each rule's targets ordered by structure, then
  // by the owner's label), describes the closure exactly; it is canonical wherever that
  // order has no ties, and a tie only costs reuse, never correctness.
  std::vector<std::vector<std::pair<Hash128, RuleId>>> sorted_targets(num_rules);
  auto key_less = [&](const std::pair<Hash128, RuleId>& a, const std::pair<Hash128, RuleId>& b) {
    if (!(a.first == b.first)) return a.first.hi != b.first.hi ? a.first.hi < b.first.hi : a.first.lo < b.first.lo;
    const Hash128 &la = label[a.second], &lb = label[b.second];
    return la.hi != lb.hi ? la.hi < lb.hi : la.lo < lb.lo;
  };
  constexpr size_t kMaxClosureRules = 256;
  std::vector<int32_t> local_rule(num_rules, -1);
  std::vector<RuleId> order;
  auto serialise = [&](RuleId r) {
    Hasher h;
    h.Add(0x4359434C4943ull);  // "CYCLIC"
    order.assign(1, r);
    local_rule[r] = 0;
    bool complete = true;
    for (size_t q = 0; q < order.size(); ++q) {
      if (order.size() > kMaxClosureRules) {
        complete = false;
        break;
      }
      auto& edges = sorted_targets[order[q]];
      if (edges.empty() && !targets[order[q]].empty()) {
        edges = targets[order[q]];
        std::sort(edges.begin(), edges.end(), key_less);
      }
      h.Add(edges.size());
      for (const auto& [th, owner] : edges) {
        if (local_rule[owner] < 0) {
          local_rule[owner] = static_cast<int32_t>(order.size());
          order.push_back(owner);
        }
        h.Add(th);
        h.Add(static_cast<uint64_t>(local_rule[owner]));
      }
    }
    for (RuleId x : order) local_rule[x] = -1;
    return complete ? h.Finish() : Hash128{};
  };
  for (RuleId r = 0; r < num_rules; ++r) next[r] = relabel(r) == label[r] ? label[r] : serialise(r);
  return next;
}

}  // namespace xg2
