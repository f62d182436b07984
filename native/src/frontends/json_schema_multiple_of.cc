// multipleOf for any divisor (0.01, 2.5, 7, several at once) by a remainder automaton over the
// decimal literal, and numbers that are not integers, intersected with the numeric bounds as
// byte DFAs.
#include <string>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_internal.h"
#include "xg2/errors.h"

namespace xg2::jsonschema {
namespace {

// A positive divisor as digits / 10^scale with the fewest scale digits (0.50 -> 5 / 10^1).
struct Divisor {
  int64_t digits = 0;
  int scale = 0;
};

constexpr int64_t kMaxDivisorDigits = 1000000;

Divisor ParseDivisor(const std::string& literal) {
  Decimal v = ParseDecimal(literal, "multipleOf");
  std::string all = (v.ip == "0" ? "" : v.ip) + v.frac;
  while (all.size() > 1 && all[0] == '0') all.erase(0, 1);
  if (all.size() > 7 || v.frac.size() > 12)
    throw UnsupportedKeyword{"multipleOf", "divisor " + literal + " is too precise"};
  Divisor d;
  d.digits = all.empty() ? 0 : std::stoll(all);
  d.scale = static_cast<int>(v.frac.size());
  if (d.digits <= 0 || d.digits > kMaxDivisorDigits)
    throw UnsupportedKeyword{"multipleOf", "divisor " + literal + " is out of range"};
  return d;
}

// The decimal literals ("-"? int ("." digits)?, no exponent) whose value is a multiple of d:
// value * 10^scale is an integer (fraction digits past `scale` are zeros) that the digit
// string read so far, taken modulo d.digits, divides.
class MultipleDfaBuilder {
 public:
  explicit MultipleDfaBuilder(const Divisor& d) : p_(d.digits), s_(d.scale), jmin_(d.scale == 0 ? 0 : 1) {
    const int64_t frac_levels = s_ - jmin_ + 1;
    const int64_t states = 3 + 2 * p_ + p_ * frac_levels;
    if (states > kMaxStates) throw UnsupportedKeyword{"multipleOf", "divisor needs too many remainder states"};
    pow_.assign(static_cast<size_t>(s_ + 1), 1 % p_);
    for (int j = s_ - 1; j >= 0; --j) pow_[j] = (pow_[j + 1] * 10) % p_;  // pow_[j] = 10^(s-j) mod p
    dfa_.is_final.assign(static_cast<size_t>(states), 0);
    dfa_.edges.assign(static_cast<size_t>(states), {});
  }

  ByteDfaSpec Build() {
    for (int32_t start : {kStart, kMinus}) {
      if (start == kStart) Edge(start, '-', '-', kMinus);
      Edge(start, '0', '0', kZero);
      for (int c = 1; c <= 9; ++c) Edge(start, '0' + c, '0' + c, Int(c % p_));
    }
    dfa_.is_final[kZero] = 1;
    Edge(kZero, '.', '.', Dot(0));
    for (int64_t r = 0; r < p_; ++r) {
      dfa_.is_final[Int(r)] = (r * pow_[0]) % p_ == 0;
      Edge(Int(r), '.', '.', Dot(r));  // edges sorted by byte: '.' < '0'
      for (int c = 0; c <= 9; ++c) Edge(Int(r), '0' + c, '0' + c, Int((10 * r + c) % p_));
      if (s_ == 0) {
        Edge(Dot(r), '0', '0', Frac(r, 0));
      } else {
        for (int c = 0; c <= 9; ++c) Edge(Dot(r), '0' + c, '0' + c, Frac((10 * r + c) % p_, 1));
      }
      for (int j = jmin_; j <= s_; ++j) {
        dfa_.is_final[Frac(r, j)] = (r * pow_[j]) % p_ == 0;
        if (j == s_) {
          Edge(Frac(r, j), '0', '0', Frac(r, j));  // past the divisor's scale only zeros
        } else {
          for (int c = 0; c <= 9; ++c) Edge(Frac(r, j), '0' + c, '0' + c, Frac((10 * r + c) % p_, j + 1));
        }
      }
    }
    return std::move(dfa_);
  }

