// Strings: pattern, format and length constraints lowered to string expressions.
#include <unordered_set>

#include "automata/rule_dfa.h"
#include "frontends/json_schema_converter.h"
#include "frontends/schema_automaton_cache.h"

namespace xg2::jsonschema {

namespace {

// Whether expression `root` repeats something a counted number of times above `bound` (its
// minimum, or a finite maximum).
bool HasRepeatCountedAbove(const Grammar& g, ExprId root, int64_t bound) {
  std::vector<ExprId> stack{root};
  std::unordered_set<ExprId> seen;
  while (!stack.empty()) {
    const ExprId id = stack.back();
    stack.pop_back();
    if (!seen.insert(id).second) continue;
    const Expr& x = g.expr(id);
    if (x.kind == ExprKind::kRepeat && (x.min > bound || (x.max != kUnbounded && x.max > bound))) return true;
    for (ExprId c : x.children) stack.push_back(c);
  }
  return false;
}

}  // namespace

ExprId Converter::PatternContent(const Ref& pat) {
  const std::string& text = pat.v->as_string();
  auto hit = pattern_contents_.find(text);
  if (hit != pattern_contents_.end()) return hit->second;
  try {
    RegexOptions ro;
    ro.search_semantics = true;
    ExprId e = RegexToJsonContent(&g_, RegexToExpr(&g_, text, ro));
    if (HasRepeatCountedAbove(g_, e, AutomatonLimits().max_unrolled_repeat)) {
      // Anchored at both ends (in every alternative), the searched reading is the whole one:
      // the same expression (nodes are hash-consed), and the counted loop has one start.
      RegexOptions whole;
      if (RegexToJsonContent(&g_, RegexToExpr(&g_, text, whole)) != e) e = SearchedPatternAutomaton(text, e);
    }
    pattern_contents_.emplace(text, e);  // failures are not kept: each site reports its own
    return e;
  } catch (const Error& e) {
    Unsupported("pattern", pat.ptr, e.what());
    return kNoExpr;
  }
}

// A pattern searched in the string with a repetition the compile would count ("[0-9a-f]{40}"):
// every character may start the counted run, so the parser would keep one loop per start and
// decide each token crossing the string's end by walks (12,580 trie nodes, 27 ms, on the first
// mask of each such string in Github_medium o33928). Its automaton tracks the run instead;
// it is kept (and shared across requests, as LowerLengthBounded's) when it stays small,
// else the counted loop stays.
ExprId Converter::SearchedPatternAutomaton(const std::string& text, ExprId content) {
  constexpr int64_t kMaxSearchedPatternStates = 2048;
  std::shared_ptr<const ByteDfaSpec> dfa;
  try {
    dfa = ContentAutomaton({content}, "p" + std::to_string(text.size()) + ':' + text, kMaxSearchedPatternStates);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kLimitExceeded) throw;
    return content;
  }
  // (A length-bounded schema may have kept a larger one under the same key.)
  if (dfa->num_states() > kMaxSearchedPatternStates) return content;
  return g_.AddByteDfa(dfa);
}

// The automaton of `contents` together (patterns and formats over JSON content), spelled
// `words`, from the process-wide cache or built (Error(kLimitExceeded) past max_states).
std::shared_ptr<const ByteDfaSpec> Converter::ContentAutomaton(const std::vector<ExprId>& contents,
                                                               const std::string& words, int64_t max_states) {
  SchemaAutomatonCache& cache = SchemaAutomatonCache::Patterns();
  std::shared_ptr<const ByteDfaSpec> content = cache.Find("content " + words);
  if (content) return content;
  std::vector<ByteDfaSpec> parts;
  for (ExprId c : contents) parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g_, c, max_states)));
  ByteDfaSpec built = std::move(parts[0]);
  parts.erase(parts.begin());
  if (!parts.empty()) {
    const uint64_t all = (uint64_t{1} << parts.size()) - 1;
    built = TrimAndMinimize(SelectByParts(ProductWithParts(built, parts, max_states), all, all));
  }
  content = std::make_shared<const ByteDfaSpec>(std::move(built));
  cache.Insert("content " + words, content);
  return content;
}

ExprId Converter::FormatContent(const std::string& f) {
  auto hit = format_contents_.find(f);
  if (hit != format_contents_.end()) return hit->second;
  ExprId e = FormatContentExpr(&g_, f);
  format_contents_.emplace(f, e);
  return e;
}

