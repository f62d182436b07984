// Lark syntax tree (lark_syntax.h) to grammar IR (see lark.h).
//
// Every definition becomes a rule of the same name. Names resolve in two scopes: the
// user's grammar and the common terminals (%import common.X defines X in the user's scope as
// a reference to common's X, whose own references resolve among the common terminals).
#include "frontends/lark.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "automata/substring_dfa.h"
#include "frontends/json_schema.h"
#include "frontends/lark_dispatch.h"
#include "frontends/lark_syntax.h"
#include "frontends/regex.h"
#include "grammar/end_forms.h"
#include "grammar/rule_attributes.h"
#include "grammar/token_set.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2 {

constexpr int kMaxNestedLarkDepth = 64;

namespace {

using lark::Definition;
using lark::Document;
using lark::Node;

// The terminals of `%import common.X`, written as Lark definitions (the names and languages
// of lark's common.lark; strings and comments as a Python tokenizer reads them).
const char* const kCommonTerminals = R"LARK(
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+" | "-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e" | "E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+" | "-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+" | "-"] NUMBER
ESCAPED_STRING: "\"" /([^"\\\n]|\\[^\n])*/ "\""
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_" | LETTER) ("_" | LETTER | DIGIT)*
WS_INLINE: (" " | "\t")+
WS: /[ \t\f\r\n]/+
CR: "\r"
LF: "\n"
NEWLINE: (CR? LF)+
SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
C_COMMENT: "/*" /([^*]|\*+[^*\/])*/ "*"+ "/"
SQL_COMMENT: /--[^\n]*/
)LARK";

// The code point of a one-character UTF-8 string (the text is valid UTF-8).
bool SingleCodepoint(const std::string& s, uint32_t* cp) {
  if (s.empty()) return false;
  unsigned char lead = static_cast<unsigned char>(s[0]);
  size_t length = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : 4;
  if (s.size() != length) return false;
  static const unsigned char kLeadMask[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  *cp = lead & kLeadMask[length];
  for (size_t i = 1; i < length; ++i) *cp = (*cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
  return true;
}

// The comma-separated ids and lo-hi ranges between <[ and ]> (spaces allowed, empty items
// skipped): "" on success, else the error (xgrammar's phrases).
std::string ParseTokenRanges(const std::string& contents, std::vector<std::pair<int64_t, int64_t>>* ranges) {
  constexpr int64_t kMaxRangeSpan = 1000000;
  size_t begin = 0;
  for (;;) {
    const size_t comma = std::min(contents.find(',', begin), contents.size());
    const size_t first = contents.find_first_not_of(' ', begin);
    const size_t last = contents.find_last_not_of(' ', comma - 1);
    const std::string item = first < comma && last != std::string::npos && last >= first
                                 ? contents.substr(first, last - first + 1)
                                 : std::string();
    if (!item.empty()) {
      const std::string bad = "invalid numeric special-token range '" + item + "'";
      int64_t bounds[2] = {-1, -1};
      int which = 0;
      bool gap = false;  // a space after the current number's digits
      for (char c : item) {
        if (c == '-' && which == 0 && bounds[0] >= 0) {
          which = 1;
          gap = false;
        } else if (c >= '0' && c <= '9') {
          int64_t& v = bounds[which];
          if (gap && v >= 0) return bad + " (expected ',' between ids)";
          v = (v < 0 ? 0 : v) * 10 + (c - '0');
          if (v > INT32_MAX) return bad + " (ids are below 2^31)";
        } else if (c == ' ') {
          gap = true;
        } else {
          return bad + (c == '-' && which == 1 ? " (one '-' per range)" : " (expected ids and lo-hi ranges)");
        }
      }
      if (bounds[which] < 0) return bad + " (a range needs both ends)";
      if (which == 0) bounds[1] = bounds[0];
      if (bounds[1] < bounds[0]) return bad + " (its start exceeds its end)";
      if (bounds[1] - bounds[0] > kMaxRangeSpan) {
        return "special-token range is too large: '" + item + "' spans more than 1000000 ids";
      }
      ranges->emplace_back(bounds[0], bounds[1]);
    }
    if (comma == contents.size()) break;
    begin = comma + 1;
  }
  if (ranges->empty()) return "empty numeric special-token range";
  return "";
}

enum Scope : int { kUser = 0, kCommon = 1 };

class LarkConverter {
 public:
  LarkConverter(const std::string& text, const LarkOptions& options) : text_(text), options_(options) {}

  Grammar Convert();

 private:
  struct Entry {
    const Definition* definition = nullptr;  // null for an import
    Scope scope = kUser;
    std::string import_of;  // an import: the common terminal's name
    size_t offset = 0;
    RuleId rule = -1;
  };
  using Key = std::pair<int, std::string>;

  [[noreturn]] void Fail(Scope scope, size_t offset, const std::string& message) const;
  void Define(Scope scope, const Definition& def);
  void AddImports();
  Entry* Lookup(Scope scope, const std::string& name, size_t offset);
  RuleId RuleOf(Entry* entry);
  void CheckTerminals();
  void ApplyAttributes();
  // A terminal, or a rule with attributes: matched whole, so %ignore items follow it, not
  // its parts. For a rule with a temperature (whose body is terminals or one subgrammar, as
  // in xgrammar) this keeps the temperature to the rule's own text.
  static bool IsLexeme(const Entry& e) {
    return e.definition == nullptr || e.definition->is_terminal || e.definition->lazy || e.definition->max_chars >= 0 ||
           e.definition->temperature >= 0.0f;
  }
  // A lazy, stop= or suffix= rule without a budget: as in xgrammar, its body is a terminal's
  // (it names no rule), so its committed-shortest match is one automaton's.
  static bool IsMatchedAsTerminal(const Definition* def) {
    return def != nullptr && !def->is_terminal && def->lazy && def->max_tokens < 0 && def->max_chars < 0;
  }
  // `head[lazy]: /(\n|.)*END/` is the head of a dispatch (it names the trigger END), or refused
  // as xgrammar refuses it.
  void CheckDispatchHead(const Definition& def) const;
  // The body of a temperature rule when it is one subgrammar (@name, %json, %lark), else null.
  static const Node* TemperatureSubgrammar(const Definition& def);
  // Checks that a temperature rule's body is made of terminals, or is one subgrammar.
  void CheckTemperatureRule(const Entry& entry);
  ExprId CompileBody(const Entry& entry);
  // The start rule of the dynamic dispatch pattern (frontends/lark_dispatch.h).
  ExprId CompileDispatch(const std::vector<lark::DispatchTool>& tools);
  // xgrammar's token-level dispatch (special-token triggers): a TokenTagDispatch that loops.
  ExprId CompileTokenDispatch(const std::vector<lark::DispatchTool>& tools);
  // The dispatch's start rule and tools whose max_chars is ignored (lark::FindDispatchPattern).
  void WarnIgnoredMaxChars() const;
  bool IsIgnoredMaxChars(const Entry& entry) const;
  // xgrammar's lazy rule `TEXT "t"` under a token or character budget: a spent budget ends
  // it after its text, without the trigger (a split that captures see whole).
  bool IsBudgetedTextTrigger(const Entry& entry) const;
  // The rules of xgrammar's any-text forms, which may also end at the end of the input without
  // their marker, with their texts that do (AddEndForms).
  std::vector<std::pair<RuleId, ExprId>> FreeTextEnds();
  std::vector<std::string> ignored_max_chars_;
  void CheckTerminal(Entry* entry, std::map<Entry*, int>* state);

  ExprId Compile(const Node& node, Scope scope, bool in_terminal);
  ExprId CompileString(const Node& node, Scope scope);
  ExprId CompileRange(const Node& node, Scope scope);
  ExprId CompileRegex(const Node& node, Scope scope);
  ExprId CompileJson(const Node& node, Scope scope);
  ExprId CompileSubstrings(const Node& node, Scope scope);
  ExprId CompileNestedLark(const Node& node, Scope scope);
  ExprId CompileSpecialToken(const Node& node, Scope scope);
  ExprId CompileGrammarRef(const Node& node, Scope scope);
  ExprId WithSkip(ExprId lexeme);

  const std::string& SourceOf(Scope scope) const { return scope == kUser ? text_ : common_text_; }

  const std::string& text_;
  const LarkOptions& options_;
  const std::string common_text_ = kCommonTerminals;
  Document user_;
  Document common_;
  std::map<Key, Entry> entries_;
  std::map<std::string, RuleId> named_roots_;
  Grammar g_;
  RuleId skip_rule_ = -1;
  int imports_ = 0;
  const Definition* body_of_ = nullptr;  // the definition whose body CompileBody compiles
};

void LarkConverter::Fail(Scope scope, size_t offset, const std::string& message) const {
  lark::FailAt(SourceOf(scope), offset, scope == kUser ? message : "in common terminals: " + message);
}

Grammar LarkConverter::Convert() {
  user_ = lark::ParseDocument(text_);
  for (const Definition& def : user_.definitions) Define(kUser, def);
  AddImports();
  auto start = entries_.find({kUser, "start"});
  if (start == entries_.end()) lark::FailAt(text_, 0, "no start rule found (a Lark grammar starts at `start`)");
  // Rules in definition order, so the printed grammar follows the source.
  for (const Definition& def : user_.definitions) RuleOf(&entries_.at({kUser, def.name}));
  CheckTerminals();

  if (!user_.ignores.empty()) {
    std::vector<ExprId> items;
    for (const Node& ignore : user_.ignores) items.push_back(Compile(ignore, kUser, /*in_terminal=*/true));
    ExprId item = items.size() == 1 ? items[0] : g_.AddChoice(items);
    skip_rule_ = g_.DeclareRule("lark_ignore");
    g_.SetRuleBody(skip_rule_, g_.AddRepeat(item, 0, kUnbounded));
  }
  for (auto& kv : entries_) {
    if (kv.first.first == kUser) RuleOf(&kv.second);  // imports too
  }
  // Bodies of the entries that have rules; compiling declares the common terminals it meets.
  for (bool more = true; more;) {
    more = false;
    for (auto& kv : entries_) {
      Entry* e = &kv.second;
      if (e->rule < 0 || g_.rule(e->rule).body != kNoExpr) continue;
      ExprId body =
          e->definition == nullptr ? g_.AddRuleRef(RuleOf(Lookup(kCommon, e->import_of, e->offset))) : CompileBody(*e);
      g_.SetRuleBody(e->rule, body);
      if (e->definition != nullptr && e->definition->temperature >= 0.0f) {
        g_.SetRuleTemperature(e->rule, e->definition->temperature);
      }
      if (e->definition != nullptr) {
        g_.SetRuleMaxTokens(e->rule, e->definition->max_tokens);
        g_.SetRuleCapture(e->rule, e->definition->capture);
      }
      more = true;
    }
  }
  ApplyAttributes();
  RuleId root = RuleOf(&start->second);
  // A start rule with a temperature is a lexeme, which %ignore items follow: here, at the end.
  const bool start_is_lexeme = start->second.definition->temperature >= 0.0f && skip_rule_ >= 0;
  if ((user_.allow_initial_skip && skip_rule_ >= 0) || start_is_lexeme) {
    RuleId wrapped = g_.DeclareRule("start_with_skip");
    std::vector<ExprId> parts;
    if (user_.allow_initial_skip) parts.push_back(g_.AddRuleRef(skip_rule_));
    parts.push_back(g_.AddRuleRef(root));
    if (start_is_lexeme) parts.push_back(g_.AddRuleRef(skip_rule_));
    g_.SetRuleBody(wrapped, g_.AddSequence(std::move(parts)));
    root = wrapped;
  }
  // The start rule prints as "root", so the printed grammar reads back with from_ebnf's
  // default root name (as xgrammar's does).
  if (g_.FindRule("root") < 0) g_.RenameRule(root, "root");
  g_.set_root(root);
  AddEndForms(&g_, FreeTextEnds());
  return std::move(g_);
}

void LarkConverter::Define(Scope scope, const Definition& def) {
  Key key{scope, def.name};
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    std::pair<int, int> first = lark::LineColumn(SourceOf(scope), it->second.offset);
    Fail(scope, def.offset,
         "duplicate rule or terminal '" + def.name + "' (first defined at " + std::to_string(first.first) + ":" +
             std::to_string(first.second) + ")");
  }
  Entry e;
  e.definition = &def;
  e.scope = scope;
  e.offset = def.offset;
  entries_[key] = e;
}

void LarkConverter::AddImports() {
  if (user_.imports.empty()) return;
  common_ = lark::ParseDocument(common_text_);
  for (const Definition& def : common_.definitions) Define(kCommon, def);
  for (const lark::Import& import : user_.imports) {
    const std::string prefix = "common.";
    std::string name = import.path.compare(0, prefix.size(), prefix) == 0 ? import.path.substr(prefix.size()) : "";
    if (name.empty() || !entries_.count({kCommon, name})) {
      Fail(kUser, import.offset,
           std::string(name.empty() ? "unknown import '" : "unknown common import '") + import.path +
               "' (available: the common terminals, e.g. common.WS, common.NUMBER)");
    }
    if (entries_.count({kUser, import.local_name})) {
      Fail(kUser, import.offset,
           "duplicate rule or terminal '" + import.local_name + "' (the import defines it, and so does the grammar)");
    }
    Entry e;
    e.scope = kUser;
    e.import_of = name;
    e.offset = import.offset;
    entries_[{kUser, import.local_name}] = e;
  }
}

LarkConverter::Entry* LarkConverter::Lookup(Scope scope, const std::string& name, size_t offset) {
  auto it = entries_.find({scope, name});
  if (it == entries_.end()) Fail(scope, offset, "unknown name '" + name + "' (undefined)");
  return &it->second;
}

RuleId LarkConverter::RuleOf(Entry* entry) {
  if (entry->rule < 0) {
    std::string name = entry->definition ? entry->definition->name : entry->import_of;
    entry->rule = g_.DeclareRule(entry->scope == kCommon ? "common." + name : name);
  }
  return entry->rule;
}

bool IsTerminalEntry(const std::string& name) { return lark::IsTerminalName(name); }

// Terminals may refer only to terminals, and not to themselves (Lark's rules: a terminal is a
// regular language).
void LarkConverter::CheckTerminals() {
  std::map<Entry*, int> state;
  for (auto& kv : entries_) {
    if (kv.second.definition && kv.second.definition->is_terminal) CheckTerminal(&kv.second, &state);
  }
}

void LarkConverter::CheckTerminal(Entry* entry, std::map<Entry*, int>* state) {
  int& s = (*state)[entry];
  if (s == 2 || entry->definition == nullptr) return;
  s = 1;
  std::vector<const Node*> stack{&entry->definition->body};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Node& c : n->children) stack.push_back(&c);
    if (n->kind != Node::Kind::kName) continue;
    if (!IsTerminalEntry(n->text)) {
      Fail(entry->scope, n->offset,
           "terminal '" + entry->definition->name + "' cannot reference rule '" + n->text +
               "' (terminals are built from terminals, strings and regexes)");
    }
    Entry* target = Lookup(entry->scope, n->text, n->offset);
    int t = (*state)[target];
    if (t == 1)
      Fail(entry->scope, n->offset, "circular reference in terminal '" + n->text + "' (terminals must be regular)");
    if (t == 0) CheckTerminal(target, state);
  }
  (*state)[entry] = 2;
}

const Node* LarkConverter::TemperatureSubgrammar(const Definition& def) {
  const Node* body = &def.body;
  while ((body->kind == Node::Kind::kSequence || body->kind == Node::Kind::kChoice) && body->children.size() == 1) {
    body = &body->children[0];
  }
  const bool subgrammar =
      body->kind == Node::Kind::kJson || body->kind == Node::Kind::kNestedLark || body->kind == Node::Kind::kGrammarRef;
  return subgrammar ? body : nullptr;
}

void LarkConverter::CheckTemperatureRule(const Entry& entry) {
  const Definition& def = *entry.definition;
  if (TemperatureSubgrammar(def) != nullptr) return;
  std::vector<const Node*> stack{&def.body};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Node& c : n->children) stack.push_back(&c);
    if (n->kind == Node::Kind::kName && !IsTerminalEntry(n->text)) {
      Fail(entry.scope, n->offset,
           "rule '" + def.name + "' cannot refer to rule '" + n->text +
               "': temperature is only supported on terminals and subgrammars (a body of terminals, strings and "
               "regexes, or one @grammar, %json or %lark)");
    }
    if (n->kind == Node::Kind::kJson || n->kind == Node::Kind::kNestedLark || n->kind == Node::Kind::kGrammarRef ||
        n->kind == Node::Kind::kSpecialToken) {
      Fail(entry.scope, n->offset,
           "in rule '" + def.name +
               "': temperature is only supported on terminals and subgrammars (a subgrammar must be the "
               "whole body)");
    }
  }
}

