// xgrammar's dynamic tool-call dispatch pattern in Lark grammars:
//
//   start: (tool_a | tool_b | ...)* tail      tail: TEXT      (TEXT: any text)
//   tool_a: head_a REST...                    head_a[lazy]: TEXT "<trigger>"
//
// Free text until a trigger string appears, then one of the tools with that trigger, then
// free text again. As a plain context-free grammar the tail's TEXT would also take text
// holding a complete trigger; xgrammar (and llguidance's lazy lexemes) read the trigger as
// the start of a call, so the payload becomes mandatory once the trigger is complete. The
// front end lowers the pattern to a TagDispatch node, which has that meaning.
#pragma once

#include <string>
#include <vector>

#include "frontends/lark_syntax.h"

namespace xg2::lark {

struct DispatchTool {
  std::string trigger;                  // the fixed string that starts the call
  const Node* token_trigger = nullptr;  // or the special token (`tool: TEXT <token> ...`)
  const Definition* tool = nullptr;     // the tool rule
  const Definition* head = nullptr;     // and its head (string triggers)
  std::vector<const Node*> rest;        // what follows the trigger in the tool rule's body
};

// Whether `def` is `head[lazy]: /(\n|.)*END/` (an any-text regex, then a fixed literal), the
// form xgrammar takes only as the head of a dispatch.
bool IsLazyRegexSuffix(const Definition& def);

// Whether `node` (in `doc`) matches any text: an any-text regex, or a name whose body is one.
bool IsAnyTextNode(const Node& node, const Document& doc);

// The tools of `doc`'s start rule when it has the dispatch pattern (in the order written);
// false (tools untouched) when it has not. The head forms: `head[lazy]: TEXT "t"`,
// `head[suffix="t"]: TEXT`, `head[stop="t"]: TEXT`, and `head[lazy]: /(\n|.)*t/` (an
// any-text regex followed by a fixed literal), or a special-token trigger (`tool: TEXT <token>
// ...`, xgrammar's token-level dispatch: free tokens by id, the trigger token, the rest).
// String and token triggers mixed, a negated token trigger, or max_tokens or capture on a
// consumed tool or head make the pattern a SyntaxError located in `text`; a head's stop= /
// suffix= marker (the trigger) and stop_capture are the caller's to keep. A max_chars on the
// start rule or on a tool is ignored, as xgrammar does (the dispatch is free text and calls,
// with no single region to bound): their names go to `ignored_max_chars` (start first) for the
// caller to warn about and leave unbounded.
bool FindDispatchPattern(const std::string& text, const Document& doc, std::vector<DispatchTool>* tools,
                         std::vector<std::string>* ignored_max_chars);

}  // namespace xg2::lark
