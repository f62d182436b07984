// Product constructions over byte DFAs, explored from the start so only reachable states are
// built; edges are split per byte and merged back into ranges.
#include "automata/byte_dfa_ops.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "automata/json_decoder.h"
#include "support/sequence_interner.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2 {
namespace {

[[noreturn]] void TooLarge(int64_t max_states) {
  throw Error(ErrorKind::kLimitExceeded, "automaton product exceeds " + std::to_string(max_states) + " states");
}

// The target of byte c from state s (-1: none); edges sorted and disjoint.
int32_t Step(const ByteDfaSpec& d, int32_t s, uint8_t c) {
  const auto& edges = d.edges[s];
  auto it = std::upper_bound(edges.begin(), edges.end(), c, [](uint8_t v, const ByteDfaEdge& e) { return v < e.lo; });
  if (it == edges.begin()) return -1;
  --it;
  return c <= it->hi ? it->target : -1;
}

// Adds bytes lo..hi to target t, merging with the last edge where they continue it.
void AppendRange(std::vector<ByteDfaEdge>* edges, uint8_t lo, uint8_t hi, int32_t t) {
  if (!edges->empty() && edges->back().target == t && edges->back().hi + 1 == lo) {
    edges->back().hi = hi;
  } else {
    edges->push_back({lo, hi, t});
  }
}

void AppendEdge(std::vector<ByteDfaEdge>* edges, uint8_t c, int32_t t) { AppendRange(edges, c, c, t); }

}  // namespace

ByteDfaSpec ByteDfaOfExpr(const Grammar& g, ExprId e, int64_t max_states) {
  AutomatonLimits limits;
  limits.max_dfa_states = max_states;
  limits.max_nfa_states = std::max<int64_t>(max_states * 4, 1 << 16);
  RuleDfa r = BuildRuleDfa(g, e, limits);
  ByteDfaSpec out;
  out.is_final = r.is_final;
  out.edges.resize(r.num_states());
  for (int32_t s = 0; s < r.num_states(); ++s) {
    if (!r.rule_edges(s).empty()) throw Error(ErrorKind::kInvalidArgument, "a byte automaton cannot reference rules");
    out.edges[s].reserve(r.byte_edges(s).size());
    for (const auto& x : r.byte_edges(s)) out.edges[s].push_back({x.lo, x.hi, x.target});
  }
  return out;
}

bool JsonDecoderDetermined(const ByteDfaSpec& content) {
  if (content.edges.empty()) return true;
  std::vector<int8_t> dec(content.edges.size(), -1);
  std::vector<int32_t> queue{0};
  dec[0] = kB;
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    const int32_t s = queue[qi];
    if (content.is_final[s] && dec[s] != kB) return false;  // the product ends on characters only
    for (const auto& e : content.edges[s]) {
      bool consistent = true;
      const bool well_formed = ForEachDecoderRun(dec[s], e.lo, e.hi, [&](const DecoderRun& r) {
        if (dec[e.target] < 0) {
          dec[e.target] = r.next;
          queue.push_back(e.target);
        } else if (dec[e.target] != r.next) {
          consistent = false;
        }
      });
      if (!well_formed || !consistent) return false;  // the product would drop or split states
    }
  }
  return true;
}

