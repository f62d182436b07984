// Lark front end: Lark grammar text (the format llguidance users write and xgrammar 0.2.9
// reads with Grammar.from_lark) lowered to grammar IR.
//
// Terminals are expanded in place (no separate lexer), so the language is the context-free
// language of the grammar, as lark's Earley parser with the dynamic lexer reads it. `%ignore`
// follows xgrammar and llguidance: any number of ignored items may follow every lexeme of a
// rule (a terminal, string or regex used in a rule), so they sit between tokens and at the
// end; before the first token only with %grammar_options {"allow_initial_skip": true}.
#pragma once

#include <string>
#include <unordered_map>

#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace xg2 {

struct LarkOptions {
  // Resolves <special tokens>; without it they are a SyntaxError.
  const TokenizerInfo* tokenizer = nullptr;
  // Grammars referenced as @name (name without the @).
  std::unordered_map<std::string, const Grammar*> named_grammars;
};

// The grammar of the `start` rule. Throws SyntaxError (line:col) for malformed or unsupported
// syntax, undefined or duplicate names, a terminal that refers to a rule or to itself, and a
// missing start rule; errors of a %json schema keep their kind with the location prefixed.
Grammar LarkToGrammar(const std::string& text, const LarkOptions& options = LarkOptions());

}  // namespace xg2
