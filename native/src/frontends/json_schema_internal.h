// Helpers shared by the JSON Schema front end's files (keywords/negation, strings/formats and numbers).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/json.h"
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
// json_char: a JsonCharExpr node already in g (built here when kNoExpr).
ExprId JsonStringExpr(Grammar* g, int64_t min_len, int64_t max_len, ExprId json_char = kNoExpr);
// Every JSON encoding (raw or escaped) of the given decoded text, without quotes.
ExprId JsonStringContentLiteral(Grammar* g, const std::string& text);
// A quoted JSON string whose decoded text is not any of `excluded` (an undeclared key beside
// declared names), written without "\u" escapes of the characters U+0020..U+007F: each has
// a raw or short-escape form, and leaving those escapes out keeps every spelling of an
// excluded key out at the cost of the names' own automaton (their exact complement needs a
// chain of escape states per trie node, which doubled a large schema's first mask).
// `rest` makes any undeclared key's content (JsonKeyCharExpr repeated), typically a shared
// rule's reference; called only where the names are too many for one automaton.
ExprId JsonStringNotIn(Grammar* g, const std::vector<std::string>& excluded, const std::function<ExprId()>& rest);
// One JSON string character of an undeclared key (JsonStringNotIn): JsonCharExpr without
// the "\u" escapes of U+0020..U+007F.
ExprId JsonKeyCharExpr(Grammar* g);
// Whether `format` asserts (the formats JSON Schema defines); any other value is an
// annotation and constrains nothing.
bool IsAssertedFormat(const std::string& format);
// The decoded text of a string in the given asserted format (an expression over code points,
// as a regex gives), or kNoExpr for one without an expression ("regex").
ExprId FormatDecodedExpr(Grammar* g, const std::string& format);
// `content` (decoded text) without the strings that hold one of `excludes` (a byte automaton:
// exact); the empty choice when nothing is left. Raises kLimitExceeded past the state limit.
ExprId WithoutSubstrings(Grammar* g, ExprId content, const std::vector<std::string>& excludes);
// Content (no quotes) of a string in the given asserted format, over JSON-encoded string
// content; throws UnsupportedKeyword for one without an expression ("regex").
ExprId FormatContentExpr(Grammar* g, const std::string& format);
// The range of code-point lengths of the strings an expression (a regex over decoded text)
// matches; *hi = -1 when unbounded. False when it cannot tell (rule references).
bool CodepointLengthRange(const Grammar& g, ExprId e, int64_t* lo, int64_t* hi);
// Copies a regex expression (over decoded text) into one over JSON-encoded string content.
ExprId RegexToJsonContent(Grammar* g, ExprId regex_expr);
// The same with every JSON spelling of literal characters too ("a" also as "\u0061"): the
// complete set of encodings, as exact key-language operations (complements) need.
ExprId RegexToJsonContentAllSpellings(Grammar* g, ExprId regex_expr);
// Every JSON spelling of the content of string `text`.
ExprId JsonStringContentAllSpellings(Grammar* g, const std::string& text);
// The automaton of every JSON spelling of any of `texts`: their string contents, or with
// `quoted` the whole strings. Throws Error(kLimitExceeded) past max_states.
ByteDfaSpec JsonStringSpellingsDfa(const std::vector<std::string>& texts, int64_t max_states, bool quoted = false);

// --- key languages of patternProperties (json_schema_keys.cc) ---
// Keys (JSON string content, every spelling) matched by exactly the patterns in `patterns`
// (bit i: patterns[i]) and by no declared name; one region per non-empty set, the empty set
// ("no pattern": additionalProperties applies) included when with_none. Patterns use JSON
// Schema's search semantics. Throws Error for a pattern the regex front end rejects and
// Error(kLimitExceeded) when an automaton exceeds max_states.
struct KeyRegion {
  uint64_t patterns;
  ByteDfaSpec keys;
};
std::vector<KeyRegion> PatternKeyRegions(const std::vector<std::string>& patterns,
                                         const std::vector<std::string>& declared, bool with_none, int64_t max_states);
