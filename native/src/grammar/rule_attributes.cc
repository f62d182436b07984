// Rule attributes as language transforms (see rule_attributes.h).
#include "grammar/rule_attributes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "xg2/errors.h"
#include "xg2/tokenizer.h"

namespace xg2 {

namespace {

// `id` with every rule reference replaced by the referenced body (recursively). `open` holds
// the rules being expanded, to find recursion; `done` the expansions made.
ExprId ExpandReferences(Grammar* g, ExprId id, const std::string& owner, std::vector<uint8_t>* open,
                        std::map<RuleId, ExprId>* done) {
  const Expr e = g->expr(id);  // a copy: the arena grows below
  if (e.kind == ExprKind::kRuleRef) {
    auto it = done->find(e.rule);
    if (it != done->end()) return it->second;
    if ((*open)[e.rule]) {
      throw Error(ErrorKind::kGrammarSemantic,
                  "rule '" + owner + "': lazy and max_chars need a regular body, but rule '" + g->rule(e.rule).name +
                      "' is recursive (the body is matched like a terminal, and a "
                      "terminal cannot reference rule '" +
                      g->rule(e.rule).name + "')");
    }
    (*open)[e.rule] = 1;
    ExprId body = ExpandReferences(g, g->rule(e.rule).body, owner, open, done);
    (*open)[e.rule] = 0;
    (*done)[e.rule] = body;
    return body;
  }
  if (e.kind == ExprKind::kTagDispatch || e.kind == ExprKind::kAnyOrder) {
    throw Error(ErrorKind::kGrammarSemantic, "rule '" + owner + "': lazy and max_chars need a regular body");
  }
  if (e.children.empty()) return id;
  std::vector<ExprId> kids;
  for (ExprId c : e.children) kids.push_back(ExpandReferences(g, c, owner, open, done));
  if (e.kind == ExprKind::kSequence) return g->AddSequence(std::move(kids));
  if (e.kind == ExprKind::kChoice) return g->AddChoice(std::move(kids));
  return g->AddRepeat(kids[0], e.min, e.max);
}

// The shortest match commits: a final state keeps no edges.
void CutAfterFinal(ByteDfaSpec* dfa) {
  for (int32_t s = 0; s < dfa->num_states(); ++s) {
    if (dfa->is_final[s]) dfa->edges[s].clear();
  }
}

// The state after `byte` from `state` (-1: none, or no state to start from).
int32_t StepDfa(const ByteDfaSpec& dfa, int32_t state, int byte) {
  if (state < 0) return -1;
  for (const ByteDfaEdge& e : dfa.edges[state]) {
    if (byte < e.lo) return -1;
    if (byte <= e.hi) return e.target;
  }
  return -1;
}

// The points where the edges of `state` (if any) start or stop, added to `cuts`.
void AddEdgeCuts(const ByteDfaSpec& dfa, int32_t state, std::vector<int>* cuts) {
  if (state < 0) return;
  for (const ByteDfaEdge& e : dfa.edges[state]) {
    cuts->push_back(e.lo);
    cuts->push_back(e.hi + 1);
  }
}

// A state of the product BodyProduct walks: `dfa`'s, the body's (-1: none or left), the code
// points read (with a character bound), and the id bytes of a virtual token string still to read.
struct ProductKey {
  int32_t state, body_state;
  int64_t chars;
  int32_t id_bytes_left;
  bool operator<(const ProductKey& o) const {
    return std::tie(state, body_state, chars, id_bytes_left) <
           std::tie(o.state, o.body_state, o.chars, o.id_bytes_left);
  }
};

// The product of `dfa` with `body` (a suffix/stop rule's body automaton, or null), bounded to
// max_chars code points (-1: no bound), whose final states are those `is_final` picks. A code
// point starts at every byte that is not a UTF-8 continuation byte 0x80..0xBF. A token read by
// id (its virtual string, kVirtualTokenLead and three id bytes) may start while a code point is
// left and spends the rest: its text is not known here, and xgrammar lets such an atomic token
// cross the budget, after which the rule can only end.
template <class IsFinal>
ByteDfaSpec BodyProduct(const ByteDfaSpec& dfa, const ByteDfaSpec* body, int64_t max_chars, int64_t max_states,
                        IsFinal is_final) {
  constexpr int32_t kIdBytes = 3;
  std::map<ProductKey, int32_t> ids;
  std::vector<ProductKey> keys;
  ByteDfaSpec out;
  auto id_of = [&](const ProductKey& key) {
    auto [it, inserted] = ids.emplace(key, static_cast<int32_t>(keys.size()));
    if (inserted) {
      if (static_cast<int64_t>(keys.size()) >= max_states) {
        throw Error(ErrorKind::kLimitExceeded,
                    "rule attributes: the automaton has more than " + std::to_string(max_states) + " states");
      }
      keys.push_back(key);
      out.is_final.push_back(is_final(key));
      out.edges.emplace_back();
    }
    return it->second;
  };
  id_of({0, body != nullptr && body->num_states() > 0 ? 0 : -1, 0, 0});
  for (size_t k = 0; k < keys.size(); ++k) {
    const ProductKey key = keys[k];
    // Cut the bytes where either automaton's edges change, and at the continuation bytes
    // (which start no new character) and the virtual token lead.
    std::vector<int> cuts{0, 0x80, 0xC0, kVirtualTokenLead, 256};
    AddEdgeCuts(dfa, key.state, &cuts);
    if (body != nullptr) AddEdgeCuts(*body, key.body_state, &cuts);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<ByteDfaEdge> edges;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      const int lo = cuts[c], hi = cuts[c + 1] - 1;
      const int32_t target = StepDfa(dfa, key.state, lo);
      if (target < 0) continue;
      int64_t chars = key.chars;
      int32_t id_bytes_left = 0;
      if (key.id_bytes_left > 0) {
        id_bytes_left = key.id_bytes_left - 1;
      } else if (max_chars < 0) {
        // No bound: nothing to count.
      } else if (lo == kVirtualTokenLead) {
        if (chars >= max_chars) continue;
        chars = max_chars;
        id_bytes_left = kIdBytes;
      } else if (lo < 0x80 || lo > 0xBF) {
        if (++chars > max_chars) continue;
      }
      const int32_t body_target = body != nullptr ? StepDfa(*body, key.body_state, lo) : -1;
      edges.push_back(
          {static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), id_of({target, body_target, chars, id_bytes_left})});
    }
    out.edges[k] = std::move(edges);
  }
  return out;
}

