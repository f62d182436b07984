#include "frontends/lark_dispatch.h"

#include <algorithm>
#include <map>

namespace xg2::lark {

namespace {

using Definitions = std::map<std::string, const Definition*>;

// The any-text regexes xgrammar's pattern names: `.` takes newlines only under flag s; u
// changes nothing (patterns are read as code points anyway); i is not any text's.
const char* const kAnyTextPrefixes[] = {"(.|\\n)*", "(\\n|.)*", "(?:.|\\n)*", "(?:\\n|.)*", "[\\s\\S]*", "(?s:.*)"};

bool DotMatchesNewline(const std::string& flags) { return flags.find('s') != std::string::npos; }
bool OnlyFlags(const std::string& flags, const std::string& allowed) {
  return flags.find_first_not_of(allowed) == std::string::npos;
}

// The length of the any-text prefix `pattern` starts with (0: none).
size_t AnyTextPrefix(const std::string& pattern, const std::string& flags) {
  if (!OnlyFlags(flags, "su")) return 0;
  for (const char* p : kAnyTextPrefixes) {
    const std::string prefix = p;
    if (pattern.compare(0, prefix.size(), prefix) == 0) return prefix.size();
  }
  return DotMatchesNewline(flags) && pattern.compare(0, 2, ".*") == 0 ? 2 : 0;
}

bool IsAnyTextPattern(const std::string& pattern, const std::string& flags) {
  const size_t n = AnyTextPrefix(pattern, flags);
  return n > 0 && n == pattern.size();
}

// Whether `node` names (possibly through other terminal names) an any-text terminal.
bool IsAnyText(const Node& node, const Definitions& defs, int depth = 0) {
  if (depth > 16) return false;
  if (node.kind == Node::Kind::kRegex) return IsAnyTextPattern(node.text, node.flags);
  if (node.kind != Node::Kind::kName) return false;
  auto it = defs.find(node.text);
  if (it == defs.end() || !it->second->is_terminal) return false;
  return IsAnyText(it->second->body, defs, depth + 1);
}

// A regex literal without metacharacters (escaped ones allowed): its text, or false.
bool FixedRegexLiteral(const std::string& text, std::string* out) {
  static const std::string kMeta = ".^$*+?()[]{}|";
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      if (++i >= text.size()) return false;
      const char e = text[i];
      if (e == 'n') {
        out->push_back('\n');
      } else if (e == 't') {
        out->push_back('\t');
      } else if (e == 'r') {
        out->push_back('\r');
      } else if (kMeta.find(e) != std::string::npos || e == '\\' || e == '/' || e == '-' || e == '<' || e == '>' ||
                 e == '"') {
        out->push_back(e);
      } else {
        return false;  // a class (\d, \s, ...) or another escape: not fixed
      }
      continue;
    }
    if (kMeta.find(c) != std::string::npos) return false;
    out->push_back(c);
  }
  return !out->empty();
}

// The trigger of a head rule (any text, then a fixed string), or "" if it is not one. Its
// max_tokens, capture and stop_capture are checked once the pattern is found (ConsumedRuleCheck).
std::string HeadTrigger(const Definition& head, const Definitions& defs) {
  if (!head.lazy || head.is_terminal || head.max_chars >= 0) return "";
  const Node& body = head.body;
  if (body.kind == Node::Kind::kSequence && body.children.size() == 2 && IsAnyText(body.children[0], defs) &&
      body.children[1].kind == Node::Kind::kString && body.children[1].flags.empty()) {
    return body.children[1].text;  // TEXT "t", and the suffix= / stop= forms folded to it
  }
  if (body.kind == Node::Kind::kRegex) {
    const size_t n = AnyTextPrefix(body.text, body.flags);
    std::string literal;
    if (n > 0 && FixedRegexLiteral(body.text.substr(n), &literal)) return literal;
  }
  return "";
}

// The tool rules the repeated part of start names: `tool` or `(tool_a | tool_b ...)`.
bool ToolNames(const Node& repeated, std::vector<std::string>* names) {
  if (repeated.kind == Node::Kind::kName) {
    names->push_back(repeated.text);
    return true;
  }
  if (repeated.kind == Node::Kind::kSequence && repeated.children.size() == 1) {
    return ToolNames(repeated.children[0], names);
  }
  if (repeated.kind != Node::Kind::kChoice) return false;
  for (const Node& alt : repeated.children) {
    if (!ToolNames(alt, names)) return false;
  }
  return true;
}

// A tool `tool: TEXT <token> ...` (xgrammar's token-level trigger): its special-token node,
// else null.
const Node* TokenTrigger(const Node& tool_body, const Definitions& defs) {
  if (tool_body.kind != Node::Kind::kSequence || tool_body.children.size() < 2) return nullptr;
  const Node& second = tool_body.children[1];
  if (second.kind != Node::Kind::kSpecialToken || !IsAnyText(tool_body.children[0], defs)) return nullptr;
  return &second;
}