// The same over decoded UTF-8 text (a style writes keys its own way): `must` holds automata
// every key is in (a style's key alphabet, propertyNames), so the regions lie inside them.
std::vector<KeyRegion> DecodedKeyRegions(const std::vector<std::string>& patterns,
                                         const std::vector<std::string>& declared, bool with_none,
                                         const std::vector<ByteDfaSpec>& must, int64_t max_states);
// The decoded texts a pattern matches (JSON Schema's search semantics), as a DFA.
ByteDfaSpec PatternTextDfa(const std::string& pattern, int64_t max_states);
// For each name (decoded text), the indices of the patterns that match it.
std::vector<std::vector<size_t>> PatternsMatchingNames(const std::vector<std::string>& patterns,
                                                       const std::vector<std::string>& names, int64_t max_states);

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
// A JSON number literal as sign, integer part and fraction digits (exponent applied).
struct Decimal {
  bool negative = false;
  std::string ip = "0";  // digits without leading zeros
  std::string frac;      // without trailing zeros
};
// Throws UnsupportedKeyword{keyword} when the exponent moves the point more than 40 places.
Decimal ParseDecimal(const std::string& literal, const char* keyword);
// The integer part as a number; UnsupportedKeyword{keyword} beyond 18 digits.
int64_t IntegerPartValue(const Decimal& d, const std::string& literal, const char* keyword);
// Fixed-width digit strings (base 10) of the values in [lo, hi], width digits each.
ExprId FixedWidthRange(Grammar* g, int64_t lo, int64_t hi, int width);
ExprId IntegerExpr(Grammar* g, const NumBound& lo, const NumBound& hi);
ExprId NumberExpr(Grammar* g, const NumBound& lo, const NumBound& hi);
// Integers that are multiples of `k` (k > 0) within the bounds.
ExprId IntegerMultipleOfExpr(Grammar* g, int64_t k, const NumBound& lo, const NumBound& hi);
// Decimal literals (no exponent) within the bounds that are multiples of every divisor (JSON
// number literals, e.g. "0.01") and, with non_integer, have a nonzero fraction digit; throws
// UnsupportedKeyword when the automaton is too large. not_divisors: multiples of none of them.
ExprId MultipleOfExpr(Grammar* g, const std::vector<std::string>& divisors, bool non_integer, bool integer,
                      const NumBound& lo, const NumBound& hi, const std::vector<std::string>& not_divisors = {});

// --- constraint sets (json_schema.cc) ---
struct Ref {
  const JsonValue* v;
  std::string ptr;
};

enum TypeBit : uint8_t { kNull = 1, kBool = 2, kInt = 4, kNum = 8, kStr = 16, kArr = 32, kObj = 64, kAllTypes = 127 };

