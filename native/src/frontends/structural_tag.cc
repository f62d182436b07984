#include "frontends/structural_tag.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <set>
#include <utility>

#include "frontends/json_schema.h"
#include "frontends/lark.h"
#include "frontends/regex.h"
#include "frontends/structural_tag_cohere.h"
#include "frontends/structural_tag_gemma.h"
#include "frontends/structural_tag_minimax_m3.h"
#include "frontends/structural_tag_xml.h"
#include "grammar/token_set.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2 {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

// What is wrong with a field, for xgrammar's phrase for it (FieldPhrase).
enum Problem : unsigned { kMissing = 1, kWrongType = 2, kEmpty = 4, kBadItem = 8, kOutOfRange = 16 };

// xgrammar's message for a problem with a field of a format type, or "" where it has none
// of its own. It leads ours ("PHRASE: our reason"), so text matched against xgrammar's
// messages still matches and ours keeps its detail.
std::string FieldPhrase(const std::string& type, const std::string& key, Problem problem) {
  struct Entry {
    const char* type;
    const char* key;
    unsigned problems;
    const char* phrase;
  };
  static const Entry kPhrases[] = {
      {"structural_tag", "format", kMissing, "Structural tag must have a format field"},
      {"const_string", "value", kMissing | kWrongType, "ConstString format must have a value field with a string"},
      {"json_schema", "json_schema", kMissing | kWrongType,
       "JSON schema format must have a json_schema field with a object or boolean value"},
      {"sequence", "elements", kMissing | kWrongType, "Sequence format must have an elements field with an array"},
      {"sequence", "elements", kEmpty, "Sequence format must have at least one element"},
      {"or", "elements", kMissing | kWrongType, "Or format must have an elements field with an array"},
      {"or", "elements", kEmpty, "Or format must have at least one element"},
      {"tag", "begin", kMissing | kWrongType, "Tag format's begin field must be a string"},
      {"tag", "content", kMissing, "Tag format must have a content field"},
      {"tag", "end", kMissing, "Tag format must have an end field"},
      {"tag", "end", kWrongType, "Tag format's end field must be a string or array of strings"},
      {"triggered_tags", "triggers", kMissing | kWrongType,
       "Triggered tags format must have a triggers field with an array"},
      {"triggered_tags", "triggers", kEmpty, "Triggered tags format's triggers must be non-empty"},
      {"triggered_tags", "triggers", kBadItem, "Triggered tags format's triggers must be non-empty strings"},
      {"triggered_tags", "tags", kMissing | kWrongType, "Triggered tags format must have a tags field with an array"},
      {"triggered_tags", "tags", kEmpty, "Triggered tags format's tags must be non-empty"},
      {"tags_with_separator", "tags", kMissing | kWrongType,
       "Tags with separator format must have a tags field with an array"},
      {"tags_with_separator", "tags", kEmpty, "Tags with separator format's tags must be non-empty"},
      {"tags_with_separator", "separator", kMissing | kWrongType,
       "Tags with separator format's separator field must be a string"},
      {"repeat", "min", kOutOfRange, "Repeat min must be >= 0"},
      {"repeat", "max", kOutOfRange, "Repeat max must be -1 (unbounded) or >= 0"},
  };
  if ((key == "at_least_one" || key == "stop_after_first") && problem == kWrongType) return key + " must be a boolean";
  for (const Entry& e : kPhrases) {
    if (type == e.type && key == e.key && (e.problems & problem)) return e.phrase;
  }
  return "";
}

// Reads the fields of one format object, rejecting unknown ones (typos would otherwise
// silently select a default). `type` names the format for FieldPhrase (default: its "type").
class Fields {
 public:
  Fields(const JsonValue& obj, std::string path, std::set<std::string> allowed, std::string type = "")
      : obj_(obj), path_(std::move(path)), type_(std::move(type)) {
    allowed.insert("type");
    for (const auto& [key, value] : obj.members()) {
      if (!allowed.count(key)) Fail(path_ + "." + key, "unknown field for this format type");
    }
    const JsonValue* t = obj.Find("type");
    if (type_.empty() && t && t->is_string()) type_ = t->as_string();
  }
  const std::string& path() const { return path_; }
  std::string At(const std::string& key) const { return path_ + "." + key; }
  const JsonValue* Get(const std::string& key) const { return obj_.Find(key); }
  // Fails at the field (or at `at`, an item of it), xgrammar's phrase for the problem first.
  [[noreturn]] void FailField(const std::string& key, Problem problem, const std::string& reason,
                              const std::string& at = "") const {
    const std::string phrase = FieldPhrase(type_, key, problem);
    Fail(at.empty() ? At(key) : at, phrase.empty() ? reason : phrase + ": " + reason);
  }
  const JsonValue& Require(const std::string& key) const {
    const JsonValue* v = obj_.Find(key);
    if (!v) FailField(key, kMissing, "required field is missing");
    return *v;
  }
  std::string String(const std::string& key, bool allow_empty = true) const {
    const JsonValue& v = Require(key);
    if (!v.is_string()) FailField(key, kWrongType, "must be a string");
    if (!allow_empty && v.as_string().empty()) FailField(key, kEmpty, "must not be empty");
    return v.as_string();
  }
  bool Bool(const std::string& key, bool fallback) const {
    const JsonValue* v = obj_.Find(key);
    if (!v || v->is_null()) return fallback;
    if (!v->is_bool()) FailField(key, kWrongType, "must be true or false");
    return v->as_bool();
  }
  int64_t Int(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) const {
    const JsonValue* v = obj_.Find(key);
    if (!v || v->is_null()) return fallback;
    if (!v->is_number() || !v->is_integer()) FailField(key, kWrongType, "must be an integer");
    double d = v->as_number();
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      FailField(key, kOutOfRange, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    }
    return static_cast<int64_t>(d);
  }
  // A list of non-empty strings (absent: empty list).
  std::vector<std::string> Strings(const std::string& key) const {
    std::vector<std::string> out;
    const JsonValue* v = obj_.Find(key);
    if (!v || v->is_null()) return out;
    if (!v->is_array()) FailField(key, kWrongType, "must be a list of strings");
    for (size_t i = 0; i < v->items().size(); ++i) {
      const JsonValue& s = v->items()[i];
      std::string p = At(key) + "[" + std::to_string(i) + "]";
      if (!s.is_string()) FailField(key, kBadItem, "must be a string", p);
      if (s.as_string().empty()) FailField(key, kBadItem, "an empty string cannot be matched in text; remove it", p);
      out.push_back(s.as_string());
    }
    return out;
  }
  const std::vector<JsonValue>& List(const std::string& key, bool allow_empty) const {
    const JsonValue& v = Require(key);
    if (!v.is_array()) FailField(key, kWrongType, "must be a list");
    if (!allow_empty && v.items().empty()) FailField(key, kEmpty, "must not be empty");
    return v.items();
  }

