// Rule-DFA minimization against a reference: random DFAs (chains, cycles, rule edges) are
// minimized by MinimizeRuleDfa and by Moore's round-based refinement written here; the state
// counts must agree (both minimal) and the minimized DFA must accept the same language as
// the input (a product walk over byte and rule symbols).
// Construction against a reference: random expression DAGs (hash-consed, so subexpressions
// are shared between alternatives, sequences and repeats as the front ends share them) are
// built by BuildRuleDfa, and every string of up to 6 bytes over the alphabet is accepted
// exactly when a recursive matcher over the expression says it is in the language.
// The size check of length-bounded JSON content (JsonLengthProductExceeds) against the
// product it stands for: random automata over bytes the JSON decoder tells apart.
// Concatenation by merging (ConcatenatedRuleDfa) against the subset construction of the
// sequence: equal automata, state numbers included.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "automata/rule_dfa.h"
#include "check.h"
#include "xg2/grammar.h"

using namespace xg2;

namespace {

// Moore's refinement: recompute every state's signature until the class count is stable.
int32_t ReferenceMinimalStates(const RuleDfa& d) {
  const int32_t n = d.num_states();
  std::vector<int32_t> cls(n);
  for (int32_t s = 0; s < n; ++s) cls[s] = d.is_final[s];
  int32_t count = -1;
  while (true) {
    std::map<std::vector<int32_t>, int32_t> ids;
    std::vector<int32_t> next(n);
    for (int32_t s = 0; s < n; ++s) {
      // Signature over every byte (not ranges), so range splitting cannot matter.
      std::vector<int32_t> sig{cls[s]};
      std::vector<int32_t> by_byte(256, -1);
      for (const auto& e : d.byte_edges(s))
        for (int b = e.lo; b <= e.hi; ++b) by_byte[b] = cls[e.target];
      sig.insert(sig.end(), by_byte.begin(), by_byte.end());
      for (const auto& e : d.rule_edges(s)) {
        sig.push_back(e.rule);
        sig.push_back(cls[e.target]);
      }
      next[s] = ids.emplace(sig, static_cast<int32_t>(ids.size())).first->second;
    }
    cls.swap(next);
    if (static_cast<int32_t>(ids.size()) == count) break;
    count = static_cast<int32_t>(ids.size());
  }
  // Only classes reachable from the start count (MinimizeRuleDfa drops the rest).
  std::set<int32_t> seen{0};
  std::vector<int32_t> stack{0};
  std::set<int32_t> classes;
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    classes.insert(cls[s]);
    auto visit = [&](int32_t t) {
      if (seen.insert(t).second) stack.push_back(t);
    };
    for (const auto& e : d.byte_edges(s)) visit(e.target);
    for (const auto& e : d.rule_edges(s)) visit(e.target);
  }
  return static_cast<int32_t>(classes.size());
}

int32_t Step(const RuleDfa& d, int32_t s, int symbol) {  // symbol < 256: byte, else rule
  if (s < 0) return -1;
  if (symbol < 256) {
    for (const auto& e : d.byte_edges(s))
      if (e.lo <= symbol && symbol <= e.hi) return e.target;
    return -1;
  }
  for (const auto& e : d.rule_edges(s))
    if (e.rule == symbol - 256) return e.target;
  return -1;
}

bool SameLanguage(const RuleDfa& a, const RuleDfa& b, int num_rules) {
  std::set<std::pair<int32_t, int32_t>> seen{{0, 0}};
  std::vector<std::pair<int32_t, int32_t>> stack{{0, 0}};
  while (!stack.empty()) {
    auto [x, y] = stack.back();
    stack.pop_back();
    bool fx = x >= 0 && a.is_final[x], fy = y >= 0 && b.is_final[y];
    if (fx != fy) return false;
    for (int sym = 0; sym < 256 + num_rules; ++sym) {
      auto next = std::make_pair(Step(a, x, sym), Step(b, y, sym));
      if (next.first < 0 && next.second < 0) continue;
      if (seen.insert(next).second) stack.push_back(next);
    }
  }
  return true;
}

