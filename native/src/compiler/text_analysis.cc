#include "compiler/text_analysis.h"

#include <algorithm>

#include "tokenizer/text_slice.h"

namespace xg2 {

int32_t TextBound(const GrammarAutomaton& a, int32_t state, std::vector<int32_t>* reached) {
  std::vector<uint8_t> seen(static_cast<size_t>(a.num_states()), 0);
  std::vector<int32_t> level{state}, next;
  seen[state] = 1;
  // One character from (s, text state): every byte range text allows must be covered by
  // byte edges of s (DFA edges do not overlap, so covered bytes add up).
  auto expand = [&](auto&& self, int32_t s, int32_t text) -> bool {
    const TextRanges ranges = TextRangesFrom(text);
    for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
      int32_t covered = 0;
      for (int32_t k = a.byte_edge_begin[s]; k < a.byte_edge_begin[s + 1]; ++k) {
        const DfaByteEdge& e = a.byte_edges[k];
        const int32_t lo = std::max<int32_t>(e.lo, r->lo), hi = std::min<int32_t>(e.hi, r->hi);
        if (lo > hi) continue;
        covered += hi - lo + 1;
        if (r->next != 0) {
          if (!self(self, e.target, r->next)) return false;
        } else if (!seen[e.target]) {
          seen[e.target] = 1;
          next.push_back(e.target);
        }
      }
      if (covered != r->hi - r->lo + 1) return false;
    }
    return true;
  };
  for (int32_t chars = 0; !level.empty(); ++chars) {
    if (chars >= kTextCharsCap - 1) return kTextCharsCap - 1;
    for (int32_t s : level) {
      if (!expand(expand, s, 0)) return chars;
    }
    if (reached != nullptr) reached->insert(reached->end(), level.begin(), level.end());
    level.swap(next);
    next.clear();
  }
  return kTextCharsCap;
}

bool TextExact(const GrammarAutomaton& a, int32_t state, int32_t k) {
  auto plain = [&](int32_t s) { return !a.state_final[s] && a.rule_edge_begin[s + 1] == a.rule_edge_begin[s]; };
  std::vector<int32_t> level{state}, next;
  // One character from (s, text state) into `next`; false if a state on the way is not
  // plain, or (when `last`) if any byte of a text character has an edge at all.
  auto expand = [&](auto&& self, int32_t s, int32_t text, bool last) -> bool {
    const TextRanges ranges = TextRangesFrom(text);
    for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
      for (int32_t e = a.byte_edge_begin[s]; e < a.byte_edge_begin[s + 1]; ++e) {
        const DfaByteEdge& edge = a.byte_edges[e];
        if (std::max<int32_t>(edge.lo, r->lo) > std::min<int32_t>(edge.hi, r->hi)) continue;
        if (last && text == 0) return false;
        if (!plain(edge.target)) return false;
        if (r->next != 0) {
          if (!self(self, edge.target, r->next, last)) return false;
        } else if (std::find(next.begin(), next.end(), edge.target) == next.end()) {
          next.push_back(edge.target);
        }
      }
    }
    return true;
  };
  for (int32_t chars = 0; chars <= k; ++chars) {
    for (int32_t s : level) {
      if (!expand(expand, s, 0, chars == k)) return false;
    }
    level.swap(next);
    next.clear();
  }
  return true;
}

int32_t TextBoundOfCode(LazyDfa& dfa, int32_t start) {
  std::vector<uint8_t> seen;  // per local state: bit 0 at a boundary, bit (1 + text state) inside
  auto mark = [&](int32_t code, int32_t text) {
    const size_t local = static_cast<size_t>(code >> 2);
    if (local >= seen.size()) seen.resize(local + 1, 0);
    const uint8_t bit = static_cast<uint8_t>(1u << (text == 0 ? 0 : text));
    if (seen[local] & bit) return false;
    seen[local] |= bit;
    return true;
  };
  std::vector<int32_t> level{start}, next;
  mark(start, 0);
  auto expand = [&](auto&& self, int32_t code, int32_t text) -> bool {
    const TextRanges ranges = TextRangesFrom(text);
    for (const TextRange* r = ranges.begin; r != ranges.end; ++r) {
      for (int b = r->lo; b <= r->hi; ++b) {
        const int32_t t = dfa.Step(code, static_cast<uint8_t>(b));
        if (t == LazyDfa::kDead) return false;
        if (r->next == 0) {
          if (mark(t, 0)) next.push_back(t);
        } else if (mark(t, r->next) && !self(self, t, r->next)) {
          return false;
        }
      }
    }
    return true;
  };
  for (int32_t chars = 0; !level.empty(); ++chars) {
    if (chars >= kTextCharsCap - 1) return kTextCharsCap - 1;
    for (int32_t code : level) {
      if (!expand(expand, code, 0)) return chars;
    }
    level.swap(next);
    next.clear();
  }
  return kTextCharsCap;
}

}  // namespace xg2