void LarkConverter::CheckDispatchHead(const Definition& def) const {
  std::vector<lark::DispatchTool> tools;
  std::vector<std::string> ignored;
  if (lark::FindDispatchPattern(text_, user_, &tools, &ignored)) {
    for (const lark::DispatchTool& tool : tools) {
      if (tool.head == &def) return;
    }
  }
  Fail(kUser, def.offset,
       "lazy regex suffix is only supported on a head used by dynamic dispatch (write " + def.name +
           "[lazy]: TEXT \"END\" for a rule of its own)");
}

ExprId LarkConverter::CompileBody(const Entry& entry) {
  const Definition& def = *entry.definition;
  std::vector<lark::DispatchTool> tools;
  if (entry.scope == kUser && def.name == "start" &&
      lark::FindDispatchPattern(text_, user_, &tools, &ignored_max_chars_)) {
    WarnIgnoredMaxChars();
    return CompileDispatch(tools);
  }
  if (def.temperature >= 0.0f) {
    CheckTemperatureRule(entry);
    // The subgrammar alone: the %ignore items after it belong to the callers (a lexeme).
    if (const Node* sub = TemperatureSubgrammar(def)) {
      if (sub->kind == Node::Kind::kJson) return CompileJson(*sub, entry.scope);
      if (sub->kind == Node::Kind::kNestedLark) return CompileNestedLark(*sub, entry.scope);
      return CompileGrammarRef(*sub, entry.scope);
    }
  }
  if (lark::IsLazyRegexSuffix(def)) CheckDispatchHead(def);
  body_of_ = &def;
  return Compile(def.body, entry.scope, IsLexeme(entry));
}

