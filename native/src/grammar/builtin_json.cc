// The builtin JSON grammar: a JSON (RFC 8259) object or array, xgrammar's language. Rules
// are few and flat because the engine compiles each rule body to one DFA: keeping a whole
// string or number inside one rule lets its token masks be decided without descending into
// sub-rules.
#include <string>

#include "xg2/grammar.h"

namespace xg2 {

const std::string& BuiltinJsonGrammarEbnf() {
  static const std::string kJsonGrammar =
      "# A JSON object or array, with no whitespace around it: xgrammar's builtin JSON\n"
      "# grammar, which serving engines use for JSON mode (response_format json_object).\n"
      "root ::= object | array\n"
      "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n"
      "object ::= \"{\" ws (string ws \":\" ws value"
      " (ws \",\" ws string ws \":\" ws value)* ws)? \"}\"\n"
      "array ::= \"[\" ws (value (ws \",\" ws value)* ws)? \"]\"\n"
      "string ::= \"\\\"\" char* \"\\\"\"\n"
      "# A raw character other than a quote, a backslash or a control character, or an escape.\n"
      "char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
      "number ::= \"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [+\\-]? [0-9]+)?\n"
      "ws ::= [ \\n\\t\\r]*\n";
  return kJsonGrammar;
}

}  // namespace xg2