// The strings of `dfa` with at most max_chars code points (see BodyProduct). With `body`, also
// the strings of exactly max_chars code points on the way to a string of `dfa` that are
// bodies: xgrammar closes a suffix/stop rule through its body when its character budget is
// spent.
ByteDfaSpec LimitChars(const ByteDfaSpec& dfa, const ByteDfaSpec* body, int64_t max_chars, int64_t max_states) {
  return BodyProduct(dfa, body, max_chars, max_states, [&](const ProductKey& key) {
    const bool body_ends = key.body_state >= 0 && key.chars == max_chars && body->is_final[key.body_state];
    return dfa.is_final[key.state] != 0 || body_ends;
  });
}

}  // namespace

size_t TemperatureLiteralLength(const std::string& text, size_t at) {
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  size_t i = at;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  size_t digits = 0;
  while (digit(i)) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (digit(i)) ++i, ++digits;
  }
  if (digits == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '-' || text[j] == '+')) ++j;
    if (digit(j)) {
      while (digit(j)) ++j;
      i = j;
    }
  }
  return i - at;
}

bool ParseTemperatureLiteral(const std::string& literal, float* value) {
  // strtod then a float cast: an overflow to inf (1e999, or 1e39 as a float) is rejected.
  char* end = nullptr;
  double parsed = std::strtod(literal.c_str(), &end);
  if (end != literal.c_str() + literal.size()) return false;
  float as_float = static_cast<float>(parsed);
  if (!std::isfinite(parsed) || !std::isfinite(as_float) || as_float < 0.0f) return false;
  *value = as_float == 0.0f ? 0.0f : as_float;  // -0 reads as 0
  return true;
}

ExprId ByteDfaExprOf(Grammar* g, ExprId expr, RuleId owner_rule, int64_t max_states) {
  if (g->expr(expr).kind == ExprKind::kByteDfa) return expr;
  const std::string owner = g->rule(owner_rule).name;
  std::vector<uint8_t> open(static_cast<size_t>(g->num_rules()), 0);
  open[owner_rule] = 1;
  std::map<RuleId, ExprId> done;
  ExprId expanded = ExpandReferences(g, expr, owner, &open, &done);
  return g->AddByteDfa(TrimAndMinimize(ByteDfaOfExpr(*g, expanded, max_states)));
}

void SetMarkerSplit(Grammar* g, RuleId rule, ExprId body, ExprId marker, bool hides_marker,
                    const std::string& stop_capture, bool whole_capture) {
  MarkerSplit split;
  split.body = ByteDfaExprOf(g, body, rule);
  split.marker = ByteDfaExprOf(g, marker, rule);
  split.hides_marker = hides_marker;
  split.whole_capture = whole_capture;
  split.stop_capture = stop_capture;
  g->SetRuleMarkerSplit(rule, split);
}

ExprId EndWithoutMarker(Grammar* g, RuleId rule, ExprId body, int64_t max_states) {
  const ByteDfaSpec& dfa = *g->expr(g->rule(rule).body).dfa;
  const ByteDfaSpec& body_dfa = *g->expr(ByteDfaExprOf(g, body, rule, max_states)).dfa;
  ByteDfaSpec out = BodyProduct(dfa, &body_dfa, -1, max_states, [&](const ProductKey& key) {
    return dfa.is_final[key.state] == 0 && key.body_state >= 0 && body_dfa.is_final[key.body_state] != 0;
  });
  return g->AddByteDfa(TrimAndMinimize(std::move(out)));
}

void ApplyRuleAttributes(Grammar* g, RuleId rule, const RuleAttributes& attrs, int64_t max_states) {
  if (!attrs.any()) return;
  const std::string owner = g->rule(rule).name;
  std::vector<uint8_t> open(static_cast<size_t>(g->num_rules()), 0);
  open[rule] = 1;
  std::map<RuleId, ExprId> done;
  ExprId body = ExpandReferences(g, g->rule(rule).body, owner, &open, &done);
  ByteDfaSpec dfa = ByteDfaOfExpr(*g, body, max_states);
  // The shortest match commits first: a budget closes a suffix/stop rule only on the way to
  // its first marker.
  if (attrs.lazy) CutAfterFinal(&dfa);
  if (attrs.max_chars >= 0) {
    const Rule& r = g->rule(rule);
    const ByteDfaSpec* split_body = r.has_marker_split() ? g->expr(r.marker_split.body).dfa.get() : nullptr;
    dfa = LimitChars(dfa, split_body, attrs.max_chars, max_states);
  }
  g->SetRuleBody(rule, g->AddByteDfa(TrimAndMinimize(std::move(dfa))));
}

}  // namespace xg2
