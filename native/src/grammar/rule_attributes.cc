// Rule attributes as language transforms (see rule_attributes.h).
#include "grammar/rule_attributes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "xg2/errors.h"

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

// The strings of `dfa` with at most max_chars code points (a code point starts at every byte
// that is not a UTF-8 continuation byte 0x80..0xBF).
ByteDfaSpec LimitChars(const ByteDfaSpec& dfa, int64_t max_chars, int64_t max_states) {
  std::map<std::pair<int32_t, int64_t>, int32_t> ids;
  std::vector<std::pair<int32_t, int64_t>> keys;
  ByteDfaSpec out;
  auto id_of = [&](int32_t s, int64_t n) {
    auto [it, inserted] = ids.emplace(std::make_pair(s, n), static_cast<int32_t>(keys.size()));
    if (inserted) {
      if (static_cast<int64_t>(keys.size()) >= max_states) {
        throw Error(ErrorKind::kLimitExceeded,
                    "max_chars: the automaton has more than " + std::to_string(max_states) + " states");
      }
      keys.push_back({s, n});
      out.is_final.push_back(dfa.is_final[s]);
      out.edges.emplace_back();
    }
    return it->second;
  };
  id_of(0, 0);
  for (size_t k = 0; k < keys.size(); ++k) {
    const auto [s, n] = keys[k];
    std::vector<ByteDfaEdge> edges;
    for (const ByteDfaEdge& e : dfa.edges[s]) {
      // Split the range into continuation bytes (no new character) and the rest.
      const int lo = e.lo, hi = e.hi;
      const int pieces[3][2] = {
          {lo, std::min(hi, 0x7F)}, {std::max(lo, 0x80), std::min(hi, 0xBF)}, {std::max(lo, 0xC0), hi}};
      for (int p = 0; p < 3; ++p) {
        if (pieces[p][0] > pieces[p][1]) continue;
        const int64_t next = p == 1 ? n : n + 1;
        if (next > max_chars) continue;
        edges.push_back(
            {static_cast<uint8_t>(pieces[p][0]), static_cast<uint8_t>(pieces[p][1]), id_of(e.target, next)});
      }
    }
    out.edges[k] = std::move(edges);
  }
  return out;
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
                    const std::string& stop_capture) {
  MarkerSplit split;
  split.body = ByteDfaExprOf(g, body, rule);
  split.marker = ByteDfaExprOf(g, marker, rule);
  split.hides_marker = hides_marker;
  split.stop_capture = stop_capture;
  g->SetRuleMarkerSplit(rule, split);
}

void ApplyRuleAttributes(Grammar* g, RuleId rule, const RuleAttributes& attrs, int64_t max_states) {
  if (!attrs.any()) return;
  const std::string owner = g->rule(rule).name;
  std::vector<uint8_t> open(static_cast<size_t>(g->num_rules()), 0);
  open[rule] = 1;
  std::map<RuleId, ExprId> done;
  ExprId body = ExpandReferences(g, g->rule(rule).body, owner, &open, &done);
  ByteDfaSpec dfa = ByteDfaOfExpr(*g, body, max_states);
  // The two commute: a proper prefix of a string is shorter than it.
  if (attrs.max_chars >= 0) dfa = LimitChars(dfa, attrs.max_chars, max_states);
  if (attrs.lazy) CutAfterFinal(&dfa);
  g->SetRuleBody(rule, g->AddByteDfa(TrimAndMinimize(dfa)));
}

}  // namespace xg2