void LarkConverter::ApplyAttributes() {
  for (auto& kv : entries_) {
    const Definition* def = kv.second.definition;
    if (def == nullptr || (!def->lazy && def->max_chars < 0)) continue;
    RuleAttributes attrs;
    attrs.lazy = def->lazy;
    attrs.max_chars = IsIgnoredMaxChars(kv.second) ? -1 : def->max_chars;
    if (!attrs.any()) continue;
    try {
      const bool lazy_split = IsBudgetedTextTrigger(kv.second);
      if (!def->marker_attribute.empty() || lazy_split) {  // the rule's text is body M
        const bool lexeme = IsLexeme(kv.second);
        const ExprId body = Compile(def->body.children[0], kv.second.scope, lexeme);
        const ExprId marker = Compile(def->body.children[1], kv.second.scope, lexeme);
        SetMarkerSplit(&g_, kv.second.rule, body, marker, def->marker_attribute == "stop", def->stop_capture,
                       lazy_split);
      }
      ApplyRuleAttributes(&g_, kv.second.rule, attrs);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kGrammarSemantic) throw;
      Fail(kv.second.scope, def->offset, e.what());
    }
  }
}

// ---------------------------------------------------------------------------------------
// Expressions

ExprId LarkConverter::WithSkip(ExprId lexeme) {
  if (skip_rule_ < 0) return lexeme;
  return g_.AddSequence({lexeme, g_.AddRuleRef(skip_rule_)});
}

