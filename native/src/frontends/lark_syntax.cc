// Lark grammar text to a syntax tree (see lark_syntax.h).
//
//   item       ::= definition | directive                     (one per line)
//   definition ::= [?!]? NAME ("." INT)? ":" expansions
//   expansions ::= alias ("|" alias)*                          (a line starting with | continues)
//   alias      ::= expr* ("->" NAME)?
//   expr       ::= atom ("?" | "*" | "+" | "~" INT (".." INT)? | "{" range "}")?
//   atom       ::= "(" expansions ")" | "[" expansions "]" | STRING ".." STRING | STRING
//                | REGEX | NAME | "%json" JSON | "<" special ">" | "@" NAME
//
// Newlines end an item except before a "|" (also inside brackets, as in lark). Comments start
// with // or #.
#include "frontends/lark_syntax.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "grammar/rule_attributes.h"
#include "support/json.h"
#include "support/utf8.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2::lark {

std::pair<int, int> LineColumn(const std::string& text, size_t offset) { return TextLineColumn(text, offset); }

std::string LarkWhere(std::pair<int, int> line_column) {
  return "Lark error at line " + std::to_string(line_column.first) + ", column " + std::to_string(line_column.second);
}

void FailAt(const std::string& text, size_t offset, const std::string& message) {
  std::pair<int, int> lc = LineColumn(text, offset);
  // The source line and a caret under the column (as xgrammar's Lark errors).
  const size_t at = std::min(offset, text.size());
  const size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const size_t begin = newline == std::string::npos ? 0 : newline + 1;
  size_t end = std::min(text.find('\n', begin), text.size());
  if (end > begin && text[end - 1] == '\r') --end;
  const std::string line = text.substr(begin, end - begin);
  if (line.empty()) throw SyntaxError("Lark", message, lc.first, lc.second);
  throw SyntaxError("Lark", message + "\n" + line + "\n" + std::string(lc.second - 1, ' ') + "^", lc.first, lc.second);
}

bool IsTerminalName(const std::string& name) {
  for (char c : name) {
    if (c != '_') return c >= 'A' && c <= 'Z';
  }
  return false;
}

namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '-'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
constexpr int64_t kMaxTokenBudget = 1000000;  // xgrammar's bound on a Lark rule's max_tokens
constexpr const char* kBadCount = "invalid repetition count";
constexpr const char* kReversedRepeat = "repetition end must be greater than or equal to start";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Document Parse();

 private:
  // ---- Cursor ----
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool AtEnd() const { return pos_ >= text_.size(); }
  [[noreturn]] void Fail(const std::string& message, size_t offset) const { FailAt(text_, offset, message); }
  std::string Describe(size_t offset) const;
  size_t SkipInlineFrom(size_t offset) const;  // spaces, tabs, \r and comments; stops at \n
  size_t SkipAllFrom(size_t offset) const;     // also newlines
  void SkipSpace();                            // inside an expression (see the file comment)
  bool AtItemEnd();                            // at a newline or the end (consumes nothing)
  std::string ParseName();
  // A decimal number; `phrase` (xgrammar's, e.g. "invalid repetition count") leads its errors.
  int64_t ParseInt(const std::string& phrase = "");

  // ---- Items ----
  void ParseItem(Document* doc);
  void ParseDefinition(Document* doc);
  void ParseAttributes(Definition* def);
  void ParseDirective(Document* doc);
  void ParseImport(Document* doc, size_t at);
  void ExpectItemEnd();

  // ---- Expressions ----
  Node ParseExpansions();
  Node ParseAlias();
  Node ParseExpr();
  Node ParseAtom();
  Node ParseBracketed(char close, bool optional);
  void ParseBraces(Node* repeat);
  Node ParseStringAtom();
  Node ParseMarker(const std::string& attribute);
  void ParseGrammarOptions(const std::string& json, size_t at, Document* doc);
  std::string ParseStringLiteral();
  Node ParseRegex();
  std::string ParseJsonObject(const std::string& directive);  // directive: "%json", "%lark", ...
  uint32_t ParseHex(int count, size_t escape_start);

  const std::string& text_;
  size_t pos_ = 0;
  int depth_guard_ = 0;  // nested expansions, against MaxNestingDepth()
  Node marker_;          // the stop= / suffix= marker of the definition being read
};

