// Parser states of any-order rules (see AnyOrderSpec and grammar/any_order_lowering.h).
//
// A state is (node, members so far, set of the once-only members seen). The states are virtual
// automaton states: they read no bytes, their rule edges go to the member rules, and their ids
// lie above the real states and the counted loops'. Two ids per node are fixed: the node's
// start (nothing yet) and an "any" state (every member allowed, may end: the context-free
// over-approximation used for FOLLOW sets). The others are made on first use and kept: the
// reachable sets are exponential in the members, the sets a parse meets are few.
//
// Thread-safe: Next() interns under a mutex; reading a state by id needs no lock (entries never
// move, and an id only reaches another thread through the parser state it was made for).
#pragma once

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

class AnyOrderStates {
 public:
  struct Node {
    RuleId rule = -1;
    std::vector<RuleId> first;  // per member: the member alone; -1 if it can never complete
    std::vector<RuleId> rest;   // per member: separator then member; -1 likewise
    AnyOrderSpec spec;
    int32_t num_once = 0;                   // required + optional: the members with a bit in the set
    int32_t words = 1;                      // 64-bit words of the set
    int32_t count_cap = 1;                  // member counts saturate here (the largest count that matters)
    uint64_t awaited_bits = 0;              // bit (rule % 64) of every member rule
    int32_t num_productive_once = 0;        // once-only members that can complete
    bool repeatable = false;                // some repeated member can complete
    std::vector<uint64_t> productive_once;  // bit per once-only member that can complete
    // spec.presence as bit sets: per rule the trigger's (word, bit), then its alternatives.
    struct PresenceMasks {
      int32_t word = 0;
      uint64_t bit = 0;
      std::vector<std::vector<uint64_t>> any_of;
    };
    std::vector<PresenceMasks> presence;
    int32_t start_state = -1;
    int32_t any_state = -1;
  };

  AnyOrderStates() = default;
  AnyOrderStates(const AnyOrderStates&) = delete;
  AnyOrderStates& operator=(const AnyOrderStates&) = delete;
  ~AnyOrderStates();

  // Derives a node's fields from its rule, first, rest (-1: a member that cannot complete)
  // and spec.
  static void Prepare(Node* n);
  // Whether some sequence of members takes the node from its start to an end.
  static bool StartLive(const Node& n);

  // Takes the nodes (rule, first, rest, spec set) and gives them ids from `base` up.
  // num_rules sizes the member lookup.
  void Init(std::vector<Node> nodes, int32_t base, int32_t num_rules);

  bool empty() const { return nodes_.empty(); }
  int32_t base() const { return base_; }
  bool Contains(int32_t v) const { return v >= base_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // Node index of an any-order rule, or -1.
  int32_t NodeOfRule(RuleId r) const { return r < static_cast<RuleId>(node_of_rule_.size()) ? node_of_rule_[r] : -1; }
  const Node& NodeOf(int32_t v) const { return nodes_[NodeIndex(v)]; }
  bool IsFinal(int32_t v) const;
  // Calls fn(member rule) for each member rule that may come next in state v: not seen yet
  // (or repeatable), within max_count, and leaving a state that can still end (the parser
  // only predicts what can complete; see Live).
  template <class Fn>
  void ForEachNext(int32_t v, Fn&& fn) const {
    const Node& n = NodeOf(v);
    if (v == n.any_state) {
      for (RuleId r : n.first)
        if (r >= 0) fn(r);
      for (RuleId r : n.rest)
        if (r >= 0) fn(r);
      return;
    }
    const bool start = v == n.start_state;
    const Facts f = FactsOf(n, v);
    if (n.spec.max_count >= 0 && f.count >= n.spec.max_count) return;
    const uint64_t* bits = start ? nullptr : EntryOf(v).bits.get();
    const std::vector<RuleId>& rules = start ? n.first : n.rest;
    for (int32_t i = 0; i < static_cast<int32_t>(rules.size()); ++i) {
      if (rules[i] < 0) continue;
      if (i < n.num_once && bits != nullptr && (bits[i >> 6] >> (i & 63) & 1)) continue;
      if (LiveAfter(n, f, bits, i)) fn(rules[i]);
    }
  }
  // The state after member rule `rule` completes in state v, or -1 if it may not come there.
  int32_t Next(int32_t v, RuleId rule) const;
  // Number of states made so far and their approximate heap size.
  int64_t num_made() const;
  size_t MemoryBytes() const;

 private:
  struct Entry {
    int32_t node = -1;
    int32_t count = 0;
    std::unique_ptr<uint64_t[]> bits;
  };
  // What decides whether a state can still end: members so far (saturated at count_cap),
  // required members missing, productive once-only members not seen yet.
  struct Facts {
    int64_t count;
    int64_t missing;
    int64_t unseen;
  };
  Facts FactsOf(const Node& n, int32_t v) const;
  static Facts After(const Node& n, Facts f, int32_t member) {
    f.count = std::min<int64_t>(f.count + 1, n.count_cap);
    if (member < n.spec.num_required) --f.missing;
    if (member < n.num_once) --f.unseen;
    return f;
  }
  // Some completion exists: the missing required members and enough others to reach
  // min_count fit under max_count, with the members still available.
  static bool Live(const Node& n, const Facts& f) {
    const int64_t kMany = INT64_MAX / 4;
    int64_t room = n.spec.max_count >= 0 ? n.spec.max_count - f.count : kMany;
    int64_t available = n.repeatable ? kMany : f.unseen;
    int64_t need = std::max(f.missing, n.spec.min_count - f.count);
    return need <= std::min(room, available);
  }
  // Live after member i (-1: none, the start) joins a state with facts f and once-only set
  // bits (nullptr: none).
  static bool LiveAfter(const Node& n, const Facts& f, const uint64_t* bits, int32_t i);
  // Under presence rules (no max_count, see AnyOrderSpec): the largest set of members that a
  // completion of `seen` can reach drops, to a fixpoint, every unseen trigger none of whose
  // alternatives fits; the state can end iff no seen trigger is dropped, the required members
  // stay and the set holds enough members for min_count. Exact: no completion holds a dropped
  // member, and the set itself is a completion.
  // reach: scratch of n.words words.
  static bool PresenceLive(const Node& n, const uint64_t* seen, int64_t count, uint64_t* reach);
  static bool PresenceHolds(const Node& n, const uint64_t* seen);
  struct Member {
    int32_t node = -1;
    int32_t index = -1;
    bool rest = false;
  };
  static constexpr int kChunkBits = 12;
  static constexpr int kMaxChunks = 4096;  // 16M states

  int32_t NodeIndex(int32_t v) const {
    int32_t k = v - base_;
    return k < 2 * static_cast<int32_t>(nodes_.size()) ? k / 2 : EntryOf(v).node;
  }
  const Entry& EntryOf(int32_t v) const {
    uint32_t k = static_cast<uint32_t>(v - made_base_);
    return chunks_[k >> kChunkBits].load(std::memory_order_acquire)[k & ((1u << kChunkBits) - 1)];
  }
  int32_t Intern(int32_t node, int32_t count, const uint64_t* bits) const;

  std::vector<Node> nodes_;
  std::vector<int32_t> node_of_rule_;
  std::vector<Member> member_of_rule_;
  int32_t base_ = INT32_MAX;
  int32_t made_base_ = INT32_MAX;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, int32_t> index_;  // (node, count, bits) -> id
  mutable std::unique_ptr<std::atomic<Entry*>[]> chunks_;
  mutable int32_t num_made_ = 0;
};

}  // namespace xg2
