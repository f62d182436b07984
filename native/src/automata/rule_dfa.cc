// Thompson NFA -> subset construction -> minimisation (partition refinement) -> BFS numbering.
#include "automata/rule_dfa.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "automata/aho_corasick.h"
#include "support/sequence_interner.h"
#include "support/utf8.h"
#include "xg2/errors.h"
#include "xg2/limits.h"
#include "xg2/tokenizer.h"

namespace xg2 {
namespace {

struct NfaByteEdge {
  uint8_t lo, hi;
  int32_t target;
};
struct NfaRuleEdge {
  RuleId rule;
  int32_t target;
};

// A Thompson NFA with its edges grouped by source state (CSR arrays): the builder appends
// edges in any order, Finish() groups them once, and the subset construction reads each
// state's edges as one contiguous run (no vector per state to allocate and free).
struct Nfa {
  int32_t num_states = 0;
  std::vector<int32_t> eps_begin, byte_begin, rule_begin;  // num_states + 1 each
  std::vector<int32_t> eps;
  std::vector<NfaByteEdge> bytes;
  std::vector<NfaRuleEdge> rules;
};

// Groups (source, edge) pairs by source, keeping their order within a source.
template <typename Edge>
void GroupBySource(const std::vector<std::pair<int32_t, Edge>>& edges, int32_t num_states, std::vector<int32_t>* begin,
                   std::vector<Edge>* out, std::vector<int32_t>* fill) {
  begin->assign(num_states + 1, 0);
  for (const auto& e : edges) ++(*begin)[e.first + 1];
  for (int32_t s = 0; s < num_states; ++s) (*begin)[s + 1] += (*begin)[s];
  out->resize(edges.size());
  fill->assign(begin->begin(), begin->end() - 1);
  for (const auto& e : edges) (*out)[(*fill)[e.first]++] = e.second;
}

// Edges as the NFA builder appends them, before Finish() groups them by source, and its
// character class buffers.
struct NfaEdgeLists {
  std::vector<std::pair<int32_t, int32_t>> eps;  // (source, target)
  std::vector<std::pair<int32_t, NfaByteEdge>> bytes;
  std::vector<std::pair<int32_t, NfaRuleEdge>> rules;
  std::vector<CodepointRange> char_ranges;
  std::vector<Utf8RangeSeq> utf8_seqs;
  std::vector<std::pair<Utf8RangeSeq, int32_t>> utf8_tails;
  // Shared fragments (see NfaBuilder::Build): per expression node, the body's stamp when it
  // was last counted and its references (up to 2); the built fragments by (node, exit).
  std::vector<uint32_t> ref_stamp;
  std::vector<uint8_t> refs;
  uint32_t stamp = 0;
  std::vector<int32_t> stack, key;
  SequenceInterner fragments;
  std::vector<int32_t> fragment_entry;
  void Clear() {
    eps.clear();
    bytes.clear();
    rules.clear();
  }
};

class NfaBuilder {
 public:
  NfaBuilder(const Grammar& g, const AutomatonLimits& limits, NfaEdgeLists* lists)
      : g_(g), limits_(limits), lists_(*lists) {
    lists->Clear();
  }

  // Adds the transitions of rule body `body` from state a to state b.
  void BuildBody(ExprId body, int32_t a, int32_t b) {
    CountReferences(body);
    Build(body, a, b);
  }

  int32_t NewState() {
    if (num_states_ >= limits_.max_nfa_states) {
      throw Error(ErrorKind::kLimitExceeded,
                  "rule automaton exceeds " + std::to_string(limits_.max_nfa_states) +
                      " NFA states (a repetition bound or literal is too large; limit max_nfa_states, a "
                      "GrammarCompiler option)");
    }
    if ((num_states_ & 4095) == 0) limits_.CheckDeadline();
    return num_states_++;
  }

  // The NFA built so far, its edges grouped by source state.
  void Finish(Nfa* nfa, std::vector<int32_t>* fill) const {
    nfa->num_states = num_states_;
    GroupBySource(lists_.eps, num_states_, &nfa->eps_begin, &nfa->eps, fill);
    GroupBySource(lists_.bytes, num_states_, &nfa->byte_begin, &nfa->bytes, fill);
    GroupBySource(lists_.rules, num_states_, &nfa->rule_begin, &nfa->rules, fill);
  }

 private:
  void Eps(int32_t a, int32_t b) { lists_.eps.emplace_back(a, b); }
  void ByteEdge(int32_t a, uint8_t lo, uint8_t hi, int32_t b) { lists_.bytes.push_back({a, NfaByteEdge{lo, hi, b}}); }

  void BuildNode(const Expr& e, int32_t a, int32_t b) {
    switch (e.kind) {
      case ExprKind::kEmpty: Eps(a, b); break;
      case ExprKind::kBytes: {
        if (e.bytes.empty()) {
          Eps(a, b);
          break;
        }
        int32_t cur = a;
        for (size_t i = 0; i < e.bytes.size(); ++i) {
          int32_t next = (i + 1 == e.bytes.size()) ? b : NewState();
          uint8_t c = static_cast<uint8_t>(e.bytes[i]);
          ByteEdge(cur, c, c, next);
          cur = next;
        }
        break;
      }
      case ExprKind::kCharClass: BuildCharClass(e, a, b); break;
      case ExprKind::kSequence: {
        if (e.children.empty()) {
          Eps(a, b);
          break;
        }
        int32_t cur = a;
        for (size_t i = 0; i < e.children.size(); ++i) {
          int32_t next = (i + 1 == e.children.size()) ? b : NewState();
          Build(e.children[i], cur, next);
          cur = next;
        }
        break;
      }
      case ExprKind::kChoice:
        // Alternatives share the entry and exit states: no construction here adds edges into
        // its entry state (loops get a fresh state), so paths cannot cross between branches,
        // and branches that end alike reach the same NFA sets (fewer DFA states to merge).
        for (ExprId c : e.children) Build(c, a, b);
        break;
      case ExprKind::kRuleRef: lists_.rules.push_back({a, NfaRuleEdge{e.rule, b}}); break;
      case ExprKind::kRepeat: BuildRepeat(e, a, b); break;
      case ExprKind::kTagDispatch: BuildTagDispatch(e, a, b); break;
      case ExprKind::kByteDfa: BuildByteDfa(*e.dfa, a, b); break;
      case ExprKind::kAnyOrder:  // lowered to its own rule first (grammar/any_order_lowering.h)
        throw Error(ErrorKind::kGrammarSemantic, "an AnyOrder node must be lowered before building automata");
    }
  }

