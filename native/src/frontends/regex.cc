// Regex front end: a recursive-descent parser for the ECMAScript regex subset, emitting grammar
// IR directly.
//
// Grammar accepted (ECMAScript 2024 §22.2.1 with the Annex B leniencies noted below):
//   Pattern     := Disjunction
//   Disjunction := Alternative ('|' Alternative)*
//   Alternative := Term*
//   Term        := Atom Quantifier?     (plus '^' / '$' where supported, see below)
//   Atom        := literal | '.' | '\' escape | '[' class ']' | '(' group ')'
//   Quantifier  := ('*' | '+' | '?' | '{n}' | '{n,}' | '{n,m}') '?'?
//
// Semantics follow JavaScript without flags, except that escapes and classes operate on code
// points (as with the u flag): a \uD83D\uDE00 surrogate-pair escape is one code point.
// Annex B leniencies kept: a '{' that does not start a valid quantifier and a lone ']' or '}'
// are literals; in a class, a range with a class escape endpoint ([\d-z]) is a union.
// Anchors: '^' and '$' anywhere. At the start and the end of a top-level alternative they are
// flags of that alternative; elsewhere ("(^a|b)", "^([^,]|$)", "(^x$)+") the anchored parse
// (regex_anchors.h) composes each term's paths by what their anchors assert.
// Rejected with SyntaxError (column = 1-based code point offset): backreferences, lookaround,
// \b \B, Unicode property escapes, octal escapes, inline modifiers, unknown letter escapes.
#include "frontends/regex.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "automata/rule_dfa.h"
#include "frontends/regex_anchors.h"
#include "support/utf8.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2 {

namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr int kMaxAnchoredUnroll = 16;                 // copies of a repeated term that holds an anchor
constexpr uint32_t kEnd = 0xFFFFFFFFu;                 // Peek() past the end of the pattern
constexpr int64_t kSaturatedBound = int64_t{1} << 40;  // quantifier digits saturate here

using Ranges = std::vector<CodepointRange>;

Ranges DigitRanges() { return {{'0', '9'}}; }

Ranges WordRanges() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }

