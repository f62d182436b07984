// JSON Schema front end: lowers a JSON Schema (draft 2020-12 and older drafts) to grammar IR
// whose language is the JSON texts valid against the schema, formatted per the options.
//
// Keywords that cannot be enforced are reported, never dropped silently: with
// on_unsupported_warn=false conversion throws Error(kUnsupported) whose message starts
// with "unsupported keyword '<kw>' at <json pointer>"; with true the keyword is ignored and
// the same words are returned in JsonSchemaResult::warnings. An invalid schema (not an
// object/bool, unresolvable $ref, malformed keyword value) throws Error(kGrammarSemantic)
// naming the JSON pointer.
#pragma once

#include <string>
#include <vector>

#include "support/cache_stats.h"
#include "support/json.h"
#include "xg2/grammar.h"

namespace xg2 {

struct JsonSchemaOptions {
  // Whitespace of any kind and amount between tokens (ignores indent; a separator's own
  // whitespace is then the least allowed, as in xgrammar). When false, the output is formatted exactly like Python's
  // json.dumps(obj, indent=indent, separators=(item_separator, key_separator)).
  bool any_whitespace = true;
  int indent = -1;  // -1: no newlines
  // Empty strings select the defaults: (", ", ": ") without indent, (",", ": ") with indent
  // (with any_whitespace, "," and ":").
  std::string item_separator;
  std::string key_separator;
  // xgrammar's meaning: properties / array items a schema does not declare are forbidden
  // unless the schema explicitly allows them (additionalProperties / items / additionalItems).
  bool strict_mode = true;
  int max_whitespace_cnt = -1;  // -1: unbounded runs of whitespace (any_whitespace only)
  bool any_order = false;       // properties in any order instead of declaration order
  bool on_unsupported_warn = false;
  // Substrings no string value or property name may contain in its emitted text (escapes as
  // written: "\\u0061b" does not contain "ab"). Strings under a pattern or a known format keep
  // their own language (xgrammar's JSONSchemaFormat.excludes).
  std::vector<std::string> excludes;
  // A schema no JSON value satisfies raises (GrammarSemantic). Front ends that embed the schema
  // as one part of a larger grammar (structural tags, Lark %json) turn this off: another
  // alternative may still match.
  bool refuse_empty_language = true;
};

struct JsonSchemaResult {
  Grammar grammar;
  std::vector<std::string> warnings;
};

JsonSchemaResult JsonSchemaToGrammar(const JsonValue& schema, const JsonSchemaOptions& options = JsonSchemaOptions());
// Parses the schema text first (SyntaxError with line:col on malformed JSON).
JsonSchemaResult JsonSchemaToGrammar(const std::string& schema_json,
                                     const JsonSchemaOptions& options = JsonSchemaOptions());

// The front end keeps the key-exclusion automata of objects it has seen (process-wide,
// bounded); this empties that cache (the cross-grammar cache's clear() calls it).
void ClearKeyExclusionCache();
CacheStats KeyExclusionCacheStats();
void SetKeyExclusionCacheLimit(int64_t bytes);  // 0 disables the cache
// Likewise the automata of patterns and formats with minLength / maxLength, by their words.
void ClearPatternAutomatonCache();
CacheStats PatternAutomatonCacheStats();
void SetPatternAutomatonCacheLimit(int64_t bytes);  // 0 disables the cache

// The minimal JSON-string-content DFAs of the asserted formats, built once per process (they
// depend on the format alone; at most one per format, so not emptied with the cross-grammar
// cache). Clearing is for tests and measurements of the first build.
void ClearFormatDfaCache();
CacheStats FormatDfaCacheStats();

}  // namespace xg2