std::string Parser::Describe(size_t offset) const {
  if (offset >= text_.size()) return "end of input";
  if (text_[offset] == '\n') return "end of line";
  unsigned char c = static_cast<unsigned char>(text_[offset]);
  if (c < 0x20) return "a control character";
  size_t end = offset + 1;
  while (end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) ++end;
  return "'" + text_.substr(offset, end - offset) + "'";
}

size_t Parser::SkipInlineFrom(size_t offset) const {
  while (offset < text_.size()) {
    char c = text_[offset];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
      ++offset;
    } else if (c == '#' || (c == '/' && offset + 1 < text_.size() && text_[offset + 1] == '/')) {
      while (offset < text_.size() && text_[offset] != '\n') ++offset;
    } else {
      break;
    }
  }
  return offset;
}

size_t Parser::SkipAllFrom(size_t offset) const {
  for (;;) {
    offset = SkipInlineFrom(offset);
    if (offset < text_.size() && text_[offset] == '\n') {
      ++offset;
    } else {
      return offset;
    }
  }
}

void Parser::SkipSpace() {
  pos_ = SkipInlineFrom(pos_);
  if (Peek() == '\n') {
    size_t next = SkipAllFrom(pos_);
    if (next < text_.size() && text_[next] == '|') pos_ = next;  // a continuation line
  }
}

bool Parser::AtItemEnd() {
  SkipSpace();
  return AtEnd() || Peek() == '\n';
}

std::string Parser::ParseName() {
  size_t start = pos_;
  if (!IsNameStart(Peek())) Fail("expected a name, found " + Describe(pos_), pos_);
  while (IsNameChar(Peek())) ++pos_;
  return text_.substr(start, pos_ - start);
}

int64_t Parser::ParseInt(const std::string& phrase) {
  size_t start = pos_;
  const std::string lead = phrase.empty() ? "" : phrase + ": ";
  if (!IsDigit(Peek())) Fail(lead + "expected a number, found " + Describe(pos_), pos_);
  int64_t value = 0;
  while (IsDigit(Peek())) {
    value = value * 10 + (Peek() - '0');
    if (value > 1000000000) Fail(lead + "number too large (above 10^9)", start);
    ++pos_;
  }
  return value;
}

// ---------------------------------------------------------------------------------------
// Items

Document Parser::Parse() {
  if (FindInvalidUtf8(text_) >= 0) Fail("invalid UTF-8 in grammar text", static_cast<size_t>(FindInvalidUtf8(text_)));
  if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;
  Document doc;
  for (;;) {
    pos_ = SkipAllFrom(pos_);
    if (AtEnd()) break;
    ParseItem(&doc);
  }
  return doc;
}

void Parser::ParseItem(Document* doc) {
  if (Peek() == '%') {
    ParseDirective(doc);
  } else {
    ParseDefinition(doc);
  }
  ExpectItemEnd();
}

void Parser::ExpectItemEnd() {
  if (AtItemEnd()) return;
  if (Peek() == ')' || Peek() == ']') Fail("unbalanced '" + std::string(1, Peek()) + "'", pos_);
  Fail("unexpected " + Describe(pos_), pos_);
}