  // Counts, for the nodes under `body`, how many parent slots refer to each (up to 2); the
  // nodes with two or more may be built more than once (see Build).
  void CountReferences(ExprId body) {
    NfaEdgeLists& l = lists_;
    if (l.ref_stamp.size() < static_cast<size_t>(g_.num_exprs())) {
      l.ref_stamp.resize(g_.num_exprs(), 0);
      l.refs.resize(g_.num_exprs(), 0);
    }
    if (++l.stamp == 0) {  // wrapped: forget every old stamp
      std::fill(l.ref_stamp.begin(), l.ref_stamp.end(), 0);
      l.stamp = 1;
    }
    l.fragments.Clear();
    l.fragment_entry.clear();
    l.stack.assign(1, body);
    l.ref_stamp[body] = l.stamp;
    l.refs[body] = 1;
    while (!l.stack.empty()) {
      const ExprId id = l.stack.back();
      l.stack.pop_back();
      for (ExprId c : g_.expr(id).children) {
        if (l.ref_stamp[c] != l.stamp) {
          l.ref_stamp[c] = l.stamp;
          l.refs[c] = 1;
          l.stack.push_back(c);
        } else if (l.refs[c] < 2) {
          l.refs[c] = 2;
        }
      }
    }
  }

  // Adds transitions that consume one string of `id` from state a to state b.
  // A node the body refers to from several places (hash-consed grammars share the tails of
  // alternatives, such as the optional properties after each possible first property of an
  // object) is built once per exit state: later uses enter the first copy through an epsilon
  // edge. The copy has an entry state of its own, so no edge of another construction leaves
  // from inside it; the subset construction then meets one set of NFA states where it met
  // a copy per use before (fewer DFA states to build and merge; the minimal DFA is the same).
  void Build(ExprId id, int32_t a, int32_t b) {
    const Expr& e = g_.expr(id);
    if (lists_.refs[id] < 2 || e.kind == ExprKind::kEmpty || e.kind == ExprKind::kRuleRef ||
        (e.kind == ExprKind::kBytes && e.bytes.size() < 2)) {
      BuildNode(e, a, b);
      return;
    }
    lists_.key.assign({id, b});
    bool inserted = false;
    const int32_t k = lists_.fragments.Intern(lists_.key, &inserted);
    if (!inserted) {
      Eps(a, lists_.fragment_entry[k]);
      return;
    }
    const int32_t entry = NewState();
    lists_.fragment_entry.push_back(entry);
    Eps(a, entry);
    BuildNode(e, entry, b);
  }

  // UTF-8 decoder states: a complete character read, or the continuation bytes still due
  // (with the narrowed second-byte ranges after E0, ED, F0 and F4).
  // kVirt3..kVirt1: inside a special token's virtual string (see VirtualTokenBytes), with 3..1
  // id bytes still due; allowed only along a watched string.
  enum Utf8State : uint8_t {
    kU8Boundary,
    kU8Need1,
    kU8Need2,
    kU8Need3,
    kU8E0,
    kU8ED,
    kU8F0,
    kU8F4,
    kVirt3,
    kVirt2,
    kVirt1
  };
  static constexpr int kNumTextStates = 16;
  static int Utf8Next(int u, uint8_t c) {
    auto cont = [&](uint8_t lo, uint8_t hi, int next) { return c >= lo && c <= hi ? next : -1; };
    switch (u) {
      case kU8Boundary:
        if (c < 0x80) return kU8Boundary;
        if (c >= 0xC2 && c <= 0xDF) return kU8Need1;
        if (c == 0xE0) return kU8E0;
        if (c == 0xED) return kU8ED;
        if (c >= 0xE1 && c <= 0xEF) return kU8Need2;
        if (c == 0xF0) return kU8F0;
        if (c >= 0xF1 && c <= 0xF3) return kU8Need3;
        if (c == 0xF4) return kU8F4;
        return -1;
      case kU8Need1: return cont(0x80, 0xBF, kU8Boundary);
      case kU8Need2: return cont(0x80, 0xBF, kU8Need1);
      case kU8Need3: return cont(0x80, 0xBF, kU8Need2);
      case kU8E0: return cont(0xA0, 0xBF, kU8Need1);
      case kU8ED: return cont(0x80, 0x9F, kU8Need1);
      case kU8F0: return cont(0x90, 0xBF, kU8Need2);
      case kU8F4: return cont(0x80, 0x8F, kU8Need2);
    }
    return -1;
  }