RuleDfa RandomDfa(std::mt19937& rng, int shape) {
  std::uniform_int_distribution<int> coin(0, 99);
  const int n = 2 + static_cast<int>(rng() % (shape == 0 ? 300 : 40));
  RuleDfa d;
  for (int s = 0; s < n; ++s) d.AddState(coin(rng) < (shape == 0 ? 5 : 30) || s == n - 1);
  // Ranges are added as they are drawn: AddByteEdge merging two into one is fine.
  for (int s = 0; s < n; ++s) {
    if (shape == 0) {
      // Chains of literal bytes with a few branches and back edges (keys, loops).
      const auto c = static_cast<uint8_t>('a' + rng() % 3);
      if (s + 1 < n) d.AddByteEdge(c, c, s + 1);
      if (coin(rng) < 10) d.AddByteEdge('x', 'z', static_cast<int32_t>(rng() % n));
      if (coin(rng) < 10) d.AddRuleEdge(static_cast<RuleId>(rng() % 3), static_cast<int32_t>(rng() % n));
    } else {
      // Dense random: a few disjoint ranges over a small alphabet.
      int lo = 'a';
      while (lo <= 'f') {
        int hi = lo + static_cast<int>(rng() % 3);
        if (hi > 'f') hi = 'f';
        if (coin(rng) < 60)
          d.AddByteEdge(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), static_cast<int32_t>(rng() % n));
        lo = hi + 1;
      }
      for (RuleId r = 0; r < 2; ++r)
        if (coin(rng) < 30) d.AddRuleEdge(r, static_cast<int32_t>(rng() % n));
    }
    d.CloseState();
  }
  return d;
}

// The end positions of matches of expression `id` in `text` starting at `start`.
std::set<size_t> Ends(const Grammar& g, ExprId id, const std::string& text, size_t start) {
  const Expr& e = g.expr(id);
  std::set<size_t> out;
  switch (e.kind) {
    case ExprKind::kEmpty: out.insert(start); break;
    case ExprKind::kBytes:
      if (text.compare(start, e.bytes.size(), e.bytes) == 0 && start + e.bytes.size() <= text.size())
        out.insert(start + e.bytes.size());
      break;
    case ExprKind::kCharClass:
      if (start < text.size()) {
        bool in = false;
        for (const auto& r : e.ranges)
          in |= r.lo <= static_cast<uint8_t>(text[start]) && static_cast<uint8_t>(text[start]) <= r.hi;
        if (in != e.negated) out.insert(start + 1);
      }
      break;
    case ExprKind::kSequence: {
      std::set<size_t> cur{start};
      for (ExprId c : e.children) {
        std::set<size_t> next;
        for (size_t p : cur) {
          auto ends = Ends(g, c, text, p);
          next.insert(ends.begin(), ends.end());
        }
        cur = std::move(next);
      }
      out = std::move(cur);
      break;
    }
    case ExprKind::kChoice:
      for (ExprId c : e.children) {
        auto ends = Ends(g, c, text, start);
        out.insert(ends.begin(), ends.end());
      }
      break;
    case ExprKind::kRepeat: {
      // Ends after exactly k iterations, k = 0, 1, ...; positions only grow, so unbounded
      // repeats stop once an iteration adds no new end.
      std::set<size_t> cur{start};
      for (int64_t k = 0; !cur.empty(); ++k) {
        if (k >= e.min) out.insert(cur.begin(), cur.end());
        if (e.max != kUnbounded && k == e.max) break;
        std::set<size_t> next;
        for (size_t p : cur) {
          auto ends = Ends(g, e.children[0], text, p);
          next.insert(ends.begin(), ends.end());
        }
        if (k >= e.min && std::includes(out.begin(), out.end(), next.begin(), next.end())) break;
        cur = std::move(next);
      }
      break;
    }
    default: break;
  }
  return out;
}

bool DfaAccepts(const RuleDfa& d, const std::string& text) {
  int32_t s = 0;
  for (unsigned char c : text) {
    s = Step(d, s, c);
    if (s < 0) return false;
  }
  return d.is_final[s];
}