void Parser::ParseDefinition(Document* doc) {
  size_t start = pos_;
  if (Peek() == '?' || Peek() == '!') ++pos_;  // inline / keep-tokens markers: no effect on the language
  Definition def;
  def.offset = start;
  def.name = ParseName();
  def.is_terminal = IsTerminalName(def.name);
  if (Peek() == '{') Fail("Lark templates are not supported", pos_);
  if (Peek() == ':' && Peek(1) == ':') Fail("parametric grammar is not supported (name::...)", pos_);
  if (Peek() == '[') {
    if (def.is_terminal) Fail("attributes are only supported on rules (a terminal is matched whole)", pos_);
    ParseAttributes(&def);
  }
  // A priority picks among tokenizations, which a mask cannot follow: refused, as xgrammar does.
  if (Peek() == '.') Fail("rule and terminal priorities are not supported", pos_);
  pos_ = SkipInlineFrom(pos_);
  if (Peek() != ':') Fail("expected ':' after rule name '" + def.name + "', found " + Describe(pos_), pos_);
  ++pos_;
  def.body = ParseExpansions();
  if (!def.marker_attribute.empty()) {  // body M, lazily: ends where a marker first ends
    Node seq;
    seq.kind = Node::Kind::kSequence;
    seq.offset = def.body.offset;
    seq.children = {std::move(def.body), std::move(marker_)};
    def.body = std::move(seq);
    def.lazy = true;
  }
  doc->definitions.push_back(std::move(def));
}

// [lazy], [max_chars=N], [max_tokens=N], [stop=M], [suffix=M], [temperature=T],
// comma-separated (xgrammar's rule attributes).
void Parser::ParseAttributes(Definition* def) {
  ++pos_;
  size_t stop_capture_at = pos_;
  for (;;) {
    pos_ = SkipInlineFrom(pos_);
    size_t at = pos_;
    std::string key = IsNameStart(Peek()) ? ParseName() : std::string();
    pos_ = SkipInlineFrom(pos_);
    if (key == "lazy") {
      def->lazy = true;
    } else if (key == "max_chars" && Peek() == '=') {
      pos_ = SkipInlineFrom(pos_ + 1);
      def->max_chars = ParseInt();
    } else if (key == "max_tokens") {
      if (def->max_tokens >= 0) Fail("max_tokens attribute is specified more than once", at);
      def->max_tokens_offset = at;
      if (Peek() != '=') Fail("expected '=' after max_tokens attribute", pos_);
      pos_ = SkipInlineFrom(pos_ + 1);
      const size_t value_at = pos_;
      def->max_tokens = ParseInt();
      if (def->max_tokens <= 0) Fail("max_tokens must be positive", value_at);
      if (def->max_tokens > kMaxTokenBudget) Fail("max_tokens must be at most 1000000", value_at);
    } else if (key == "capture") {
      if (!def->capture.empty()) Fail("capture attribute is specified more than once", at);
      def->capture_offset = at;
      def->capture = def->name;
      size_t name_at = at;
      if (Peek() == '=') {
        pos_ = SkipInlineFrom(pos_ + 1);
        name_at = pos_;
        if (Peek() != '"') Fail("expected a string after capture=, found " + Describe(pos_), pos_);
        def->capture = ParseStringLiteral();
      }
      const std::string why = CaptureNameError(def->capture);
      if (!why.empty()) Fail(why, name_at);
    } else if (key == "temperature") {
      if (def->temperature >= 0.0f) Fail("temperature attribute is specified more than once", at);
      if (Peek() != '=') Fail("expected '=' after temperature attribute", pos_);
      pos_ = SkipInlineFrom(pos_ + 1);
      size_t length = TemperatureLiteralLength(text_, pos_);
      if (length == 0) Fail("expected number after temperature=, found " + Describe(pos_), pos_);
      if (!ParseTemperatureLiteral(text_.substr(pos_, length), &def->temperature)) {
        Fail("temperature must be a finite non-negative number, found " + text_.substr(pos_, length), pos_);
      }
      def->temperature_offset = at;
      pos_ += length;
    } else if ((key == "stop" || key == "suffix") && Peek() == '=') {
      if (def->marker_attribute == key) Fail(key + " attribute is specified more than once", at);
      if (!def->marker_attribute.empty()) Fail(key + " cannot be combined with " + def->marker_attribute, at);
      def->marker_attribute = key;
      pos_ = SkipInlineFrom(pos_ + 1);
      marker_ = ParseMarker(key);
    } else if (key == "stop_capture") {
      if (!def->stop_capture.empty()) Fail("stop_capture attribute is specified more than once", at);
      stop_capture_at = def->stop_capture_offset = at;
      if (Peek() != '=') Fail("expected '=' after stop_capture attribute", pos_);
      pos_ = SkipInlineFrom(pos_ + 1);
      const size_t name_at = pos_;
      if (Peek() != '"') Fail("expected string literal after stop_capture=, found " + Describe(pos_), pos_);
      def->stop_capture = ParseStringLiteral();
      const std::string why = CaptureNameError(def->stop_capture);
      if (!why.empty()) Fail(why, name_at);
    } else {
      Fail("rule attribute '" + key +
               "' is not supported (supported: capture, lazy, max_chars=N, max_tokens=N, stop=M, stop_capture=\"n\", "
               "suffix=M, temperature=T)",
           at);
    }
    pos_ = SkipInlineFrom(pos_);
    if (Peek() == ']') break;
    if (Peek() != ',') Fail("expected ',' or ']' in rule attributes, found " + Describe(pos_), pos_);
    ++pos_;
  }
  if (!def->stop_capture.empty() && def->marker_attribute.empty()) {
    Fail("stop_capture requires stop or suffix", stop_capture_at);
  }
  ++pos_;
}