  // The product of the Aho-Corasick automaton of all the node's strings, the UTF-8 decoder,
  // a phase (before / after the first dispatch, for at_least_one), a character count (for
  // max_chars) and a pending exclude, explored from the start. A trigger or end string in
  // the text leaves free text; an excluded string kills. Excludes take precedence over
  // triggers (as in xgrammar): a trigger that contains an excluded string never fires, so it
  // cannot carry that string through. An end string closes the text from outside it (the
  // enclosing tag's delimiter), so an exclude inside one is pending (its start, in bytes back
  // from the current position) until the end completes (fine: it was the delimiter, not
  // text) or falls short of covering it (it was text after all).
  void BuildTagDispatch(const Expr& e, int32_t a, int32_t b) {
    const TagDispatchSpec& d = *e.dispatch;
    std::vector<std::string> patterns = d.triggers;
    const int32_t num_triggers = static_cast<int32_t>(d.triggers.size());
    const int32_t first_exclude = num_triggers + static_cast<int32_t>(d.ends.size());
    patterns.insert(patterns.end(), d.ends.begin(), d.ends.end());
    patterns.insert(patterns.end(), d.excludes.begin(), d.excludes.end());
    AhoCorasick ac(patterns);
    // Nodes on the path of an end string (prefixes of one): where an exclude may be pending.
    std::vector<uint8_t> end_prefix(ac.num_nodes(), 0);
    for (int32_t p = num_triggers; p < first_exclude; ++p) {
      int32_t node = ac.root();
      for (unsigned char c : patterns[p]) end_prefix[node = ac.Next(node, c)] = 1;
    }
    const bool two_phases = d.at_least_one && d.loop && num_triggers > 0;
    const int64_t max_chars = d.max_chars;
    int64_t max_len = 0;
    for (const auto& p : patterns) max_len = std::max<int64_t>(max_len, static_cast<int64_t>(p.size()));
    // Characters of free text, given the total count and the pattern prefix now matched:
    // only characters before the prefix are certainly text. Counting bytes of the prefix
    // as characters is exact for ASCII patterns and conservative (never rejects) otherwise.
    const int64_t count_cap = max_chars < 0 ? 0 : max_chars + max_len;
    const int64_t num_keys = int64_t{ac.num_nodes()} * kNumTextStates * (two_phases ? 2 : 1) * (count_cap + 1);
    if (max_chars >= 0 && num_keys > limits_.max_nfa_states) {
      throw Error(ErrorKind::kLimitExceeded, "free text with max_chars " + std::to_string(max_chars) + " and " +
                                                 std::to_string(patterns.size()) +
                                                 " watched strings exceeds the automaton limit");
    }
    struct Key {
      int64_t phase, node, u, count, pending;
    };
    auto key_of = [&](const Key& k) {
      return (((k.phase * ac.num_nodes() + k.node) * kNumTextStates + k.u) * (count_cap + 1) + k.count) *
                 (max_len + 1) +
             k.pending;
    };
    std::unordered_map<int64_t, int32_t> state_of;
    std::vector<Key> todo;
    auto state = [&](const Key& k) {
      auto [it, inserted] = state_of.emplace(key_of(k), -1);
      if (inserted) {
        it->second = NewState();
        todo.push_back(k);
      }
      return it->second;
    };
    // After trigger i (per phase it was reached in): the continuation, then free text again
    // (in the second phase) or the end of the node.
    std::unordered_map<int64_t, int32_t> dispatch_state;
    auto dispatch = [&](int64_t phase, int32_t trigger) {
      int64_t k = phase * num_triggers + trigger;
      auto it = dispatch_state.find(k);
      if (it != dispatch_state.end()) return it->second;
      int32_t x = NewState();
      dispatch_state.emplace(k, x);
      int32_t after = d.loop ? state({two_phases ? 1 : 0, ac.root(), kU8Boundary, 0, 0}) : b;
      Build(e.children[trigger], x, after);
      return x;
    };
    Eps(a, state({0, ac.root(), kU8Boundary, 0, 0}));
    for (size_t qi = 0; qi < todo.size(); ++qi) {
      const Key k = todo[qi];
      const int32_t from = state_of.at(key_of(k));
      const bool may_end = d.plain_end && (!d.at_least_one || k.phase == 1);
      if (k.u == kU8Boundary && k.pending == 0 && may_end) Eps(from, b);
      std::vector<std::pair<uint8_t, int32_t>> edges;  // (byte, target), several per byte
      for (int c = 0; c < 256; ++c) {
        int32_t node2 = ac.Next(static_cast<int32_t>(k.node), static_cast<uint8_t>(c));
        int u2;
        if (k.u >= kVirt3 || (k.u == kU8Boundary && c == kVirtualTokenLead)) {
          // Virtual bytes so far (this one included) must all lie on a watched string.
          const int consumed = k.u == kU8Boundary ? 1 : static_cast<int>(k.u) - kVirt3 + 2;
          if (ac.Depth(node2) < consumed) continue;
          u2 = k.u == kU8Boundary ? kVirt3 : k.u == kVirt1 ? kU8Boundary : static_cast<int>(k.u) + 1;
        } else {
          u2 = Utf8Next(static_cast<int>(k.u), static_cast<uint8_t>(c));
          if (u2 < 0) continue;
        }
        int64_t count2 = k.count + (u2 == kU8Boundary ? 1 : 0);
        if (max_chars >= 0 && (count2 > count_cap || count2 - ac.Depth(node2) > max_chars)) continue;
        int64_t pending2 = k.pending > 0 ? k.pending + 1 : 0;
        bool exits = false;
        for (int32_t m : ac.Matches(node2)) {
          if (m >= first_exclude)
            pending2 = std::max<int64_t>(pending2, static_cast<int64_t>(patterns[m].size()));
          else
            exits = true;
        }
        if (exits) {
          for (int32_t m : ac.Matches(node2)) {
            if (m >= first_exclude || pending2 > static_cast<int64_t>(patterns[m].size())) continue;
            if (m < num_triggers) {
              if (pending2 > 0) continue;  // the trigger holds an excluded string
              edges.emplace_back(static_cast<uint8_t>(c), dispatch(k.phase, m));
            } else if (!d.at_least_one || k.phase == 1 || num_triggers == 0) {
              edges.emplace_back(static_cast<uint8_t>(c), b);  // an end string
            }
          }
          continue;
        }
        // A pending exclude must still lie inside a prefix of an end string.
        if (pending2 > 0 && (!end_prefix[node2] || ac.Depth(node2) < pending2)) continue;
        edges.emplace_back(static_cast<uint8_t>(c), state({k.phase, node2, u2, max_chars < 0 ? 0 : count2, pending2}));
      }
      std::sort(edges.begin(), edges.end(), [](const auto& x, const auto& y) {
        return x.second != y.second ? x.second < y.second : x.first < y.first;
      });
      edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
      for (size_t i = 0; i < edges.size();) {
        size_t j = i + 1;
        while (j < edges.size() && edges[j].second == edges[i].second && edges[j].first == edges[j - 1].first + 1) ++j;
        ByteEdge(from, edges[i].first, edges[j - 1].first, edges[i].second);
        i = j;
      }
    }
  }