 private:
  const JsonValue& obj_;
  std::string path_;
  std::string type_;
};

// Text for messages: special tokens (virtual strings) shown as <token N>.
std::string Show(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (static_cast<uint8_t>(bytes[i]) == kVirtualTokenLead && i + 4 <= bytes.size()) {
      int id = (static_cast<uint8_t>(bytes[i + 1]) << 16) | (static_cast<uint8_t>(bytes[i + 2]) << 8) |
               static_cast<uint8_t>(bytes[i + 3]);
      out += "<token " + std::to_string(id) + ">";
      i += 3;
    } else {
      out.push_back(bytes[i]);
    }
  }
  return out;
}

std::string Index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// A length budget (max_tokens, max_chars): absent or null is none (-1).
int64_t Budget(const Fields& fs, const std::string& key) {
  const JsonValue* v = fs.Get(key);
  if (!v || v->is_null()) return -1;
  if (!v->is_number() || !v->is_integer() || v->as_number() < 0 || v->as_number() > INT32_MAX) {
    Fail(fs.At(key), "must be a non-negative 32-bit integer");
  }
  return static_cast<int64_t>(v->as_number());
}

class Lowering {
 public:
  explicit Lowering(const StructuralTagOptions& options) : options_(options) {}

  StructuralTagResult Run(const JsonValue& tag) {
    if (!tag.is_object()) Fail("(root)", "Structural tag must be an object (a JSON object)");
    const JsonValue* type = tag.Find("type");
    const JsonValue* format = &tag;
    std::string path = "format";
    // The envelope; its "type" may be left out (xgrammar's default), and a format always has
    // one, so {"format": ...} alone is an envelope too. No format has a "format" field, so
    // with one, another type is a mistyped envelope.
    if ((type && type->is_string() && type->as_string() == "structural_tag") || (!type && tag.Find("format"))) {
      Fields f(tag, "(root)", {"format"}, "structural_tag");
      format = &f.Require("format");
    } else if (type && tag.Find("format")) {
      Fail("(root).type",
           "Structural tag's type must be a string \"structural_tag\" (a structural tag holds its "
           "format in \"format\")");
    }
    RuleId root = g_.DeclareRule("root");
    bool consumed = false;
    ExprId body = Lower(*format, path, {}, &consumed);
    g_.SetRuleBody(root, body);
    g_.set_root(root);
    return {std::move(g_), std::move(warnings_)};
  }

 private:
  // Lowers one format. `ends` are the end strings of the innermost enclosing tag when this
  // format is the last thing before them: unbounded text inside stops at (and consumes) the
  // first end string, and *consumed_end says so.
  ExprId Lower(const JsonValue& f, const std::string& path, const std::vector<std::string>& ends, bool* consumed_end) {
    const ScopedDepth level(&format_depth_);
    if (format_depth_ > CappedNestingDepth(kMaxFormatNestingDepth)) {
      throw Error(ErrorKind::kLimitExceeded,
                  path + ": formats nested deeper than " + std::to_string(CappedNestingDepth(kMaxFormatNestingDepth)) +
                      " levels (max_nesting_depth, at most " + std::to_string(kMaxFormatNestingDepth) +
                      " here; see xg2_jax.set_limits)");
    }
    *consumed_end = false;
    if (!f.is_object()) Fail(path, "Format must be an object (a JSON object with a \"type\")");
    const JsonValue* type = f.Find("type");
    if (!type) Fail(path + ".type", "Invalid format: required field is missing");
    if (!type->is_string()) Fail(path + ".type", "Format's type must be a string");
    const std::string& t = type->as_string();
    if (t == "const_string") {
      Fields fs(f, path, {"value"});
      return Literal(fs.String("value"));
    }
    if (t == "json_schema") return LowerJsonSchema(f, path);
    if (t == "qwen_xml_parameter") return LowerQwenXmlParameter(f, path);
    if (t == "grammar") return LowerGrammar(f, path);
    if (t == "regex") {
      Fields fs(f, path, {"pattern"});
      std::string pattern = fs.String("pattern");
      try {
        return RegexToExpr(&g_, pattern);
      } catch (const Error& e) {
        Fail(fs.At("pattern"), e.what());
      }
    }
    if (t == "any_text") {
      Fields fs(f, path, {"excludes", "max_chars", "max_tokens"});
      const int64_t max_tokens = Budget(fs, "max_tokens");
      TagDispatchSpec spec;
      spec.excludes = fs.Strings("excludes");
      spec.max_chars = Budget(fs, "max_chars");
      if (max_tokens < 0) return AnyText(std::move(spec), ends, consumed_end);
      // A token budget closes the text where it runs out, so the enclosing tag's end follows
      // the text (which may not contain it) instead of ending it from inside.
      spec.excludes.insert(spec.excludes.end(), ends.begin(), ends.end());
      const RuleId text = NamedRule("any_text", AnyText(std::move(spec), kNoEnds, &ignored_));
      g_.SetRuleMaxTokens(text, max_tokens);
      return g_.AddRuleRef(text);
    }
    if (t == "sequence") {
      Fields fs(f, path, {"elements"});
      const auto& items = fs.List("elements", /*allow_empty=*/false);
      std::vector<ExprId> parts;
      for (size_t i = 0; i < items.size(); ++i) {
        bool last = i + 1 == items.size();
        parts.push_back(
            Lower(items[i], Index(fs.At("elements"), i), last ? ends : kNoEnds, last ? consumed_end : &ignored_));
      }
      return g_.AddSequence(std::move(parts));
    }
    if (t == "or") {
      Fields fs(f, path, {"elements"});
      const auto& items = fs.List("elements", /*allow_empty=*/false);
      std::vector<ExprId> alts;
      std::vector<bool> consumed;
      for (size_t i = 0; i < items.size(); ++i) {
        bool c = false;
        alts.push_back(Lower(items[i], Index(fs.At("elements"), i), ends, &c));
        consumed.push_back(c);
      }
      bool any = std::find(consumed.begin(), consumed.end(), true) != consumed.end();
      if (any) {  // every alternative then ends with an end string
        for (size_t i = 0; i < alts.size(); ++i) {
          if (!consumed[i]) alts[i] = g_.AddSequence({alts[i], EndChoice(ends)});
        }
      }
      *consumed_end = any;
      return g_.AddChoice(std::move(alts));
    }
    if (t == "optional" || t == "star" || t == "plus" || t == "repeat") {
      Fields fs(f, path,
                t == "repeat" ? std::set<std::string>{"content", "min", "max"} : std::set<std::string>{"content"});
      int64_t lo = 0, hi = kUnbounded;
      if (t == "optional") hi = 1;
      if (t == "plus") lo = 1;
      if (t == "repeat") {
        lo = fs.Int("min", 0, 0, int64_t{1} << 31);
        if (!fs.Get("min")) Fail(fs.At("min"), "required field is missing");
        if (!fs.Get("max")) Fail(fs.At("max"), "required field is missing");
        hi = fs.Int("max", -1, -1, int64_t{1} << 31);
        if (hi == -1) hi = kUnbounded;
        if (hi != kUnbounded && hi < lo) {
          Fail(fs.At("max"), "Repeat min must be <= max: max must be >= min (or -1 for no bound)");
        }
      }
      ExprId content = Lower(fs.Require("content"), fs.At("content"), kNoEnds, &ignored_);
      return g_.AddRepeat(content, lo, hi);
    }
    if (t == "tag") return LowerTag(f, path);
    if (t == "triggered_tags") return LowerTriggeredTags(f, path, ends, consumed_end);
    if (t == "tags_with_separator") return LowerTagsWithSeparator(f, path);
    if (t == "dispatch") return LowerDispatch(f, path, ends, consumed_end);
    if (t == "token_dispatch") return LowerTokenDispatch(f, path);
    if (t == "token") return TokenExpr(TokenFormatId(f, path));
    if (t == "exclude_token") return LowerExcludeToken(f, path);
    if (t == "any_tokens") return LowerAnyTokens(f, path);
    if (t == "token_triggered_tags") return LowerTokenTriggeredTags(f, path);
    Fail(path + ".type", "Format type not recognized: " + t);
  }