// A rule the dispatch consumes (a tool or its head) is not compiled on its own, so the
// attributes that would act on it there cannot be honoured: refused, as in xgrammar.
void ConsumedRuleCheck(const std::string& text, const Definition& def) {
  if (def.max_tokens >= 0) {
    FailAt(text, def.max_tokens_offset,
           "max_tokens is not supported on rules consumed by dynamic dispatch (rule '" + def.name + "')");
  }
  if (!def.capture.empty()) {
    FailAt(text, def.capture_offset,
           "capture is not supported on rules consumed by dynamic dispatch (rule '" + def.name + "')");
  }
}

}  // namespace

bool IsLazyRegexSuffix(const Definition& def) {
  if (!def.lazy || def.is_terminal || !def.marker_attribute.empty() || def.max_chars >= 0 || def.max_tokens >= 0 ||
      def.body.kind != Node::Kind::kRegex) {
    return false;
  }
  const size_t n = AnyTextPrefix(def.body.text, def.body.flags);
  std::string literal;
  return n > 0 && FixedRegexLiteral(def.body.text.substr(n), &literal);
}

bool IsAnyTextNode(const Node& node, const Document& doc) {
  Definitions defs;
  for (const Definition& d : doc.definitions) defs.emplace(d.name, &d);
  return IsAnyText(node, defs);
}

bool FindDispatchPattern(const std::string& text, const Document& doc, std::vector<DispatchTool>* tools,
                         std::vector<std::string>* ignored_max_chars) {
  Definitions defs;
  for (const Definition& d : doc.definitions) defs.emplace(d.name, &d);
  auto start = defs.find("start");
  if (start == defs.end()) return false;
  const Definition& s = *start->second;
  if (s.lazy || !s.capture.empty() || s.temperature >= 0.0f) return false;
  const Node& body = s.body;
  if (body.kind != Node::Kind::kSequence || body.children.size() != 2) return false;
  const Node& loop = body.children[0];
  const Node& tail = body.children[1];
  if (loop.kind != Node::Kind::kRepeat || loop.min != 0 || loop.max >= 0 || loop.children.size() != 1) return false;
  // tail: TEXT (a rule whose body is any text).
  if (tail.kind != Node::Kind::kName) return false;
  auto tail_def = defs.find(tail.text);
  if (tail_def == defs.end() || tail_def->second->is_terminal || !IsAnyText(tail_def->second->body, defs)) return false;
  std::vector<std::string> names;
  if (!ToolNames(loop.children[0], &names) || names.empty()) return false;
  std::vector<DispatchTool> found;
  std::vector<const Definition*> consumed;
  bool token_triggers = false;
  for (const std::string& name : names) {
    auto tool = defs.find(name);
    if (tool == defs.end() || tool->second->is_terminal) return false;
    const Definition& t = *tool->second;
    if (t.lazy || t.temperature >= 0.0f) return false;
    const Node& tb = t.body;
    if (const Node* token = TokenTrigger(tb, defs)) {
      if (token->text.compare(0, 2, "[^") == 0) {
        FailAt(text, token->offset, "dynamic special-token trigger cannot be negated");
      }
      token_triggers = true;
      DispatchTool d;
      d.token_trigger = token;
      for (size_t i = 2; i < tb.children.size(); ++i) d.rest.push_back(&tb.children[i]);
      found.push_back(std::move(d));
      consumed.push_back(&t);
      continue;
    }
    const Node* first = tb.kind == Node::Kind::kSequence ? (tb.children.empty() ? nullptr : &tb.children[0]) : &tb;
    if (first == nullptr || first->kind != Node::Kind::kName) return false;
    auto head = defs.find(first->text);
    if (head == defs.end()) return false;
    DispatchTool d;
    d.tool = &t;
    d.head = head->second;
    d.trigger = HeadTrigger(*head->second, defs);
    if (d.trigger.empty()) return false;
    if (tb.kind == Node::Kind::kSequence) {
      for (size_t i = 1; i < tb.children.size(); ++i) d.rest.push_back(&tb.children[i]);
    }
    found.push_back(std::move(d));
    consumed.push_back(&t);
    consumed.push_back(head->second);
  }
  // Read as a plain grammar, the tail's TEXT would take text holding a complete trigger (a
  // widening of what the dispatch means), so an unusable dispatch is an error, not a fallback.
  const bool string_triggers =
      std::any_of(found.begin(), found.end(), [](const DispatchTool& d) { return d.token_trigger == nullptr; });
  if (token_triggers && string_triggers) {
    FailAt(text, s.offset,
           "a dynamic Lark start rule cannot mix string and token triggers (a dispatch reads free text either "
           "as bytes or as tokens)");
  }
  if (s.max_tokens >= 0)
    FailAt(text, s.max_tokens_offset, "max_tokens is not supported on a dynamic dispatch start rule");
  for (const Definition* def : consumed) ConsumedRuleCheck(text, *def);
  if (s.max_chars >= 0) ignored_max_chars->push_back(s.name);
  for (const std::string& name : names) {
    const Definition& t = *defs.at(name);
    if (t.max_chars >= 0 &&
        std::find(ignored_max_chars->begin(), ignored_max_chars->end(), name) == ignored_max_chars->end()) {
      ignored_max_chars->push_back(name);
    }
  }
  *tools = std::move(found);
  return true;
}

}  // namespace xg2::lark