  // One NFA state per DFA state: entered from a, left to b from every final state.
  void BuildByteDfa(const ByteDfaSpec& d, int32_t a, int32_t b) {
    std::vector<int32_t> st(d.num_states());
    for (int32_t& s : st) s = NewState();
    Eps(a, st[0]);
    for (int32_t s = 0; s < d.num_states(); ++s) {
      if (d.is_final[s]) Eps(st[s], b);
      for (const auto& x : d.edges[s]) ByteEdge(st[s], x.lo, x.hi, st[x.target]);
    }
  }

  void BuildCharClass(const Expr& e, int32_t a, int32_t b) {
    std::vector<CodepointRange>& ranges = lists_.char_ranges;
    ranges.clear();
    if (e.negated) {
      uint32_t next = 0;
      for (const auto& r : e.ranges) {
        if (r.lo > next) ranges.push_back({next, r.lo - 1});
        next = r.hi + 1;
      }
      if (next <= 0x10FFFF) ranges.push_back({next, 0x10FFFF});
    } else {
      ranges.assign(e.ranges.begin(), e.ranges.end());
    }
    std::vector<Utf8RangeSeq>& seqs = lists_.utf8_seqs;
    seqs.clear();
    for (const auto& r : ranges) {
      uint32_t lo = r.lo, hi = std::min<uint32_t>(r.hi, 0x10FFFF);
      // Surrogates have no UTF-8 encoding.
      if (lo <= 0xDFFF && hi >= 0xD800) {
        if (lo < 0xD800) Utf8RangeSequences(lo, 0xD7FF, &seqs);
        if (hi > 0xDFFF) Utf8RangeSequences(0xE000, hi, &seqs);
      } else {
        Utf8RangeSequences(lo, hi, &seqs);
      }
    }
    // Sequences share the state before a common tail (the continuation bytes of a lead-byte
    // range): one state per distinct tail, so the DFA has no copies to merge afterwards.
    std::vector<std::pair<Utf8RangeSeq, int32_t>>& tails = lists_.utf8_tails;
    tails.clear();
    auto tail_state = [&](const Utf8RangeSeq& seq, int from) {
      const int len = seq.len - from;
      for (const auto& t : tails) {
        if (t.first.len == len &&
            std::equal(t.first.ranges, t.first.ranges + len, seq.ranges + from,
                       [](const ByteRange& x, const ByteRange& y) { return x.lo == y.lo && x.hi == y.hi; })) {
          return std::make_pair(t.second, false);
        }
      }
      const int32_t state = NewState();
      Utf8RangeSeq tail;
      tail.len = static_cast<uint8_t>(len);
      std::copy(seq.ranges + from, seq.ranges + seq.len, tail.ranges);
      tails.emplace_back(tail, state);
      return std::make_pair(state, true);
    };
    for (const auto& seq : seqs) {
      int32_t cur = a;
      for (int i = 0; i < seq.len; ++i) {
        if (i + 1 == seq.len) {
          ByteEdge(cur, seq.ranges[i].lo, seq.ranges[i].hi, b);
          break;
        }
        auto [next, fresh] = tail_state(seq, i + 1);
        ByteEdge(cur, seq.ranges[i].lo, seq.ranges[i].hi, next);
        if (!fresh) break;  // the tail from `next` is already built
        cur = next;
      }
    }
  }

  void BuildRepeat(const Expr& e, int32_t a, int32_t b) {
    ExprId child = e.children[0];
    int32_t cur = a;
    for (int64_t i = 0; i < e.min; ++i) {
      int32_t next = NewState();
      Build(child, cur, next);
      cur = next;
    }
    if (e.max == kUnbounded) {
      int32_t loop = NewState();
      Eps(cur, loop);
      Build(child, loop, loop);
      Eps(loop, b);
      return;
    }
    for (int64_t i = e.min; i < e.max; ++i) {
      int32_t next = NewState();
      Eps(cur, b);
      Build(child, cur, next);
      cur = next;
    }
    Eps(cur, b);
  }

