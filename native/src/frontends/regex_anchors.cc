#include "frontends/regex_anchors.h"

#include <utility>
#include <vector>

#include "xg2/errors.h"

namespace xg2 {

namespace {

bool IsEmptyExpr(const Grammar& g, ExprId id) { return g.expr(id).kind == ExprKind::kEmpty; }

ExprId Seq(Grammar* g, ExprId a, ExprId b) {
  if (IsEmptyExpr(*g, a)) return b;
  if (IsEmptyExpr(*g, b)) return a;
  return g->AddSequence({a, b});
}

}  // namespace

AnchoredLanguage AnchoredLanguage::Plain(ExprId expr, bool nullable) {
  AnchoredLanguage l;
  l.lang_[0][0] = expr;
  l.nullable_[0][0] = nullable;
  return l;
}

AnchoredLanguage AnchoredLanguage::StartAnchor(Grammar* g) {
  AnchoredLanguage l;
  l.lang_[1][0] = g->AddEmpty();
  l.nullable_[1][0] = true;
  return l;
}

AnchoredLanguage AnchoredLanguage::EndAnchor(Grammar* g) {
  AnchoredLanguage l;
  l.lang_[0][1] = g->AddEmpty();
  l.nullable_[0][1] = true;
  return l;
}

bool AnchoredLanguage::HasAnchors() const {
  return lang_[1][0] != kNoExpr || lang_[0][1] != kNoExpr || lang_[1][1] != kNoExpr;
}

void AnchoredLanguage::Add(Grammar* g, int s, int e, ExprId expr, bool nullable) {
  ExprId& slot = lang_[s][e];
  slot = slot == kNoExpr ? expr : g->AddChoice({slot, expr});
  nullable_[s][e] = nullable_[s][e] || nullable;
}

void AnchoredLanguage::Spend(Budget* budget) {
  if (--budget->compositions_left < 0) {
    throw Error(ErrorKind::kLimitExceeded, "regex: too many terms composed around anchors (over 1024)");
  }
}

AnchoredLanguage AnchoredLanguage::Concat(Grammar* g, const AnchoredLanguage& first, const AnchoredLanguage& second,
                                          Budget* budget) {
  Spend(budget);
  AnchoredLanguage out;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 2; ++b) {
      ExprId x = first.lang_[a][b];
      if (x == kNoExpr) continue;
      for (int c = 0; c < 2; ++c) {
        for (int d = 0; d < 2; ++d) {
          ExprId y = second.lang_[c][d];
          if (y == kNoExpr) continue;
          // A '^' in `second` leaves `first` only its empty match; a '$' in `first` leaves
          // `second` only its empty match.
          if (c == 1 && !first.nullable_[a][b]) continue;
          if (b == 1 && !second.nullable_[c][d]) continue;
          ExprId xx = c == 1 ? g->AddEmpty() : x;
          ExprId yy = b == 1 ? g->AddEmpty() : y;
          bool nullable = (c == 1 || first.nullable_[a][b]) && (b == 1 || second.nullable_[c][d]);
          out.Add(g, a | c, b | d, Seq(g, xx, yy), nullable);
        }
      }
    }
  }
  return out;
}

AnchoredLanguage AnchoredLanguage::Union(Grammar* g, const std::vector<AnchoredLanguage>& alternatives) {
  AnchoredLanguage out;
  for (int s = 0; s < 2; ++s) {
    for (int e = 0; e < 2; ++e) {
      std::vector<ExprId> parts;
      for (const AnchoredLanguage& a : alternatives) {
        if (a.lang_[s][e] == kNoExpr) continue;
        parts.push_back(a.lang_[s][e]);
        out.nullable_[s][e] = out.nullable_[s][e] || a.nullable_[s][e];
      }
      if (!parts.empty()) out.lang_[s][e] = parts.size() == 1 ? parts[0] : g->AddChoice(std::move(parts));
    }
  }
  return out;
}

AnchoredLanguage AnchoredLanguage::Repeat(Grammar* g, const AnchoredLanguage& body, int64_t min, int64_t max,
                                          int max_unrolled, int column, Budget* budget) {
  if (!body.HasAnchors()) {
    ExprId plain = body.lang_[0][0];
    if (plain == kNoExpr) return min == 0 ? Plain(g->AddEmpty(), true) : AnchoredLanguage();
    return Plain(g->AddRepeat(plain, min, max), min == 0 || body.nullable_[0][0]);
  }
  const int64_t copies = max == kUnbounded ? min : max;
  if (copies > max_unrolled)
    throw SyntaxError("anchor under a repetition bound over " + std::to_string(max_unrolled), 1, column);
  AnchoredLanguage out = Plain(g->AddEmpty(), true);
  for (int64_t i = 0; i < min; ++i) out = Concat(g, out, body, budget);
  if (max == kUnbounded) {
    // body*: the anchor-free iterations repeat freely; a '^' iteration comes first among the
    // consuming ones and a '$' iteration last.
    AnchoredLanguage star;
    ExprId free = body.lang_[0][0] == kNoExpr ? g->AddEmpty() : g->AddRepeat(body.lang_[0][0], 0, kUnbounded);
    star.Add(g, 0, 0, free, true);
    AnchoredLanguage tail = Plain(free, true);
    AnchoredLanguage start, end, both;
    start.lang_[1][0] = body.lang_[1][0], start.nullable_[1][0] = body.nullable_[1][0];
    end.lang_[0][1] = body.lang_[0][1], end.nullable_[0][1] = body.nullable_[0][1];
    both.lang_[1][1] = body.lang_[1][1], both.nullable_[1][1] = body.nullable_[1][1];
    AnchoredLanguage start_tail = Concat(g, start, tail, budget);
    star = Union(g, {star, start_tail, Concat(g, tail, end, budget), both, Concat(g, start_tail, end, budget)});
    return Concat(g, out, star, budget);
  }
  AnchoredLanguage optional = Union(g, {body, Plain(g->AddEmpty(), true)});
  for (int64_t i = min; i < max; ++i) out = Concat(g, out, optional, budget);
  return out;
}

ExprId AnchoredLanguage::Finish(Grammar* g, bool search_semantics, ExprId any) const {
  std::vector<ExprId> parts;
  for (int s = 0; s < 2; ++s) {
    for (int e = 0; e < 2; ++e) {
      ExprId l = lang_[s][e];
      if (l == kNoExpr) continue;
      if (search_semantics && s == 0) l = Seq(g, any, l);
      if (search_semantics && e == 0) l = Seq(g, l, any);
      parts.push_back(l);
    }
  }
  if (parts.empty()) return g->AddCharClass({}, false);  // no path: matches nothing
  return parts.size() == 1 ? parts[0] : g->AddChoice(std::move(parts));
}

bool HasInnerAnchors(const std::u32string& p) {
  int depth = 0;
  bool alternative_start = true;  // only '^'s so far in this top-level alternative
  for (size_t i = 0; i < p.size(); ++i) {
    char32_t c = p[i];
    if (c == '\\') {
      ++i;
    } else if (c == '[') {
      for (++i; i < p.size() && p[i] != ']'; ++i) {
        if (p[i] == '\\') ++i;
      }
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      --depth;
    } else if (c == '|' && depth == 0) {
      alternative_start = true;
      continue;
    } else if (c == '^') {
      if (depth != 0 || !alternative_start) return true;
      continue;
    } else if (c == '$') {
      size_t j = i;
      while (j < p.size() && p[j] == '$') ++j;
      if (depth != 0 || (j < p.size() && p[j] != '|')) return true;
    }
    alternative_start = false;
  }
  return false;
}

}  // namespace xg2