 private:
  static constexpr int64_t kMaxStates = 20000;
  static constexpr int32_t kStart = 0, kMinus = 1, kZero = 2;
  int32_t Int(int64_t r) const { return static_cast<int32_t>(3 + r); }
  int32_t Dot(int64_t r) const { return static_cast<int32_t>(3 + p_ + r); }
  int32_t Frac(int64_t r, int j) const { return static_cast<int32_t>(3 + 2 * p_ + (j - jmin_) * p_ + r); }
  void Edge(int32_t from, int lo, int hi, int32_t to) {
    dfa_.edges[from].push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), to});
  }

  int64_t p_;
  int s_;
  int jmin_;
  std::vector<int64_t> pow_;
  ByteDfaSpec dfa_;
};

// Decimal literals with a nonzero digit in the fraction ("1.5", "-0.50"; not "1.0"): the
// numbers that are not integers, written without an exponent.
ByteDfaSpec NonIntegerDfa() {
  enum : int32_t { kStart, kMinus, kZero, kInt, kDot, kFrac, kStates };
  ByteDfaSpec d;
  d.is_final.assign(kStates, 0);
  d.is_final[kFrac] = 1;
  d.edges.assign(kStates, {});
  d.edges[kStart] = {{'-', '-', kMinus}, {'0', '0', kZero}, {'1', '9', kInt}};
  d.edges[kMinus] = {{'0', '0', kZero}, {'1', '9', kInt}};
  d.edges[kZero] = {{'.', '.', kDot}};
  d.edges[kInt] = {{'.', '.', kDot}, {'0', '9', kInt}};
  d.edges[kDot] = {{'0', '0', kDot}, {'1', '9', kFrac}};  // zeros so far: still integral
  d.edges[kFrac] = {{'0', '9', kFrac}};
  return d;
}

// Decimal literals without an exponent ("-"? int ("." digits)?): the spellings the remainder
// automata judge, so a complement of one stays among them (1e2 is a multiple of 2).
ByteDfaSpec PlainDecimalDfa() {
  enum : int32_t { kStart, kMinus, kZero, kInt, kDot, kFrac, kStates };
  ByteDfaSpec d;
  d.is_final.assign(kStates, 0);
  d.is_final[kZero] = d.is_final[kInt] = d.is_final[kFrac] = 1;
  d.edges.assign(kStates, {});
  d.edges[kStart] = {{'-', '-', kMinus}, {'0', '0', kZero}, {'1', '9', kInt}};
  d.edges[kMinus] = {{'0', '0', kZero}, {'1', '9', kInt}};
  d.edges[kZero] = {{'.', '.', kDot}};
  d.edges[kInt] = {{'.', '.', kDot}, {'0', '9', kInt}};
  d.edges[kDot] = {{'0', '9', kFrac}};
  d.edges[kFrac] = {{'0', '9', kFrac}};
  return d;
}

}  // namespace

ExprId MultipleOfExpr(Grammar* g, const std::vector<std::string>& divisors, bool non_integer, bool integer,
                      const NumBound& lo, const NumBound& hi, const std::vector<std::string>& not_divisors) {
  constexpr int64_t kMaxProductStates = 20000;
  if (integer && non_integer) return g->AddChoice({});  // no value (an empty choice)
  std::vector<ByteDfaSpec> parts;
  for (const auto& d : divisors) parts.push_back(TrimAndMinimize(MultipleDfaBuilder(ParseDivisor(d)).Build()));
  if (non_integer) parts.push_back(NonIntegerDfa());
  if (!not_divisors.empty()) parts.push_back(PlainDecimalDfa());
  const uint64_t want = (uint64_t{1} << parts.size()) - 1;  // the parts to be in; then those not to be in
  for (const auto& d : not_divisors) parts.push_back(TrimAndMinimize(MultipleDfaBuilder(ParseDivisor(d)).Build()));
  if (parts.size() > 63) throw UnsupportedKeyword{"multipleOf", "more than 63 divisors"};
  ExprId range = integer ? IntegerExpr(g, lo, hi) : NumberExpr(g, lo, hi);
  try {
    ByteDfaSpec universe = ByteDfaOfExpr(*g, range, kMaxProductStates);
    const uint64_t all = (uint64_t{1} << parts.size()) - 1;
    ByteDfaSpec dfa = TrimAndMinimize(SelectByParts(ProductWithParts(universe, parts, kMaxProductStates), all, want));
    return g->AddByteDfa(std::move(dfa));
  } catch (const Error& e) {
    throw UnsupportedKeyword{"multipleOf", std::string("with these bounds: ") + e.what()};
  }
}

}  // namespace xg2::jsonschema