void Parser::ParseDirective(Document* doc) {
  size_t at = pos_;
  ++pos_;
  std::string word = IsNameStart(Peek()) ? ParseName() : std::string();
  if (word == "ignore") {
    doc->ignores.push_back(ParseExpansions());
  } else if (word == "import") {
    ParseImport(doc, at);
  } else if (word == "grammar_options") {
    pos_ = SkipInlineFrom(pos_);
    size_t json_at = pos_;
    if (Peek() != '{') Fail("%grammar_options value must be an object, found " + Describe(pos_), pos_);
    ParseGrammarOptions(ParseJsonObject("%grammar_options"), json_at, doc);
  } else {
    Fail("directive %" + word + " is not supported", at);
  }
}

// %grammar_options {...}: allow_initial_skip (a boolean); llguidance's no_forcing and
// allow_invalid_utf8 only at their default, false (this front end neither relaxes forcing nor
// matches invalid UTF-8).
void Parser::ParseGrammarOptions(const std::string& json, size_t at, Document* doc) {
  JsonValue options;
  try {
    options = ParseJson(json);
  } catch (const Error& e) {
    Fail(std::string("failed to parse %grammar_options: ") + e.what(), at);
  }
  for (const auto& [name, value] : options.members()) {
    if (name == "allow_initial_skip") {
      if (!value.is_bool()) Fail("allow_initial_skip must be a boolean", at);
      doc->allow_initial_skip = value.as_bool();
    } else if (name == "no_forcing" || name == "allow_invalid_utf8") {
      if (!value.is_bool()) Fail(name + " must be a boolean", at);
      if (value.as_bool()) Fail("%grammar_options option '" + name + "' is not supported", at);
    } else {
      Fail("unknown %grammar_options option '" + name + "'", at);
    }
  }
}

// %import common.NAME, %import common.NAME -> ALIAS, %import common (A, B, ...).
void Parser::ParseImport(Document* doc, size_t at) {
  pos_ = SkipInlineFrom(pos_);
  size_t path_at = pos_;
  std::string path = ParseName();
  while (Peek() == '.') {
    ++pos_;
    path += "." + ParseName();
  }
  pos_ = SkipInlineFrom(pos_);
  if (Peek() == '(') {
    ++pos_;
    for (;;) {
      pos_ = SkipAllFrom(pos_);
      size_t name_at = pos_;
      std::string name = ParseName();
      doc->imports.push_back({path + "." + name, name, name_at});
      pos_ = SkipAllFrom(pos_);
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() == ')') {
        ++pos_;
        break;
      } else {
        Fail("expected ',' or ')' in %import, found " + Describe(pos_), pos_);
      }
    }
    return;
  }
  size_t dot = path.rfind('.');
  if (dot == std::string::npos) Fail("expected %import module.NAME or %import module (NAMES)", at);
  std::string local = path.substr(dot + 1);
  if (Peek() == '-' && Peek(1) == '>') {
    pos_ = SkipInlineFrom(pos_ + 2);
    local = ParseName();
  }
  doc->imports.push_back({path, local, path_at});
}