  const Grammar& g_;
  const AutomatonLimits& limits_;
  NfaEdgeLists& lists_;  // edges and buffers, kept between rules
  int32_t num_states_ = 0;
};

// The subset construction's buffers, kept between rules.
struct SubsetScratch {
  std::vector<uint32_t> mark;
  std::vector<uint8_t> kept;  // per NFA state: part of a DFA state's identity
  SequenceInterner sets;      // the DFA states' NFA sets
  // Seed sets already closed, and the DFA state of each: a transition that reaches the same
  // NFA states as an earlier one skips the closure and its sort.
  SequenceInterner seed_sets;
  std::vector<int32_t> seed_state;
  // Reused for every DFA state.
  std::vector<int32_t> set, bounds, seeds, closure, stack, prev_seeds;
  std::vector<NfaByteEdge> edges, active;  // the set's byte edges (by lo), those covering the interval
  std::vector<NfaByteEdge> sorted_edges;   // GatherByteEdges' buckets
  std::vector<std::pair<RuleId, int32_t>> rule_targets;
};

class SubsetConstruction {
 public:
  SubsetConstruction(const Nfa& nfa, int32_t nfa_final, const AutomatonLimits& limits, SubsetScratch* scratch)
      : nfa_(nfa), nfa_final_(nfa_final), limits_(limits), w_(*scratch) {
    w_.mark.assign(nfa.num_states, 0);
    w_.kept.assign(nfa.num_states, 0);
    w_.sets.Clear();
    w_.seed_sets.Clear();
    w_.seed_state.clear();
    // A DFA state is identified by the NFA states of its closure that read something or
    // accept; states with only epsilon edges add nothing their closure does not.
    for (int32_t s = 0; s < nfa.num_states; ++s) {
      w_.kept[s] =
          nfa.byte_begin[s + 1] > nfa.byte_begin[s] || nfa.rule_begin[s + 1] > nfa.rule_begin[s] || s == nfa_final;
    }
  }

  RuleDfa Run(int32_t nfa_start) {
    RuleDfa dfa;
    w_.seeds.assign(1, nfa_start);
    Intern(&dfa);
    for (int32_t i = 0; i < w_.sets.size(); ++i) {
      // Interning below appends to the pool: work on a copy of this set.
      w_.set.assign(w_.sets.data(i), w_.sets.data(i) + w_.sets.length(i));
      // Byte edges: split at every boundary, then sweep the elementary intervals in order,
      // keeping the edges that cover the current one (each edge covers a contiguous run).
      GatherByteEdges();
      prev_target_ = -1;
      w_.prev_seeds.clear();
      w_.active.clear();
      size_t next_edge = 0;
      for (size_t b = 0; b + 1 < w_.bounds.size(); ++b) {
        const int lo = w_.bounds[b], hi = w_.bounds[b + 1] - 1;
        bool changed = false;
        for (size_t k = 0; k < w_.active.size();) {
          if (w_.active[k].hi < lo) {
            w_.active[k] = w_.active.back();
            w_.active.pop_back();
            changed = true;
          } else {
            ++k;
          }
        }
        for (; next_edge < w_.edges.size() && w_.edges[next_edge].lo == lo; ++next_edge) {
          w_.active.push_back(w_.edges[next_edge]);
          changed = true;
        }
        if (w_.active.empty()) {
          prev_target_ = -1;
          continue;
        }
        // Neighbouring intervals mostly lead to the same NFA states (a class split only by
        // another member's edges): reuse the target instead of closing the set again.
        int32_t t = prev_target_;
        if (changed || t < 0) {
          w_.seeds.clear();
          for (const NfaByteEdge& e : w_.active) w_.seeds.push_back(e.target);
          std::sort(w_.seeds.begin(), w_.seeds.end());
          w_.seeds.erase(std::unique(w_.seeds.begin(), w_.seeds.end()), w_.seeds.end());
          if (t < 0 || w_.seeds != w_.prev_seeds) {
            w_.prev_seeds = w_.seeds;
            t = prev_target_ = Intern(&dfa);
          }
        }
        dfa.AddByteEdge(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), t);
      }
      // Rule edges: one per rule, to the closure of all its targets, in rule order.
      w_.rule_targets.clear();
      for (int32_t s : w_.set)
        for (int32_t k = nfa_.rule_begin[s]; k < nfa_.rule_begin[s + 1]; ++k)
          w_.rule_targets.emplace_back(nfa_.rules[k].rule, nfa_.rules[k].target);
      std::sort(w_.rule_targets.begin(), w_.rule_targets.end());
      for (size_t k = 0; k < w_.rule_targets.size();) {
        const RuleId rule = w_.rule_targets[k].first;
        w_.seeds.clear();
        for (; k < w_.rule_targets.size() && w_.rule_targets[k].first == rule; ++k)
          w_.seeds.push_back(w_.rule_targets[k].second);
        w_.seeds.erase(std::unique(w_.seeds.begin(), w_.seeds.end()), w_.seeds.end());  // sorted with the pairs
        const int32_t t = Intern(&dfa);
        dfa.AddRuleEdge(rule, t);
      }
      dfa.CloseState();
    }
    return dfa;
  }

 private:
  // The byte edges of w_.set into w_.edges, ordered by lo, and their boundaries (each lo and
  // hi + 1) into w_.bounds, sorted and unique. A set of thousands of NFA states (a search
  // pattern's `.*` over JSON content) is bucketed by byte; a small one is sorted, which costs
  // less than a pass over the 256 bytes.
  void GatherByteEdges() {
    w_.edges.clear();
    for (int32_t s : w_.set)
      w_.edges.insert(w_.edges.end(), nfa_.bytes.begin() + nfa_.byte_begin[s],
                      nfa_.bytes.begin() + nfa_.byte_begin[s + 1]);
    w_.bounds.clear();
    constexpr size_t kBucketFrom = 64;
    if (w_.edges.size() < kBucketFrom) {
      for (const NfaByteEdge& e : w_.edges) {
        w_.bounds.push_back(e.lo);
        w_.bounds.push_back(e.hi + 1);
      }
      std::sort(w_.bounds.begin(), w_.bounds.end());
      w_.bounds.erase(std::unique(w_.bounds.begin(), w_.bounds.end()), w_.bounds.end());
      std::sort(w_.edges.begin(), w_.edges.end(),
                [](const NfaByteEdge& x, const NfaByteEdge& y) { return x.lo < y.lo; });
      return;
    }
    std::array<int32_t, 258> at{};  // edges per lo, then where each lo's edges start
    std::array<uint8_t, 257> is_bound{};
    for (const NfaByteEdge& e : w_.edges) {
      ++at[e.lo + 1];
      is_bound[e.lo] = 1;
      is_bound[e.hi + 1] = 1;
    }
    for (int b = 1; b < 258; ++b) at[b] += at[b - 1];
    w_.sorted_edges.resize(w_.edges.size());
    for (const NfaByteEdge& e : w_.edges) w_.sorted_edges[at[e.lo]++] = e;
    w_.edges.swap(w_.sorted_edges);
    for (int b = 0; b < 257; ++b)
      if (is_bound[b]) w_.bounds.push_back(b);
  }