// Random expressions over bytes a..c, each built from earlier ones (a DAG with sharing).
void CheckConstruction(std::mt19937& rng) {
  Grammar g;
  std::vector<ExprId> pool = {g.AddBytes("a"),
                              g.AddBytes("b"),
                              g.AddBytes("c"),
                              g.AddBytes("ab"),
                              g.AddCharClass({{'a', 'b'}}, false),
                              g.AddCharClass({{'b', 'b'}}, true),
                              g.AddEmpty()};
  auto pick = [&]() { return pool[rng() % pool.size()]; };
  for (int k = 0; k < 14; ++k) {
    switch (rng() % 4) {
      case 0: pool.push_back(g.AddSequence({pick(), pick(), pick()})); break;
      case 1: pool.push_back(g.AddChoice({pick(), pick()})); break;
      case 2: pool.push_back(g.AddSequence({pick(), g.AddChoice({pick(), pick()}), pick()})); break;
      default: {
        const int64_t min = rng() % 2;
        pool.push_back(g.AddRepeat(pick(), min, rng() % 3 == 0 ? kUnbounded : min + 1 + rng() % 2));
      }
    }
  }
  std::vector<std::string> texts = {""};
  for (size_t i = 0; i < texts.size() && texts[i].size() < 6; ++i)
    for (char c : {'a', 'b', 'c'}) texts.push_back(texts[i] + c);
  AutomatonLimits limits;
  for (size_t body = pool.size() - 4; body < pool.size(); ++body) {
    const RuleDfa d = BuildRuleDfa(g, pool[body], limits);
    for (const auto& t : texts) {
      const bool want = Ends(g, pool[body], t, 0).count(t.size()) > 0;
      if (DfaAccepts(d, t) != want) {
        std::printf("construction: \"%s\" accepted=%d expected=%d (expression %d of %zu)\n", t.c_str(), !want, want,
                    pool[body], pool.size());
        CHECK(false);
        return;
      }
    }
  }
}

// Bodies "prefix, ByteDfa, suffix" (a string in a JSON Schema format; built by splicing the
// automaton between the byte chains unless a final state has an edge on the suffix's first
// byte) accept exactly prefix + a string of the automaton + suffix, minimised or not.
void CheckSplicedByteDfa(std::mt19937& rng) {
  ByteDfaSpec spec;
  const int32_t n = 1 + static_cast<int32_t>(rng() % 4);
  spec.is_final.resize(n);
  spec.edges.resize(n);
  for (int32_t s = 0; s < n; ++s) {
    spec.is_final[s] = rng() % 2;
    for (char c : {'a', 'b', 'c'})
      if (rng() % 3) spec.edges[s].push_back({uint8_t(c), uint8_t(c), static_cast<int32_t>(rng() % n)});
  }
  const char* affixes[] = {"a", "c", "ab", "\"", "ca"};
  const std::string pre = affixes[rng() % 5], post = affixes[rng() % 5];
  Grammar g;
  const ExprId body = g.AddSequence({g.AddBytes(pre), g.AddByteDfa(spec), g.AddBytes(post)});
  std::vector<std::string> texts = {""};
  for (size_t i = 0; i < texts.size() && texts[i].size() < 7; ++i)
    for (char c : {'a', 'b', 'c', '"'}) texts.push_back(texts[i] + c);
  auto in_spec = [&](const std::string& t) {
    int32_t s = 0;
    for (unsigned char c : t) {
      int32_t next = -1;
      for (const auto& x : spec.edges[s])
        if (x.lo <= c && c <= x.hi) next = x.target;
      if (next < 0) return false;
      s = next;
    }
    return spec.is_final[s] != 0;
  };
  for (bool minimize : {false, true}) {
    AutomatonLimits limits;
    limits.minimize = minimize;
    const RuleDfa d = BuildRuleDfa(g, body, limits);
    for (const auto& t : texts) {
      const bool want = t.size() >= pre.size() + post.size() && t.compare(0, pre.size(), pre) == 0 &&
                        t.compare(t.size() - post.size(), post.size(), post) == 0 &&
                        in_spec(t.substr(pre.size(), t.size() - pre.size() - post.size()));
      if (DfaAccepts(d, t) != want) {
        std::printf("spliced: \"%s\" accepted=%d expected=%d (pre \"%s\" post \"%s\")\n", t.c_str(), !want, want,
                    pre.c_str(), post.c_str());
        CHECK(false);
        return;
      }
    }
  }
}

bool SameRuleDfa(const RuleDfa& a, const RuleDfa& b) {
  if (a.is_final != b.is_final || a.byte_begin != b.byte_begin || a.rule_begin != b.rule_begin) return false;
  if (a.byte_list.size() != b.byte_list.size() || a.rule_list.size() != b.rule_list.size()) return false;
  for (size_t k = 0; k < a.byte_list.size(); ++k) {
    const auto &x = a.byte_list[k], &y = b.byte_list[k];
    if (x.lo != y.lo || x.hi != y.hi || x.target != y.target) return false;
  }
  for (size_t k = 0; k < a.rule_list.size(); ++k)
    if (a.rule_list[k].rule != b.rule_list[k].rule || a.rule_list[k].target != b.rule_list[k].target) return false;
  return true;
}