void LarkConverter::WarnIgnoredMaxChars() const {
  // xgrammar's warnings, word for word, on stderr (as its log does).
  for (const std::string& name : ignored_max_chars_) {
    if (name == "start") {
      std::fprintf(stderr, "[xg2_jax] WARNING: Ignoring max_chars on dynamic dispatch start rule 'start'.\n");
    } else {
      std::fprintf(stderr,
                   "[xg2_jax] WARNING: Ignoring max_chars on rule '%s' because it is consumed by dynamic dispatch.\n",
                   name.c_str());
    }
  }
}

bool LarkConverter::IsBudgetedTextTrigger(const Entry& entry) const {
  const Definition& def = *entry.definition;
  if (!def.lazy || !def.marker_attribute.empty() || (def.max_tokens < 0 && def.max_chars < 0)) return false;
  const Node& body = def.body;
  if (body.kind != Node::Kind::kSequence || body.children.size() != 2) return false;
  const Node& trigger = body.children[1];
  return trigger.kind == Node::Kind::kString && !trigger.text.empty() && trigger.flags.empty() &&
         lark::IsAnyTextNode(body.children[0], entry.scope == kUser ? user_ : common_);
}

std::vector<std::pair<RuleId, ExprId>> LarkConverter::FreeTextEnds() {
  std::vector<std::pair<RuleId, ExprId>> ends;
  for (auto& kv : entries_) {
    const Definition* def = kv.second.definition;
    if (def == nullptr || kv.second.rule < 0 || !def->lazy) continue;
    // xgrammar's forms: r[suffix="M"]: TEXT, r[stop="M"]: TEXT and r[lazy]: TEXT "M" (the
    // first two fold to the third), with any text and a plain string marker.
    const Node& body = def->body;
    if (body.kind != Node::Kind::kSequence || body.children.size() != 2) continue;
    const Node& marker = body.children[1];
    if (marker.kind != Node::Kind::kString || marker.text.empty() || !marker.flags.empty()) continue;
    if (!lark::IsAnyTextNode(body.children[0], kv.first.first == kUser ? user_ : common_)) continue;
    const MarkerSplit& split = g_.rule(kv.second.rule).marker_split;
    const ExprId text =
        split.body != kNoExpr ? split.body : Compile(body.children[0], kv.second.scope, IsLexeme(kv.second));
    ends.emplace_back(kv.second.rule, EndWithoutMarker(&g_, kv.second.rule, text));
  }
  return ends;
}