ByteDfaSpec IntersectJsonLength(const ByteDfaSpec& content, int64_t min_len, int64_t max_len, int64_t max_states,
                                const std::vector<uint8_t>* stop, std::vector<JsonLengthExit>* exits) {
  // The count saturates at min_len when there is no upper bound; above max_len it dies.
  const int64_t cap = max_len >= 0 ? max_len : min_len;
  std::unordered_map<int64_t, int32_t> ids;
  std::vector<std::pair<int32_t, std::pair<int, int64_t>>> keys;  // (dfa state, (dec, count))
  ByteDfaSpec out;
  auto id_of = [&](int32_t s, int u, int64_t n) {
    int64_t key = (static_cast<int64_t>(s) * kNumDec + u) * (cap + 1) + n;
    auto [it, inserted] = ids.emplace(key, static_cast<int32_t>(keys.size()));
    if (inserted) {
      if (static_cast<int64_t>(keys.size()) >= max_states) TooLarge(max_states);
      if ((keys.size() & 255) == 0) CheckThreadTimeLimit();
      keys.push_back({s, {u, n}});
      out.is_final.push_back(content.is_final[s] && u == kB && n >= min_len ? 1 : 0);
      out.edges.emplace_back();
    }
    return it->second;
  };
  id_of(0, kB, 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    const int32_t s = keys[i].first;
    const int u = keys[i].second.first;
    const int64_t n = keys[i].second.second;
    if (stop != nullptr && (*stop)[s] && u == kB) {
      out.is_final[i] = 0;
      exits->push_back({static_cast<int32_t>(i), s, n});
      continue;
    }
    std::vector<ByteDfaEdge> edges;
    // Each content edge meets the runs of bytes the decoder treats alike (ASCII, continuation
    // bytes, ...): one target per overlap, not per byte.
    for (const auto& e : content.edges[s]) {
      for (const DecoderRun& r : DecoderRuns(u)) {
        if (r.hi < e.lo || r.lo > e.hi) continue;
        int64_t n2 = n + (r.starts ? 1 : 0);
        if (n2 > cap) {
          if (max_len >= 0) continue;
          n2 = cap;
        }
        AppendRange(&edges, std::max(r.lo, e.lo), std::min(r.hi, e.hi), id_of(e.target, r.next, n2));
      }
    }
    out.edges[i] = std::move(edges);
  }
  return out;
}

bool JsonLengthProductExceeds(const ByteDfaSpec& content, int64_t min_len, int64_t max_len, int64_t max_states,
                              const std::vector<uint8_t>* stop) {
  const int64_t cap = max_len >= 0 ? max_len : min_len;
  const size_t pairs = static_cast<size_t>(content.num_states()) * kNumDec;
  std::vector<uint8_t> in_layer(pairs, 0), in_next(pairs, 0);
  std::vector<int32_t> layer{kB}, next;  // pair s * kNumDec + u; the start is (0, kB)
  in_layer[kB] = 1;
  int64_t total = 0;
  for (int64_t n = 0; !layer.empty(); ++n) {
    // From the last count a new character dies (bounded) or keeps the saturated count.
    const bool last = n == cap;
    for (size_t i = 0; i < layer.size(); ++i) {  // grows: bytes inside a character stay here
      const int32_t s = layer[i] / kNumDec;
      const int u = layer[i] % kNumDec;
      if (stop != nullptr && (*stop)[s] && u == kB) continue;
      for (const auto& e : content.edges[s]) {
        for (const DecoderRun& r : DecoderRuns(u)) {
          if (r.hi < e.lo || r.lo > e.hi) continue;
          const int32_t q = e.target * kNumDec + r.next;
          if (!r.starts || (last && max_len < 0)) {
            if (!in_layer[q]) in_layer[q] = 1, layer.push_back(q);
          } else if (!last && !in_next[q]) {
            in_next[q] = 1, next.push_back(q);
          }
        }
      }
    }
    total += static_cast<int64_t>(layer.size());
    if (total > max_states) return true;
    for (int32_t q : layer) in_layer[q] = 0;
    layer.swap(next);
    next.clear();
    in_layer.swap(in_next);
  }
  return false;
}

namespace {

// Visits the (content state, decoder state) pairs reachable from s on a character boundary
// without completing a character; visit(from, edge byte, to state, to decoder) for each edge.
template <typename Visit>
void WalkOneCharacter(const ByteDfaSpec& content, int32_t s, Visit visit) {
  std::vector<std::pair<int32_t, int>> todo{{s, kB}};
  std::unordered_map<int64_t, bool> seen;
  for (size_t i = 0; i < todo.size(); ++i) {
    const auto [t, u] = todo[i];
    for (const auto& e : content.edges[t]) {
      for (int c = e.lo; c <= e.hi; ++c) {
        bool starts;
        int u2 = JsonDecNext(u, static_cast<uint8_t>(c), &starts);
        if (u2 < 0) continue;
        if (!visit(i, static_cast<uint8_t>(c), e.target, u2)) return;
        if (u2 != kB && seen.emplace(int64_t{e.target} * kNumDec + u2, true).second) todo.push_back({e.target, u2});
      }
    }
  }
}

}  // namespace