// ConcatenatedRuleDfa against the subset construction: for random prefixes and bodies (bytes,
// classes, repeats and rule references) it either declines or builds exactly what
// BuildRuleDfa builds for the sequence, state numbers included. Returns how many it built.
int CheckConcatenation(std::mt19937& rng) {
  Grammar g;
  const RuleId r0 = g.DeclareRule("r0"), r1 = g.DeclareRule("r1");
  g.SetRuleBody(r0, g.AddBytes("a"));
  g.SetRuleBody(r1, g.AddBytes("b"));
  std::vector<ExprId> pool = {g.AddBytes("a"),
                              g.AddBytes("\""),
                              g.AddBytes(","),
                              g.AddCharClass({{' ', ' '}, {'\t', '\t'}}, false),
                              g.AddRepeat(g.AddCharClass({{' ', ' '}}, false), 0, kUnbounded),
                              g.AddCharClass({{'a', 'c'}}, false),
                              g.AddRuleRef(r0),
                              g.AddRuleRef(r1)};
  auto pick = [&]() { return pool[rng() % pool.size()]; };
  for (int k = 0; k < 10; ++k) {
    switch (rng() % 4) {
      case 0: pool.push_back(g.AddSequence({pick(), pick()})); break;
      case 1: pool.push_back(g.AddChoice({pick(), pick()})); break;
      case 2: pool.push_back(g.AddSequence({pick(), pick(), pick()})); break;
      default: pool.push_back(g.AddRepeat(pick(), rng() % 2, rng() % 2 ? kUnbounded : 2));
    }
  }
  AutomatonLimits limits;
  limits.minimize = false;
  int built = 0;
  for (int k = 0; k < 12; ++k) {
    const ExprId prefix = pick(), body = pick();
    RuleDfa joined;
    if (!ConcatenatedRuleDfa(BuildRuleDfa(g, prefix, limits), BuildRuleDfa(g, body, limits), &joined)) continue;
    ++built;
    if (!SameRuleDfa(joined, BuildRuleDfa(g, g.AddSequence({prefix, body}), limits))) {
      std::printf("concatenation differs: prefix %d, body %d\n", prefix, body);
      CHECK(false);
      return built;
    }
  }
  return built;
}

// The unbounded product of a content automaton whose decoder state is determined: as many
// states as the automaton reaches, and the same finals.
void CheckProductIsTheAutomaton(const ByteDfaSpec& d) {
  std::vector<int32_t> order{0};
  std::vector<uint8_t> seen(d.is_final.size(), 0);
  seen[0] = 1;
  for (size_t i = 0; i < order.size(); ++i) {
    for (const auto& e : d.edges[order[i]]) {
      if (!seen[e.target]) {
        seen[e.target] = 1;
        order.push_back(e.target);
      }
    }
  }
  const ByteDfaSpec product = IntersectJsonLength(d, 0, -1, 1 << 20);
  CHECK_EQ(product.num_states(), static_cast<int32_t>(order.size()));
  int finals = 0, product_finals = 0;
  for (int32_t s : order) finals += d.is_final[s] ? 1 : 0;
  for (uint8_t f : product.is_final) product_finals += f ? 1 : 0;
  CHECK_EQ(product_finals, finals);
}

// Random content automata over byte ranges the JSON decoder treats differently (ASCII,
// escapes, hex digits, UTF-8 lead and continuation bytes); the layered count must equal the
// number of states IntersectJsonLength builds, with and without stop states. Where the
// decoder's state is determined by the automaton's, the unbounded product is the automaton
// itself: as many states as it reaches, the same finals. Returns whether it was determined.
bool CheckJsonLengthProductSize(std::mt19937& rng) {
  static const ByteDfaEdge kRanges[] = {{'0', '9', 0},   {'A', 'Z', 0},  {'\\', '\\', 0}, {'a', 'f', 0},
                                        {'n', 'n', 0},   {'u', 'u', 0},  {0x80, 0xBF, 0}, {0xC2, 0xDF, 0},
                                        {0xE0, 0xEF, 0}, {0xF0, 0xF4, 0}};
  const int n = 1 + static_cast<int>(rng() % 6);
  ByteDfaSpec d;
  for (int s = 0; s < n; ++s) {
    d.is_final.push_back(rng() % 3 == 0);
    std::vector<ByteDfaEdge> edges;
    for (const auto& r : kRanges) {
      if (rng() % 2) edges.push_back({r.lo, r.hi, static_cast<int32_t>(rng() % n)});
    }
    d.edges.push_back(edges);
  }
  const bool determined = JsonDecoderDetermined(d);
  if (determined) CheckProductIsTheAutomaton(d);
  const std::vector<uint8_t> stars = JsonStarStates(d);
  for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 3}, {2, 7}, {4, -1}, {0, 0}, {1, 12}}) {
    for (const std::vector<uint8_t>* stop : {static_cast<const std::vector<uint8_t>*>(nullptr), &stars}) {
      std::vector<JsonLengthExit> exits;
      const int64_t size = IntersectJsonLength(d, lo, hi, 1 << 20, stop, stop ? &exits : nullptr).num_states();
      CHECK(!JsonLengthProductExceeds(d, lo, hi, size, stop));
      CHECK(JsonLengthProductExceeds(d, lo, hi, size - 1, stop));
      if (g_failures) {
        std::printf("json length product: %d states, bounds %lld..%lld, stop %d, size %lld\n", n,
                    static_cast<long long>(lo), static_cast<long long>(hi), stop != nullptr,
                    static_cast<long long>(size));
        return determined;
      }
    }
  }
  return determined;
}