  // The epsilon closure of w_.seeds, sorted, into w_.closure.
  void Closure() {
    ++stamp_;
    w_.closure.clear();
    w_.stack.clear();
    for (int32_t s : w_.seeds)
      if (w_.mark[s] != stamp_) {
        w_.mark[s] = stamp_;
        w_.stack.push_back(s);
      }
    while (!w_.stack.empty()) {
      int32_t s = w_.stack.back();
      w_.stack.pop_back();
      if (w_.kept[s]) w_.closure.push_back(s);
      for (int32_t k = nfa_.eps_begin[s]; k < nfa_.eps_begin[s + 1]; ++k) {
        int32_t t = nfa_.eps[k];
        if (w_.mark[t] != stamp_) {
          w_.mark[t] = stamp_;
          w_.stack.push_back(t);
        }
      }
    }
    std::sort(w_.closure.begin(), w_.closure.end());
  }

  // The DFA state of the closure of w_.seeds (a new one if that set is new).
  // The seeds come sorted and without duplicates.
  int32_t Intern(RuleDfa* dfa) {
    bool new_seeds = false;
    const int32_t seed_id = w_.seed_sets.Intern(w_.seeds, &new_seeds);
    if (!new_seeds) return w_.seed_state[seed_id];
    const int32_t id = InternClosure(dfa);
    w_.seed_state.push_back(id);
    return id;
  }

  int32_t InternClosure(RuleDfa* dfa) {
    Closure();
    bool inserted = false;
    // A DFA far larger than its NFA means a subset blow-up (typically an unrolled bounded
    // repetition whose items overlap what follows); the caller may retry with counted loops.
    const int64_t cap =
        std::min<int64_t>(limits_.max_dfa_states, std::max<int64_t>(65536, 64 * static_cast<int64_t>(nfa_.num_states)));
    const int32_t before = w_.sets.size();
    const int32_t id = w_.sets.Intern(w_.closure, &inserted);
    if (!inserted) return id;
    if (static_cast<int64_t>(before) >= cap) {
      throw Error(ErrorKind::kLimitExceeded,
                  "rule automaton exceeds " + std::to_string(cap) +
                      " DFA states (limit max_dfa_states, a GrammarCompiler option, or 64x the NFA)");
    }
    if ((before & 1023) == 0) limits_.CheckDeadline();
    dfa->AddState(std::binary_search(w_.closure.begin(), w_.closure.end(), nfa_final_));
    return id;
  }