struct Merged {
  bool is_false = false;
  uint8_t types = kAllTypes;
  bool has_enum = false;
  std::vector<JsonValue> enum_values;
  // strings
  int64_t min_len = 0, max_len = -1;
  std::vector<Ref> patterns;  // v: the pattern string value
  std::vector<Ref> formats;
  std::vector<Ref> not_patterns;      // from `not {pattern: P}`: strings no such pattern matches
  std::vector<Ref> not_formats;       // from `not {format: F}` (F asserted): strings not in F
  std::vector<JsonValue> not_values;  // from `not {enum/const}`: strings, numbers and one boolean excluded
  bool Excludes(const JsonValue& v) const {
    return std::find(not_values.begin(), not_values.end(), v) != not_values.end();
  }
  bool ExcludesStrings() const {
    return std::any_of(not_values.begin(), not_values.end(), [](const JsonValue& v) { return v.is_string(); });
  }
  // numbers
  bool not_integer = false;  // from `not {type: integer}` on numbers: a nonzero fraction digit
  NumBound lo, hi;
  std::vector<Ref> multiple_of;
  std::vector<Ref> not_multiple_of;  // from `not {multipleOf: d}`: numbers no such d divides
  // arrays
  bool has_prefix = false;
  std::vector<std::vector<Ref>> prefix;
  bool items_set = false;
  std::vector<Ref> items;  // conjunction; may contain `false`
  // The part of `items` from schemas without a sibling prefix: it constrains the prefix
  // positions too (a prefix merged in from another allOf branch is not its sibling).
  std::vector<Ref> items_all;
  int64_t min_items = 0, max_items = -1;
  std::vector<Ref> contains;
  // Per contains: how many items must match it (minContains, default 1; maxContains, -1
  // unbounded), from the schema beside it.
  std::vector<std::pair<int64_t, int64_t>> contains_counts;
  bool unique_items = false;
  std::string unique_items_ptr;
  // objects
  std::vector<std::pair<std::string, std::vector<Ref>>> props;
  std::vector<std::string> required;  // in the order listed (undeclared ones are emitted so)
  bool Requires(const std::string& name) const {
    return std::find(required.begin(), required.end(), name) != required.end();
  }
  bool additional_set = false;
  std::vector<Ref> additional;
  // The schema object holding each `additional` entry: additionalProperties applies to every
  // property except its siblings in properties/patternProperties.
  std::vector<const JsonValue*> additional_parent;
  std::vector<std::pair<Ref, std::vector<Ref>>> pattern_props;  // (pattern value, schema)
  std::vector<Ref> property_names;
  // Property names an object must not have (from `not {required: [name]}` and exact oneOf
  // over required-only alternatives): (name, keyword, JSON pointer of the keyword's schema).
  struct Absent {
    std::string name, keyword, ptr;
  };
  std::vector<Absent> absent;
  bool Forbids(const std::string& name) const {
    return std::any_of(absent.begin(), absent.end(), [&](const Absent& a) { return a.name == name; });
  }
  int64_t min_props = 0, max_props = -1;
  std::string min_props_ptr, max_props_ptr;
  // Properties an object must have one of (from `not` of patternProperties, propertyNames or
  // additionalProperties): a key satisfying every schema of `keys` (a string) whose value
  // satisfies every schema of `value`; ptr: the `not`'s schema.
  struct SomeProperty {
    std::vector<Ref> keys, value;
    std::string ptr;
  };
  std::vector<SomeProperty> some_props;
  // Names a SomeProperty enumerates that the schema neither declares nor requires, made
  // required properties by SomePropertyCases: the ordered layout writes them anywhere among
  // the undeclared members, not in a declared place.
  std::vector<std::string> witness_names;
  // Dependencies that only ask for other names (dependentRequired, draft-7 name arrays, a
  // dependency on required or anyOf of required): when `name` is present, so are all names of
  // one of `any_of`. Kept apart from any_of so that an any-order object checks them on the set
  // of members it has seen (AnyOrderPresenceRule) instead of expanding a union of objects;
  // `dep` (at `ptr`) is the keyword's value, for the expansion where that cannot be done.
  struct PresenceDep {
    std::string name;
    std::vector<std::vector<std::string>> any_of;
    const JsonValue* dep = nullptr;
    std::string ptr;
  };
  std::vector<PresenceDep> presence_deps;
  // combinators
  std::vector<std::vector<Ref>> any_of;
  // Parallel to any_of: the pointer of the schema holding the keyword, and whether it was
  // oneOf (exactly one alternative must match) rather than anyOf.
  std::vector<std::string> any_of_at;
  std::vector<bool> any_of_exclusive;
  // The first group, removed: its alternatives, whether it is a oneOf, and where it stands.
  struct AnyOfGroup {
    std::vector<Ref> alternatives;
    bool exclusive = false;
    std::string at;
  };
  AnyOfGroup TakeFirstAnyOf() {
    AnyOfGroup g{std::move(any_of.front()), any_of_exclusive.front(), std::move(any_of_at.front())};
    any_of.erase(any_of.begin());
    any_of_at.erase(any_of_at.begin());
    any_of_exclusive.erase(any_of_exclusive.begin());
    return g;
  }
  bool constrained = false;  // any keyword besides combinators seen
  // unevaluatedProperties / unevaluatedItems other than true, and the schema holding each.
  // Converter::ResolveUnevaluated reads them as additionalProperties / items where that is
  // exact: one merge root holding them, no branch (anyOf, oneOf, if, schema dependencies)
  // and no negated members, whose annotations would decide what is evaluated.
  std::vector<Ref> unevaluated_props, unevaluated_items;
  std::string unevaluated_at;
  bool unevaluated_off_root = false;  // one sits in a $ref target or allOf member
  // The schema whose scope a keyword there has: the merge's first schema, or the target of a
  // $ref that stands alone in it.
  const JsonValue* scope_root = nullptr;
  int merge_roots = 0;  // object schemas merged at guard 0 (conjuncts, taken branches)
  // A merged part whose members do not say what it evaluates: an `if` (its annotations count
  // only where it holds) or a `not` of member keywords merged as positive members (a `not`
  // keeps none).
  bool evaluation_unknown = false;
  // unevaluatedProperties / unevaluatedItems true in a merged part: it evaluates every member.
  bool all_props_evaluated = false, all_items_evaluated = false;
};

