// Numeric ranges of the JSON Schema front end: integer bounds by digit-range decomposition,
// decimal bounds by integer-part ranges plus fraction-digit comparisons, multipleOf for
// integers by a remainder automaton.
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "frontends/json_schema_internal.h"

namespace xg2::jsonschema {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxSafe = 999999999999999999LL;  // 18 digits

ExprId Digit(Grammar* g, int lo, int hi) { return Cls(g, {{uint32_t('0' + lo), uint32_t('0' + hi)}}); }
ExprId Digits(Grammar* g, int64_t min, int64_t max) { return g->AddRepeat(Digit(g, 0, 9), min, max); }

int NumDigits(int64_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

int64_t Pow10(int n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Canonical unsigned decimal integers (no leading zeros) in [lo, hi]; hi == kInf: unbounded.
ExprId UnsignedRange(Grammar* g, int64_t lo, int64_t hi) {
  if (hi != kInf && hi < lo) return kNoExpr;
  std::vector<ExprId> alts;
  int llen = NumDigits(lo);
  int hlen = hi == kInf ? llen : NumDigits(hi);
  for (int len = llen; len <= hlen; ++len) {
    int64_t a = std::max(lo, len == 1 ? 0 : Pow10(len - 1));
    int64_t b = (hi == kInf || len < hlen) ? Pow10(len) - 1 : hi;
    if (len == 18 && hi == kInf) b = Pow10(18) - 1;
    alts.push_back(FixedWidthRange(g, a, b, len));
  }
  if (hi == kInf) alts.push_back(g->AddSequence({Digit(g, 1, 9), Digits(g, llen, kUnbounded)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

}  // namespace

Decimal ParseDecimal(const std::string& literal, const char* keyword) {
  Decimal d;
  std::string s = literal;
  if (!s.empty() && s[0] == '-') {
    d.negative = true;
    s = s.substr(1);
  }
  int exp = 0;
  size_t e = s.find_first_of("eE");
  if (e != std::string::npos) {
    exp = std::atoi(s.c_str() + e + 1);
    s = s.substr(0, e);
  }
  std::string ip = s, fp;
  size_t dot = s.find('.');
  if (dot != std::string::npos) {
    ip = s.substr(0, dot);
    fp = s.substr(dot + 1);
  }
  if (exp > 40 || exp < -40) throw UnsupportedKeyword{keyword, "bound " + literal + " is out of range"};
  while (exp > 0) {
    ip += fp.empty() ? '0' : fp[0];
    if (!fp.empty()) fp.erase(0, 1);
    --exp;
  }
  while (exp < 0) {
    fp.insert(fp.begin(), ip.empty() ? '0' : ip.back());
    if (!ip.empty()) ip.pop_back();
    ++exp;
  }
  while (ip.size() > 1 && ip[0] == '0') ip.erase(0, 1);
  if (ip.empty()) ip = "0";
  while (!fp.empty() && fp.back() == '0') fp.pop_back();
  if (ip.size() > 18) throw UnsupportedKeyword{keyword, "bound " + literal + " is out of range"};
  d.ip = std::atoll(ip.c_str());
  d.frac = fp;
  if (d.ip == 0 && d.frac.empty()) d.negative = false;
  return d;
}

namespace {

// Compares magnitudes.
int CompareMag(const Decimal& a, const Decimal& b) {
  if (a.ip != b.ip) return a.ip < b.ip ? -1 : 1;
  size_t n = std::max(a.frac.size(), b.frac.size());
  for (size_t i = 0; i < n; ++i) {
    char x = i < a.frac.size() ? a.frac[i] : '0';
    char y = i < b.frac.size() ? b.frac[i] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

struct MagBound {
  bool present = false;
  Decimal d;
  bool incl = true;
};

ExprId FracAny(Grammar* g) { return Opt(g, g->AddSequence({Lit(g, "."), Digits(g, 1, kUnbounded)})); }
ExprId FracZero(Grammar* g) { return Opt(g, g->AddSequence({Lit(g, "."), g->AddRepeat(Lit(g, "0"), 1, kUnbounded)})); }
ExprId NonzeroDigits(Grammar* g) {  // [0-9]* [1-9] [0-9]*
  return g->AddSequence({Digits(g, 0, kUnbounded), Digit(g, 1, 9), Digits(g, 0, kUnbounded)});
}

// Fraction digits (after '.') >= d (or > d).
ExprId FracDigitsGE(Grammar* g, const std::string& d, size_t i, bool incl) {
  if (i == d.size()) return incl ? Digits(g, 0, kUnbounded) : NonzeroDigits(g);
  int c = d[i] - '0';
  std::vector<ExprId> alts;
  if (c < 9) alts.push_back(g->AddSequence({Digit(g, c + 1, 9), Digits(g, 0, kUnbounded)}));
  alts.push_back(g->AddSequence({Digit(g, c, c), FracDigitsGE(g, d, i + 1, incl)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// Fraction digits <= d (or < d); kNoExpr when none.
ExprId FracDigitsLE(Grammar* g, const std::string& d, size_t i, bool incl) {
  if (i == d.size()) return incl ? g->AddRepeat(Lit(g, "0"), 0, kUnbounded) : kNoExpr;
  int c = d[i] - '0';
  std::vector<ExprId> alts;
  if (c > 0) alts.push_back(g->AddSequence({Digit(g, 0, c - 1), Digits(g, 0, kUnbounded)}));
  ExprId rest = FracDigitsLE(g, d, i + 1, incl);
  if (rest != kNoExpr) alts.push_back(g->AddSequence({Digit(g, c, c), rest}));
  // Stopping after an equal prefix leaves a smaller fraction (d has no trailing zeros).
  if (i > 0) alts.push_back(g->AddEmpty());
  if (alts.empty()) return kNoExpr;
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

ExprId FracGE(Grammar* g, const std::string& f, bool incl) {
  if (f.empty()) return incl ? FracAny(g) : g->AddSequence({Lit(g, "."), NonzeroDigits(g)});
  return g->AddSequence({Lit(g, "."), FracDigitsGE(g, f, 0, incl)});
}

ExprId FracLE(Grammar* g, const std::string& f, bool incl) {
  if (f.empty()) return incl ? FracZero(g) : kNoExpr;
  ExprId rest = FracDigitsLE(g, f, 0, incl);
  if (rest == kNoExpr) return g->AddEmpty();
  return Opt(g, g->AddSequence({Lit(g, "."), rest}));
}

ExprId IntLit(Grammar* g, int64_t v) { return Lit(g, std::to_string(v)); }

// Fraction digits from position i on, after a prefix both bounds share, whose value lies
// between lo and hi (digit strings without trailing zeros; lo may be shorter, read as padded
// with zeros). At i == 0 the fraction must have a digit.
ExprId FracDigitsBetween(Grammar* g, const std::string& lo, const std::string& hi, size_t i, bool lo_incl,
                         bool hi_incl) {
  bool lo_done = i >= lo.size();
  if (i >= hi.size()) return lo_done && lo_incl && hi_incl ? g->AddRepeat(Lit(g, "0"), 0, kUnbounded) : kNoExpr;
  int a = lo_done ? 0 : lo[i] - '0', b = hi[i] - '0';
  std::vector<ExprId> alts;
  auto add = [&](ExprId head, ExprId rest) {
    if (rest != kNoExpr) alts.push_back(g->AddSequence({head, rest}));
  };
  if (a == b) {
    add(Digit(g, a, a), FracDigitsBetween(g, lo, hi, i + 1, lo_incl, hi_incl));
  } else {
    ExprId above_lo =
        lo_done ? (lo_incl ? Digits(g, 0, kUnbounded) : NonzeroDigits(g)) : FracDigitsGE(g, lo, i + 1, lo_incl);
    add(Digit(g, a, a), above_lo);
    if (b - a >= 2) add(Digit(g, a + 1, b - 1), Digits(g, 0, kUnbounded));
    add(Digit(g, b, b), FracDigitsLE(g, hi, i + 1, hi_incl));
  }
  // Stopping here writes the shared prefix: at least lo only when lo has no more digits.
  if (i > 0 && lo_done && lo_incl) alts.push_back(g->AddEmpty());
  if (alts.empty()) return kNoExpr;
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// Unsigned decimals (digits, optional fraction, no exponent) whose magnitude is in [lo, hi].
ExprId MagnitudeExpr(Grammar* g, const MagBound& lo, const MagBound& hi) {
  if (hi.present) {
    int c = CompareMag(lo.d, hi.d);
    if (c > 0 || (c == 0 && !(lo.incl && hi.incl))) return kNoExpr;
  }
  std::vector<ExprId> alts;
  auto add = [&](ExprId a, ExprId b) {
    if (a != kNoExpr && b != kNoExpr) alts.push_back(g->AddSequence({a, b}));
  };
  if (!hi.present) {
    add(UnsignedRange(g, lo.d.ip + 1, kInf), FracAny(g));
    add(IntLit(g, lo.d.ip), FracGE(g, lo.d.frac, lo.incl));
  } else if (lo.d.ip == hi.d.ip) {
    if (lo.d.frac.empty() && lo.incl) {
      add(IntLit(g, lo.d.ip), FracLE(g, hi.d.frac, hi.incl));
    } else if (hi.d.frac.empty()) {
      return kNoExpr;
    } else {
      ExprId frac = FracDigitsBetween(g, lo.d.frac, hi.d.frac, 0, lo.incl, hi.incl);
      if (frac != kNoExpr) add(IntLit(g, lo.d.ip), g->AddSequence({Lit(g, "."), frac}));
    }
  } else {
    add(IntLit(g, lo.d.ip), FracGE(g, lo.d.frac, lo.incl));
    if (hi.d.ip - lo.d.ip >= 2) add(UnsignedRange(g, lo.d.ip + 1, hi.d.ip - 1), FracAny(g));
    add(IntLit(g, hi.d.ip), FracLE(g, hi.d.frac, hi.incl));
  }
  if (alts.empty()) return kNoExpr;
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

ExprId Never(Grammar* g) { return g->AddChoice({}); }

}  // namespace

ExprId FixedWidthRange(Grammar* g, int64_t lo, int64_t hi, int width) {
  if (width == 0) return g->AddEmpty();
  int64_t p = Pow10(width - 1);
  int64_t dlo = lo / p, dhi = hi / p;
  int64_t rlo = lo % p, rhi = hi % p;
  if (dlo == dhi) return g->AddSequence({Digit(g, dlo, dlo), FixedWidthRange(g, rlo, rhi, width - 1)});
  std::vector<ExprId> alts;
  int64_t mid_lo = dlo + 1, mid_hi = dhi - 1;
  if (rlo == 0) {
    mid_lo = dlo;
  } else {
    alts.push_back(g->AddSequence({Digit(g, dlo, dlo), FixedWidthRange(g, rlo, p - 1, width - 1)}));
  }
  if (rhi == p - 1) mid_hi = dhi;
  if (mid_lo <= mid_hi) alts.push_back(g->AddSequence({Digit(g, mid_lo, mid_hi), Digits(g, width - 1, width - 1)}));
  if (rhi != p - 1) alts.push_back(g->AddSequence({Digit(g, dhi, dhi), FixedWidthRange(g, 0, rhi, width - 1)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

namespace {

// Integer bounds as optional int64 values.
void IntegerBounds(const NumBound& lo, const NumBound& hi, int64_t* a, int64_t* b, bool* has_a, bool* has_b) {
  *has_a = lo.present;
  *has_b = hi.present;
  if (lo.present) {
    Decimal d = ParseDecimal(lo.literal, lo.exclusive ? "exclusiveMinimum" : "minimum");
    if (!d.negative) {
      *a = d.frac.empty() ? d.ip + (lo.exclusive ? 1 : 0) : d.ip + 1;
    } else {
      *a = d.frac.empty() ? -d.ip + (lo.exclusive ? 1 : 0) : -d.ip;
    }
  }
  if (hi.present) {
    Decimal d = ParseDecimal(hi.literal, hi.exclusive ? "exclusiveMaximum" : "maximum");
    if (!d.negative) {
      *b = d.frac.empty() ? d.ip - (hi.exclusive ? 1 : 0) : d.ip;
    } else {
      *b = d.frac.empty() ? -d.ip - (hi.exclusive ? 1 : 0) : -d.ip - 1;
    }
  }
}

}  // namespace

ExprId IntegerExpr(Grammar* g, const NumBound& lo, const NumBound& hi) {
  int64_t a = 0, b = 0;
  bool has_a, has_b;
  IntegerBounds(lo, hi, &a, &b, &has_a, &has_b);
  if (has_a && has_b && a > b) return Never(g);
  std::vector<ExprId> alts;
  // negatives: [a, min(b, -1)]
  if (!has_a || a < 0) {
    int64_t nb = has_b ? std::min<int64_t>(b, -1) : -1;
    int64_t mag_lo = -nb, mag_hi = has_a ? -a : kInf;
    ExprId e = UnsignedRange(g, std::max<int64_t>(mag_lo, 1), mag_hi);
    if (e != kNoExpr) alts.push_back(g->AddSequence({Lit(g, "-"), e}));
  }
  if (!has_b || b >= 0) {
    int64_t pa = has_a ? std::max<int64_t>(a, 0) : 0;
    ExprId e = UnsignedRange(g, pa, has_b ? b : kInf);
    if (e != kNoExpr) alts.push_back(e);
  }
  if (alts.empty()) return Never(g);
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

ExprId Exponent(Grammar* g) {
  return g->AddSequence(
      {Cls(g, {{'E', 'E'}, {'e', 'e'}}), Opt(g, Cls(g, {{'+', '+'}, {'-', '-'}})), Digits(g, 1, kUnbounded)});
}

ExprId NumberExpr(Grammar* g, const NumBound& lo, const NumBound& hi) {
  if (!lo.present && !hi.present) {
    return g->AddSequence({Opt(g, Lit(g, "-")), UnsignedRange(g, 0, kInf), FracAny(g), Opt(g, Exponent(g))});
  }
  const char* lo_kw = lo.exclusive ? "exclusiveMinimum" : "minimum";
  const char* hi_kw = hi.exclusive ? "exclusiveMaximum" : "maximum";
  Decimal dlo, dhi;
  if (lo.present) dlo = ParseDecimal(lo.literal, lo_kw);
  if (hi.present) dhi = ParseDecimal(hi.literal, hi_kw);
  std::vector<ExprId> alts;
  // Non-negative side (written without '-').
  bool pos_possible = !(hi.present && dhi.negative);
  if (pos_possible) {
    MagBound l, h;
    if (lo.present && !dlo.negative) {
      l.d = dlo;
      l.incl = !lo.exclusive;
    }
    if (hi.present) {
      h.present = true;
      h.d = dhi;
      h.incl = !hi.exclusive;
    }
    ExprId e = MagnitudeExpr(g, l, h);
    if (e != kNoExpr) alts.push_back(e);
  }
  // Negative side: x = -m, x >= lo <=> m <= -lo; x <= hi <=> m >= -hi.
  bool neg_possible = !(lo.present && !dlo.negative && (dlo.ip != 0 || !dlo.frac.empty() || lo.exclusive));
  if (neg_possible) {
    MagBound l, h;
    if (hi.present && (dhi.negative || (dhi.ip == 0 && dhi.frac.empty()))) {
      l.d = dhi;
      l.d.negative = false;
      l.incl = !hi.exclusive;
    }
    if (lo.present) {
      h.present = true;
      h.d = dlo;
      h.d.negative = false;
      h.incl = !lo.exclusive;
    }
    ExprId e = MagnitudeExpr(g, l, h);
    if (e != kNoExpr) alts.push_back(g->AddSequence({Lit(g, "-"), e}));
  }
  // Exponent forms (what serializers write for very small or large values, e.g. 1e-06) where
  // the bounds only fix the sign, x >= 0, x > 0, x <= 0 or x < 0: m e k has the sign of m for
  // every k. A strict bound needs a mantissa that is not zero.
  auto is_zero = [](const Decimal& d) { return d.ip == 0 && d.frac.empty(); };
  const bool lo_zero = lo.present && is_zero(dlo) && !hi.present;
  const bool hi_zero = hi.present && is_zero(dhi) && !lo.present;
  if (lo_zero || hi_zero) {
    const bool strict = lo_zero ? lo.exclusive : hi.exclusive;
    ExprId mantissa = strict ? g->AddChoice({g->AddSequence({UnsignedRange(g, 1, kInf), FracAny(g)}),
                                             g->AddSequence({Lit(g, "0."), NonzeroDigits(g)})})
                             : g->AddSequence({UnsignedRange(g, 0, kInf), FracAny(g)});
    ExprId e = g->AddSequence({mantissa, Exponent(g)});
    alts.push_back(lo_zero ? e : g->AddSequence({Lit(g, "-"), e}));
  }
  if (alts.empty()) return Never(g);
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

ExprId NumberEqualExpr(Grammar* g, const std::string& literal) {
  Decimal d = ParseDecimal(literal, "const");
  std::vector<ExprId> parts;
  if (d.negative) parts.push_back(Lit(g, "-"));
  parts.push_back(IntLit(g, d.ip));
  if (d.frac.empty()) {
    parts.push_back(FracZero(g));
  } else {
    parts.push_back(Lit(g, "." + d.frac));
    parts.push_back(g->AddRepeat(Lit(g, "0"), 0, kUnbounded));
  }
  ExprId e = g->AddSequence(parts);
  // Zero may also carry a sign.
  if (d.ip == 0 && d.frac.empty()) e = g->AddSequence({Opt(g, Lit(g, "-")), e});
  return e;
}

ExprId IntegerMultipleOfExpr(Grammar* g, int64_t k, const NumBound& lo, const NumBound& hi) {
  if (k == 1) return IntegerExpr(g, lo, hi);
  int64_t a = 0, b = 0;
  bool has_a, has_b;
  IntegerBounds(lo, hi, &a, &b, &has_a, &has_b);
  if (has_a && has_b) {
    if (a > b) return Never(g);
    int64_t first = a % k == 0 ? a : (a >= 0 ? a + (k - a % k) : a - a % k);
    std::vector<ExprId> alts;
    for (int64_t v = first; v <= b; v += k) {
      if (alts.size() > 256) throw UnsupportedKeyword{"multipleOf", "more than 256 multiples within the bounds"};
      alts.push_back(IntLit(g, v));
    }
    if (alts.empty()) return Never(g);
    return g->AddChoice(alts);
  }
  if (has_a || has_b) {
    bool only_nonneg = has_a && a >= 0 && a <= k;
    bool only_nonpos = has_b && b <= 0 && b >= -k;
    if (!only_nonneg && !only_nonpos) throw UnsupportedKeyword{"multipleOf", "with a one-sided bound"};
  }
  if (k > 1000) throw UnsupportedKeyword{"multipleOf", "divisor larger than 1000"};
  // Remainder automaton: rule r = digits read so far leave remainder r.
  std::vector<RuleId> rules(static_cast<size_t>(k));
  for (int64_t r = 0; r < k; ++r)
    rules[r] = g->DeclareRule("multiple_of_" + std::to_string(k) + "_rem_" + std::to_string(r));
  for (int64_t r = 0; r < k; ++r) {
    std::vector<ExprId> alts;
    for (int d = 0; d <= 9; ++d)
      alts.push_back(g->AddSequence({Digit(g, d, d), g->AddRuleRef(rules[(10 * r + d) % k])}));
    if (r == 0) alts.push_back(g->AddEmpty());
    g->SetRuleBody(rules[r], g->AddChoice(alts));
  }
  std::vector<ExprId> starts;
  for (int d = 1; d <= 9; ++d) starts.push_back(g->AddSequence({Digit(g, d, d), g->AddRuleRef(rules[d % k])}));
  ExprId nonzero = g->AddChoice(starts);
  std::vector<ExprId> alts{Lit(g, "0")};
  bool pos_ok = !has_b || b > 0;
  bool neg_ok = !has_a || a < 0;
  if (has_a && a > 0) {
    // a <= k: every positive multiple is >= k >= a.
  }
  if (pos_ok) alts.push_back(nonzero);
  if (neg_ok) alts.push_back(g->AddSequence({Lit(g, "-"), nonzero}));
  if ((has_a && a > 0) || (has_b && b < 0)) alts.erase(alts.begin());
  return g->AddChoice(alts);
}

}  // namespace xg2::jsonschema