// pattern + minLength/maxLength where the pattern is one character class repeated (e.g.
// "^[a-z0-9_-]+$"): the bounds are intersected. kNoExpr when the pattern has another shape.
ExprId Converter::BoundedClassPattern(const Ref& pat, int64_t min_len, int64_t max_len) {
  ExprId e;
  try {
    RegexOptions ro;
    ro.search_semantics = true;
    e = RegexToExpr(&g_, pat.v->as_string(), ro);
  } catch (const Error&) {
    return kNoExpr;
  }
  Expr x = g_.expr(e);
  while ((x.kind == ExprKind::kSequence || x.kind == ExprKind::kChoice) && x.children.size() == 1)
    x = g_.expr(x.children[0]);
  int64_t lo = 1, hi = 1;
  ExprId cls = kNoExpr;
  if (x.kind == ExprKind::kCharClass) {
    cls = e;
  } else if (x.kind == ExprKind::kRepeat && g_.expr(x.children[0]).kind == ExprKind::kCharClass) {
    cls = x.children[0];
    lo = x.min;
    hi = x.max;
  } else {
    return kNoExpr;
  }
  int64_t nlo = std::max(lo, min_len);
  int64_t nhi = hi == kUnbounded ? max_len : (max_len < 0 ? hi : std::min(hi, max_len));
  if (nhi != kUnbounded && nlo > nhi) {
    return NeverBecause("the pattern's lengths and minLength/maxLength leave no string");
  }
  return RegexToJsonContent(&g_, g_.AddRepeat(cls, nlo, nhi));
}

// pattern + minLength/maxLength in general: the pattern's automaton over JSON string
// content times a decoded-character counter, emitted as a ByteDfa node.
// Several patterns and formats intersect their automata first.
ExprId Converter::LengthBoundedPattern(const std::vector<Ref>& pats, const std::vector<Ref>& formats, int64_t min_len,
                                       int64_t max_len) {
  std::vector<ExprId> contents;
  std::string words;
  auto spell = [&words](char kind, const std::string& text) {
    words += kind + std::to_string(text.size()) + ':' + text;
  };
  for (const auto& p : pats) {
    contents.push_back(PatternContent(p));
    if (contents.back() == kNoExpr) return kNoExpr;
    spell('p', p.v->as_string());
  }
  for (const auto& f : formats) {
    try {
      contents.push_back(FormatContent(f.v->as_string()));
    } catch (const UnsupportedKeyword& u) {
      Unsupported(u.keyword, f.ptr, u.detail);
      return kNoExpr;
    }
    spell('f', f.v->as_string());
  }
  const auto key = std::make_pair(contents, std::make_pair(min_len, max_len));
  if (auto hit = length_bounded_.find(key); hit != length_bounded_.end()) return hit->second;
  // Failures are not kept: each site reports its own.
  const ExprId lowered = LowerLengthBounded(contents, words, pats.empty() ? formats[0] : pats[0],
                                            pats.empty() ? "format" : "pattern", min_len, max_len);
  if (lowered != kNoExpr) length_bounded_.emplace(key, lowered);
  return lowered;
}

ExprId Converter::LowerLengthBounded(const std::vector<ExprId>& contents, const std::string& words, const Ref& pat,
                                     const char* what, int64_t min_len, int64_t max_len) {
  SchemaAutomatonCache& cache = SchemaAutomatonCache::Patterns();
  try {
    // The automaton of the patterns and formats together, whatever the bounds.
    std::shared_ptr<const ByteDfaSpec> content = ContentAutomaton(contents, words, kMaxPatternDfaStates);
    const ByteDfaSpec& dfa = *content;
    if (min_len == 0 && max_len < 0) return g_.AddByteDfa(content);
    // A trailing loop over characters (the [a-z]* of "^x[a-z]*$") entered at few counts
    // becomes a counted repetition: compile cost then does not grow with the bound.
    constexpr size_t kMaxLoopExits = 8;
    std::vector<uint8_t> stars = JsonStarStates(dfa);
    std::vector<JsonLengthExit> exits;
    ByteDfaSpec product;
    // The automaton times a character counter is too large (an email address of at most 254
    // characters): the parser counts the characters instead. (Its paths are well-formed JSON
    // content, as the parser's decoder reads them.)
    auto counted_by_parser = [&]() {
      constexpr int64_t kMaxDecodedStates = 200000;
      // A pattern's automaton mostly knows the decoder's state already (it reads escapes and
      // UTF-8 sequences whole): then it is its own product with the decoder. Either way the
      // answer is kept, so a repeated pattern is checked once.
      std::shared_ptr<const ByteDfaSpec> decoded = cache.Find("decoded " + words);
      if (!decoded) {
        decoded = JsonDecoderDetermined(dfa) ? content
                                             : std::make_shared<const ByteDfaSpec>(
                                                   TrimAndMinimize(IntersectJsonLength(dfa, 0, -1, kMaxDecodedStates)));
        cache.Insert("decoded " + words, decoded);
      }
      const RuleId rule = NewRule("string_chars");
      g_.SetRuleBody(rule, g_.AddByteDfa(decoded));
      g_.SetRuleJsonChars(rule, min_len, max_len);
      return g_.AddRuleRef(rule);
    };
    // Past a few thousand states the product costs more than it saves: building and
    // minimising it took 18 ms of a 20 ms first mask (a file name of at most 1,024
    // characters), and its states each need a mask of their own, where the counted rule's
    // masks go by length (fills p90 175 -> 62 µs on those schemas).
    constexpr int64_t kMaxLengthProductStates = 2048;
    if (JsonLengthProductExceeds(dfa, min_len, max_len, kMaxLengthProductStates, &stars)) return counted_by_parser();
    try {
      product = IntersectJsonLength(dfa, min_len, max_len, kMaxLengthProductStates, &stars, &exits);
      if (exits.size() > kMaxLoopExits) {
        exits.clear();
        product = IntersectJsonLength(dfa, min_len, max_len, kMaxLengthProductStates);
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kLimitExceeded) throw;
      return counted_by_parser();
    }
    std::vector<ExprId> alts;
    ByteDfaSpec plain = TrimAndMinimize(product);
    if (!ByteDfaEmpty(plain)) alts.push_back(g_.AddByteDfa(std::move(plain)));
    for (const auto& x : exits) {
      ByteDfaSpec prefix = product;
      std::fill(prefix.is_final.begin(), prefix.is_final.end(), 0);
      prefix.is_final[x.state] = 1;
      int64_t lo = std::max<int64_t>(0, min_len - x.count);
      int64_t hi = max_len < 0 ? kUnbounded : max_len - x.count;
      ExprId tail = g_.AddRepeat(g_.AddByteDfa(JsonCharLoop(dfa, x.content_state)), lo, hi);
      alts.push_back(g_.AddSequence({g_.AddByteDfa(TrimAndMinimize(std::move(prefix))), tail}));
    }
    return alts.size() == 1 ? alts[0] : g_.AddChoice(alts);
  } catch (const Error& e) {
    Unsupported(what, pat.ptr,
                std::string(contents.size() > 1 ? "intersection of patterns and formats"
                                                : "together with minLength/maxLength") +
                    ": " + e.what());
    return kNoExpr;
  }
}