// ---------------------------------------------------------------------------------------
// Expressions

Node Parser::ParseExpansions() {
  size_t at = pos_;
  // A level here is several deep frames (about 2 KiB of stack), hence the cap of 1000 groups
  // (as xgrammar's Lark front end).
  const int max_depth = CappedNestingDepth(kMaxLarkGroupDepth);
  if (++depth_guard_ > max_depth) {
    std::pair<int, int> lc = LineColumn(text_, at);
    throw Error(ErrorKind::kLimitExceeded,
                LarkWhere(lc) + ": expressions nested deeper than " + std::to_string(max_depth) +
                    " levels (max_nesting_depth=" + std::to_string(MaxNestingDepth()) + ", at most " +
                    std::to_string(kMaxLarkGroupDepth) + " here; see xg2_jax.set_limits)");
  }
  Node choice;
  choice.kind = Node::Kind::kChoice;
  choice.offset = at;
  choice.children.push_back(ParseAlias());
  for (;;) {
    SkipSpace();
    if (Peek() != '|') break;
    ++pos_;
    choice.children.push_back(ParseAlias());
  }
  --depth_guard_;
  if (choice.children.size() == 1) return std::move(choice.children[0]);
  return choice;
}

Node Parser::ParseAlias() {
  Node seq;
  seq.kind = Node::Kind::kSequence;
  seq.offset = pos_;
  for (;;) {
    SkipSpace();
    char c = Peek();
    if (AtEnd() || c == '\n' || c == '|' || c == ')' || c == ']') break;
    if (c == '-' && Peek(1) == '>') {  // an alias names the tree node: no effect on the language
      pos_ = SkipInlineFrom(pos_ + 2);
      if (!IsNameStart(Peek())) Fail("expected alias name after '->', found " + Describe(pos_), pos_);
      ParseName();
      break;
    }
    seq.children.push_back(ParseExpr());
  }
  if (seq.children.empty()) {
    seq.kind = Node::Kind::kEmpty;
    return seq;
  }
  if (seq.children.size() == 1) return std::move(seq.children[0]);
  return seq;
}

Node Parser::ParseExpr() {
  Node atom = ParseAtom();
  size_t op = SkipInlineFrom(pos_);  // Lark allows space before an operator
  char c = op < text_.size() ? text_[op] : '\0';
  if (c == '?' || c == '*' || c == '+' || c == '~' || c == '{') pos_ = op;
  Node repeat;
  repeat.kind = Node::Kind::kRepeat;
  repeat.offset = op;
  if (c == '?' || c == '*' || c == '+') {
    ++pos_;
    repeat.min = c == '+' ? 1 : 0;
    repeat.max = c == '?' ? 1 : -1;
  } else if (c == '~') {
    pos_ = SkipInlineFrom(pos_ + 1);
    repeat.min = repeat.max = ParseInt(kBadCount);
    if (Peek() == '.' && Peek(1) == '.') {
      pos_ += 2;
      repeat.max = ParseInt(kBadCount);
      if (repeat.max < repeat.min) Fail(kReversedRepeat, op);
    }
  } else if (c == '{') {
    ParseBraces(&repeat);
  } else {
    return atom;
  }
  repeat.children.push_back(std::move(atom));
  return repeat;
}

