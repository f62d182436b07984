// Numeric ranges of the JSON Schema front end: integer bounds by digit-range decomposition,
// decimal bounds by integer-part ranges plus fraction-digit comparisons, multipleOf for
// integers by a remainder automaton.
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "frontends/json_schema_internal.h"

namespace xg2::jsonschema {
namespace {

ExprId Digit(Grammar* g, int lo, int hi) { return Cls(g, {{uint32_t('0' + lo), uint32_t('0' + hi)}}); }
ExprId Digits(Grammar* g, int64_t min, int64_t max) { return g->AddRepeat(Digit(g, 0, 9), min, max); }

// Digit strings without leading zeros ("0" for zero): compared, and moved by one.
int CompareDigits(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

std::string PlusOne(std::string d) {
  size_t i = d.size();
  while (i > 0 && d[i - 1] == '9') d[--i] = '0';
  if (i == 0) return "1" + d;
  ++d[i - 1];
  return d;
}

std::string MinusOne(std::string d) {  // d >= 1
  size_t i = d.size();
  while (i > 0 && d[i - 1] == '0') d[--i] = '9';
  --d[i - 1];
  if (d.size() > 1 && d[0] == '0') d.erase(0, 1);
  return d;
}

// Width-w digit strings (leading zeros allowed) from lo to hi, both w digits, lo <= hi.
ExprId FixedWidthDigits(Grammar* g, const std::string& lo, const std::string& hi) {
  if (lo.empty()) return g->AddEmpty();
  int dlo = lo[0] - '0', dhi = hi[0] - '0';
  std::string rlo = lo.substr(1), rhi = hi.substr(1);
  int w = static_cast<int>(rlo.size());
  if (dlo == dhi) return g->AddSequence({Digit(g, dlo, dlo), FixedWidthDigits(g, rlo, rhi)});
  bool lo_zeros = std::all_of(rlo.begin(), rlo.end(), [](char c) { return c == '0'; });
  bool hi_nines = std::all_of(rhi.begin(), rhi.end(), [](char c) { return c == '9'; });
  std::vector<ExprId> alts;
  int mid_lo = lo_zeros ? dlo : dlo + 1, mid_hi = hi_nines ? dhi : dhi - 1;
  if (!lo_zeros) alts.push_back(g->AddSequence({Digit(g, dlo, dlo), FixedWidthDigits(g, rlo, std::string(w, '9'))}));
  if (mid_lo <= mid_hi) alts.push_back(g->AddSequence({Digit(g, mid_lo, mid_hi), Digits(g, w, w)}));
  if (!hi_nines) alts.push_back(g->AddSequence({Digit(g, dhi, dhi), FixedWidthDigits(g, std::string(w, '0'), rhi)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

// Canonical unsigned decimal integers (no leading zeros) from lo to hi (digit strings);
// hi == nullptr: unbounded.
ExprId UnsignedRange(Grammar* g, const std::string& lo, const std::string* hi) {
  if (hi != nullptr && CompareDigits(*hi, lo) < 0) return kNoExpr;
  std::vector<ExprId> alts;
  size_t llen = lo.size(), hlen = hi == nullptr ? llen : hi->size();
  for (size_t len = llen; len <= hlen; ++len) {
    std::string a = len == llen ? lo : "1" + std::string(len - 1, '0');
    std::string b = (hi == nullptr || len < hlen) ? std::string(len, '9') : *hi;
    alts.push_back(FixedWidthDigits(g, a, b));
  }
  if (hi == nullptr)
    alts.push_back(g->AddSequence({Digit(g, 1, 9), Digits(g, static_cast<int64_t>(llen), kUnbounded)}));
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

ExprId UnsignedFrom(Grammar* g, const std::string& lo) { return UnsignedRange(g, lo, nullptr); }

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
  d.ip = ip;
  d.frac = fp;
  if (d.ip == "0" && d.frac.empty()) d.negative = false;
  return d;
}

int64_t IntegerPartValue(const Decimal& d, const std::string& literal, const char* keyword) {
  if (d.ip.size() > 18) throw UnsupportedKeyword{keyword, "bound " + literal + " is out of range"};
  return std::stoll(d.ip);
}

namespace {

// Compares magnitudes.
int CompareMag(const Decimal& a, const Decimal& b) {
  if (int c = CompareDigits(a.ip, b.ip); c != 0) return c;
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
    add(UnsignedFrom(g, PlusOne(lo.d.ip)), FracAny(g));
    add(Lit(g, lo.d.ip), FracGE(g, lo.d.frac, lo.incl));
  } else if (lo.d.ip == hi.d.ip) {
    if (lo.d.frac.empty() && lo.incl) {
      add(Lit(g, lo.d.ip), FracLE(g, hi.d.frac, hi.incl));
    } else if (hi.d.frac.empty()) {
      return kNoExpr;
    } else {
      ExprId frac = FracDigitsBetween(g, lo.d.frac, hi.d.frac, 0, lo.incl, hi.incl);
      if (frac != kNoExpr) add(Lit(g, lo.d.ip), g->AddSequence({Lit(g, "."), frac}));
    }
  } else {
    add(Lit(g, lo.d.ip), FracGE(g, lo.d.frac, lo.incl));
    std::string inner_lo = PlusOne(lo.d.ip), inner_hi = MinusOne(hi.d.ip);
    add(UnsignedRange(g, inner_lo, &inner_hi), FracAny(g));
    add(Lit(g, hi.d.ip), FracLE(g, hi.d.frac, hi.incl));
  }
  if (alts.empty()) return kNoExpr;
  return alts.size() == 1 ? alts[0] : g->AddChoice(alts);
}

ExprId Never(Grammar* g) { return g->AddChoice({}); }

}  // namespace

ExprId FixedWidthRange(Grammar* g, int64_t lo, int64_t hi, int width) {
  auto padded = [width](int64_t v) {
    std::string d = std::to_string(v);
    return std::string(static_cast<size_t>(width) - std::min(d.size(), static_cast<size_t>(width)), '0') + d;
  };
  return FixedWidthDigits(g, padded(lo), padded(hi));
}

namespace {

// An integer as sign and digit string ("0" is never negative).
struct SignedDigits {
  bool negative = false;
  std::string mag = "0";
  bool less_than(const SignedDigits& o) const {
    if (negative != o.negative) return negative;
    int c = CompareDigits(mag, o.mag);
    return negative ? c > 0 : c < 0;
  }
};

SignedDigits Signed(bool negative, std::string mag) { return {negative && mag != "0", std::move(mag)}; }

// The least integer >= the lower bound and the greatest <= the upper one (present flags set).
void IntegerBounds(const NumBound& lo, const NumBound& hi, SignedDigits* a, SignedDigits* b, bool* has_a, bool* has_b) {
  *has_a = lo.present;
  *has_b = hi.present;
  if (lo.present) {
    Decimal d = ParseDecimal(lo.literal, lo.exclusive ? "exclusiveMinimum" : "minimum");
    bool whole = d.frac.empty();
    if (!d.negative) {
      *a = Signed(false, whole && !lo.exclusive ? d.ip : PlusOne(d.ip));
    } else {  // -m: ceil is -m when whole (+1 when exclusive), else -floor(m)
      *a = whole && lo.exclusive ? Signed(true, MinusOne(d.ip)) : Signed(true, d.ip);
    }
  }
  if (hi.present) {
    Decimal d = ParseDecimal(hi.literal, hi.exclusive ? "exclusiveMaximum" : "maximum");
    bool whole = d.frac.empty();
    if (!d.negative) {
      if (whole && hi.exclusive) {
        *b = d.ip == "0" ? Signed(true, "1") : Signed(false, MinusOne(d.ip));
      } else {
        *b = Signed(false, d.ip);
      }
    } else {
      *b = whole && !hi.exclusive ? Signed(true, d.ip) : Signed(true, PlusOne(d.ip));
    }
  }
}

// The same as 64-bit values; bounds beyond 18 digits are refused (UnsupportedKeyword).
void IntegerBounds64(const NumBound& lo, const NumBound& hi, int64_t* a, int64_t* b, bool* has_a, bool* has_b) {
  SignedDigits sa, sb;
  IntegerBounds(lo, hi, &sa, &sb, has_a, has_b);
  auto value = [](const SignedDigits& v, const NumBound& bound, const char* keyword) {
    Decimal d;
    d.ip = v.mag;
    int64_t m = IntegerPartValue(d, bound.literal, keyword);
    return v.negative ? -m : m;
  };
  if (*has_a) *a = value(sa, lo, lo.exclusive ? "exclusiveMinimum" : "minimum");
  if (*has_b) *b = value(sb, hi, hi.exclusive ? "exclusiveMaximum" : "maximum");
}

}  // namespace

ExprId IntegerExpr(Grammar* g, const NumBound& lo, const NumBound& hi) {
  SignedDigits a, b;
  bool has_a, has_b;
  IntegerBounds(lo, hi, &a, &b, &has_a, &has_b);
  if (has_a && has_b && b.less_than(a)) return Never(g);
  std::vector<ExprId> alts;
  // negatives: from a to min(b, -1), as magnitudes from max(-b, 1) to -a
  if (!has_a || a.negative) {
    std::string mag_lo = has_b && b.negative ? b.mag : "1";
    ExprId e = UnsignedRange(g, mag_lo, has_a ? &a.mag : nullptr);
    if (e != kNoExpr) alts.push_back(g->AddSequence({Lit(g, "-"), e}));
  }
  // non-negatives: from max(a, 0) to b
  if (!has_b || !b.negative) {
    std::string from = has_a && !a.negative ? a.mag : "0";
    ExprId e = UnsignedRange(g, from, has_b ? &b.mag : nullptr);
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
    return g->AddSequence({Opt(g, Lit(g, "-")), UnsignedFrom(g, "0"), FracAny(g), Opt(g, Exponent(g))});
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
  bool neg_possible = !(lo.present && !dlo.negative && (dlo.ip != "0" || !dlo.frac.empty() || lo.exclusive));
  if (neg_possible) {
    MagBound l, h;
    if (hi.present && (dhi.negative || (dhi.ip == "0" && dhi.frac.empty()))) {
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
  auto is_zero = [](const Decimal& d) { return d.ip == "0" && d.frac.empty(); };
  const bool lo_zero = lo.present && is_zero(dlo) && !hi.present;
  const bool hi_zero = hi.present && is_zero(dhi) && !lo.present;
  if (lo_zero || hi_zero) {
    const bool strict = lo_zero ? lo.exclusive : hi.exclusive;
    ExprId mantissa = strict ? g->AddChoice({g->AddSequence({UnsignedFrom(g, "1"), FracAny(g)}),
                                             g->AddSequence({Lit(g, "0."), NonzeroDigits(g)})})
                             : g->AddSequence({UnsignedFrom(g, "0"), FracAny(g)});
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
  parts.push_back(Lit(g, d.ip));
  if (d.frac.empty()) {
    parts.push_back(FracZero(g));
  } else {
    parts.push_back(Lit(g, "." + d.frac));
    parts.push_back(g->AddRepeat(Lit(g, "0"), 0, kUnbounded));
  }
  ExprId e = g->AddSequence(parts);
  // Zero may also carry a sign.
  if (d.ip == "0" && d.frac.empty()) e = g->AddSequence({Opt(g, Lit(g, "-")), e});
  return e;
}

ExprId IntegerMultipleOfExpr(Grammar* g, int64_t k, const NumBound& lo, const NumBound& hi) {
  if (k == 1) return IntegerExpr(g, lo, hi);
  int64_t a = 0, b = 0;
  bool has_a, has_b;
  IntegerBounds64(lo, hi, &a, &b, &has_a, &has_b);
  if (has_a && has_b) {
    if (a > b) return Never(g);
    int64_t first = a % k == 0 ? a : (a >= 0 ? a + (k - a % k) : a - a % k);
    std::vector<ExprId> alts;
    for (int64_t v = first; v <= b; v += k) {
      if (alts.size() > 256) throw UnsupportedKeyword{"multipleOf", "more than 256 multiples within the bounds"};
      alts.push_back(Lit(g, std::to_string(v)));
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