bool LarkConverter::IsIgnoredMaxChars(const Entry& entry) const {
  return entry.scope == kUser && std::find(ignored_max_chars_.begin(), ignored_max_chars_.end(),
                                           entry.definition->name) != ignored_max_chars_.end();
}

ExprId LarkConverter::CompileTokenDispatch(const std::vector<lark::DispatchTool>& tools) {
  // Per trigger token id, the tools it starts (each the rest of its rule's body).
  std::vector<std::pair<int32_t, std::vector<ExprId>>> by_id;
  for (const lark::DispatchTool& tool : tools) {
    const ExprId token = CompileSpecialToken(*tool.token_trigger, kUser);
    const ByteDfaSpec& set = *g_.expr(token).dfa;
    if (set.tokens_excluded) {
      Fail(kUser, tool.token_trigger->offset, "dynamic special-token trigger must name its tokens");
    }
    std::vector<ExprId> parts;
    for (const Node* n : tool.rest) parts.push_back(Compile(*n, kUser, /*in_terminal=*/false));
    const ExprId rest = parts.empty() ? g_.AddEmpty() : g_.AddSequence(std::move(parts));
    for (int32_t id : set.token_ids) {
      size_t i = 0;
      while (i < by_id.size() && by_id[i].first != id) ++i;
      if (i == by_id.size()) by_id.emplace_back(id, std::vector<ExprId>{});
      by_id[i].second.push_back(rest);
    }
  }
  std::vector<std::pair<int32_t, ExprId>> dispatches;
  for (auto& [id, alts] : by_id) dispatches.emplace_back(id, alts.size() == 1 ? alts[0] : g_.AddChoice(alts));
  return AddTokenTagDispatch(&g_, dispatches, {}, /*loop=*/true);
}