  ExprId Literal(const std::string& s) { return s.empty() ? g_.AddEmpty() : g_.AddBytes(s); }

  ExprId EndChoice(const std::vector<std::string>& ends) {
    std::vector<ExprId> alts;
    for (const auto& e : ends) alts.push_back(Literal(e));
    return alts.size() == 1 ? alts[0] : g_.AddChoice(std::move(alts));
  }

  // Free text of a dispatch inside a tag stops at the tag's end strings.
  void SetEnds(TagDispatchSpec* spec, const std::vector<std::string>& ends, bool* consumed_end) {
    if (ends.empty()) return;
    spec->ends = ends;
    spec->plain_end = false;
    *consumed_end = true;
  }

  // JSONSchemaFormat.excludes: absent, or a list of non-empty strings (null is no list).
  static std::vector<std::string> SchemaExcludes(const Fields& fs) {
    const JsonValue* v = fs.Get("excludes");
    if (!v) return {};
    bool ok = v->is_array() && std::all_of(v->items().begin(), v->items().end(),
                                           [](const JsonValue& s) { return s.is_string() && !s.as_string().empty(); });
    if (!ok) Fail(fs.At("excludes"), "excludes must be an array of non-empty strings");
    return fs.Strings("excludes");
  }

  ExprId LowerJsonSchema(const JsonValue& f, const std::string& path) {
    Fields fs(f, path, {"json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"});
    const JsonValue& schema = fs.Require("json_schema");
    if (!schema.is_object() && !schema.is_bool()) {
      fs.FailField("json_schema", kWrongType, "must be a JSON Schema object or boolean");
    }
    std::string style = "json";
    if (fs.Get("style")) style = fs.String("style");
    std::vector<std::string> excludes = SchemaExcludes(fs);
    if (!excludes.empty() && (style == "cohere_xml" || style == "minimax_m3_xml")) {
      Fail(fs.At("excludes"),
           "excludes is not supported for " + style + " (it is for json, gemma and the parameter XML styles)");
    }
    JsonSchemaOptions o;
    o.any_order = fs.Bool("any_order", false);
    o.max_whitespace_cnt = static_cast<int>(fs.Int("max_whitespace_cnt", -1, -1, 1 << 20));
    o.on_unsupported_warn = options_.on_unsupported_warn;
    if (style == "json") {
      o.excludes = std::move(excludes);
      return ImportSchema(schema, o, fs.At("json_schema"));
    }
    if (style == "gemma") {
      GemmaArgumentLowering gemma(&g_, GemmaStringDelimiter(), o, fs.At("json_schema"), &warnings_);
      gemma.set_excludes(std::move(excludes));
      return gemma.Lower(schema);
    }
    if (style == "cohere_xml") {
      CohereArgumentLowering cohere(&g_, o, fs.At("json_schema"), &warnings_);
      return cohere.Lower(schema);
    }
    if (style == "minimax_m3_xml") {
      MiniMaxM3ArgumentLowering m3(&g_, o, fs.At("json_schema"), &warnings_);
      return m3.Lower(schema);
    }
    XmlStyle xml;
    if (!ParseXmlStyle(style, &xml)) {
      Fail(fs.At("style"), "unknown style '" + style +
                               "': style must be \"json\", \"qwen_xml\", \"minimax_xml\", \"minimax_m3_xml\", "
                               "\"deepseek_xml\", \"glm_xml\", \"cohere_xml\", \"kimi_k3_xml\", "
                               "\"deepseek_v4_1_xml\", or \"gemma\"");
    }
    XmlParameterLowering lowering(&g_, xml, o, fs.At("json_schema"), &warnings_, std::move(excludes));
    return lowering.Lower(schema);
  }

