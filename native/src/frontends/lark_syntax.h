// Lark grammar text as a syntax tree: the first half of the Lark front end (lark.h).
//
// The parser reads the Lark dialect that llguidance and xgrammar 0.2.9 accept: rule and
// terminal definitions (with priorities, ?/! rule prefixes and -> aliases, all of which
// leave the language unchanged), alternatives, groups, [optional] parts, ? * + ~ n ~ n..m
// {n} {n,m} {n,} {,m}, strings with the i flag, "a".."z" ranges, /regex/flags, %ignore,
// %import common..., %json {...}, %regex {substring_chunks / substring_chars},
// %grammar_options, <special tokens>, @named grammars and the rule attributes
// [lazy], [max_chars=N], [stop=M], [suffix=M] and [temperature=T]. Everything else (templates, %declare,
// %override, %extend, other attributes) is a SyntaxError at its line:col.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xg2::lark {

struct Node {
  enum class Kind : uint8_t {
    kEmpty,         // matches ""
    kSequence,      // children in order
    kChoice,        // one of the children
    kRepeat,        // children[0] repeated min..max times (max -1: unbounded)
    kString,        // text (decoded), flags ("" or "i")
    kRange,         // text .. text_hi, one code point each
    kRegex,         // text (the pattern between the slashes, unescaped), flags
    kName,          // a rule or terminal reference: text
    kJson,          // %json: text is the JSON Schema
    kSubstrings,    // %regex {...} (llguidance's structured regex): text is the JSON object
    kNestedLark,    // %lark { ... }: text is the grammar between the braces (its own names)
    kSpecialToken,  // <...>: text is what is between the angle brackets
    kGrammarRef,    // @name: text is the name
  };
  Kind kind = Kind::kEmpty;
  size_t offset = 0;  // byte offset in the source, for messages
  std::string text;
  std::string text_hi;
  std::string flags;
  int64_t min = 0;
  int64_t max = 0;
  std::vector<Node> children;
};

struct Definition {
  std::string name;  // without the ?/! prefix and the priority
  bool is_terminal = false;
  bool lazy = false;       // name[lazy]: (see grammar/rule_attributes.h)
  int64_t max_chars = -1;  // name[max_chars=N]:
  // name[temperature=T]: (xgrammar's) the sampling temperature inside the rule; -1: none.
  float temperature = -1.0f;
  // name[max_tokens=N]: (xgrammar's) each occurrence's token budget, 1..1,000,000; -1: none.
  int64_t max_tokens = -1;
  // name[capture] / name[capture="n"]: (xgrammar's) the matcher records the rule's spans
  // under this name (the rule's own for `capture` alone); empty: none.
  std::string capture;
  size_t temperature_offset = 0;
  size_t max_tokens_offset = 0;  // where the max_tokens / capture attributes are written
  size_t capture_offset = 0;
  // name[stop=M] / name[suffix=M] (llguidance's and xgrammar's): the body up to the first
  // place a marker M ends, the marker included. The parser folds it into the body as
  // `body M` with lazy set (the shortest match commits); "stop" or "suffix", else empty. The
  // two differ in what captures hold (see MarkerSplit): body's two children are the parts,
  // stop_capture (name[stop_capture="n"]) names the marker's capture.
  std::string marker_attribute;
  std::string stop_capture;
  size_t stop_capture_offset = 0;
  size_t offset = 0;
  Node body;
};

struct Import {
  std::string path;        // e.g. "common.WS"
  std::string local_name;  // the name it is defined as (the alias or the last component)
  size_t offset = 0;
};

struct Document {
  std::vector<Definition> definitions;
  std::vector<Node> ignores;
  std::vector<Import> imports;
  bool allow_initial_skip = false;  // %grammar_options {"allow_initial_skip": true}
};

// Throws SyntaxError (line:col) for malformed or unsupported syntax and Error(kLimitExceeded)
// for groups nested deeper than CappedNestingDepth(kMaxLarkGroupDepth).
Document ParseDocument(const std::string& text);

// A name is a terminal when its first letter (after leading underscores) is uppercase.
bool IsTerminalName(const std::string& name);

// Line and column (code points, 1-based) of a byte offset.
std::pair<int, int> LineColumn(const std::string& text, size_t offset);

// "Lark error at line L, column C": the head of every located Lark error (xgrammar's wording).
std::string LarkWhere(std::pair<int, int> line_column);
// Throws SyntaxError at `offset`: LarkWhere's head, the message, then (as xgrammar) the source
// line and a caret under the column.
[[noreturn]] void FailAt(const std::string& text, size_t offset, const std::string& message);

}  // namespace xg2::lark
