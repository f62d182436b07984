// Structural Tag front end: the JSON DSL of xgrammar's structural tags (formats const_string,
// json_schema with its XML styles, grammar, regex, any_text, sequence, or, optional, star,
// plus, repeat, tag, triggered_tags, tags_with_separator, dispatch and the token-level forms)
// lowered to grammar IR. Free text with triggers, end strings and excluded strings becomes a
// TagDispatch node (an Aho-Corasick automaton in the rule's DFA).
//
// Invalid input throws Error(kStructuralTag) whose message starts with the path of the
// offending field (e.g. "format.elements[1].tags[3].begin: ...") and gives the reason;
// malformed JSON throws SyntaxError with line:col.
#pragma once

#include <string>
#include <vector>

#include "support/json.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace xg2 {

struct StructuralTagOptions {
  // Resolves token-level formats (token ids or token strings). Without it, such formats
  // raise an error saying a tokenizer is needed.
  const TokenizerInfo* tokenizer = nullptr;
  // JSON Schema contents: unsupported keywords raise (false) or become warnings (true).
  bool on_unsupported_warn = false;
};

struct StructuralTagResult {
  Grammar grammar;
  std::vector<std::string> warnings;
};

// Accepts the envelope {"type": "structural_tag", "format": {...}} or a bare format object.
StructuralTagResult StructuralTagToGrammar(const JsonValue& tag, const StructuralTagOptions& options = {});
StructuralTagResult StructuralTagToGrammar(const std::string& tag_json, const StructuralTagOptions& options = {});

}  // namespace xg2