  // xgrammar's deprecated {"type": "qwen_xml_parameter", "json_schema": ...}: the same
  // language as a json_schema format with style "qwen_xml" and default options, kept so
  // serialized structural tags of that form still load.
  ExprId LowerQwenXmlParameter(const JsonValue& f, const std::string& path) {
    Fields fs(f, path, {"json_schema"});
    const JsonValue& schema = fs.Require("json_schema");
    if (!schema.is_object() && !schema.is_bool()) {
      fs.FailField("json_schema", kWrongType, "must be a JSON Schema object or boolean");
    }
    JsonSchemaOptions o;
    o.on_unsupported_warn = options_.on_unsupported_warn;
    XmlParameterLowering lowering(&g_, XmlStyle::kQwen, o, fs.At("json_schema"), &warnings_, {});
    return lowering.Lower(schema);
  }

  // Gemma's string delimiter <|"|>: the special token where the tokenizer has it as one (as
  // Gemma 4's does), so the mask allows that token; else the text.
  std::string GemmaStringDelimiter() const {
    static const std::string kDelimiter = "<|\"|>";
    const TokenizerInfo* tok = options_.tokenizer;
    if (!tok) return kDelimiter;
    int32_t id = tok->FindToken(kDelimiter);
    return id >= 0 && tok->is_special(id) && !tok->is_stop(id) ? VirtualTokenBytes(id) : kDelimiter;
  }

  ExprId ImportSchema(const JsonValue& schema, const JsonSchemaOptions& o, const std::string& path) {
    JsonSchemaResult r;
    JsonSchemaOptions part = o;
    part.refuse_empty_language = false;  // one part of the tag: another alternative may match
    try {
      r = JsonSchemaToGrammar(schema, part);
    } catch (const Error& e) {
      Fail(path, e.what());
    }
    for (auto& w : r.warnings) warnings_.push_back(path + ": " + w);
    return g_.AddRuleRef(ImportGrammar(&g_, r.grammar, "schema" + std::to_string(++imports_) + "_"));
  }

  // A grammar written as EBNF (the default) or Lark; Lark's <special tokens> resolve with the
  // compiler's tokenizer when there is one.
  ExprId LowerGrammar(const JsonValue& f, const std::string& path) {
    Fields fs(f, path, {"grammar", "syntax"});
    const std::string syntax = fs.Get("syntax") ? fs.String("syntax") : "ebnf";
    if (syntax != "ebnf" && syntax != "lark") {
      Fail(fs.At("syntax"), "unknown syntax '" + syntax + "': Grammar format's syntax must be \"ebnf\" or \"lark\"");
    }
    std::string text = fs.String("grammar");
    Grammar sub;
    try {
      if (syntax == "lark") {
        LarkOptions lark;
        lark.tokenizer = options_.tokenizer;
        sub = LarkToGrammar(text, lark);
      } else {
        sub = ParseEbnf(text);
        ThrowIfUnbuilt(sub);  // a tag is refused whole, at its path, not at the compile
      }
    } catch (const Error& e) {
      Fail(fs.At("grammar"), e.what());
    }
    return g_.AddRuleRef(ImportGrammar(&g_, sub, "grammar" + std::to_string(++imports_) + "_"));
  }

  // A tag's strings and content: begin, content (stopped by the ends if unbounded), end. A
  // begin or end given as a token is matched by id (its virtual string, see VirtualTokenBytes).
  struct TagParts {
    std::string begin;
    int32_t begin_token = -1;       // the begin's token id (begin then empty), or -1
    std::vector<std::string> ends;  // "" allowed: no end text
    int32_t end_token = -1;         // the end's token id (ends then its virtual string), or -1
    const JsonValue* content;
    std::string path;
  };

  TagParts ReadTag(const JsonValue& f, const std::string& path) {
    if (!f.is_object()) Fail(path, "a tag must be a JSON object");
    const JsonValue* type = f.Find("type");
    if (type && !(type->is_string() && type->as_string() == "tag")) Fail(path + ".type", "must be \"tag\"");
    Fields fs(f, path, {"begin", "content", "end"}, "tag");
    TagParts t;
    t.path = path;
    const JsonValue& begin = fs.Require("begin");
    if (begin.is_object()) {
      t.begin_token = TokenFormatId(begin, fs.At("begin"));
    } else {
      t.begin = fs.String("begin");
    }
    t.content = &fs.Require("content");
    const JsonValue& end = fs.Require("end");
    if (end.is_string()) {
      t.ends.push_back(end.as_string());
    } else if (end.is_object()) {
      t.end_token = TokenFormatId(end, fs.At("end"));
      t.ends.push_back(VirtualTokenBytes(t.end_token));
    } else if (end.is_array()) {
      if (end.items().empty()) Fail(fs.At("end"), "the list is empty: list at least one end string");
      for (size_t i = 0; i < end.items().size(); ++i) {
        if (!end.items()[i].is_string()) Fail(Index(fs.At("end"), i), "must be a string");
        t.ends.push_back(end.items()[i].as_string());
      }
    } else {
      fs.FailField("end", kWrongType, "must be a string or a list of strings");
    }
    return t;
  }

  ExprId BeginExpr(const TagParts& t) { return t.begin_token >= 0 ? TokenExpr(t.begin_token) : Literal(t.begin); }

  // content + end (the begin is the caller's: a trigger may have consumed part of it). The
  // token-level formats inside leave out the tag's end token (end_tokens_), as xgrammar.
  ExprId TagBody(const TagParts& t) {
    CheckEndBoundsContent(t);
    bool has_empty_end = std::find(t.ends.begin(), t.ends.end(), "") != t.ends.end();
    bool consumed = false;
    std::vector<int32_t> outer_end_tokens = std::move(end_tokens_);
    end_tokens_ = t.end_token >= 0 ? std::vector<int32_t>{t.end_token} : std::vector<int32_t>{};
    ExprId content = Lower(*t.content, t.path + ".content", has_empty_end ? kNoEnds : t.ends, &consumed);
    end_tokens_ = std::move(outer_end_tokens);
    if (consumed) return content;
    return g_.AddSequence({content, t.end_token >= 0 ? TokenExpr(t.end_token) : EndChoice(t.ends)});
  }