// JavaScript WhiteSpace and LineTerminator code points (the definition of \s).
Ranges SpaceRanges() {
  return {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
          {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
}

// Code points `.` does not match (JavaScript LineTerminator).
Ranges LineTerminatorRanges() { return {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}}; }

Ranges Complement(Ranges ranges) {
  ranges = NormalizeRanges(std::move(ranges));
  Ranges out;
  uint32_t next = 0;
  for (const CodepointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return out;
}

bool IsDigit(uint32_t c) { return c >= '0' && c <= '9'; }

bool IsAsciiLetter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int HexValue(uint32_t c) {
  if (c >= '0' && c <= '9') return static_cast<int>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<int>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<int>(c - 'A' + 10);
  return -1;
}

bool IsHighSurrogate(uint32_t c) { return c >= 0xD800 && c <= 0xDBFF; }
bool IsLowSurrogate(uint32_t c) { return c >= 0xDC00 && c <= 0xDFFF; }

// Decodes valid UTF-8 (checked by the caller) into code points.
std::vector<uint32_t> DecodeUtf8(const std::string& s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t i = 0, n = s.size();
  while (i < n) {
    uint8_t c = p[i];
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len && i + k < n; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

// One parsed class atom or escape: a single code point, or a set of code points.
struct CharOrSet {
  bool is_set = false;
  uint32_t cp = 0;
  Ranges ranges;         // when is_set
  bool negated = false;  // when is_set outside classes: ranges are to be complemented
};

class RegexParser {
 public:
  RegexParser(Grammar* g, const std::string& pattern, const RegexOptions& options) : g_(g), options_(options) {
    int64_t bad = FindInvalidUtf8(pattern);
    if (bad >= 0) {
      // Column of the offending byte, counted in code points of the valid prefix.
      std::vector<uint32_t> prefix = DecodeUtf8(pattern.substr(0, static_cast<size_t>(bad)));
      throw SyntaxError("invalid UTF-8 in regex pattern", 1, static_cast<int>(prefix.size()) + 1);
    }
    cps_ = DecodeUtf8(pattern);
    if (options_.python_dialect) RefuseNul();
    inner_anchors_ = HasInnerAnchors(std::u32string(cps_.begin(), cps_.end()));
  }

  void RefuseNul() const {
    auto nul = std::find(cps_.begin(), cps_.end(), 0u);
    if (nul != cps_.end()) Fail("The regex must not contain null characters.", static_cast<size_t>(nul - cps_.begin()));
  }

  ExprId Parse() {
    if (inner_anchors_) {
      AnchoredLanguage paths = ParseAnchoredDisjunction();
      if (!AtEnd()) Fail("Unmatched ')': no '(' opens it", pos_);
      return paths.Finish(g_, options_.search_semantics, AnyString());
    }
    std::vector<ExprId> alternatives;
    while (true) {
      bool anchored_start = false, anchored_end = false;
      ExprId alt = ParseAlternative(/*top_level=*/true, &anchored_start, &anchored_end);
      if (options_.search_semantics && !anchored_start && IsCountedRun(alt)) {
        alt = FirstRunSearch(alt, anchored_end);
      } else if (options_.search_semantics && (!anchored_start || !anchored_end)) {
        std::vector<ExprId> seq;
        if (!anchored_start) seq.push_back(AnyString());
        if (g_->expr(alt).kind != ExprKind::kEmpty) seq.push_back(alt);
        if (!anchored_end && !(seq.size() == 1 && !anchored_start)) seq.push_back(AnyString());
        alt = seq.size() == 1 ? seq[0] : g_->AddSequence(std::move(seq));
      }
      alternatives.push_back(alt);
      if (AtEnd()) break;
      if (Peek() == ')') Fail("Unmatched ')': no '(' opens it", pos_);
      ++pos_;  // '|'
    }
    return alternatives.size() == 1 ? alternatives[0] : g_->AddChoice(std::move(alternatives));
  }

 private:
  [[noreturn]] void Fail(const std::string& message, size_t at) const {
    throw SyntaxError(message, 1, static_cast<int>(at) + 1);
  }

  bool AtEnd() const { return pos_ >= cps_.size(); }
  uint32_t Peek(size_t k = 0) const { return pos_ + k < cps_.size() ? cps_[pos_ + k] : kEnd; }

  ExprId AnyString() { return g_->AddRepeat(g_->AddCharClass({{0, kMaxCodepoint}}, false), 0, kUnbounded); }

  // A run of one class, C{n,m}, with a bound above the automaton's default unroll limit (it
  // runs as a counted loop; a search for it is rewritten, see FirstRunSearch).
  bool IsCountedRun(ExprId id) const {
    const Expr& e = g_->expr(id);
    if (e.kind != ExprKind::kRepeat || e.min < 1 || g_->expr(e.children[0]).kind != ExprKind::kCharClass) return false;
    const int64_t unrolled = AutomatonLimits().max_unrolled_repeat;
    return e.min > unrolled || (e.max != kUnbounded && e.max > unrolled);
  }

  // The search for a run C{n,m} not anchored at the start. As ".*C{n,m}" every position could
  // start the run, and the parse would keep one counted loop per start. Any run of at least n
  // is a match, so the match is taken at the first such run instead, one parse path:
  // "(C{0,n-1} D)* C{n} .*" (D: any code point not in C), or "(.* D)? C{n,}" when the run must
  // end the string.
  ExprId FirstRunSearch(ExprId run, bool anchored_end) {
    const int64_t n = g_->expr(run).min;
    const ExprId cls = g_->expr(run).children[0];
    std::vector<CodepointRange> ranges = g_->expr(cls).ranges;
    const ExprId other = g_->AddCharClass(std::move(ranges), !g_->expr(cls).negated);
    if (anchored_end) {
      ExprId before = g_->AddRepeat(g_->AddSequence({AnyString(), other}), 0, 1);
      return g_->AddSequence({before, g_->AddRepeat(cls, n, kUnbounded)});
    }
    ExprId short_run = g_->AddRepeat(g_->AddSequence({g_->AddRepeat(cls, 0, n - 1), other}), 0, kUnbounded);
    return g_->AddSequence({short_run, g_->AddRepeat(cls, n, n), AnyString()});
  }

  ExprId Literal(uint32_t cp) {
    std::string bytes;
    AppendLiteral(cp, &bytes);
    return bytes.empty() ? g_->AddCharClass({}, false) : g_->AddBytes(std::move(bytes));
  }

  // A lone surrogate has no UTF-8 encoding and matches nothing; such code points are never
  // appended to literal byte strings (the caller emits an empty class instead).
  static void AppendLiteral(uint32_t cp, std::string* out) {
    if (cp >= 0xD800 && cp <= 0xDFFF) return;
    AppendUtf8(cp, out);
  }

  ExprId SetExpr(const CharOrSet& s) {
    if (!s.is_set) return Literal(s.cp);
    return g_->AddCharClass(s.ranges, s.negated);
  }

  // Disjunction inside a group; stops before ')' or at the end.
  ExprId ParseDisjunction() {
    std::vector<ExprId> alternatives;
    while (true) {
      alternatives.push_back(ParseAlternative(/*top_level=*/false, nullptr, nullptr));
      if (Peek() != '|') break;
      ++pos_;
    }
    return alternatives.size() == 1 ? alternatives[0] : g_->AddChoice(std::move(alternatives));
  }

  bool AtQuantifier() const {
    uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') return true;
    int64_t lo, hi;
    size_t end;
    return c == '{' && TryParseBraces(pos_, &lo, &hi, &end);
  }

  ExprId ParseAlternative(bool top_level, bool* anchored_start, bool* anchored_end) {
    std::vector<ExprId> items;
    std::string pending;           // consecutive unquantified literal code points
    bool pending_invalid = false;  // pending contains a lone surrogate: matches nothing
    auto flush = [&]() {
      if (pending_invalid) {
        items.push_back(g_->AddCharClass({}, false));
      } else if (!pending.empty()) {
        items.push_back(g_->AddBytes(pending));
      }
      pending.clear();
      pending_invalid = false;
    };

    bool only_carets_before = true;  // '^' is supported only as the first terms
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      const size_t at = pos_;
      uint32_t c = Peek();
      if (c == '^') {
        // Supported only as the first terms of a top-level alternative.
        if (!top_level || !only_carets_before) Fail("unsupported anchor position for '^'", at);
        ++pos_;
        if (AtQuantifier()) Fail("nothing to repeat", pos_);
        *anchored_start = true;
        continue;
      }
      only_carets_before = false;
      if (c == '$') {
        if (!top_level) Fail("unsupported anchor position for '$'", at);
        while (Peek() == '$') ++pos_;
        if (AtQuantifier()) Fail("nothing to repeat", pos_);
        if (!AtEnd() && Peek() != '|') {
          if (Peek() == ')') Fail("Unmatched ')': no '(' opens it", pos_);
          Fail("unsupported anchor position for '$'", at);
        }
        *anchored_end = true;
        break;
      }
      CheckAtomStart(at);

      // An atom: either a literal code point (kept in `pending` when unquantified) or an expr.
      bool is_literal = false;
      uint32_t literal = 0;
      ExprId atom = c == '(' ? ParseGroup().at(0, 0) : ParseAtom(&is_literal, &literal);

      int64_t min = 1, max = 1;
      if (ParseQuantifier(&min, &max)) {
        flush();
        if (is_literal) atom = Literal(literal);
        items.push_back(min == 1 && max == 1 ? atom : g_->AddRepeat(atom, min, max));
      } else if (is_literal) {
        if (literal >= 0xD800 && literal <= 0xDFFF) pending_invalid = true;
        AppendLiteral(literal, &pending);
      } else {
        flush();
        items.push_back(atom);
      }
    }
    flush();
    if (items.empty()) return g_->AddEmpty();
    if (items.size() == 1) return items[0];
    return g_->AddSequence(std::move(items));
  }

  // A quantifier cannot start a term.
  void CheckAtomStart(size_t at) const {
    uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') Fail("nothing to repeat", at);
    int64_t lo, hi;
    size_t end;
    if (c == '{' && TryParseBraces(at, &lo, &hi, &end)) Fail("nothing to repeat", at);
  }

  // An atom other than a group: an expr, or a literal code point (*is_literal, *literal).
  ExprId ParseAtom(bool* is_literal, uint32_t* literal) {
    uint32_t c = Peek();
    if (c == '[') return ParseClass();
    if (c == '.') {
      ++pos_;
      return options_.dot_all                     ? g_->AddCharClass({}, true)
             : options_.dot_excludes_newline_only ? g_->AddCharClass({{'\n', '\n'}}, true)
                                                  : g_->AddCharClass(LineTerminatorRanges(), true);
    }
    if (c == '\\') {
      CharOrSet e = ParseEscape(/*in_class=*/false);
      if (e.is_set) return SetExpr(e);
      *is_literal = true;
      *literal = e.cp;
      return kNoExpr;
    }
    if (c == '{' && options_.python_dialect) RefuseOpenLowerBound();
    ++pos_;
    *is_literal = true;
    *literal = c;
    return kNoExpr;
  }

  // `{,n}` at pos_: Python's `re` reads {0,n}, ECMAScript the literal text.
  void RefuseOpenLowerBound() const {
    size_t i = pos_ + 1;
    if (Peek(1) != ',') return;
    while (++i < cps_.size() && IsDigit(cps_[i])) {
    }
    if (i > pos_ + 2 && i < cps_.size() && cps_[i] == '}') {
      Fail("Invalid repetition range {,n}: Python reads it as {0,n}, JavaScript as literal text (write {0,n})", pos_);
    }
  }

  // The anchored parse (HasInnerAnchors): terms compose by their anchors' assertions.
  AnchoredLanguage ParseAnchoredDisjunction() {
    std::vector<AnchoredLanguage> alternatives{ParseAnchoredAlternative()};
    while (Peek() == '|') {
      ++pos_;
      alternatives.push_back(ParseAnchoredAlternative());
    }
    return alternatives.size() == 1 ? alternatives[0] : AnchoredLanguage::Union(g_, alternatives);
  }

  AnchoredLanguage ParseAnchoredAlternative() {
    AnchoredLanguage seq;
    std::vector<ExprId> run;  // anchor-free terms since the last anchored one: one flat sequence
    bool run_nullable = true;
    bool seq_empty = true;  // nothing composed yet: the first run is the sequence itself
    auto flush = [&]() {
      if (run.empty()) return;
      ExprId flat = run.size() == 1 ? run[0] : g_->AddSequence(std::move(run));
      AnchoredLanguage plain = AnchoredLanguage::Plain(flat, run_nullable);
      seq = seq_empty ? plain : AnchoredLanguage::Concat(g_, seq, plain, &budget_);
      seq_empty = false;
      run.clear();
      run_nullable = true;
    };
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      const size_t at = pos_;
      uint32_t c = Peek();
      AnchoredLanguage term;
      if (c == '^' || c == '$') {
        ++pos_;
        if (AtQuantifier()) Fail("nothing to repeat", pos_);
        term = c == '^' ? AnchoredLanguage::StartAnchor(g_) : AnchoredLanguage::EndAnchor(g_);
      } else {
        CheckAtomStart(at);
        if (c == '(') {
          term = ParseGroup();
        } else {
          bool is_literal = false;
          uint32_t literal = 0;
          ExprId atom = ParseAtom(&is_literal, &literal);
          term = AnchoredLanguage::Plain(is_literal ? Literal(literal) : atom, false);
        }
        int64_t min = 1, max = 1;
        if (ParseQuantifier(&min, &max)) {
          term = AnchoredLanguage::Repeat(g_, term, min, max, kMaxAnchoredUnroll, static_cast<int>(at) + 1, &budget_);
        }
      }
      if (!term.HasAnchors() && term.at(0, 0) != kNoExpr) {
        run.push_back(term.at(0, 0));
        run_nullable = run_nullable && term.nullable(0, 0);
        continue;
      }
      flush();
      seq = seq_empty ? term : AnchoredLanguage::Concat(g_, seq, term, &budget_);
      seq_empty = false;
    }
    flush();
    return seq_empty ? AnchoredLanguage::Plain(g_->AddEmpty(), true) : seq;  // no terms: the empty string
  }

  // Parses `{n}`, `{n,}` or `{n,m}` starting at `at` (which holds '{'); digits saturate.
  bool TryParseBraces(size_t at, int64_t* lo, int64_t* hi, size_t* end) const {
    size_t i = at + 1;
    auto number = [&](int64_t* out) {
      size_t first = i;
      int64_t v = 0;
      while (i < cps_.size() && IsDigit(cps_[i])) {
        v = v * 10 + static_cast<int64_t>(cps_[i] - '0');
        if (v > kSaturatedBound) v = kSaturatedBound;
        ++i;
      }
      *out = v;
      return i > first;
    };
    if (!number(lo)) return false;
    *hi = *lo;
    if (i < cps_.size() && cps_[i] == ',') {
      ++i;
      if (!number(hi)) *hi = kUnbounded;
    }
    if (i >= cps_.size() || cps_[i] != '}') return false;
    *end = i + 1;
    return true;
  }

  // Parses an optional quantifier (and its lazy '?') after an atom.
  bool ParseQuantifier(int64_t* min, int64_t* max) {
    const size_t at = pos_;
    uint32_t c = Peek();
    if (c == '*') {
      *min = 0;
      *max = kUnbounded;
      ++pos_;
    } else if (c == '+') {
      *min = 1;
      *max = kUnbounded;
      ++pos_;
    } else if (c == '?') {
      *min = 0;
      *max = 1;
      ++pos_;
    } else if (c == '{') {
      size_t end;
      if (!TryParseBraces(at, min, max, &end)) return false;
      pos_ = end;
      if (*max != kUnbounded && *max < *min) Fail("numbers out of order in {} quantifier", at);
      int64_t biggest = *max == kUnbounded ? *min : *max;
      if (biggest > options_.max_repeat_bound) {
        throw Error(ErrorKind::kLimitExceeded,
                    "regex repetition bound " +
                        (biggest >= kSaturatedBound ? std::string("too large") : std::to_string(biggest)) +
                        " at column " + std::to_string(at + 1) + " exceeds the limit of " +
                        std::to_string(options_.max_repeat_bound));
      }
    } else {
      return false;
    }
    if (Peek() == '?') ++pos_;  // lazy: the same language
    // xgrammar's phrase for what ECMAScript calls "nothing to repeat" after a quantifier.
    if (AtQuantifier()) Fail("Two consecutive repetition modifiers are not allowed: nothing to repeat", pos_);
    return true;
  }

  // The group's paths (anchor-free unless the anchored parse is on).
  AnchoredLanguage ParseGroup() {
    const size_t at = pos_;
    ++pos_;  // '('
    if (Peek() == '?') {
      uint32_t k = Peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if (k == '=') {
        Fail("Lookahead assertions (?=...) are not supported", at);
      } else if (k == '!') {
        Fail("Negative lookahead assertions (?!...) are not supported", at);
      } else if (k == '<' && Peek(2) == '=') {
        Fail("Lookbehind assertions (?<=...) are not supported", at);
      } else if (k == '<' && Peek(2) == '!') {
        Fail("Negative lookbehind assertions (?<!...) are not supported", at);
      } else if (k == '<') {
        pos_ += 2;
        size_t name_start = pos_;
        while (!AtEnd() && Peek() != '>') {
          uint32_t ch = Peek();
          bool ok = IsAsciiLetter(ch) || ch == '_' || ch == '$' || ch > 0x7F || (pos_ > name_start && IsDigit(ch));
          if (!ok) Fail("invalid capture group name", pos_);
          ++pos_;
        }
        if (AtEnd() || pos_ == name_start) Fail("invalid capture group name", at);
        ++pos_;  // '>'
      } else {
        Fail("invalid or unsupported group syntax '(?'", at);
      }
    }
    if (++depth_ > MaxNestingDepth()) {
      throw Error(ErrorKind::kLimitExceeded, "regex groups nested deeper than " + std::to_string(MaxNestingDepth()) +
                                                 " levels" + NestingLimitNote());
    }
    AnchoredLanguage body =
        inner_anchors_ ? ParseAnchoredDisjunction() : AnchoredLanguage::Plain(ParseDisjunction(), false);
    --depth_;
    if (Peek() != ')') Fail("The parenthesis is not closed: unterminated group", at);
    ++pos_;
    return body;
  }

  ExprId ParseClass() {
    const size_t at = pos_;
    ++pos_;  // '['
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    if (Peek() == ']' && options_.python_dialect) {
      Fail(std::string("Empty character class is not allowed in regex. Python reads the ']' of ") +
               (negated ? "[^]" : "[]") + " as a literal, JavaScript as an empty class (write \\] for the literal)",
           at);
    }
    Ranges ranges;
    auto add = [&](const CharOrSet& x) {
      if (x.is_set) {
        ranges.insert(ranges.end(), x.ranges.begin(), x.ranges.end());
      } else {
        ranges.push_back({x.cp, x.cp});
      }
    };
    while (true) {
      if (AtEnd()) Fail("unterminated character class", at);
      if (Peek() == ']') break;
      const size_t a_at = pos_;
      CharOrSet a = ParseClassAtom();
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != kEnd) {
        ++pos_;  // '-'
        CharOrSet b = ParseClassAtom();
        if (a.is_set || b.is_set) {  // Annex B: [\d-z] is \d, '-', 'z'
          add(a);
          add(CharOrSet{false, '-', {}, false});
          add(b);
        } else {
          if (a.cp > b.cp) Fail("range out of order in character class", a_at);
          ranges.push_back({a.cp, b.cp});
        }
      } else {
        add(a);
      }
    }
    ++pos_;  // ']'
    return g_->AddCharClass(std::move(ranges), negated);
  }

  CharOrSet ParseClassAtom() {
    if (Peek() == '\\') {
      CharOrSet e = ParseEscape(/*in_class=*/true);
      if (e.is_set && e.negated) {  // \D \W \S inside a class: complement explicitly
        e.ranges = Complement(std::move(e.ranges));
        e.negated = false;
      }
      return e;
    }
    CharOrSet x;
    x.cp = Peek();
    ++pos_;
    return x;
  }

  static CharOrSet Set(Ranges ranges, bool negated) {
    CharOrSet s;
    s.is_set = true;
    s.ranges = std::move(ranges);
    s.negated = negated;
    return s;
  }

  static CharOrSet Char(uint32_t cp) {
    CharOrSet s;
    s.cp = cp;
    return s;
  }

  // Reads exactly n hex digits at pos_; returns -1 (consuming nothing) if they are not there.
  int64_t ReadHex(int n) {
    int64_t v = 0;
    for (int k = 0; k < n; ++k) {
      int h = HexValue(Peek(static_cast<size_t>(k)));
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    pos_ += static_cast<size_t>(n);
    return v;
  }

  // Parses the code point of a \u escape (pos_ just after 'u').
  uint32_t ParseUnicodeEscape(size_t at) {
    if (Peek() == '{') {
      ++pos_;
      int64_t v = 0;
      size_t digits = 0;
      while (HexValue(Peek()) >= 0) {
        v = v * 16 + HexValue(Peek());
        if (v > kMaxCodepoint) Fail("Unicode escape \\u{...} is beyond the Unicode range (above 0x10FFFF)", at);
        ++pos_;
        ++digits;
      }
      if (digits == 0 || Peek() != '}') Fail("invalid \\u{...} escape", at);
      ++pos_;
      return static_cast<uint32_t>(v);
    }
    int64_t v = ReadHex(4);
    if (v < 0) Fail("invalid \\u escape: \\u must be followed by four hexadecimal digits", at);
    uint32_t cp = static_cast<uint32_t>(v);
    // A surrogate pair written as two escapes is one code point.
    if (IsHighSurrogate(cp) && Peek() == '\\' && Peek(1) == 'u') {
      size_t save = pos_;
      pos_ += 2;
      int64_t low = ReadHex(4);
      if (low >= 0 && IsLowSurrogate(static_cast<uint32_t>(low))) {
        return 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
      }
      pos_ = save;
    }
    return cp;
  }

  // Parses an escape starting at the backslash at pos_.
  CharOrSet ParseEscape(bool in_class) {
    const size_t at = pos_;
    ++pos_;  // '\'
    if (AtEnd()) Fail("\\ at end of pattern", at);
    uint32_t c = Peek();
    ++pos_;
    switch (c) {
      case 'd': return Set(DigitRanges(), false);
      case 'D': return Set(DigitRanges(), true);
      case 'w': return Set(WordRanges(), false);
      case 'W': return Set(WordRanges(), true);
      case 's': return Set(SpaceRanges(), false);
      case 'S': return Set(SpaceRanges(), true);
      case 't': return Char('\t');
      case 'n': return Char('\n');
      case 'r': return Char('\r');
      case 'f': return Char('\f');
      case 'v': return Char('\v');
      case 'a':
      case 'e':
        if (!options_.python_dialect) break;
        return Char(c == 'a' ? 0x07 : 0x1B);
      case 'b':
        if (in_class) return Char('\b');
        Fail("Word boundary assertion \\b is not supported", at);
      case 'B': Fail("Word boundary assertion \\B is not supported", at);
      case '0':
        if (IsDigit(Peek())) Fail("octal escapes are not supported", at);
        return Char(0);
      case 'x': {
        int64_t v = ReadHex(2);
        if (v < 0) Fail("invalid \\x escape: \\x must be followed by two hexadecimal digits", at);
        return Char(static_cast<uint32_t>(v));
      }
      case 'u': return Char(ParseUnicodeEscape(at));
      case 'c':
        if (IsAsciiLetter(Peek())) {
          uint32_t letter = Peek();
          ++pos_;
          return Char(letter % 32);
        }
        Fail("invalid \\c escape (expected a control letter)", at);
      case 'k':
        if (Peek() == '<') Fail("Backreferences are not supported: named backreference \\k<...>", at);
        Fail("invalid escape \\k", at);
      case 'p':
      case 'P': Fail(std::string("Unicode property escapes \\") + static_cast<char>(c) + "{...} are not supported", at);
      default: break;
    }
    if (c >= '1' && c <= '9') {
      if (in_class) Fail("octal escapes are not supported", at);
      Fail("Backreferences are not supported", at);
    }
    if (IsAsciiLetter(c)) {
      Fail(std::string("invalid escape \\") + static_cast<char>(c), at);
    }
    return Char(c);  // identity escape: \/ \. \* \\ \- ...
  }

  Grammar* g_;
  const RegexOptions& options_;
  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  int depth_ = 0;
  bool inner_anchors_ = false;  // the pattern has anchors the plain parse does not take
  AnchoredLanguage::Budget budget_;
};

}  // namespace

namespace {

// The ASCII letters of `ranges` in the other case.
Ranges OtherAsciiCase(const Ranges& ranges) {
  Ranges out;
  for (const CodepointRange& r : ranges) {
    for (uint32_t lo : {uint32_t{'A'}, uint32_t{'a'}}) {
      uint32_t a = std::max(r.lo, lo), b = std::min(r.hi, lo + 25);
      if (a <= b) out.push_back({a ^ 0x20, b ^ 0x20});
    }
  }
  return out;
}

bool IsAsciiLetter(unsigned char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

ExprId FoldBytes(Grammar* g, const std::string& bytes) {
  std::vector<ExprId> parts;
  std::string run;  // bytes without letters
  for (unsigned char c : bytes) {
    if (!IsAsciiLetter(c)) {
      run += static_cast<char>(c);
      continue;
    }
    if (!run.empty()) parts.push_back(g->AddBytes(run));
    run.clear();
    uint32_t lower = c | 0x20;
    parts.push_back(g->AddCharClass({{lower ^ 0x20, lower ^ 0x20}, {lower, lower}}, false));
  }
  if (!run.empty()) parts.push_back(g->AddBytes(run));
  return parts.size() == 1 ? parts[0] : g->AddSequence(std::move(parts));
}

}  // namespace

ExprId FoldAsciiCase(Grammar* g, ExprId id) {
  const Expr e = g->expr(id);  // a copy: the arena grows below
  switch (e.kind) {
    case ExprKind::kBytes: return FoldBytes(g, e.bytes);
    case ExprKind::kCharClass: {
      Ranges ranges = e.ranges;
      Ranges other = OtherAsciiCase(ranges);
      if (other.empty()) return id;
      ranges.insert(ranges.end(), other.begin(), other.end());
      return g->AddCharClass(std::move(ranges), e.negated);
    }
    case ExprKind::kSequence:
    case ExprKind::kChoice:
    case ExprKind::kRepeat: {
      std::vector<ExprId> kids;
      for (ExprId c : e.children) kids.push_back(FoldAsciiCase(g, c));
      if (e.kind == ExprKind::kSequence) return g->AddSequence(std::move(kids));
      if (e.kind == ExprKind::kChoice) return g->AddChoice(std::move(kids));
      return g->AddRepeat(kids[0], e.min, e.max);
    }
    default: return id;
  }
}

std::string AdaptPythonRegex(const std::string& pattern, RegexOptions* options) {
  std::string out = pattern;
  options->python_dialect = true;
  if (out.compare(0, 2, "(?") == 0) {
    size_t end = 2;
    while (end < out.size() && (out[end] == 'i' || out[end] == 's' || out[end] == 'u')) ++end;
    if (end > 2 && end < out.size() && out[end] == ')') {
      for (size_t i = 2; i < end; ++i) {
        if (out[i] == 'i') options->ascii_case_insensitive = true;
        if (out[i] == 's') options->dot_all = true;
      }
      out.erase(0, end + 1);
    }
  }
  for (size_t at = out.find("(?P<"); at != std::string::npos; at = out.find("(?P<", at)) out.erase(at + 2, 1);
  return out;
}

ExprId RegexToExpr(Grammar* g, const std::string& pattern, const RegexOptions& options) {
  if (g == nullptr) throw Error(ErrorKind::kInvalidArgument, "RegexToExpr: null grammar");
  RegexParser parser(g, pattern, options);
  ExprId id = parser.Parse();
  return options.ascii_case_insensitive ? FoldAsciiCase(g, id) : id;
}

Grammar RegexToGrammar(const std::string& pattern, const RegexOptions& options) {
  return WithDeepStack([&] {
    Grammar g;
    RuleId root = g.DeclareRule("root");
    ExprId body = RegexToExpr(&g, pattern, options);
    g.SetRuleBody(root, body);
    g.set_root(root);
    return g;
  });
}

}  // namespace xg2