// --- oneOf (json_schema_exclusive.cc) ---
// Merges a conjunction of subschemas (the converter's MergeInto), used to look into property
// schemas.
using MergeFn = std::function<Merged(const std::vector<Ref>&)>;
// The type bits a value of m can have (an enum narrows them to its values' types).
uint8_t EffectiveTypes(const Merged& m);
// True when no JSON value satisfies both constraint sets, judged on what they keep (a Merged is
// a superset of its schema: combinators and unenforced keywords only narrow it further), so
// true is a proof; false means "not proven". depth bounds the look into property values.
bool ProvablyDisjoint(const Merged& a, const Merged& b, const MergeFn& merge, int depth = 0);

// --- keywords (json_schema_keywords.cc) ---
// Keywords that assert nothing (titles, descriptions, $defs, ...).
bool IsAnnotation(const std::string& k);
// A schema object whose only keyword beside annotations is "$ref".
bool RefStandsAlone(const JsonValue& s);
// {"not": v}.
JsonValue NotOf(JsonValue v);
// A schema every value satisfies: true or {}.
bool IsTrueSchema(const JsonValue& v);
// Keywords the converter cannot enforce in general (some shapes are handled before asking).
bool IsKnownUnsupported(const std::string& k);
// A numeric bound from a keyword's value.
NumBound Bound(const JsonValue& v, bool exclusive);
// Keeps the tighter of two lower (or upper) bounds in *cur.
void Tighten(NumBound* cur, const NumBound& nb, bool lower);
// The TypeBit set of a "type" name (0: unknown); "number" includes integers.
uint8_t TypeFromName(const std::string& t);
// The enum values the merged types allow.
std::vector<const JsonValue*> EnumValues(const Merged& m);
// A property's dependency as two alternatives: [{"properties": {name: false}},
// {"required": [name, names...]} or {"required": [name], "allOf": [schema]}].
JsonValue DependencyAlternatives(const std::string& name, const JsonValue& dep);
// The name sets a dependency asks for when it only asks for names (an array of names,
// {"required": [...]} or {"anyOf": [{"required": [...]}, ...]}, annotations aside); nullopt
// for any other dependency.
std::optional<std::vector<std::vector<std::string>>> PresenceAlternatives(const JsonValue& dep);
// if/then/else as [{"allOf": [if, then]}, {"allOf": [not if, else]}]; a missing branch is true.
JsonValue ConditionAlternatives(const JsonValue& cond, const JsonValue* then_v, const JsonValue* else_v,
                                JsonValue negated);
// Resolves a $ref seen at JSON pointer `at` to (schema, its pointer); may throw for a bad ref.
using RefResolver =
    std::function<std::pair<const JsonValue*, std::string>(const std::string& ref, const std::string& at)>;
// `not s` as an equivalent positive schema: De Morgan over combinators and independent keyword
// groups, each keyword's complement within the type it applies to. Leaves it produces as
// {"not": ...} are shapes the converter handles directly (type, enum/const, pattern, one
// required name, one patternProperties entry, propertyNames, additionalProperties beside the
// names it excludes). nullopt when some part has no exact positive form. With
// ref_overrides_siblings (drafts 3-7), keywords beside $ref are ignored.
std::optional<JsonValue> NegateSchema(const JsonValue& s, const std::string& ptr, bool ref_overrides_siblings,
                                      const RefResolver& resolve, int guard = 0);

}  // namespace xg2::jsonschema