// {n}, {n,m}, {n,}, {,m} (llguidance's forms).
void Parser::ParseBraces(Node* repeat) {
  size_t open = pos_;
  pos_ = SkipInlineFrom(pos_ + 1);
  if (Peek() == '-') Fail(std::string(kBadCount) + ": a repetition count cannot be negative", pos_);
  if (!IsDigit(Peek()) && Peek() != ',') Fail("Lark templates are not supported", open);
  repeat->min = Peek() == ',' ? 0 : ParseInt(kBadCount);
  repeat->max = repeat->min;
  pos_ = SkipInlineFrom(pos_);
  if (Peek() == ',') {
    pos_ = SkipInlineFrom(pos_ + 1);
    if (Peek() == '-') Fail(std::string(kBadCount) + ": a repetition count cannot be negative", pos_);
    repeat->max = Peek() == '}' ? -1 : ParseInt(kBadCount);
    pos_ = SkipInlineFrom(pos_);
  }
  if (Peek() != '}') Fail("expected '}' in repetition, found " + Describe(pos_), pos_);
  ++pos_;
  if (repeat->max >= 0 && repeat->max < repeat->min) Fail(kReversedRepeat, open);
}

Node Parser::ParseAtom() {
  size_t at = pos_;
  char c = Peek();
  if (c == '(') return ParseBracketed(')', false);
  if (c == '[') return ParseBracketed(']', true);
  if (c == '"') return ParseStringAtom();
  if (c == '/') return ParseRegex();
  Node node;
  node.offset = at;
  if (IsNameStart(c)) {
    node.kind = Node::Kind::kName;
    node.text = ParseName();
    if (Peek() == ':' && Peek(1) == ':') Fail("parametric grammar is not supported (name::...)", pos_);
    if (Peek() == '{') {  // a repetition {n,m} or a template use name{args}
      size_t next = SkipInlineFrom(pos_ + 1);
      if (next >= text_.size() || (!IsDigit(text_[next]) && text_[next] != ',')) {
        Fail("Lark templates are not supported", pos_);
      }
    }
    return node;
  }
  if (c == '@') {
    ++pos_;
    if (!IsNameStart(Peek())) Fail("empty grammar reference: expected a grammar name after '@'", at);
    node.kind = Node::Kind::kGrammarRef;
    node.text = ParseName();
    return node;
  }
  if (c == '<') {
    size_t close = text_.find('>', pos_);
    size_t newline = text_.find('\n', pos_);
    if (close == std::string::npos || close > newline) Fail("unterminated special token", at);
    node.kind = Node::Kind::kSpecialToken;
    node.text = text_.substr(pos_ + 1, close - pos_ - 1);
    if (node.text.empty()) Fail("invalid special token: nothing between '<' and '>'", at);
    // A named token has no whitespace or '<' (xgrammar's rule); <[...]> lists may hold spaces.
    if (node.text.front() != '[' && node.text.find_first_of(" \t\r\f\v<") != std::string::npos) {
      Fail("invalid special token: a named special token cannot hold whitespace or '<'", at);
    }
    pos_ = close + 1;
    return node;
  }
  if (c == '%') {
    ++pos_;
    std::string word = IsNameStart(Peek()) ? ParseName() : std::string();
    if (word == "if") Fail("parametric %if conditions are not supported", at);
    if (word != "json" && word != "regex" && word != "lark")
      Fail("%" + word + " is not supported inside an expression", at);
    pos_ = SkipInlineFrom(pos_);
    if (word == "lark") {  // balanced braces; strings may hold braces
      if (Peek() != '{') Fail("expected '{' after %lark, found " + Describe(pos_), pos_);
      node.kind = Node::Kind::kNestedLark;
      std::string block = ParseJsonObject("%lark");
      node.text = block.substr(1, block.size() - 2);
      return node;
    }
    if (word == "regex") {  // its fields are read by the converter
      if (Peek() != '{') Fail("%regex value must be an object", pos_);
      node.kind = Node::Kind::kSubstrings;
      node.text = ParseJsonObject("%regex");
      return node;
    }
    node.kind = Node::Kind::kJson;
    node.text = ParseJsonObject("%json");
    return node;
  }
  if (c == '\'') Fail("Lark strings use double quotes", at);
  if (c == '&') Fail("terminal intersection '&' is not supported", at);
  if (c == '~') Fail("regular-expression complement '~' is not supported", at);
  if (c == '-' || c == '!') Fail(std::string("unexpected '") + c + "' character (expected an expression)", at);
  const std::string found = Describe(at);  // a quoted character, or "a control character"
  Fail((found[0] == '\'' ? "unexpected character " : "unexpected ") + found + " (expected an expression)", at);
}