ExprId LarkConverter::CompileDispatch(const std::vector<lark::DispatchTool>& tools) {
  if (tools.front().token_trigger != nullptr) return CompileTokenDispatch(tools);
  // One child per distinct trigger: the tools it starts, each the rest of its rule's body.
  TagDispatchSpec spec;
  std::vector<std::vector<ExprId>> alternatives;
  for (const lark::DispatchTool& tool : tools) {
    size_t i = 0;
    while (i < spec.triggers.size() && spec.triggers[i] != tool.trigger) ++i;
    if (i == spec.triggers.size()) {
      spec.triggers.push_back(tool.trigger);
      alternatives.emplace_back();
    }
    std::vector<ExprId> parts;
    for (const Node* n : tool.rest) parts.push_back(Compile(*n, kUser, /*in_terminal=*/false));
    ExprId rest = parts.empty() ? g_.AddEmpty() : g_.AddSequence(std::move(parts));
    // A stop= / suffix= head's marker is the trigger: the call after it keeps the split.
    const Definition& head = *tool.head;
    if (head.marker_attribute == "stop" || !head.stop_capture.empty()) {
      const RuleId call = g_.DeclareRule(tool.tool->name + "_call");
      g_.SetRuleBody(call, rest);
      MarkerBefore marker;
      marker.length = static_cast<int32_t>(tool.trigger.size());
      marker.hides = head.marker_attribute == "stop";
      marker.capture = head.stop_capture;
      g_.SetRuleMarkerBefore(call, marker);
      rest = g_.AddRuleRef(call);
    }
    alternatives[i].push_back(rest);
  }
  std::vector<ExprId> children;
  for (auto& alts : alternatives) children.push_back(alts.size() == 1 ? alts[0] : g_.AddChoice(std::move(alts)));
  return g_.AddTagDispatch(std::move(spec), std::move(children));
}

ExprId LarkConverter::Compile(const Node& node, Scope scope, bool in_terminal) {
  auto lexeme = [&](ExprId id) { return in_terminal ? id : WithSkip(id); };
  switch (node.kind) {
    case Node::Kind::kEmpty: return g_.AddEmpty();
    case Node::Kind::kSequence:
    case Node::Kind::kChoice: {
      std::vector<ExprId> kids;
      for (const Node& c : node.children) kids.push_back(Compile(c, scope, in_terminal));
      return node.kind == Node::Kind::kSequence ? g_.AddSequence(std::move(kids)) : g_.AddChoice(std::move(kids));
    }
    case Node::Kind::kRepeat:
      return g_.AddRepeat(Compile(node.children[0], scope, in_terminal), node.min,
                          node.max < 0 ? kUnbounded : node.max);
    case Node::Kind::kString: {
      ExprId s = CompileString(node, scope);
      return node.text.empty() ? s : lexeme(s);
    }
    case Node::Kind::kRange: return lexeme(CompileRange(node, scope));
    case Node::Kind::kRegex: return lexeme(CompileRegex(node, scope));
    case Node::Kind::kSubstrings: return lexeme(CompileSubstrings(node, scope));
    case Node::Kind::kNestedLark:
      if (in_terminal) Fail(scope, node.offset, "nested %lark cannot be used in terminals");
      return CompileNestedLark(node, scope);
    case Node::Kind::kName: {
      Entry* target = Lookup(scope, node.text, node.offset);
      if (in_terminal && IsMatchedAsTerminal(body_of_) && !IsLexeme(*target)) {
        Fail(scope, node.offset,
             "terminal cannot reference rule '" + node.text + "' (the body of a lazy, stop= or suffix= rule " +
                 "is matched like a terminal: name terminals, strings and regexes)");
      }
      ExprId ref = g_.AddRuleRef(RuleOf(target));
      return IsLexeme(*target) ? lexeme(ref) : ref;
    }
    case Node::Kind::kJson:
    case Node::Kind::kSpecialToken:
    case Node::Kind::kGrammarRef: {
      const bool lazy_body = body_of_ != nullptr && body_of_->lazy && !body_of_->is_terminal;
      if (in_terminal && lazy_body && node.kind == Node::Kind::kSpecialToken && node.text.compare(0, 2, "[^") == 0) {
        Fail(scope, node.offset, "lazy special-token trigger cannot be negated");
      }
      // A rule with a character budget is matched whole, but it reads a token by id as one
      // atomic step (see LimitChars), as xgrammar does.
      const bool budget_body = body_of_ != nullptr && !body_of_->is_terminal && !body_of_->lazy &&
                               body_of_->max_chars >= 0 && body_of_->marker_attribute.empty();
      if (in_terminal && budget_body && node.kind == Node::Kind::kSpecialToken) {
        return CompileSpecialToken(node, scope);
      }
      if (in_terminal) {
        Fail(scope, node.offset,
             node.kind == Node::Kind::kJson           ? "%json cannot be used in terminals"
             : node.kind == Node::Kind::kSpecialToken ? "special tokens cannot be used in terminals"
                                                      : "named grammars cannot be used in terminals");
      }
      if (node.kind == Node::Kind::kJson) return lexeme(CompileJson(node, scope));
      if (node.kind == Node::Kind::kSpecialToken) return lexeme(CompileSpecialToken(node, scope));
      return lexeme(CompileGrammarRef(node, scope));
    }
  }
  Fail(scope, node.offset, "unsupported expression");
}