  // As xgrammar's analyzer: content that can run on without bound (free text, dispatches,
  // repetitions) needs a non-empty end string to stop it, unless excludes bound the text.
  void CheckEndBoundsContent(const TagParts& t) {
    if (t.end_token >= 0 || std::any_of(t.ends.begin(), t.ends.end(), [](const std::string& e) { return !e.empty(); }))
      return;
    if (RunsUnbounded(*t.content) && !HasExcludes(*t.content)) {
      Fail(t.path + ".end", "When the content is unlimited, at least one end string must be non-empty");
    }
  }

  static std::string FormatType(const JsonValue& f) {
    const JsonValue* type = f.is_object() ? f.Find("type") : nullptr;
    return type != nullptr && type->is_string() ? type->as_string() : "";
  }

  // (Past the nesting bound it answers false: lowering the content refuses it.)
  static bool RunsUnbounded(const JsonValue& f, int depth = 0) {
    if (depth > kMaxFormatNestingDepth) return false;
    static const std::set<std::string> kUnbounded = {"any_text",
                                                     "triggered_tags",
                                                     "token_triggered_tags",
                                                     "dispatch",
                                                     "token_dispatch",
                                                     "any_tokens",
                                                     "tags_with_separator",
                                                     "star",
                                                     "plus"};
    const std::string t = FormatType(f);
    if (kUnbounded.count(t)) return true;
    if (t == "sequence" || t == "or") {
      const JsonValue* items = f.Find("elements");
      if (items == nullptr || !items->is_array()) return false;
      return std::any_of(items->items().begin(), items->items().end(),
                         [&](const JsonValue& e) { return RunsUnbounded(e, depth + 1) && !HasExcludes(e); });
    }
    const JsonValue* content = f.is_object() ? f.Find("content") : nullptr;
    if (t == "optional") return content != nullptr && RunsUnbounded(*content, depth + 1);
    if (t == "repeat") {
      const JsonValue* max = f.Find("max");
      const double hi = max != nullptr && max->is_number() ? max->as_number() : 0;
      return hi == -1 || (hi != 0 && content != nullptr && RunsUnbounded(*content, depth + 1));
    }
    return false;
  }

  static bool HasExcludes(const JsonValue& f) {
    const std::string t = FormatType(f);
    const char* field = t == "any_text" || t == "triggered_tags" || t == "dispatch"                 ? "excludes"
                        : t == "token_triggered_tags" || t == "token_dispatch" || t == "any_tokens" ? "exclude_tokens"
                                                                                                    : nullptr;
    const JsonValue* list = field != nullptr ? f.Find(field) : nullptr;
    return list != nullptr && list->is_array() && !list->items().empty();
  }

  ExprId LowerTag(const JsonValue& f, const std::string& path) {
    TagParts t = ReadTag(f, path);
    return g_.AddSequence({BeginExpr(t), TagBody(t)});
  }

  // Tags grouped by the trigger that starts their begin; the continuation after a trigger
  // is a rule choosing among its tags.
  // match[i]: the trigger of tag i (TriggerIndices).
  std::vector<ExprId> TriggerContinuations(const std::vector<std::string>& triggers, const std::vector<TagParts>& tags,
                                           const std::vector<int>& match, bool append_ends,
                                           const std::vector<std::string>& ends) {
    std::vector<std::vector<ExprId>> alts(triggers.size());
    for (size_t i = 0; i < tags.size(); ++i) {
      ExprId body = g_.AddSequence({Literal(tags[i].begin.substr(triggers[match[i]].size())), TagBody(tags[i])});
      if (append_ends) body = g_.AddSequence({body, EndChoice(ends)});
      alts[match[i]].push_back(body);
    }
    std::vector<ExprId> out;
    for (size_t j = 0; j < triggers.size(); ++j) {
      RuleId r = g_.DeclareRule("tags_after_trigger_" + std::to_string(++continuations_));
      g_.SetRuleBody(r, alts[j].size() == 1 ? alts[j][0] : g_.AddChoice(alts[j]));
      out.push_back(g_.AddRuleRef(r));
    }
    return out;
  }

  ExprId LowerTriggeredTags(const JsonValue& f, const std::string& path, const std::vector<std::string>& ends,
                            bool* consumed_end) {
    Fields fs(f, path, {"triggers", "tags", "at_least_one", "stop_after_first", "excludes"});
    fs.Require("triggers");
    std::vector<std::string> triggers = fs.Strings("triggers");
    if (triggers.empty()) fs.FailField("triggers", kEmpty, "must list at least one trigger");
    TagDispatchSpec spec;
    spec.excludes = fs.Strings("excludes");
    const auto& tag_items = fs.List("tags", /*allow_empty=*/false);
    std::vector<TagParts> tags;
    for (size_t i = 0; i < tag_items.size(); ++i) {
      tags.push_back(ReadTag(tag_items[i], Index(fs.At("tags"), i)));
      if (tags.back().begin_token >= 0) {
        Fail(tags.back().path + ".begin",
             "tags in triggered_tags need a string begin (token_triggered_tags takes token begins)");
      }
    }
    return LowerTriggered(fs, std::move(triggers), std::move(tags), std::move(spec), ends, consumed_end);
  }