std::vector<uint8_t> JsonStarStates(const ByteDfaSpec& content) {
  std::vector<uint8_t> star(content.num_states(), 0);
  for (int32_t s = 0; s < content.num_states(); ++s) {
    if (!content.is_final[s] || content.edges[s].empty()) continue;  // no loop: nothing to factor
    bool ok = true;
    WalkOneCharacter(content, s, [&](size_t, uint8_t, int32_t to, int u2) {
      // A completed character must return to s; one in progress must not reach a final.
      ok = u2 == kB ? to == s : (to != s && !content.is_final[to]);
      return ok;
    });
    star[s] = ok;
  }
  return star;
}

ByteDfaSpec JsonCharLoop(const ByteDfaSpec& content, int32_t s) {
  // States: 0 = s as the start, then the (state, decoder) pairs inside a character in walk
  // order, then one final state for "back at s".
  std::unordered_map<int64_t, int32_t> ids{{int64_t{s} * kNumDec + kB, 0}};
  std::vector<std::vector<std::pair<uint8_t, int64_t>>> raw(1);
  WalkOneCharacter(content, s, [&](size_t from, uint8_t c, int32_t to, int u2) {
    int64_t key = u2 == kB ? -1 : int64_t{to} * kNumDec + u2;
    if (key >= 0 && !ids.count(key)) {
      ids.emplace(key, static_cast<int32_t>(raw.size()));
      raw.emplace_back();
    }
    raw[from].push_back({c, key});
    return true;
  });
  ByteDfaSpec out;
  const int32_t final = static_cast<int32_t>(raw.size());
  out.is_final.assign(final + 1, 0);
  out.is_final[final] = 1;
  out.edges.resize(final + 1);
  for (size_t i = 0; i < raw.size(); ++i)
    for (const auto& [c, key] : raw[i]) AppendEdge(&out.edges[i], c, key < 0 ? final : ids.at(key));
  return out;
}