Node Parser::ParseBracketed(char close, bool optional) {
  size_t open = pos_;
  ++pos_;
  SkipSpace();
  Node inner;
  inner.offset = open;
  if (Peek() != close) inner = ParseExpansions();
  SkipSpace();
  if (Peek() != close) {
    const std::pair<int, int> lc = LineColumn(text_, open);
    Fail(std::string("expected '") + close + (optional ? "' after optional group" : "' after group") + ", found " +
             Describe(pos_) + " (the '" + text_[open] + "' at line " + std::to_string(lc.first) + ", column " +
             std::to_string(lc.second) + " is not closed)",
         pos_);
  }
  ++pos_;
  if (!optional) return inner;
  Node repeat;
  repeat.kind = Node::Kind::kRepeat;
  repeat.offset = open;
  repeat.min = 0;
  repeat.max = 1;
  repeat.children.push_back(std::move(inner));
  return repeat;
}

// The marker of a stop= / suffix= attribute: a string (flag i allowed), a regex (flag s
// allowed) or a terminal's name.
Node Parser::ParseMarker(const std::string& attribute) {
  size_t at = pos_;
  Node marker;
  if (Peek() == '"') {
    marker = ParseStringAtom();
    if (marker.kind != Node::Kind::kString) Fail(attribute + " takes a string, a regex or a terminal name", at);
    if (marker.text.empty()) Fail(attribute + " must not be empty", at);
  } else if (Peek() == '/') {
    marker = ParseRegex();
    for (char f : marker.flags) {
      if (f != 's')
        Fail(std::string("regular-expression flag '") + f + "' is not supported with suffix or stop attributes", at);
    }
  } else if (IsNameStart(Peek())) {
    marker.offset = at;
    marker.kind = Node::Kind::kName;
    marker.text = ParseName();
    if (!IsTerminalName(marker.text)) Fail(attribute + " terminal name must be uppercase", at);
  } else {
    Fail("expected a string, a regex or a terminal name after " + attribute + "=, found " + Describe(pos_), pos_);
  }
  return marker;
}

Node Parser::ParseStringAtom() {
  Node node;
  node.offset = pos_;
  node.kind = Node::Kind::kString;
  node.text = ParseStringLiteral();
  if (Peek() == 'i') {
    ++pos_;
    node.flags = "i";
  }
  if (Peek() == '.' && Peek(1) == '.') {
    if (!node.flags.empty()) Fail("flags are not allowed on character ranges", node.offset);
    pos_ += 2;
    if (Peek() != '"') Fail("expected a string after '..', found " + Describe(pos_), pos_);
    size_t hi_at = pos_;
    node.kind = Node::Kind::kRange;
    node.text_hi = ParseStringLiteral();
    if (Peek() == 'i') Fail("flags are not allowed on character ranges", hi_at);
  }
  return node;
}

// A double-quoted string with Python/JSON escapes, decoded to UTF-8.
std::string Parser::ParseStringLiteral() {
  size_t open = pos_++;
  std::string out;
  for (;;) {
    if (AtEnd() || Peek() == '\n') Fail("unterminated string literal", open);
    char c = Peek();
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c != '\\') {
      out += c;
      ++pos_;
      continue;
    }
    size_t esc = pos_;
    char e = Peek(1);
    pos_ += 2;
    uint32_t cp = 0;
    switch (e) {
      case 'n': cp = '\n'; break;
      case 't': cp = '\t'; break;
      case 'r': cp = '\r'; break;
      case 'b': cp = '\b'; break;
      case 'f': cp = '\f'; break;
      case 'v': cp = '\v'; break;
      case '0': cp = 0; break;
      case '\\':
      case '"':
      case '\'':
      case '/': cp = static_cast<unsigned char>(e); break;
      case 'x': cp = ParseHex(2, esc); break;
      case 'u': cp = ParseHex(4, esc); break;
      case 'U': cp = ParseHex(8, esc); break;
      default: {
        const bool printable = e > ' ' && e < 0x7f;
        Fail("invalid string literal: invalid escape sequence " +
                 (printable ? std::string("'\\") + e + "'" : "'\\' followed by " + Describe(esc + 1)),
             esc);
      }
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) Fail("invalid string literal: a surrogate code point cannot appear", esc);
    AppendUtf8(cp, &out);
  }
}