ExprId LarkConverter::CompileString(const Node& node, Scope scope) {
  if (node.text.empty()) return g_.AddEmpty();
  if (node.flags.empty()) return g_.AddBytes(node.text);
  for (unsigned char c : node.text) {
    // As in xgrammar: case folding beyond ASCII would need Unicode case tables.
    if (c >= 0x80) Fail(scope, node.offset, "case-insensitive string literals currently support ASCII characters only");
  }
  return FoldAsciiCase(&g_, g_.AddBytes(node.text));
}

ExprId LarkConverter::CompileRange(const Node& node, Scope scope) {
  uint32_t lo = 0, hi = 0;
  if (!SingleCodepoint(node.text, &lo) || !SingleCodepoint(node.text_hi, &hi)) {
    Fail(scope, node.offset, "character range endpoints must be one character");
  }
  if (lo > hi) Fail(scope, node.offset, "character range start must not exceed end");
  return g_.AddCharClass({{lo, hi}}, false);
}

ExprId LarkConverter::CompileRegex(const Node& node, Scope scope) {
  RegexOptions options;
  options.dot_excludes_newline_only = true;  // Python's `.`
  for (char f : node.flags) {
    if (f == 'i') {
      options.ascii_case_insensitive = true;
    } else if (f == 's') {
      options.dot_all = true;
    } else if (f != 'u') {  // u: code points, the engine's reading anyway
      Fail(scope, node.offset, std::string("regular-expression flag '") + f + "' is not supported");
    }
  }
  std::string pattern = AdaptPythonRegex(node.text, &options);
  try {
    return RegexToExpr(&g_, pattern, options);
  } catch (const SyntaxError& e) {
    std::string what = e.what();
    size_t colon = what.find(": ");
    Fail(scope, node.offset,
         "failed to compile regular expression /" + node.text + "/ at character " + std::to_string(e.column()) + ": " +
             (colon == std::string::npos ? what : what.substr(colon + 2)));
  }
}

ExprId LarkConverter::CompileJson(const Node& node, Scope scope) {
  std::pair<int, int> lc = lark::LineColumn(SourceOf(scope), node.offset);
  std::string where = lark::LarkWhere(lc);
  try {
    JsonSchemaOptions part;
    part.refuse_empty_language = false;  // one part of the grammar: another alternative may match
    JsonSchemaResult r = JsonSchemaToGrammar(node.text, part);
    return g_.AddRuleRef(ImportGrammar(&g_, r.grammar, "json" + std::to_string(++imports_) + "_"));
  } catch (const SyntaxError& e) {
    Fail(scope, node.offset, std::string("failed to compile inline JSON schema: ") + e.what());
  } catch (const Error& e) {
    throw Error(e.kind(), where + ": failed to compile inline JSON schema: " + e.what());
  }
}

// %regex {"substring_chunks": [...]} / {"substring_chars": "..."}: any run of consecutive
// chunks (characters), the empty run included, as one automaton (xgrammar's Substring).
ExprId LarkConverter::CompileSubstrings(const Node& node, Scope scope) {
  JsonValue spec;
  try {
    spec = ParseJson(node.text);
  } catch (const Error& e) {
    Fail(scope, node.offset, std::string("failed to parse the %regex value: ") + e.what());
  }
  if (!spec.is_object()) Fail(scope, node.offset, "%regex value must be an object");
  if (spec.members().empty()) Fail(scope, node.offset, "no fields set on %regex");
  if (spec.members().size() > 1) Fail(scope, node.offset, "only one field can be set on %regex");
  const auto& [field, value] = spec.members()[0];
  std::vector<std::string> chunks;
  if (field == "substring_chunks") {
    bool ok = value.is_array() &&
              std::all_of(value.items().begin(), value.items().end(), [](const JsonValue& c) { return c.is_string(); });
    if (!ok) Fail(scope, node.offset, "substring_chunks must be an array of strings");
    for (const JsonValue& c : value.items()) chunks.push_back(c.as_string());
  } else if (field == "substring_chars") {
    if (!value.is_string()) Fail(scope, node.offset, "substring_chars must be a string");
    for (unsigned char c : value.as_string()) {  // one chunk per UTF-8 character
      if ((c & 0xC0) != 0x80 || chunks.empty()) chunks.emplace_back();
      chunks.back() += static_cast<char>(c);
    }
  } else if (field == "substring_words") {
    Fail(scope, node.offset, "substring_words is not supported yet (word boundaries are not modelled)");
  } else {
    Fail(scope, node.offset, "unknown field '" + field + "' in %regex");
  }
  return g_.AddByteDfa(SubstringDfa(chunks));
}