  // Free text dispatching on triggers to their tags. With at_least_one (as in xgrammar) the
  // output starts with a tag; with stop_after_first it ends after one tag.
  ExprId LowerTriggered(const Fields& fs, std::vector<std::string> triggers, std::vector<TagParts> tags,
                        TagDispatchSpec spec, const std::vector<std::string>& ends, bool* consumed_end) {
    const bool at_least_one = fs.Bool("at_least_one", false);
    spec.loop = !fs.Bool("stop_after_first", false);
    spec.triggers = triggers;
    CheckExcludesSpareTriggers(fs, spec);
    const std::vector<int> match = TriggerIndices(triggers, tags, fs.path());
    if (at_least_one) {
      // The first tag, whole; then (unless one is all) the usual dispatch.
      std::vector<ExprId> first;
      for (const TagParts& t : tags) first.push_back(g_.AddSequence({Literal(t.begin), TagBody(t)}));
      RuleId r = g_.DeclareRule("first_tag_" + std::to_string(++continuations_));
      g_.SetRuleBody(r, first.size() == 1 ? first[0] : g_.AddChoice(first));
      if (!spec.loop) return g_.AddRuleRef(r);
      SetEnds(&spec, ends, consumed_end);
      std::vector<ExprId> children = TriggerContinuations(triggers, tags, match, false, ends);
      return g_.AddSequence({g_.AddRuleRef(r), DispatchRule(std::move(spec), std::move(children))});
    }
    SetEnds(&spec, ends, consumed_end);
    std::vector<ExprId> children = TriggerContinuations(triggers, tags, match, !spec.loop && !ends.empty(), ends);
    return DispatchRule(std::move(spec), std::move(children));
  }

  // Every tag starts with exactly one trigger (returned per tag), and every trigger starts
  // some tag.
  std::vector<int> TriggerIndices(const std::vector<std::string>& triggers, const std::vector<TagParts>& tags,
                                  const std::string& path) {
    std::vector<int> out;
    std::vector<bool> used(triggers.size(), false);
    for (const TagParts& t : tags) {
      int match = -1;
      for (size_t j = 0; j < triggers.size(); ++j) {
        if (t.begin.compare(0, triggers[j].size(), triggers[j]) == 0) {
          if (match >= 0) {
            Fail(t.path + ".begin", "matches two triggers ('" + Show(triggers[match]) + "' and '" + Show(triggers[j]) +
                                        "'); each tag must start with exactly one trigger");
          }
          match = static_cast<int>(j);
        }
      }
      if (match < 0) Fail(t.path + ".begin", "'" + Show(t.begin) + "' does not start with any trigger");
      used[match] = true;
      out.push_back(match);
    }
    for (size_t j = 0; j < triggers.size(); ++j) {
      if (!used[j])
        Fail(Index(path + ".triggers", j), "trigger '" + Show(triggers[j]) + "' is not a prefix of any tag's begin");
    }
    return out;
  }

  // dispatch: free text with string patterns, each followed by its format; `excludes` kept out.
  ExprId LowerDispatch(const JsonValue& f, const std::string& path, const std::vector<std::string>& ends,
                       bool* consumed_end) {
    Fields fs(f, path, {"rules", "loop", "excludes"});
    TagDispatchSpec spec;
    spec.loop = fs.Bool("loop", true);
    spec.excludes = fs.Strings("excludes");
    const auto& rules = fs.List("rules", /*allow_empty=*/false);
    std::vector<ExprId> children;
    for (size_t i = 0; i < rules.size(); ++i) {
      std::string p = Index(fs.At("rules"), i);
      if (!rules[i].is_array() || rules[i].items().size() != 2 || !rules[i].items()[0].is_string()) {
        Fail(p, "must be a [pattern, format] pair");
      }
      const std::string& pattern = rules[i].items()[0].as_string();
      if (pattern.empty()) Fail(p + "[0]", "an empty pattern cannot be matched in text");
      spec.triggers.push_back(pattern);
      ExprId child = Lower(rules[i].items()[1], p + "[1]", kNoEnds, &ignored_);
      if (!spec.loop && !ends.empty()) child = g_.AddSequence({child, EndChoice(ends)});
      children.push_back(child);
    }
    CheckExcludesSpareTriggers(fs, spec);
    SetEnds(&spec, ends, consumed_end);
    return DispatchRule(std::move(spec), std::move(children));
  }

  // Excludes take precedence over triggers in the free text (a trigger holding an excluded
  // string never fires), so an exclude that starts a trigger would leave it dead: refused, as
  // the EBNF TagDispatch refuses it.
  static void CheckExcludesSpareTriggers(const Fields& fs, const TagDispatchSpec& spec) {
    for (const std::string& exclude : spec.excludes) {
      for (const std::string& trigger : spec.triggers) {
        if (trigger.compare(0, exclude.size(), exclude) == 0) {
          Fail(fs.At("excludes"), "Exclude string must not be a prefix of trigger string: " + Show(exclude) +
                                      " (the trigger '" + Show(trigger) + "' would never fire)");
        }
      }
    }
  }

  // Each dispatch gets a rule of its own, so its automaton (text states x pattern prefixes)
  // stays one unit in the mask cache.
  ExprId DispatchRule(TagDispatchSpec spec, std::vector<ExprId> children) {
    RuleId r = g_.DeclareRule("dispatch_" + std::to_string(++dispatches_));
    g_.SetRuleBody(r, g_.AddTagDispatch(std::move(spec), std::move(children)));
    return g_.AddRuleRef(r);
  }

  ExprId LowerTagsWithSeparator(const JsonValue& f, const std::string& path) {
    Fields fs(f, path, {"tags", "separator", "at_least_one", "stop_after_first"});
    const auto& tag_items = fs.List("tags", /*allow_empty=*/false);
    std::vector<ExprId> alts;
    for (size_t i = 0; i < tag_items.size(); ++i) {
      TagParts t = ReadTag(tag_items[i], Index(fs.At("tags"), i));
      alts.push_back(g_.AddSequence({BeginExpr(t), TagBody(t)}));
    }
    RuleId one = g_.DeclareRule("tag_choice_" + std::to_string(++continuations_));
    g_.SetRuleBody(one, alts.size() == 1 ? alts[0] : g_.AddChoice(alts));
    ExprId tag = g_.AddRuleRef(one);
    bool at_least_one = fs.Bool("at_least_one", false);
    if (fs.Bool("stop_after_first", false)) return at_least_one ? tag : g_.AddRepeat(tag, 0, 1);
    ExprId more = g_.AddRepeat(g_.AddSequence({Literal(fs.String("separator")), g_.AddRuleRef(one)}), 0, kUnbounded);
    ExprId list = g_.AddSequence({tag, more});
    return at_least_one ? list : g_.AddRepeat(list, 0, 1);
  }