  const Nfa& nfa_;
  int32_t nfa_final_;
  const AutomatonLimits& limits_;
  SubsetScratch& w_;
  uint32_t stamp_ = 0;
  int32_t prev_target_ = -1;  // the state interned for w_.prev_seeds (-1: none yet)
};

// Minimization's buffers, kept between rules.
struct MinimizeScratch {
  std::vector<int32_t> pred_begin, preds, fill, cls, pos, pending, batch, sig, group_of, group_count, moved, new_block,
      rep, order_of, queue;
  std::vector<uint8_t> is_pending, in_batch;
  std::vector<std::vector<int32_t>> members;
  SequenceInterner sigs;
};

// Partition refinement, then renumbering in BFS order from the start state.
// The signature of state s under the partition `cls`: finality, byte ranges by target class
// (adjacent ranges into one class merged) and rule edges by target class.
void StateSignature(const RuleDfa& dfa, const std::vector<int32_t>& cls, int32_t s, std::vector<int32_t>* sig) {
  sig->assign(1, dfa.is_final[s]);
  int prev_hi = -2, prev_cls = -1;
  for (const auto& e : dfa.byte_edges(s)) {
    int c = cls[e.target];
    if (e.lo == prev_hi + 1 && c == prev_cls) {
      sig->back() = e.hi;  // extend the previous merged range
    } else {
      sig->push_back(-1);
      sig->push_back(e.lo);
      sig->push_back(c);
      sig->push_back(e.hi);
    }
    prev_hi = e.hi;
    prev_cls = c;
  }
  sig->push_back(-2);
  for (const auto& e : dfa.rule_edges(s)) {
    sig->push_back(e.rule);
    sig->push_back(cls[e.target]);
  }
}

// Partition refinement with a worklist: a state's signature changes only when one of its
// successors changes block, so only the predecessors of states that moved are re-examined
// (Moore's rounds recompute every state, which is quadratic on the long chains of literal
// keys). Within a block the states not re-examined share one signature, so a re-examined
// state stays iff it matches one of them; the others split off grouped by signature. Never
// splitting equivalent states and stopping only when every block is uniform gives the
// coarsest stable partition, i.e. the minimal DFA.
RuleDfa Minimize(const RuleDfa& dfa, MinimizeScratch* w) {
  const int32_t n = dfa.num_states();
  // Predecessors (CSR), byte and rule edges alike.
  std::vector<int32_t>& pred_begin = w->pred_begin;
  std::vector<int32_t>& preds = w->preds;
  pred_begin.assign(n + 1, 0);
  for (int32_t s = 0; s < n; ++s) {
    for (const auto& e : dfa.byte_edges(s)) ++pred_begin[e.target + 1];
    for (const auto& e : dfa.rule_edges(s)) ++pred_begin[e.target + 1];
  }
  for (int32_t s = 0; s < n; ++s) pred_begin[s + 1] += pred_begin[s];
  preds.resize(pred_begin[n]);
  {
    std::vector<int32_t>& fill = w->fill;
    fill.assign(pred_begin.begin(), pred_begin.end() - 1);
    for (int32_t s = 0; s < n; ++s) {
      for (const auto& e : dfa.byte_edges(s)) preds[fill[e.target]++] = s;
      for (const auto& e : dfa.rule_edges(s)) preds[fill[e.target]++] = s;
    }
  }
  // Blocks start as final / non-final.
  std::vector<int32_t>& cls = w->cls;
  std::vector<int32_t>& pos = w->pos;
  cls.assign(n, 0);
  pos.assign(n, 0);
  // Blocks' member lists; their vectors are kept between rules (num_blocks in use).
  std::vector<std::vector<int32_t>>& members = w->members;
  int32_t num_blocks = 0;
  auto new_block_id = [&]() {
    if (static_cast<int32_t>(members.size()) == num_blocks) members.emplace_back();
    members[num_blocks].clear();
    return num_blocks++;
  };
  {
    int32_t id_of[2] = {-1, -1};
    for (int32_t s = 0; s < n; ++s) {
      int f = dfa.is_final[s] ? 1 : 0;
      if (id_of[f] < 0) id_of[f] = new_block_id();
      cls[s] = id_of[f];
      pos[s] = static_cast<int32_t>(members[cls[s]].size());
      members[cls[s]].push_back(s);
    }
  }
  std::vector<int32_t>& pending = w->pending;
  std::vector<int32_t>& batch = w->batch;
  pending.resize(n);
  for (int32_t s = 0; s < n; ++s) pending[s] = s;
  std::vector<uint8_t>& is_pending = w->is_pending;
  std::vector<uint8_t>& in_batch = w->in_batch;
  is_pending.assign(n, 1);
  in_batch.assign(n, 0);
  std::vector<int32_t>&sig = w->sig, &group_of = w->group_of, &group_count = w->group_count, &moved = w->moved;
  std::vector<int32_t>& new_block = w->new_block;
  SequenceInterner& sigs = w->sigs;
  while (!pending.empty()) {
    batch.swap(pending);
    pending.clear();
    for (int32_t s : batch) {
      is_pending[s] = 0;
      in_batch[s] = 1;
    }
    // Process the batch block by block.
    std::sort(batch.begin(), batch.end(), [&](int32_t a, int32_t b) { return cls[a] < cls[b]; });
    for (size_t lo = 0; lo < batch.size();) {
      size_t hi = lo;
      const int32_t block = cls[batch[lo]];
      while (hi < batch.size() && cls[batch[hi]] == block) ++hi;
      const int32_t examined = static_cast<int32_t>(hi - lo);
      const auto& mem = members[block];
      int32_t clean = -1;
      if (static_cast<size_t>(examined) < mem.size()) {
        for (int32_t s : mem)
          if (!in_batch[s]) {
            clean = s;
            break;
          }
      }
      sigs.Clear(static_cast<size_t>(examined) + 1);
      bool inserted = false;
      if (clean >= 0) {
        StateSignature(dfa, cls, clean, &sig);
        sigs.Intern(sig, &inserted);  // group 0 stays
      }
      group_of.resize(examined);
      for (int32_t k = 0; k < examined; ++k) {
        StateSignature(dfa, cls, batch[lo + k], &sig);
        group_of[k] = sigs.Intern(sig, &inserted);
      }
      const int32_t num_groups = sigs.size();
      if (num_groups > 1) {
        // The group that stays: the clean members' one, else the largest.
        int32_t stay = 0;
        if (clean < 0) {
          group_count.assign(num_groups, 0);
          for (int32_t k = 0; k < examined; ++k) ++group_count[group_of[k]];
          stay = static_cast<int32_t>(std::max_element(group_count.begin(), group_count.end()) - group_count.begin());
        }
        new_block.assign(num_groups, -1);
        moved.clear();
        for (int32_t k = 0; k < examined; ++k) {
          const int32_t g = group_of[k];
          if (g == stay) continue;
          if (new_block[g] < 0) new_block[g] = new_block_id();
          const int32_t s = batch[lo + k];
          // Swap-remove s from its block, append it to the new one.
          auto& old_mem = members[block];
          const int32_t last = old_mem.back();
          old_mem[pos[s]] = last;
          pos[last] = pos[s];
          old_mem.pop_back();
          cls[s] = new_block[g];
          pos[s] = static_cast<int32_t>(members[cls[s]].size());
          members[cls[s]].push_back(s);
          moved.push_back(s);
        }
        for (int32_t s : moved)
          for (int32_t k = pred_begin[s]; k < pred_begin[s + 1]; ++k) {
            const int32_t p = preds[k];
            if (!is_pending[p]) {
              is_pending[p] = 1;
              pending.push_back(p);
            }
          }
      }
      for (size_t k = lo; k < hi; ++k) in_batch[batch[k]] = 0;
      lo = hi;
    }
  }
  const int32_t num_classes = num_blocks;
  // BFS from the start's class.
  std::vector<int32_t>& rep = w->rep;
  rep.assign(num_classes, -1);
  for (int32_t s = 0; s < n; ++s)
    if (rep[cls[s]] < 0) rep[cls[s]] = s;
  std::vector<int32_t>& order_of = w->order_of;
  order_of.assign(num_classes, -1);
  std::vector<int32_t>& queue = w->queue;
  queue.assign(1, cls[0]);
  order_of[cls[0]] = 0;
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    int32_t s = rep[queue[qi]];
    auto visit = [&](int32_t t) {
      if (order_of[cls[t]] < 0) {
        order_of[cls[t]] = static_cast<int32_t>(queue.size());
        queue.push_back(cls[t]);
      }
    };
    for (const auto& e : dfa.byte_edges(s)) visit(e.target);
    for (const auto& e : dfa.rule_edges(s)) visit(e.target);
  }
  RuleDfa out;
  int32_t m = static_cast<int32_t>(queue.size());
  out.is_final.reserve(m);
  out.byte_begin.reserve(m + 1);
  out.rule_begin.reserve(m + 1);
  out.byte_list.reserve(dfa.byte_list.size());
  out.rule_list.reserve(dfa.rule_list.size());
  for (int32_t i = 0; i < m; ++i) out.AddState(dfa.is_final[rep[queue[i]]] != 0);
  for (int32_t i = 0; i < m; ++i) {
    int32_t s = rep[queue[i]];
    for (const auto& e : dfa.byte_edges(s)) out.AddByteEdge(e.lo, e.hi, order_of[cls[e.target]]);
    for (const auto& e : dfa.rule_edges(s)) out.AddRuleEdge(e.rule, order_of[cls[e.target]]);
    out.CloseState();
  }
  return out;
}

}  // namespace