ByteDfaProduct ProductWithParts(const ByteDfaSpec& universe, const std::vector<ByteDfaSpec>& parts,
                                int64_t max_states) {
  if (parts.size() > 64) throw Error(ErrorKind::kLimitExceeded, "automaton product of more than 64 languages");
  // A tuple: the universe's state, then each part's (-1: that part is dead).
  const size_t width = parts.size() + 1;
  SequenceInterner tuples;
  ByteDfaProduct out;
  auto id_of = [&](const std::vector<int32_t>& t) {
    bool inserted = false;
    const int32_t id = tuples.Intern(t, &inserted);
    if (inserted) {
      if (static_cast<int64_t>(id) >= max_states) TooLarge(max_states);
      if ((id & 255) == 0) CheckThreadTimeLimit();
      uint64_t mask = 0;
      for (size_t i = 0; i < parts.size(); ++i)
        if (t[i + 1] >= 0 && parts[i].is_final[t[i + 1]]) mask |= uint64_t{1} << i;
      out.dfa.is_final.push_back(universe.is_final[t[0]]);
      out.dfa.edges.emplace_back();
      out.accepted_by.push_back(mask);
    }
    return id;
  };
  std::vector<int32_t> t(width, 0), from(width);
  id_of(t);
  std::vector<int> cuts;
  for (int32_t i = 0; i < tuples.size(); ++i) {
    // The interning below appends to the pool: read this tuple from a copy.
    from.assign(tuples.data(i), tuples.data(i) + width);
    std::vector<ByteDfaEdge> edges;
    // Within a universe edge the tuple only changes where some part's edge begins or ends:
    // one step per such segment rather than per byte.
    cuts.clear();
    for (size_t k = 0; k < parts.size(); ++k) {
      const int32_t s = from[k + 1];
      if (s < 0) continue;
      for (const auto& pe : parts[k].edges[s]) {
        cuts.push_back(pe.lo);
        cuts.push_back(pe.hi + 1);
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    edges.reserve(universe.edges[from[0]].size() + cuts.size());
    for (const auto& e : universe.edges[from[0]]) {
      int a = e.lo;
      auto cut = std::upper_bound(cuts.begin(), cuts.end(), a);
      while (a <= e.hi) {
        int b = (cut != cuts.end() && *cut - 1 < e.hi) ? *cut - 1 : e.hi;
        t[0] = e.target;
        for (size_t k = 0; k < parts.size(); ++k) {
          const int32_t s = from[k + 1];
          t[k + 1] = s < 0 ? -1 : Step(parts[k], s, static_cast<uint8_t>(a));
        }
        const int32_t target = id_of(t);
        AppendEdge(&edges, static_cast<uint8_t>(a), target);
        edges.back().hi = static_cast<uint8_t>(b);
        a = b + 1;
        if (cut != cuts.end() && *cut <= a) ++cut;
      }
    }
    out.dfa.edges[i] = std::move(edges);
  }
  return out;
}

namespace {
// `dfa` (the product's automaton, copied or taken over) final where the product selects.
ByteDfaSpec KeepFinalWhere(ByteDfaSpec dfa, const std::vector<uint64_t>& accepted_by, uint64_t care, uint64_t want) {
  for (size_t s = 0; s < dfa.is_final.size(); ++s) dfa.is_final[s] = dfa.is_final[s] && (accepted_by[s] & care) == want;
  return dfa;
}
}  // namespace

ByteDfaSpec SelectByParts(const ByteDfaProduct& p, uint64_t care, uint64_t want) {
  return KeepFinalWhere(p.dfa, p.accepted_by, care, want);
}

ByteDfaSpec SelectByParts(ByteDfaProduct&& p, uint64_t care, uint64_t want) {
  return KeepFinalWhere(std::move(p.dfa), p.accepted_by, care, want);
}

bool ByteDfaEmpty(const ByteDfaSpec& dfa) {
  std::vector<uint8_t> seen(dfa.num_states(), 0);
  std::vector<int32_t> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    if (dfa.is_final[s]) return false;
    for (const auto& e : dfa.edges[s])
      if (!seen[e.target]) seen[e.target] = 1, stack.push_back(e.target);
  }
  return true;
}

namespace {
// Whether breadth-first numbering from state 0, edges in order, keeps every state's number
// (so every state is reachable).
bool NumberedBreadthFirst(const ByteDfaSpec& dfa) {
  const int32_t n = dfa.num_states();
  int32_t next = 1;
  std::vector<uint8_t> seen(n, 0);
  seen[0] = 1;
  for (int32_t s = 0; s < n && s < next; ++s) {
    for (const auto& e : dfa.edges[s]) {
      if (seen[e.target]) continue;
      if (e.target != next) return false;
      seen[e.target] = 1;
      ++next;
    }
  }
  return next == n;
}
}  // namespace

ByteDfaSpec TrimAndMinimize(ByteDfaSpec dfa, bool minimize) {
  CheckThreadTimeLimit();
  const int32_t n = dfa.num_states();
  // Co-reachability: reverse edges (grouped by target) from the final states.
  std::vector<int32_t> rev_begin(n + 1, 0), rev;
  for (int32_t s = 0; s < n; ++s)
    for (const auto& e : dfa.edges[s]) ++rev_begin[e.target + 1];
  for (int32_t s = 0; s < n; ++s) rev_begin[s + 1] += rev_begin[s];
  rev.resize(rev_begin[n]);
  {
    std::vector<int32_t> fill(rev_begin.begin(), rev_begin.end() - 1);
    for (int32_t s = 0; s < n; ++s)
      for (const auto& e : dfa.edges[s]) rev[fill[e.target]++] = s;
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> stack;
  for (int32_t s = 0; s < n; ++s)
    if (dfa.is_final[s]) live[s] = 1, stack.push_back(s);
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    for (int32_t k = rev_begin[s]; k < rev_begin[s + 1]; ++k)
      if (!live[rev[k]]) live[rev[k]] = 1, stack.push_back(rev[k]);
  }
  // A product built breadth first with no dead state is its own result (a key exclusion's
  // automaton: a copy of its thousands of edges, per object, otherwise).
  if (!minimize && std::all_of(live.begin(), live.end(), [](uint8_t l) { return l != 0; }) &&
      NumberedBreadthFirst(dfa)) {
    return dfa;
  }
  if (!live[0]) {
    ByteDfaSpec empty;
    empty.is_final = {0};
    empty.edges.resize(1);
    return empty;
  }
  RuleDfa r;
  r.is_final = dfa.is_final;
  for (int32_t s = 0; s < n; ++s) {
    if (live[s]) {
      for (const auto& e : dfa.edges[s])
        if (live[e.target]) r.byte_list.push_back({e.lo, e.hi, e.target});
    }
    r.CloseState();
  }
  // Larger automata stay as trimmed (correct, only not minimal), as rule automata do.
  constexpr int32_t kMaxStatesToMinimize = 4096;
  if (minimize && n <= kMaxStatesToMinimize)
    r = MinimizeRuleDfa(r);
  else {
    // Renumber the live states reachable from 0 in BFS order.
    std::vector<int32_t> order(n, -1), queue{0};
    order[0] = 0;
    for (size_t i = 0; i < queue.size(); ++i)
      for (const auto& e : r.byte_edges(queue[i]))
        if (order[e.target] < 0) order[e.target] = static_cast<int32_t>(queue.size()), queue.push_back(e.target);
    RuleDfa b;
    for (int32_t s : queue) b.AddState(r.is_final[s] != 0);
    for (int32_t s : queue) {
      for (const auto& e : r.byte_edges(s)) b.byte_list.push_back({e.lo, e.hi, order[e.target]});
      b.CloseState();
    }
    r = std::move(b);
  }
  ByteDfaSpec out;
  out.is_final = r.is_final;
  out.edges.resize(r.num_states());
  for (int32_t s = 0; s < r.num_states(); ++s)
    for (const auto& e : r.byte_edges(s)) out.edges[s].push_back({e.lo, e.hi, e.target});
  return out;
}

bool ByteDfaAccepts(const ByteDfaSpec& dfa, const std::string& s) {
  int32_t st = 0;
  for (unsigned char c : s) {
    st = Step(dfa, st, c);
    if (st < 0) return false;
  }
  return dfa.is_final[st] != 0;
}

namespace {

// The edges of `edges` without the bytes in `removed` (sorted), ranges split around them.
std::vector<ByteDfaEdge> WithoutBytes(const std::vector<ByteDfaEdge>& edges, const std::vector<uint8_t>& removed) {
  std::vector<ByteDfaEdge> out;
  for (const ByteDfaEdge& e : edges) {
    int lo = e.lo;
    for (uint8_t b : removed) {
      if (b < lo || b > e.hi) continue;
      if (b > lo) out.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(b - 1), e.target});
      lo = b + 1;
    }
    if (lo <= e.hi) out.push_back({static_cast<uint8_t>(lo), e.hi, e.target});
  }
  return out;
}

}  // namespace

