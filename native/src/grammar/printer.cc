// Grammar::ToEbnf: prints the IR in the dialect ParseEbnf reads, such that printing the
// re-parsed grammar gives the same text. Parentheses appear exactly where the tree shape
// needs them, so parsing rebuilds the same nesting of sequences, choices and repeats.
#include <charconv>
#include <cstdint>
#include <string>
#include <vector>

#include "support/utf8.h"
#include "xg2/grammar.h"
#include "xg2/limits.h"
#include "xg2/tokenizer.h"

namespace xg2 {

namespace {

// Binding strength of printed forms, loosest first.
enum class Precedence { kChoice = 0, kSequence = 1, kPostfix = 2, kAtom = 3 };

// Printed for an expression that matches nothing (an empty choice, a rule without a body):
// the dialect has no such keyword, and this class parses back into the same text.
constexpr char kNothing[] = "[^\\x00-\\U0010FFFF]";

void AppendHex(uint32_t value, int digits, std::string* out) {
  static const char kHex[] = "0123456789ABCDEF";
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) {
    out->push_back(kHex[(value >> shift) & 15]);
  }
}

// Code points printed as escapes: controls, invisible or direction-changing format
// characters, surrogates and noncharacters. Everything else is printed as UTF-8.
bool NeedsEscape(uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0xAD) return true;
  if (cp >= 0xD800 && cp <= 0xDFFF) return true;
  if ((cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E)) return true;
  if ((cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF) return true;
  if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE) return true;
  return cp > 0x10FFFF;
}

// Appends code point cp, which is not one of the dialect's special characters.
void AppendCodepoint(uint32_t cp, std::string* out) {
  switch (cp) {
    case '\n': *out += "\\n"; return;
    case '\r': *out += "\\r"; return;
    case '\t': *out += "\\t"; return;
    default: break;
  }
  if (!NeedsEscape(cp)) {
    AppendUtf8(cp, out);
  } else if (cp <= 0xFF) {
    *out += "\\x";
    AppendHex(cp, 2, out);
  } else if (cp <= 0xFFFF) {
    *out += "\\u";
    AppendHex(cp, 4, out);
  } else {
    *out += "\\U";
    AppendHex(cp, 8, out);
  }
}

// Decodes one well-formed UTF-8 sequence at bytes[i]; returns its length, or 0 if the
// bytes there are not valid UTF-8.
int DecodeUtf8(const std::string& bytes, size_t i, uint32_t* cp) {
  unsigned char lead = static_cast<unsigned char>(bytes[i]);
  int length;
  uint32_t value;
  if (lead < 0x80) {
    *cp = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, value = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, value = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, value = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > bytes.size()) return 0;
  for (int k = 1; k < length; ++k) {
    unsigned char next = static_cast<unsigned char>(bytes[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    value = (value << 6) | (next & 0x3F);
  }
  static const uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kMinForLength[length] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    return 0;
  }
  *cp = value;
  return length;
}

void AppendQuoted(const std::string& bytes, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < bytes.size();) {
    uint32_t cp = 0;
    if (static_cast<uint8_t>(bytes[i]) == kVirtualTokenLead && i + 4 <= bytes.size()) {
      // A special token (see VirtualTokenBytes): \<id>.
      int32_t id = (static_cast<uint8_t>(bytes[i + 1]) << 16) | (static_cast<uint8_t>(bytes[i + 2]) << 8) |
                   static_cast<uint8_t>(bytes[i + 3]);
      *out += "\\<" + std::to_string(id) + ">";
      i += 4;
      continue;
    }
    int length = DecodeUtf8(bytes, i, &cp);
    if (length == 0) {
      // A byte outside valid UTF-8 has no exact spelling in the dialect (\xHH names code
      // point U+00HH); print the closest form rather than failing.
      *out += "\\x";
      AppendHex(static_cast<unsigned char>(bytes[i]), 2, out);
      ++i;
      continue;
    }
    if (cp == '"' || cp == '\\') out->push_back('\\');
    AppendCodepoint(cp, out);
    i += length;
  }
  out->push_back('"');
}

