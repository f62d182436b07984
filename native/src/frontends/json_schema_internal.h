// Helpers shared by the JSON Schema front end's files (strings/formats and numbers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xg2/grammar.h"

namespace xg2::jsonschema {

// Thrown by helpers for a keyword value they cannot enforce; the converter turns it into an
// "unsupported keyword" error or warning at the current JSON pointer.
struct UnsupportedKeyword {
  std::string keyword;
  std::string detail;
};

// --- strings (json_schema_strings.cc) ---
ExprId Lit(Grammar* g, const std::string& bytes);
ExprId Cls(Grammar* g, std::vector<CodepointRange> ranges, bool negated = false);
ExprId Opt(Grammar* g, ExprId e);
// One JSON-encoded string character: a raw code point other than '"', '\\' and controls,
// or one escape (a \u surrogate pair counts as one character).
ExprId JsonCharExpr(Grammar* g);
// A JSON string (with quotes) of min..max decoded characters (max -1: unbounded).
ExprId JsonStringExpr(Grammar* g, int64_t min_len, int64_t max_len);
// Every JSON encoding (raw or escaped) of the given decoded text, without quotes.
ExprId JsonStringContentLiteral(Grammar* g, const std::string& text);
// A quoted JSON string whose decoded text is not any of `excluded`. Raw and short-escape
// spellings (\n, \", \\, \/ ...) of an excluded key are excluded; a "\u" spelling of one
// of its characters (other than a control character) counts as a different key.
// `rest`: any string content (JsonCharExpr repeated), typically a shared rule's reference.
ExprId JsonStringNotIn(Grammar* g, const std::vector<std::string>& excluded, ExprId rest);
// Content (no quotes) of a string in the given format; throws UnsupportedKeyword for
// unknown formats.
ExprId FormatContentExpr(Grammar* g, const std::string& format);
// Copies a regex expression (over decoded text) into one over JSON-encoded string content.
ExprId RegexToJsonContent(Grammar* g, ExprId regex_expr);

// --- numbers (json_schema_numbers.cc) ---
// Every plain spelling (no exponent) of the number written as `literal`: 1 also as 1.0, 1.00,
// ...; 2.5 also as 2.50; -0 as 0. Throws UnsupportedKeyword when it is out of range.
ExprId NumberEqualExpr(Grammar* g, const std::string& literal);
struct NumBound {
  bool present = false;
  bool exclusive = false;
  std::string literal;  // the JSON number literal as written
  double value = 0;
};
// Fixed-width digit strings (base 10) of the values in [lo, hi], width digits each.
ExprId FixedWidthRange(Grammar* g, int64_t lo, int64_t hi, int width);
ExprId IntegerExpr(Grammar* g, const NumBound& lo, const NumBound& hi);
ExprId NumberExpr(Grammar* g, const NumBound& lo, const NumBound& hi);
// Integers that are multiples of `k` (k > 0) within the bounds.
ExprId IntegerMultipleOfExpr(Grammar* g, int64_t k, const NumBound& lo, const NumBound& hi);

}  // namespace xg2::jsonschema