// 1: every match of the pattern has a length within [min_len, max_len]; -1: none has; 0:
// some may (or unknown).
int Converter::PatternWithinLength(const Ref& pat, int64_t min_len, int64_t max_len) {
  int64_t lo, hi;
  try {
    RegexOptions ro;
    ro.search_semantics = true;
    if (!CodepointLengthRange(g_, RegexToExpr(&g_, pat.v->as_string(), ro), &lo, &hi)) return 0;
  } catch (const Error&) {
    return 0;
  }
  if ((max_len >= 0 && lo > max_len) || (hi >= 0 && hi < min_len)) return -1;
  return (lo >= min_len && (max_len < 0 || (hi >= 0 && hi <= max_len))) ? 1 : 0;
}

ExprId Converter::StringExpr(const Merged& m) {
  if (!m.not_patterns.empty() || !m.not_formats.empty() || m.ExcludesStrings()) {
    ExprId e = NegatedPatternString(m);
    if (e != kNoExpr) return e;
    return AnyString(m.min_len, m.max_len);  // reported (warn mode widens)
  }
  bool bounded = m.min_len > 0 || m.max_len >= 0;
  std::vector<ExprId> contents;
  if (bounded && m.patterns.size() == 1 && m.formats.empty()) {
    ExprId e = BoundedClassPattern(m.patterns[0], m.min_len, m.max_len);
    if (e != kNoExpr) return g_.AddSequence({Lit(&g_, "\""), e, Lit(&g_, "\"")});
    // Bounds the pattern implies anyway (or that no match meets) need no intersection.
    switch (PatternWithinLength(m.patterns[0], m.min_len, m.max_len)) {
      case 1: bounded = false; break;
      case -1: return Never();
      default: break;
    }
  }
  const size_t languages = m.patterns.size() + m.formats.size();
  if ((bounded && languages >= 1) || languages > 1) {
    if (languages > 64) {
      Unsupported("pattern", (m.patterns.empty() ? m.formats[0] : m.patterns[0]).ptr,
                  "more than 64 patterns and formats");
      return AnyString(m.min_len, m.max_len);
    }
    ExprId e = LengthBoundedPattern(m.patterns, m.formats, m.min_len, m.max_len);
    if (e == kNoExpr) return AnyString(m.min_len, m.max_len);  // reported (warn keeps the bounds)
    return g_.AddSequence({Lit(&g_, "\""), e, Lit(&g_, "\"")});
  }
  // Here at most one pattern or format, and no bounds beside it.
  for (const auto& p : m.patterns) {
    ExprId e = PatternContent(p);
    if (e != kNoExpr) contents.push_back(e);
  }
  for (const auto& f : m.formats) {
    try {
      contents.push_back(FormatContent(f.v->as_string()));
    } catch (const UnsupportedKeyword& u) {
      Unsupported(u.keyword, f.ptr, u.detail);
    }
  }
  if (contents.empty()) {
    if (m.max_len >= 0 && m.min_len > m.max_len) {
      return NeverBecause("minLength is greater than maxLength: " + std::to_string(m.min_len) + " > " +
                          std::to_string(m.max_len));
    }
    return AnyString(m.min_len, m.max_len);
  }
  return g_.AddSequence({Lit(&g_, "\""), contents[0], Lit(&g_, "\"")});
}

}  // namespace xg2::jsonschema