void AppendClassChar(uint32_t cp, bool first, std::string* out) {
  // '-', ']' and '\' are special anywhere inside a class; '^' only where it would read as
  // negation.
  if (cp == '\\' || cp == ']' || cp == '-' || (cp == '^' && first)) out->push_back('\\');
  AppendCodepoint(cp, out);
}

void AppendCharClass(const Expr& e, std::string* out) {
  if (e.negated && e.ranges.empty()) {
    out->push_back('.');
    return;
  }
  out->push_back('[');
  if (e.negated) out->push_back('^');
  bool first = true;
  for (const CodepointRange& r : e.ranges) {
    AppendClassChar(r.lo, first && !e.negated, out);
    first = false;
    if (r.hi != r.lo) {
      // Two-element ranges print as two characters, which parse back to the same range.
      if (r.hi > r.lo + 1) out->push_back('-');
      AppendClassChar(r.hi, false, out);
    }
  }
  out->push_back(']');
}

class EbnfPrinter {
 public:
  explicit EbnfPrinter(const Grammar& g) : g_(g) {}

  std::string Print() const {
    std::string out;
    if (g_.root() >= 0 && g_.root() < g_.num_rules()) AppendRule(g_.root(), &out);
    for (RuleId r = 0; r < g_.num_rules(); ++r) {
      if (r != g_.root()) AppendRule(r, &out);
    }
    return out;
  }

 private:
  void AppendRule(RuleId id, std::string* out) const {
    const Rule& rule = g_.rule(id);
    *out += rule.name;
    AppendRuleOptions(rule, out);
    *out += " ::= ";
    if (rule.body == kNoExpr) {
      *out += kNothing;
    } else {
      AppendExpr(rule.body, out);
    }
    if (rule.lookahead != kNoExpr) {
      *out += " (= ";
      AppendExpr(rule.lookahead, out);
      out->push_back(')');
    }
    out->push_back('\n');
  }