ByteDfaSpec SpellBytes(const ByteDfaSpec& dfa, const std::vector<std::pair<uint8_t, std::string>>& spelled) {
  std::vector<uint8_t> removed;
  for (const auto& [b, text] : spelled) removed.push_back(b);
  std::sort(removed.begin(), removed.end());
  for (const auto& [b, text] : spelled) {
    if (!text.empty() && !std::binary_search(removed.begin(), removed.end(), static_cast<uint8_t>(text[0])))
      throw Error(ErrorKind::kInvalidArgument, "a byte's spelling must start with a byte that is itself spelled");
    for (const auto& [other, other_text] : spelled) {
      if (other != b && !text.empty() && other_text.compare(0, text.size(), text) == 0)
        throw Error(ErrorKind::kInvalidArgument, "byte spellings must be prefix-free");
    }
  }
  ByteDfaSpec out;
  out.is_final = dfa.is_final;
  out.edges.resize(dfa.edges.size());
  for (int32_t s = 0; s < dfa.num_states(); ++s) {
    out.edges[s] = WithoutBytes(dfa.edges[s], removed);
    // The spellings read from s form a trie whose leaves go where the spelled byte went.
    std::map<std::string, int32_t> trie{{"", s}};
    auto node = [&](const std::string& prefix) {
      auto [it, fresh] = trie.emplace(prefix, out.num_states());
      if (fresh) {
        out.is_final.push_back(0);
        out.edges.emplace_back();
      }
      return it->second;
    };
    for (const auto& [b, text] : spelled) {
      const int32_t target = Step(dfa, s, b);
      if (text.empty() || target < 0) continue;
      for (size_t i = 0; i < text.size(); ++i) {
        const int32_t from = node(text.substr(0, i));
        const int32_t to = i + 1 == text.size() ? target : node(text.substr(0, i + 1));
        const uint8_t c = static_cast<uint8_t>(text[i]);
        std::vector<ByteDfaEdge>& edges = out.edges[from];
        if (std::none_of(edges.begin(), edges.end(), [&](const ByteDfaEdge& e) { return e.lo == c; }))
          edges.push_back({c, c, to});
      }
    }
  }
  for (auto& edges : out.edges)
    std::sort(edges.begin(), edges.end(), [](const ByteDfaEdge& a, const ByteDfaEdge& b) { return a.lo < b.lo; });
  return out;
}

}  // namespace xg2