// Random automata that read whole characters (an ASCII range, "\\n" or "\\u" plus four hex
// digits, a two-byte UTF-8 sequence) through states of their own: the decoder's state is
// determined, and the unbounded product keeps every reachable state and final.
void CheckDeterminedContent(std::mt19937& rng) {
  const int n = 1 + static_cast<int>(rng() % 6);
  ByteDfaSpec d;
  d.is_final.assign(n, 0);
  d.edges.assign(n, {});
  auto fresh = [&d](bool final) {
    d.is_final.push_back(final ? 1 : 0);
    d.edges.emplace_back();
    return static_cast<int32_t>(d.is_final.size() - 1);
  };
  for (int s = 0; s < n; ++s) {
    d.is_final[s] = rng() % 3 == 0;
    auto target = [&] { return static_cast<int32_t>(rng() % n); };
    if (rng() % 2) d.edges[s].push_back({'a', 'm', target()});
    if (rng() % 2) {
      const int32_t esc = fresh(false);
      d.edges[s].push_back({'\\', '\\', esc});
      d.edges[esc].push_back({'n', 'n', target()});
      if (rng() % 2) {
        int32_t hex = fresh(false);
        d.edges[esc].push_back({'u', 'u', hex});
        for (int k = 0; k < 3; ++k) {
          const int32_t next = fresh(false);
          d.edges[hex].push_back({'0', '7', next});
          hex = next;
        }
        d.edges[hex].push_back({'0', '9', target()});
      }
    }
    if (rng() % 2) {
      const int32_t cont = fresh(false);
      d.edges[s].push_back({0xC2, 0xDF, cont});
      d.edges[cont].push_back({0x80, 0xBF, target()});
    }
  }
  CHECK(JsonDecoderDetermined(d));
  CheckProductIsTheAutomaton(d);
}

}  // namespace