// %lark { ... }: a grammar with its own names (its own start, terminals and %ignore), with the
// same tokenizer and named grammars, imported whole.
ExprId LarkConverter::CompileNestedLark(const Node& node, Scope scope) {
  // Each level is a parser and a converter on the stack: bounded like expression nesting.
  static thread_local int depth = 0;
  const ScopedDepth level(&depth);
  if (depth > kMaxNestedLarkDepth)
    throw Error(ErrorKind::kLimitExceeded, lark::LarkWhere(lark::LineColumn(SourceOf(scope), node.offset)) +
                                               ": %lark grammars nested deeper than " +
                                               std::to_string(kMaxNestedLarkDepth) + " levels");
  Grammar nested;
  try {
    nested = LarkToGrammar(node.text, options_);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kGrammarSyntax && e.kind() != ErrorKind::kGrammarSemantic) throw;
    const std::string what = e.what();  // its first line (the source context is the nested text's)
    Fail(scope, node.offset, "failed to compile nested Lark grammar: " + what.substr(0, what.find('\n')));
  }
  return g_.AddRuleRef(ImportGrammar(&g_, nested, "lark" + std::to_string(++imports_) + "_"));
}

// <[12]>, <[12, 15-17]>, <[^12]>, <[*]>: tokens by id (^: any token but those; *: any one
// token); <|name|>: the special token with that text.
ExprId LarkConverter::CompileSpecialToken(const Node& node, Scope scope) {
  const TokenizerInfo* tok = options_.tokenizer;
  const std::string& t = node.text;
  const std::string shown = "<" + t + ">";
  std::vector<int32_t> ids;
  bool excluded = false;
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') {
    std::string contents = t.substr(1, t.size() - 2);
    if (!contents.empty() && contents[0] == '^') {
      excluded = true;
      contents.erase(0, 1);
    }
    if (contents.find('*') != std::string::npos) {
      if (contents.find_first_not_of(" *") != std::string::npos || contents.find('*') != contents.rfind('*')) {
        Fail(scope, node.offset, "wildcard cannot be mixed with token ranges in " + shown);
      }
      if (excluded) Fail(scope, node.offset, "negated wildcard special token is not supported (it matches no token)");
      if (tok == nullptr) Fail(scope, node.offset, "wildcard special token requires tokenizer_info");
      return g_.AddByteDfa(TokenSetDfa({}, /*excluded=*/true));  // any one token
    }
    std::vector<std::pair<int64_t, int64_t>> ranges;
    const std::string why = ParseTokenRanges(contents, &ranges);
    if (!why.empty()) Fail(scope, node.offset, why);
    if (tok == nullptr) {
      Fail(scope, node.offset,
           "numeric special token " + shown +
               " requires tokenizer_info (to check its ids): use GrammarCompiler.compile_lark or pass tokenizer_info");
    }
    for (const auto& [lo, hi] : ranges) {
      if (hi >= tok->num_tokens()) {
        Fail(scope, node.offset,
             "token id " + std::to_string(hi) + " in " + shown + " is outside the vocabulary (" +
                 std::to_string(tok->num_tokens()) + " tokens)");
      }
      for (int64_t id = lo; id <= hi; ++id) ids.push_back(static_cast<int32_t>(id));
    }
  } else {
    if (tok == nullptr) Fail(scope, node.offset, "named special token " + shown + " requires tokenizer_info");
    // Every vocabulary entry with exactly this text (a vocabulary may list one twice).
    for (int32_t id = 0; id < tok->num_tokens(); ++id) {
      if (tok->token_bytes(id) == shown) ids.push_back(id);
    }
    if (ids.empty()) Fail(scope, node.offset, "unknown special token " + shown);
  }
  for (int32_t id : ids) {
    // A stop token is only a stop token (it ends the output where the input can end).
    if (!excluded && tok->is_stop(id)) Fail(scope, node.offset, "token " + std::to_string(id) + " is a stop token");
  }
  // Tokens are matched by id (a normal token too, never by its text, so other tokenizations
  // of that text are not let through).
  return g_.AddByteDfa(TokenSetDfa(std::move(ids), excluded));
}

ExprId LarkConverter::CompileGrammarRef(const Node& node, Scope scope) {
  auto cached = named_roots_.find(node.text);
  if (cached != named_roots_.end()) return g_.AddRuleRef(cached->second);
  auto it = options_.named_grammars.find(node.text);
  if (it == options_.named_grammars.end()) Fail(scope, node.offset, "unknown named grammar '@" + node.text + "'");
  RuleId root = ImportGrammar(&g_, *it->second, node.text + "_");
  named_roots_[node.text] = root;
  return g_.AddRuleRef(root);
}

}  // namespace

Grammar LarkToGrammar(const std::string& text, const LarkOptions& options) {
  return WithDeepStack([&] { return LarkConverter(text, options).Convert(); });
}

}  // namespace xg2