uint32_t Parser::ParseHex(int count, size_t escape_start) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i) {
    int digit = HexValue(Peek());
    if (digit < 0) {
      Fail("invalid string literal: invalid escape sequence: expected " + std::to_string(count) + " hex digits",
           escape_start);
    }
    value = value * 16 + static_cast<uint64_t>(digit);
    ++pos_;
  }
  if (value > 0x10FFFF) Fail("invalid string literal: code point out of range (above U+10FFFF)", escape_start);
  return static_cast<uint32_t>(value);
}

// /pattern/flags. The pattern keeps its escapes except \/, which becomes /.
Node Parser::ParseRegex() {
  Node node;
  node.offset = pos_;
  node.kind = Node::Kind::kRegex;
  ++pos_;
  bool in_class = false;
  size_t class_slash = std::string::npos;  // the first '/' read inside a character class
  for (;;) {
    if (AtEnd() || Peek() == '\n') {
      // Lark ends a regex at its first unescaped '/'; this reader lets a class hold one.
      if (in_class && class_slash != std::string::npos) {
        Fail("failed to compile regular expression /" + text_.substr(node.offset + 1, class_slash - node.offset - 1) +
                 "/: unterminated character class (missing ']')",
             node.offset);
      }
      Fail("unterminated regular expression", node.offset);
    }
    char c = Peek();
    if (c == '\\' && Peek(1) == '/') {
      node.text += '/';
      pos_ += 2;
      continue;
    }
    if (c == '\\') {
      if (Peek(1) == '\n' || pos_ + 1 >= text_.size()) Fail("unterminated regular expression", node.offset);
      node.text += text_.substr(pos_, 2);
      pos_ += 2;
      continue;
    }
    if (c == '[') in_class = true;
    if (c == ']') in_class = false;
    if (c == '/' && !in_class) break;
    if (c == '/' && class_slash == std::string::npos) class_slash = pos_;
    node.text += c;
    ++pos_;
  }
  ++pos_;
  while (Peek() >= 'a' && Peek() <= 'z') node.flags += text_[pos_++];
  return node;
}

// A balanced {...} object (strings may hold braces); after %json also [...] or a scalar
// (true, 1.5, "text"), which the JSON reader checks later. Returns its text.
std::string Parser::ParseJsonObject(const std::string& directive) {
  size_t open = pos_;
  const bool arrays = directive != "%lark";  // a %lark block is Lark text: only braces count
  if (directive == "%json" && Peek() != '{' && Peek() != '[') {
    if (Peek() == '"') {
      ParseStringLiteral();
    } else {
      while (IsNameChar(Peek()) || Peek() == '+' || Peek() == '.') ++pos_;
    }
    if (pos_ == open)
      Fail("failed to parse JSON value after %json: expected a JSON value, found " + Describe(pos_), pos_);
    return text_.substr(open, pos_ - open);
  }
  int braces = 0;
  bool in_string = false;
  for (; pos_ < text_.size(); ++pos_) {
    char c = text_[pos_];
    if (in_string) {
      if (c == '\\') {
        ++pos_;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || (arrays && c == '[')) {
      ++braces;
    } else if ((c == '}' || (arrays && c == ']')) && --braces == 0) {
      ++pos_;
      return text_.substr(open, pos_ - open);
    }
  }
  if (directive == "%lark") Fail("unterminated %lark { ... } block (missing '}')", open);
  Fail("failed to parse JSON value after " + directive + ": unterminated JSON value (a bracket is not closed)", open);
}

}  // namespace

Document ParseDocument(const std::string& text) { return Parser(text).Parse(); }

}  // namespace xg2::lark