int main() {
  std::mt19937 rng(12345);
  for (int iter = 0; iter < 300 && !g_failures; ++iter) CheckSplicedByteDfa(rng);
  for (int iter = 0; iter < 600; ++iter) {
    const int shape = iter % 2;
    RuleDfa d = RandomDfa(rng, shape);
    RuleDfa m = MinimizeRuleDfa(d);
    CHECK_EQ(m.num_states(), ReferenceMinimalStates(d));
    CHECK(SameLanguage(d, m, 3));
    // Minimizing again changes nothing.
    CHECK_EQ(MinimizeRuleDfa(m).num_states(), m.num_states());
    if (g_failures) {
      std::printf("iteration %d (shape %d, %d states)\n", iter, shape, d.num_states());
      break;
    }
  }
  // A long chain: every state distinct (each is a different distance from the end).
  RuleDfa chain;
  const int n = 5000;
  for (int s = 0; s < n; ++s) chain.AddState(s == n - 1);
  for (int s = 0; s < n; ++s) {
    if (s + 1 < n) chain.AddByteEdge('a', 'a', s + 1);
    chain.CloseState();
  }
  CHECK_EQ(MinimizeRuleDfa(chain).num_states(), n);
  for (int iter = 0; iter < 300 && g_failures == 0; ++iter) CheckConstruction(rng);
  int determined = 0;
  for (int iter = 0; iter < 500 && g_failures == 0; ++iter) determined += CheckJsonLengthProductSize(rng) ? 1 : 0;
  CHECK(determined > 0 && determined < 500);  // both kinds occur
  for (int iter = 0; iter < 300 && g_failures == 0; ++iter) CheckDeterminedContent(rng);
  {
    // Reached at a boundary and after a backslash (one state for both): not determined.
    ByteDfaSpec mixed;
    mixed.is_final = {1};
    mixed.edges = {{{'\\', '\\', 0}, {'n', 'n', 0}}};
    CHECK(!JsonDecoderDetermined(mixed));
    // Final after a backslash: the product drops that end, so it is not the automaton.
    ByteDfaSpec open_escape;
    open_escape.is_final = {0, 1};
    open_escape.edges = {{{'\\', '\\', 1}}, {{'n', 'n', 0}}};
    CHECK(!JsonDecoderDetermined(open_escape));
    // A byte no JSON string content holds there (a lone continuation byte): not determined.
    ByteDfaSpec lone;
    lone.is_final = {1, 1};
    lone.edges = {{{0x80, 0x80, 1}}, {}};
    CHECK(!JsonDecoderDetermined(lone));
  }
  // Trimming without minimisation: an automaton numbered breadth first with every state live
  // comes back as it is; one with a dead state loses it, the rest renumbered.
  {
    ByteDfaSpec live;
    live.is_final = {0, 0, 1};
    live.edges = {{{'a', 'a', 1}, {'b', 'b', 2}}, {{'c', 'c', 2}}, {{'a', 'a', 0}}};
    CHECK(TrimAndMinimize(live, false) == live);
    ByteDfaSpec dead = live;
    dead.is_final.push_back(0);  // state 3: reached on 'd', reaches no final state
    dead.edges[0].push_back({'d', 'd', 3});
    dead.edges.emplace_back();
    CHECK(TrimAndMinimize(dead, false) == live);
    ByteDfaSpec unordered = live;  // states 1 and 2 swapped: renumbered breadth first
    unordered.is_final = {0, 1, 0};
    unordered.edges = {{{'a', 'a', 2}, {'b', 'b', 1}}, {{'a', 'a', 0}}, {{'c', 'c', 1}}};
    CHECK(TrimAndMinimize(unordered, false) == live);
  }
  int concatenated = 0;
  for (int iter = 0; iter < 400 && g_failures == 0; ++iter) concatenated += CheckConcatenation(rng);
  CHECK(concatenated > 200);  // the merge, not only its refusals, is exercised
  // An any-order object's "separator, member" rule: the member's automaton behind the separator's.
  {
    Grammar g;
    const RuleId value = g.DeclareRule("value");
    g.SetRuleBody(value, g.AddBytes("1"));
    const ExprId ws = g.AddRepeat(g.AddCharClass({{'\t', '\n'}, {' ', ' '}}, false), 0, kUnbounded);
    const ExprId separator = g.AddSequence({ws, g.AddBytes(","), ws});
    const ExprId member = g.AddSequence({g.AddBytes("\"key\""), ws, g.AddBytes(":"), ws, g.AddRuleRef(value)});
    AutomatonLimits limits;
    limits.minimize = false;
    RuleDfa joined;
    CHECK(ConcatenatedRuleDfa(BuildRuleDfa(g, separator, limits), BuildRuleDfa(g, member, limits), &joined));
    CHECK(SameRuleDfa(joined, BuildRuleDfa(g, g.AddSequence({separator, member}), limits)));
    // A body whose start is entered again ("(ab)*" returns to it) is declined; "(ab)+" is not.
    const ExprId looping = g.AddRepeat(g.AddBytes("ab"), 0, kUnbounded);
    CHECK(!ConcatenatedRuleDfa(BuildRuleDfa(g, separator, limits), BuildRuleDfa(g, looping, limits), &joined));
    const ExprId once_or_more = g.AddRepeat(g.AddBytes("ab"), 1, kUnbounded);
    CHECK(ConcatenatedRuleDfa(BuildRuleDfa(g, separator, limits), BuildRuleDfa(g, once_or_more, limits), &joined));
    CHECK(SameRuleDfa(joined, BuildRuleDfa(g, g.AddSequence({separator, once_or_more}), limits)));
    // So is a body whose first byte the separator's final state also reads.
    const ExprId spaced = g.AddSequence({g.AddBytes(" "), g.AddBytes("x")});
    CHECK(!ConcatenatedRuleDfa(BuildRuleDfa(g, separator, limits), BuildRuleDfa(g, spaced, limits), &joined));
  }
  if (g_failures == 0) std::printf("test_rule_dfa: OK\n");
  return g_failures ? 1 : 0;
}