  // Token-level formats (below): tokens matched by id.
  ExprId TokenExpr(int32_t id) { return g_.AddByteDfa(TokenSetDfa({id}, false)); }
  ExprId LowerExcludeToken(const JsonValue& f, const std::string& path);
  ExprId LowerAnyTokens(const JsonValue& f, const std::string& path);
  ExprId LowerTokenTriggeredTags(const JsonValue& f, const std::string& path);
  ExprId LowerTokenDispatch(const JsonValue& f, const std::string& path);
  int32_t ResolveToken(const JsonValue& v, const std::string& path);
  int32_t MatchedToken(const JsonValue& v, const std::string& path);
  int32_t TokenFormatId(const JsonValue& f, const std::string& path);
  std::vector<int32_t> TokenIds(const Fields& fs, const std::string& key);
  std::vector<int32_t> ExcludedTokens(const Fields& fs);
  RuleId NamedRule(const std::string& name, ExprId body);
  // Free text (any_text) under spec's excludes and max_chars, stopping at `ends`.
  ExprId AnyText(TagDispatchSpec spec, const std::vector<std::string>& ends, bool* consumed_end);

  const StructuralTagOptions& options_;
  Grammar g_;
  std::vector<std::string> warnings_;
  bool ignored_ = false;
  int imports_ = 0;
  int format_depth_ = 0;  // Lower's nesting, against kMaxFormatNestingDepth
  int continuations_ = 0;
  int dispatches_ = 0;
  int token_rules_ = 0;
  std::vector<int32_t> end_tokens_;  // the end token of the innermost enclosing tag (if a token)
  const std::vector<std::string> kNoEnds;
};

// Token-level formats, as xgrammar 0.2.9 lowers them: every token is matched by id (its
// virtual string, see VirtualTokenBytes and grammar/token_set.h), never by its text, so a
// normal token's text written by other tokens does not count. Ids need no tokenizer (the
// compiler checks them against the vocabulary); token strings do.
int32_t Lowering::ResolveToken(const JsonValue& v, const std::string& path) {
  const TokenizerInfo* tok = options_.tokenizer;
  if (v.is_number() && v.is_integer()) {
    const double d = v.as_number();
    if (d < 0) Fail(path, "token id " + v.number_literal() + " is negative");
    if (tok && d >= tok->num_tokens()) Fail(path, "token id " + v.number_literal() + " is outside the vocabulary");
    if (d > kMaxVirtualTokenId) Fail(path, "token id " + v.number_literal() + " is beyond every vocabulary");
    return static_cast<int32_t>(d);
  }
  if (v.is_number()) Fail(path, "a token id must be an integer, found " + v.number_literal());
  if (!v.is_string()) Fail(path, "a token is an id or a token string");
  if (!tok) {
    Fail(path,
         "token strings need the tokenizer: use GrammarCompiler.compile_structural_tag, pass tokenizer_info, or "
         "give the token id");
  }
  const int32_t id = tok->FindToken(v.as_string());
  if (id < 0) Fail(path, "unknown token string '" + v.as_string() + "'");
  return id;
}

// A token the output must contain: a stop token ends generation instead, so it is refused.
int32_t Lowering::MatchedToken(const JsonValue& v, const std::string& path) {
  const int32_t id = ResolveToken(v, path);
  if (options_.tokenizer && options_.tokenizer->is_stop(id)) {
    Fail(path,
         "token " + std::to_string(id) + " is a stop token; it ends generation and cannot appear inside a structure");
  }
  return id;
}

// {"type": "token", "token": id or string}.
int32_t Lowering::TokenFormatId(const JsonValue& f, const std::string& path) {
  if (!f.is_object()) Fail(path, "a token format must be a JSON object");
  const JsonValue* type = f.Find("type");
  if (!type || !type->is_string() || type->as_string() != "token") Fail(path + ".type", "must be \"token\"");
  Fields fs(f, path, {"token"});
  return MatchedToken(fs.Require("token"), fs.At("token"));
}

// A list of token ids or strings (absent: empty).
std::vector<int32_t> Lowering::TokenIds(const Fields& fs, const std::string& key) {
  std::vector<int32_t> ids;
  const JsonValue* list = fs.Get(key);
  if (!list || list->is_null()) return ids;
  if (!list->is_array()) Fail(fs.At(key), "must be a list of token ids or strings");
  for (size_t i = 0; i < list->items().size(); ++i) ids.push_back(ResolveToken(list->items()[i], Index(fs.At(key), i)));
  return ids;
}

// exclude_tokens and the enclosing tag's end token: what a free token may not be.
std::vector<int32_t> Lowering::ExcludedTokens(const Fields& fs) {
  std::vector<int32_t> excluded = TokenIds(fs, "exclude_tokens");
  excluded.insert(excluded.end(), end_tokens_.begin(), end_tokens_.end());
  return excluded;
}

RuleId Lowering::NamedRule(const std::string& name, ExprId body) {
  RuleId r = g_.DeclareRule(name + "_" + std::to_string(++token_rules_));
  g_.SetRuleBody(r, body);
  return r;
}

// One token, not in exclude_tokens nor the enclosing tag's end token.
ExprId Lowering::LowerExcludeToken(const JsonValue& f, const std::string& path) {
  Fields fs(f, path, {"exclude_tokens"});
  std::vector<int32_t> excluded = ExcludedTokens(fs);
  return g_.AddByteDfa(TokenSetDfa(std::move(excluded), true));
}

ExprId Lowering::AnyText(TagDispatchSpec spec, const std::vector<std::string>& ends, bool* consumed_end) {
  SetEnds(&spec, ends, consumed_end);
  if (spec.excludes.empty() && spec.ends.empty()) {
    ExprId any_char = g_.AddCharClass({}, /*negated=*/true);
    return g_.AddRepeat(any_char, 0, spec.max_chars < 0 ? kUnbounded : spec.max_chars);
  }
  return DispatchRule(std::move(spec), {});
}

