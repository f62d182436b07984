// Regex anchors anywhere in a pattern: '^' inside a group ("(^a|^b)c"), '$' before a ')'
// ("^([^,]|$)"), an anchor under a quantifier. A node's paths are split by the anchors they
// pass; composing nodes applies what an anchor asserts to its neighbours, so the result is
// an anchor-free expression of exactly the strings the pattern matches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xg2/grammar.h"

namespace xg2 {

// The paths through a regex node by the anchors they pass: at(s, e) is the language consumed
// along the paths that pass a '^' (s) and a '$' (e), kNoExpr where there is no such path. A
// '^' asserts that nothing of the whole string lies before it, a '$' that nothing lies
// after it; within the node that is already applied, outside it composition applies it.
class AnchoredLanguage {
 public:
  AnchoredLanguage() = default;
  static AnchoredLanguage Plain(ExprId expr, bool nullable);
  static AnchoredLanguage StartAnchor(Grammar* g);  // '^'
  static AnchoredLanguage EndAnchor(Grammar* g);    // '$'

  bool HasAnchors() const;
  ExprId at(int s, int e) const { return lang_[s][e]; }
  bool nullable(int s, int e) const { return nullable_[s][e]; }

  // Bounds the compositions of one pattern, so that the expressions they nest stay shallow
  // (each composition nests one level); past it Error(kLimitExceeded).
  struct Budget {
    int compositions_left = 1024;
  };

  // Paths of `first` then `second`.
  static AnchoredLanguage Concat(Grammar* g, const AnchoredLanguage& first, const AnchoredLanguage& second,
                                 Budget* budget);
  // Paths of any of them (one flat choice per anchor combination).
  static AnchoredLanguage Union(Grammar* g, const std::vector<AnchoredLanguage>& alternatives);
  // `body` repeated min..max times (max == kUnbounded: no bound); a body with anchors unrolls
  // min copies (and max - min optional ones), so a bound over `max_unrolled` throws
  // SyntaxError at column `column`.
  static AnchoredLanguage Repeat(Grammar* g, const AnchoredLanguage& body, int64_t min, int64_t max, int max_unrolled,
                                 int column, Budget* budget);

  // The strings the whole pattern matches: with search semantics, unanchored sides may be
  // surrounded by any text (`any` matches any string).
  ExprId Finish(Grammar* g, bool search_semantics, ExprId any) const;

 private:
  void Add(Grammar* g, int s, int e, ExprId expr, bool nullable);
  static void Spend(Budget* budget);

  ExprId lang_[2][2] = {{kNoExpr, kNoExpr}, {kNoExpr, kNoExpr}};
  bool nullable_[2][2] = {{false, false}, {false, false}};
};

// Whether the pattern has a '^' or '$' outside the positions the plain parse supports (the
// start and the end of a top-level alternative), skipping escapes and classes.
bool HasInnerAnchors(const std::u32string& pattern);

}  // namespace xg2
