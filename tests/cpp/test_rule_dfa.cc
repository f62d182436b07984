// Rule-DFA minimization against a reference: random DFAs (chains, cycles, rule edges) are
// minimized by MinimizeRuleDfa and by Moore's round-based refinement written here; the state
// counts must agree (both minimal) and the minimized DFA must accept the same language as
// the input (a product walk over byte and rule symbols).
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "automata/rule_dfa.h"
#include "check.h"

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

}  // namespace

int main() {
  std::mt19937 rng(12345);
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
  if (g_failures == 0) std::printf("test_rule_dfa: OK\n");
  return g_failures ? 1 : 0;
}