void AutomatonLimits::CheckDeadline() const {
  CheckThreadTimeLimit();
  if (deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > deadline) {
    throw Error(ErrorKind::kLimitExceeded, "compile exceeded its time limit of " + std::to_string(time_limit_s) +
                                               " s (limit time_limit_s, a GrammarCompiler option)");
  }
}

namespace {

// Every buffer of one rule's construction. A compile builds many small rules, so the buffers
// are kept per thread between them instead of allocated and freed for each (most of a cold
// compile's allocations otherwise).
struct RuleDfaScratch {
  NfaEdgeLists lists;
  Nfa nfa;
  std::vector<int32_t> fill;
  SubsetScratch subsets;
  MinimizeScratch minimize;
  // Roughly the bytes held by the buffers that grow with a rule's size (not the reference
  // counts, which grow with the grammar and are kept for its other rules).
  size_t RetainedBytes() const {
    auto bytes = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
    return bytes(lists.eps) + bytes(lists.bytes) + bytes(lists.rules) + bytes(nfa.eps) + bytes(nfa.bytes) +
           bytes(nfa.rules) + bytes(nfa.eps_begin) * 3 + lists.fragments.RetainedBytes() + bytes(subsets.mark) +
           bytes(subsets.kept) + subsets.sets.RetainedBytes() + subsets.seed_sets.RetainedBytes() +
           bytes(subsets.seed_state) + bytes(subsets.edges) + bytes(subsets.sorted_edges) +
           minimize.sigs.RetainedBytes() + bytes(minimize.preds) + bytes(minimize.cls) * 8;
  }
};

// A scratch from a small process-wide free list (a fresh one when the list is empty),
// released once it holds more than kKeepBytes so that the list does not keep a large rule's.
// Not thread_local: glibc allocates a dlopen'ed module's thread-local storage lazily, on a
// thread's first use, and aborts the process when that allocation fails.
class ScratchLease {
 public:
  ScratchLease() {
    {
      std::lock_guard<std::mutex> lock(FreeMutex());
      auto& free = FreeList();
      if (!free.empty()) {
        owned_ = std::move(free.back());
        free.pop_back();
      }
    }
    if (!owned_) owned_ = std::make_unique<RuleDfaScratch>();
    scratch_ = owned_.get();
  }
  ~ScratchLease() {
    constexpr size_t kKeepBytes = size_t{4} << 20;
    constexpr size_t kMaxKept = 16;
    if (scratch_->RetainedBytes() > kKeepBytes) return;  // owned_ frees it
    std::lock_guard<std::mutex> lock(FreeMutex());
    auto& free = FreeList();
    if (free.size() < kMaxKept && free.capacity() > free.size()) free.push_back(std::move(owned_));
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  RuleDfaScratch* operator->() const { return scratch_; }

 private:
  // Never destroyed (rules may be built during static destruction); reserved up front so that
  // returning a scratch never allocates in a destructor.
  static std::mutex& FreeMutex() {
    static std::mutex* mu = new std::mutex();
    return *mu;
  }
  static std::vector<std::unique_ptr<RuleDfaScratch>>& FreeList() {
    static auto* list = [] {
      auto* l = new std::vector<std::unique_ptr<RuleDfaScratch>>();
      l->reserve(16);
      return l;
    }();
    return *list;
  }
  std::unique_ptr<RuleDfaScratch> owned_;
  RuleDfaScratch* scratch_ = nullptr;
};

}  // namespace

RuleDfa MinimizeRuleDfa(const RuleDfa& dfa) {
  ScratchLease scratch;
  return Minimize(dfa, &scratch->minimize);
}

RuleDfa BuildRuleDfa(const Grammar& g, ExprId body, const AutomatonLimits& limits) {
  ScratchLease scratch;
  constexpr int32_t kMaxStatesToMinimize = 1024;
  RuleDfa spliced;
  if (SplicedByteDfa(g, body, &spliced)) {
    if (!limits.minimize || spliced.num_states() > kMaxStatesToMinimize) return spliced;
    return Minimize(spliced, &scratch->minimize);
  }
  NfaBuilder builder(g, limits, &scratch->lists);
  int32_t start = builder.NewState();
  int32_t final = builder.NewState();
  builder.BuildBody(body, start, final);
  Nfa& nfa = scratch->nfa;
  builder.Finish(&nfa, &scratch->fill);
  SubsetConstruction subsets(nfa, final, limits, &scratch->subsets);
  RuleDfa dfa = subsets.Run(start);
  // Large DFAs (long unrolled repetitions) are kept as built, which is correct, only not
  // minimal; the cap bounds the minimisation's share of a compile.
  if (!limits.minimize || dfa.num_states() > kMaxStatesToMinimize) return dfa;
  return Minimize(dfa, &scratch->minimize);
}

}  // namespace xg2