  // `[max_tokens=N, capture="name", stop=(body, marker), stop_capture="name", temperature=T]`,
  // in xgrammar's order; nothing when the rule sets none.
  void AppendRuleOptions(const Rule& rule, std::string* out) const {
    std::vector<std::string> options;
    if (rule.has_token_budget()) options.push_back("max_tokens=" + std::to_string(rule.max_tokens));
    if (rule.has_char_budget()) {
      options.push_back("json_chars=" + std::to_string(rule.json_min_chars) + ".." +
                        (rule.json_max_chars >= 0 ? std::to_string(rule.json_max_chars) : std::string()));
    }
    // Capture names are letters, digits, '_', '-' and '.': no escaping needed.
    if (rule.has_capture()) options.push_back("capture=\"" + rule.capture + "\"");
    if (rule.has_marker_split()) {
      const MarkerSplit& split = rule.marker_split;
      std::string option = split.whole_capture ? "lazy=(" : split.hides_marker ? "stop=(" : "suffix=(";
      AppendExpr(split.body, &option);
      option += ", ";
      AppendExpr(split.marker, &option);
      options.push_back(option + ")");
      if (!split.stop_capture.empty()) options.push_back("stop_capture=\"" + split.stop_capture + "\"");
    }
    if (rule.end_only) options.push_back("end_only");
    if (rule.has_marker_before()) {
      const MarkerBefore& m = rule.marker_before;
      options.push_back((m.hides ? "trigger_stop=" : "trigger_suffix=") + std::to_string(m.length));
      if (!m.capture.empty()) options.push_back("trigger_capture=\"" + m.capture + "\"");
    }
    if (rule.has_temperature()) {
      // The shortest text that reads back as the same float, so printing round-trips.
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof(buf), rule.temperature);
      options.push_back("temperature=" + std::string(buf, res.ptr));
    }
    if (options.empty()) return;
    out->push_back('[');
    for (size_t i = 0; i < options.size(); ++i) *out += (i ? ", " : "") + options[i];
    out->push_back(']');
  }

  // The precedence of the text AppendExpr(id) produces. A sequence or choice of one element
  // prints as that element alone, so it takes the element's precedence.
  Precedence PrecedenceOf(ExprId id) const {
    for (;;) {
      const Expr& e = g_.expr(id);
      switch (e.kind) {
        case ExprKind::kSequence:
        case ExprKind::kChoice:
          if (e.children.size() == 1) {
            id = e.children[0];
            continue;
          }
          if (e.children.empty()) return Precedence::kAtom;
          return e.kind == ExprKind::kSequence ? Precedence::kSequence : Precedence::kChoice;
        case ExprKind::kRepeat: return Precedence::kPostfix;
        default: return Precedence::kAtom;
      }
    }
  }

  // Appends expression id, parenthesised if it binds more loosely than `needed`.
  void AppendOperand(ExprId id, Precedence needed, std::string* out) const {
    if (PrecedenceOf(id) >= needed) {
      AppendExpr(id, out);
      return;
    }
    out->push_back('(');
    AppendExpr(id, out);
    out->push_back(')');
  }

  void AppendExpr(ExprId id, std::string* out) const {
    const Expr& e = g_.expr(id);
    switch (e.kind) {
      case ExprKind::kEmpty: *out += "\"\""; return;
      case ExprKind::kBytes: AppendQuoted(e.bytes, out); return;
      case ExprKind::kCharClass: AppendCharClass(e, out); return;
      case ExprKind::kRuleRef: *out += g_.rule(e.rule).name; return;
      case ExprKind::kSequence: AppendList(e, " ", Precedence::kPostfix, "\"\"", out); return;
      case ExprKind::kChoice: AppendList(e, " | ", Precedence::kSequence, kNothing, out); return;
      case ExprKind::kRepeat:
        AppendOperand(e.children[0], Precedence::kAtom, out);
        AppendRepeatSuffix(e.min, e.max, out);
        return;
      case ExprKind::kTagDispatch: AppendTagDispatch(e, out); return;
      case ExprKind::kByteDfa: AppendByteDfa(*e.dfa, out); return;
      case ExprKind::kAnyOrder: AppendAnyOrder(e, out); return;
    }
  }

  // AnyOrder(separator, required=(...), optional=(...), repeated=(...), min=0, max=-1
  //          [, depends=((member, (alternative...), ...), ...)])
  void AppendAnyOrder(const Expr& e, std::string* out) const {
    const AnyOrderSpec& d = *e.any_order;
    *out += "AnyOrder(";
    AppendExpr(e.children[0], out);
    size_t next = 1;
    auto list = [&](const char* key, int32_t count) {
      *out += ", ";
      *out += key;
      *out += "=(";
      for (int32_t i = 0; i < count; ++i) {
        if (i > 0) *out += ", ";
        AppendExpr(e.children[next++], out);
      }
      *out += ")";
    };
    list("required", d.num_required);
    list("optional", d.num_optional);
    list("repeated", d.num_repeated);
    *out += ", min=" + std::to_string(d.min_count) + ", max=" + std::to_string(d.max_count);
    if (!d.presence.empty()) AppendPresenceRules(d.presence, out);
    *out += ")";
  }

  static void AppendPresenceRules(const std::vector<AnyOrderPresenceRule>& rules, std::string* out) {
    auto ints = [&](const std::vector<int32_t>& xs) {
      *out += "(";
      for (size_t i = 0; i < xs.size(); ++i) *out += (i > 0 ? ", " : "") + std::to_string(xs[i]);
      *out += ")";
    };
    *out += ", depends=(";
    for (size_t k = 0; k < rules.size(); ++k) {
      *out += (k > 0 ? ", (" : "(") + std::to_string(rules[k].member);
      for (const auto& alt : rules[k].any_of) {
        *out += ", ";
        ints(alt);
      }
      *out += ")";
    }
    *out += ")";
  }

  // ByteDfa(states=3, final=(2), edges=((0, 0x61, 0x7a, 1), (1, 0x30, 0x39, 2), ...)):
  // edges as (from, lo, hi, to), in state order then byte order; start state 0.
  static void AppendByteDfa(const ByteDfaSpec& d, std::string* out) {
    static const char* kHex = "0123456789abcdef";
    auto hex = [&](uint8_t b) {
      *out += "0x";
      out->push_back(kHex[b >> 4]);
      out->push_back(kHex[b & 15]);
    };
    if (d.is_unbuilt()) {  // the Regex(...) text as written: reading the print keeps its error
      *out += d.unbuilt_source;
      return;
    }
    if (d.is_token_set) {  // Token(ids...) / ExcludeToken(ids...): the edges follow from the ids
      *out += d.tokens_excluded ? "ExcludeToken(" : "Token(";
      for (size_t i = 0; i < d.token_ids.size(); ++i) {
        if (i > 0) *out += ", ";
        *out += std::to_string(d.token_ids[i]);
      }
      *out += ")";
      return;
    }
    *out += "ByteDfa(states=" + std::to_string(d.num_states()) + ", final=(";
    bool first = true;
    for (int32_t s = 0; s < d.num_states(); ++s) {
      if (!d.is_final[s]) continue;
      if (!first) *out += ", ";
      first = false;
      *out += std::to_string(s);
    }
    *out += "), edges=(";
    first = true;
    for (int32_t s = 0; s < d.num_states(); ++s) {
      for (const auto& x : d.edges[s]) {
        if (!first) *out += ", ";
        first = false;
        *out += "(" + std::to_string(s) + ", ";
        hex(x.lo);
        *out += ", ";
        hex(x.hi);
        *out += ", " + std::to_string(x.target) + ")";
      }
    }
    *out += "))";
  }

  // TagDispatch(("trigger", continuation), ..., ends=(...), excludes=(...), loop=true, ...)
  void AppendTagDispatch(const Expr& e, std::string* out) const {
    const TagDispatchSpec& d = *e.dispatch;
    *out += "TagDispatch(";
    for (size_t i = 0; i < d.triggers.size(); ++i) {
      out->push_back('(');
      AppendQuoted(d.triggers[i], out);
      *out += ", ";
      AppendExpr(e.children[i], out);
      *out += "), ";
    }
    auto list = [&](const char* key, const std::vector<std::string>& items) {
      *out += key;
      *out += "=(";
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += ", ";
        AppendQuoted(items[i], out);
      }
      *out += "), ";
    };
    list("ends", d.ends);
    list("excludes", d.excludes);
    *out += std::string("loop=") + (d.loop ? "true" : "false");
    *out += std::string(", plain_end=") + (d.plain_end ? "true" : "false");
    *out += std::string(", at_least_one=") + (d.at_least_one ? "true" : "false");
    *out += ", max_chars=" + std::to_string(d.max_chars) + ")";
  }

  void AppendList(const Expr& e, const char* separator, Precedence needed, const char* if_empty,
                  std::string* out) const {
    if (e.children.empty()) {
      *out += if_empty;
    } else if (e.children.size() == 1) {
      AppendExpr(e.children[0], out);  // its precedence is ours, see PrecedenceOf
    } else {
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i > 0) *out += separator;
        AppendOperand(e.children[i], needed, out);
      }
    }
  }

  static void AppendRepeatSuffix(int64_t min, int64_t max, std::string* out) {
    if (min == 0 && max == kUnbounded) {
      out->push_back('*');
    } else if (min == 1 && max == kUnbounded) {
      out->push_back('+');
    } else if (min == 0 && max == 1) {
      out->push_back('?');
    } else if (max == kUnbounded) {
      *out += "{" + std::to_string(min) + ",}";
    } else if (min == max) {
      *out += "{" + std::to_string(min) + "}";
    } else {
      *out += "{" + std::to_string(min) + "," + std::to_string(max) + "}";
    }
  }

  const Grammar& g_;
};

}  // namespace

std::string Grammar::ToEbnf() const {
  return WithDeepStack([&] { return EbnfPrinter(*this).Print(); });
}

}  // namespace xg2
