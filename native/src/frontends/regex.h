// Regex front end: the ECMAScript subset used in JSON Schema `pattern` and by users,
// lowered to grammar IR (classes, escapes \d \w \s and negations, anchors, groups incl.
// non-capturing, alternation, greedy/lazy quantifiers, {n,m}, \u escapes, Unicode).
// Backreferences and lookaround raise Error(kGrammarSyntax-like SyntaxError) naming the
// construct and its position (line 1, column = 1-based character offset in the pattern).
#pragma once

#include <string>

#include "xg2/grammar.h"

namespace xg2 {

struct RegexOptions {
  // JSON Schema semantics: a pattern is unanchored (matches anywhere) unless it uses ^/$;
  // when false the whole string must match the pattern (Grammar.from_regex semantics).
  bool search_semantics = false;
  int max_repeat_bound = 100000;  // larger {n,m} bounds raise Error(kLimitExceeded)
  // What `.` matches: by default any code point but a JavaScript line terminator (\n \r
  // U+2028 U+2029); with dot_excludes_newline_only anything but \n (Python's `re`); with
  // dot_all any code point.
  bool dot_excludes_newline_only = false;
  bool dot_all = false;
  // ASCII letters match both cases (literals and classes; a negated class excludes both cases
  // of the letters it names). Other letters keep their case, as in xgrammar's Lark `i` flag.
  bool ascii_case_insensitive = false;
  // The dialect of xgrammar's regex front end (Python's `re` spellings), set by AdaptPythonRegex
  // and by Grammar.from_regex. Where ECMAScript and Python read a pattern differently, it is
  // refused: `[]` and `[^]` (Python reads the ']' as a literal, ECMAScript an empty class) and
  // `{,n}` (Python reads {0,n}, ECMAScript the literal text). \a and \e are BEL and ESC (PCRE and
  // xgrammar; ECMAScript reads the letters). A NUL character is refused, as xgrammar refuses it.
  bool python_dialect = false;
};

// Adds an expression matching the pattern to g and returns its id (no rules are created
// unless needed). The matched language is over UTF-8 bytes of code points.
ExprId RegexToExpr(Grammar* g, const std::string& pattern, const RegexOptions& options = RegexOptions());

// The expression `id` with ASCII letters matching both cases (the `i` flag as RegexOptions
// describes); rule references are kept as they are.
ExprId FoldAsciiCase(Grammar* g, ExprId id);

// Python spellings the ECMAScript parser lacks, for Lark regexes and xgrammar's Regex(): a
// leading inline-flag group such as (?i), (?s) or (?is) sets the options (u changes nothing),
// and (?P<name>...) becomes (?<name>...). Returns the pattern to parse.
std::string AdaptPythonRegex(const std::string& pattern, RegexOptions* options);

// A grammar whose root rule matches exactly the strings of the pattern.
Grammar RegexToGrammar(const std::string& pattern, const RegexOptions& options = RegexOptions());

}  // namespace xg2
