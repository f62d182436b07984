// The hash of one expression node's own fields (kind, bytes, ranges, bounds, dispatch spec),
// shared by the passes that hash grammar structure; callers add rule references and children
// their own way.
#pragma once

#include <string>

#include "support/hash.h"
#include "xg2/grammar.h"

namespace xg2 {

template <class H>
inline void HashBytes(const std::string& s, H* h) {
  h->Add(s.size());
  uint64_t word = 0;
  size_t n = 0;
  for (unsigned char c : s) {
    word = (word << 8) | c;
    if (++n % 8 == 0) h->Add(word), word = 0;
  }
  h->Add(word);
}

// An AnyOrder node's presence rules (AnyOrderSpec::presence).
template <class H>
inline void HashPresenceRules(const std::vector<AnyOrderPresenceRule>& rules, H* h) {
  h->Add(rules.size());
  for (const auto& r : rules) {
    h->Add(static_cast<uint64_t>(r.member) | (uint64_t{1} << 40));
    for (const auto& alt : r.any_of) {
      h->Add(alt.size() | (uint64_t{2} << 40));
      for (int32_t m : alt) h->Add(static_cast<uint64_t>(m));
    }
  }
}

// Everything but rule references (kRuleRef adds nothing here) and children.
// H: Hasher, or anything with Add(uint64_t) (Grammar's node table uses a one-lane hash).
template <class H>
inline void HashExprFields(const Expr& e, H* h) {
  h->Add(static_cast<uint64_t>(e.kind) + 1);
  switch (e.kind) {
    case ExprKind::kBytes: HashBytes(e.bytes, h); break;
    case ExprKind::kCharClass:
      h->Add(e.negated ? 1 : 0);
      h->Add(e.ranges.size());
      for (const auto& r : e.ranges) h->Add((static_cast<uint64_t>(r.lo) << 32) | r.hi);
      break;
    case ExprKind::kRepeat:
      h->Add(static_cast<uint64_t>(e.min));
      h->Add(static_cast<uint64_t>(e.max));
      break;
    case ExprKind::kTagDispatch: {
      const TagDispatchSpec& d = *e.dispatch;
      for (const auto* list : {&d.triggers, &d.ends, &d.excludes}) {
        h->Add(list->size());
        for (const auto& s : *list) HashBytes(s, h);
      }
      h->Add((d.loop ? 1u : 0u) | (d.plain_end ? 2u : 0u) | (d.at_least_one ? 4u : 0u));
      h->Add(static_cast<uint64_t>(d.max_chars));
      break;
    }
    case ExprKind::kByteDfa: {
      const ByteDfaSpec& d = *e.dfa;
      h->Add(d.is_final.size());
      h->Add((d.is_token_set ? 1u : 0u) | (d.tokens_excluded ? 2u : 0u));
      if (d.is_unbuilt()) HashBytes(d.unbuilt_source, h);
      for (int32_t s = 0; s < d.num_states(); ++s) {
        h->Add((static_cast<uint64_t>(d.edges[s].size()) << 1) | d.is_final[s]);
        for (const auto& x : d.edges[s])
          h->Add((static_cast<uint64_t>(x.lo) << 40) | (static_cast<uint64_t>(x.hi) << 32) |
                 static_cast<uint32_t>(x.target));
      }
      break;
    }
    case ExprKind::kAnyOrder: {
      const AnyOrderSpec& d = *e.any_order;
      h->Add((static_cast<uint64_t>(d.num_required) << 40) ^ (static_cast<uint64_t>(d.num_optional) << 20) ^
             static_cast<uint64_t>(d.num_repeated));
      h->Add(static_cast<uint64_t>(d.min_count));
      h->Add(static_cast<uint64_t>(d.max_count));
      HashPresenceRules(d.presence, h);
      break;
    }
    case ExprKind::kEmpty:
    case ExprKind::kSequence:
    case ExprKind::kChoice:
    case ExprKind::kRuleRef: break;
  }
}

}  // namespace xg2