// Up to max_tokens tokens (unbounded when absent), none in exclude_tokens nor the enclosing tag's
// end token. Each token is one step of the repetition, so the budget is exact.
ExprId Lowering::LowerAnyTokens(const JsonValue& f, const std::string& path) {
  Fields fs(f, path, {"exclude_tokens", "max_tokens"});
  std::vector<int32_t> excluded = ExcludedTokens(fs);
  const int64_t max_tokens = Budget(fs, "max_tokens");
  if (max_tokens == 0) return g_.AddEmpty();
  const ExprId token = g_.AddByteDfa(TokenSetDfa(std::move(excluded), true));
  return g_.AddRuleRef(NamedRule("any_tokens", g_.AddRepeat(token, 0, max_tokens < 0 ? kUnbounded : max_tokens)));
}

// Free tokens (any but the triggers, exclude_tokens and the enclosing tag's end token); a
// trigger token starts one of its tags (whose begin is that token), then free tokens again
// (unless stop_after_first). With at_least_one the output starts with a tag.
ExprId Lowering::LowerTokenTriggeredTags(const JsonValue& f, const std::string& path) {
  Fields fs(f, path, {"trigger_tokens", "tags", "exclude_tokens", "at_least_one", "stop_after_first"});
  const auto& trigger_items = fs.List("trigger_tokens", /*allow_empty=*/false);
  std::vector<int32_t> triggers;
  for (size_t i = 0; i < trigger_items.size(); ++i) {
    triggers.push_back(MatchedToken(trigger_items[i], Index(fs.At("trigger_tokens"), i)));
  }
  std::vector<int32_t> excluded = ExcludedTokens(fs);
  for (size_t j = 0; j < triggers.size(); ++j) {
    if (std::find(excluded.begin(), excluded.end(), triggers[j]) != excluded.end()) {
      Fail(Index(fs.At("trigger_tokens"), j), "trigger token " + std::to_string(triggers[j]) +
                                                  " is also excluded (exclude_tokens or the tag's end token)");
    }
  }
  const auto& tag_items = fs.List("tags", /*allow_empty=*/false);
  std::vector<std::vector<ExprId>> groups(triggers.size());
  std::vector<ExprId> whole_tags;
  for (size_t i = 0; i < tag_items.size(); ++i) {
    const TagParts t = ReadTag(tag_items[i], Index(fs.At("tags"), i));
    if (t.begin_token < 0) {
      Fail(t.path + ".begin", "tags in token_triggered_tags need a token format begin ({\"type\": \"token\", ...})");
    }
    int match = -1;
    for (size_t j = 0; j < triggers.size(); ++j) {
      if (triggers[j] != t.begin_token) continue;
      if (match >= 0) Fail(t.path + ".begin", "matches two triggers; list each trigger token once");
      match = static_cast<int>(j);
    }
    if (match < 0) Fail(t.path + ".begin", "token " + std::to_string(t.begin_token) + " is not a trigger token");
    const RuleId body = NamedRule("token_tag_body", TagBody(t));  // used by the first tag and the group
    groups[match].push_back(g_.AddRuleRef(body));
    whole_tags.push_back(g_.AddSequence({TokenExpr(t.begin_token), g_.AddRuleRef(body)}));
  }
  const bool at_least_one = fs.Bool("at_least_one", false);
  const bool loop = !fs.Bool("stop_after_first", false);
  const ExprId whole_tag = whole_tags.size() == 1 ? whole_tags[0] : g_.AddChoice(whole_tags);
  if (at_least_one && !loop) return whole_tag;
  std::vector<std::pair<int32_t, ExprId>> dispatches;
  for (size_t j = 0; j < triggers.size(); ++j) {
    if (groups[j].empty()) Fail(Index(fs.At("trigger_tokens"), j), "trigger token starts no tag");
    const ExprId group = groups[j].size() == 1 ? groups[j][0] : g_.AddChoice(groups[j]);
    dispatches.emplace_back(triggers[j], g_.AddRuleRef(NamedRule("token_triggered_tags_group", group)));
  }
  const ExprId dispatch =
      g_.AddRuleRef(NamedRule("token_triggered_tags", AddTokenTagDispatch(&g_, dispatches, std::move(excluded), loop)));
  return at_least_one ? g_.AddSequence({g_.AddRuleRef(NamedRule("token_triggered_tags_first", whole_tag)), dispatch})
                      : dispatch;
}

// Free tokens (any but the rules' tokens and exclude_tokens); a rule's token is followed by its
// format, then free tokens again (loop) or the end.
ExprId Lowering::LowerTokenDispatch(const JsonValue& f, const std::string& path) {
  Fields fs(f, path, {"rules", "loop", "exclude_tokens"});
  const bool loop = fs.Bool("loop", true);
  const std::vector<int32_t> excluded = TokenIds(fs, "exclude_tokens");
  const auto& rules = fs.List("rules", /*allow_empty=*/false);
  std::vector<std::pair<int32_t, ExprId>> dispatches;
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string p = Index(fs.At("rules"), i);
    if (!rules[i].is_array() || rules[i].items().size() != 2) Fail(p, "must be a [token, format] pair");
    const int32_t trigger = MatchedToken(rules[i].items()[0], p + "[0]");
    if (std::find(excluded.begin(), excluded.end(), trigger) != excluded.end()) {
      Fail(p + "[0]", "token " + std::to_string(trigger) + " is also in exclude_tokens");
    }
    dispatches.emplace_back(trigger, Lower(rules[i].items()[1], p + "[1]", kNoEnds, &ignored_));
  }
  return g_.AddRuleRef(NamedRule("token_dispatch", AddTokenTagDispatch(&g_, dispatches, excluded, loop)));
}

}  // namespace

StructuralTagResult StructuralTagToGrammar(const JsonValue& tag, const StructuralTagOptions& options) {
  return WithDeepStack([&] { return Lowering(options).Run(tag); });
}

StructuralTagResult StructuralTagToGrammar(const std::string& tag_json, const StructuralTagOptions& options) {
  // The document is parsed and freed (both recursive) where the lowering runs.
  return WithDeepStack([&] { return StructuralTagToGrammar(ParseJson(tag_json), options); });
}

}  // namespace xg2
