// JSON Schema -> grammar IR. Subschemas are referenced by (value, JSON pointer); a conjunction
// of subschemas (allOf, $ref with siblings, a property declared twice) is merged into one
// constraint set before lowering. Every object/array/conjunction gets its own rule, keyed by
// the pointers of its parts and (with indent) the nesting depth, so $ref recursion and reused
// subschemas share rules.
#include "frontends/json_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema_internal.h"
#include "frontends/regex.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2 {
namespace {

// Bounds the automata built for one pattern (its JSON-content DFA and the product with a
// length counter); larger ones are reported as unsupported rather than compiled slowly.
constexpr int64_t kMaxPatternDfaStates = 20000;

using namespace jsonschema;

std::string Show(const std::string& ptr) { return ptr.empty() ? "(root)" : ptr; }

// Thrown out of a conversion when a oneOf rewritten with negations needs something
// unsupported; JsonSchemaToGrammar converts again without that rewrite.
struct NegationFailed {
  std::string one_of_at;
};

class Converter {
 public:
  Converter(const JsonValue& root, const JsonSchemaOptions& o, std::set<std::string> no_negation = {})
      : root_(root), o_(o), no_negation_(std::move(no_negation)) {
    // Drafts 3 to 7: keywords beside "$ref" are ignored.
    if (const JsonValue* d = root.is_object() ? root.Find("$schema") : nullptr) {
      if (d->is_string()) {
        for (const char* old : {"draft-03", "draft-04", "draft-05", "draft-06", "draft-07"}) {
          if (d->as_string().find(old) != std::string::npos) ref_overrides_siblings_ = true;
        }
        // if/then/else came with draft 7: before it they are unknown words that assert nothing.
        for (const char* old : {"draft-03", "draft-04", "draft-05", "draft-06"}) {
          if (d->as_string().find(old) != std::string::npos) conditions_ignored_ = true;
        }
      }
    }
    if (o_.any_whitespace) {
      item_sep_ = Trim(o_.item_separator.empty() ? "," : o_.item_separator);
      key_sep_ = Trim(o_.key_separator.empty() ? ":" : o_.key_separator);
    } else {
      item_sep_ = !o_.item_separator.empty() ? o_.item_separator : (o_.indent >= 0 ? "," : ", ");
      key_sep_ = !o_.key_separator.empty() ? o_.key_separator : ": ";
    }
  }

  JsonSchemaResult Run() {
    RuleId root = g_.DeclareRule("root");
    g_.set_root(root);
    ExprId body = g_.AddRuleRef(ConjRule({Ref{&root_, ""}}, 0));
    g_.SetRuleBody(root, body);
    JsonSchemaResult r;
    r.grammar = std::move(g_);
    r.warnings = warnings_;
    return r;
  }

 private:
  static std::string Trim(const std::string& s) {
    size_t a = s.find_first_not_of(" \t\n\r"), b = s.find_last_not_of(" \t\n\r");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
  }

  // Declares a rule named base, base_2, base_3, ... Grammar::DeclareRule alone would probe every
  // taken suffix, which is quadratic for schemas with thousands of objects.
  RuleId NewRule(const std::string& base) {
    int64_t& n = rule_name_count_[base];
    ++n;
    return g_.DeclareRule(n == 1 ? base : base + "_" + std::to_string(n));
  }

  // Any JSON string content (no quotes): one rule shared by the whole grammar.
  ExprId StringRest() {
    if (string_rest_ < 0) {
      string_rest_ = NewRule("json_string_rest");
      g_.SetRuleBody(string_rest_, g_.AddRepeat(JsonCharExpr(&g_), 0, kUnbounded));
    }
    return g_.AddRuleRef(string_rest_);
  }

  [[noreturn]] void Invalid(const std::string& ptr, const std::string& msg) {
    throw Error(ErrorKind::kGrammarSemantic, "invalid schema at " + Show(ptr) + ": " + msg);
  }

  void Unsupported(const std::string& kw, const std::string& ptr, const std::string& detail = "") {
    if (!negation_scope_.empty()) throw NegationFailed{negation_scope_.front()};
    std::string msg = "unsupported keyword '" + kw + "' at " + Show(ptr) + (detail.empty() ? "" : ": " + detail);
    if (!o_.on_unsupported_warn) throw Error(ErrorKind::kGrammarSemantic, msg);
    if (warned_.insert(msg).second) warnings_.push_back(msg);
  }

  // ------------------------------------------------------------------ formatting
  bool Indented() const { return !o_.any_whitespace && o_.indent >= 0; }
  int Depth(int d) const { return Indented() ? std::min(d, 24) : 0; }
  // A JSON string of min_len..max_len characters; the character expression is built once
  // per grammar (it is the same node everywhere, nodes being hash-consed).
  ExprId AnyString(int64_t min_len, int64_t max_len) {
    if (json_char_ == kNoExpr) json_char_ = JsonCharExpr(&g_);
    return JsonStringExpr(&g_, min_len, max_len, json_char_);
  }
  ExprId Ws() {
    // One node (nodes are hash-consed): built once, not per separator.
    if (ws_ == kNoExpr) {
      ws_ = g_.AddRepeat(Cls(&g_, {{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}), 0, o_.max_whitespace_cnt >= 0 ? o_.max_whitespace_cnt : kUnbounded);
    }
    return ws_;
  }
  std::string Newline(int depth) const { return "\n" + std::string(static_cast<size_t>(o_.indent) * depth, ' '); }
  // "{" / "[" followed by what precedes the first member at this depth.
  ExprId Open(char c, int depth) {
    if (o_.any_whitespace) return g_.AddSequence({Lit(&g_, std::string(1, c)), Ws()});
    if (Indented()) return Lit(&g_, std::string(1, c) + Newline(depth + 1));
    return Lit(&g_, std::string(1, c));
  }
  ExprId Close(char c, int depth) {
    if (o_.any_whitespace) return g_.AddSequence({Ws(), Lit(&g_, std::string(1, c))});
    if (Indented()) return Lit(&g_, Newline(depth) + c);
    return Lit(&g_, std::string(1, c));
  }
  ExprId Empty(char open, char close) {
    if (o_.any_whitespace) return g_.AddSequence({Lit(&g_, std::string(1, open)), Ws(), Lit(&g_, std::string(1, close))});
    return Lit(&g_, std::string(1, open) + close);
  }
  ExprId ItemSep(int depth) {
    if (o_.any_whitespace) {
      if (item_sep_expr_ == kNoExpr) item_sep_expr_ = g_.AddSequence({Ws(), Lit(&g_, item_sep_), Ws()});
      return item_sep_expr_;
    }
    if (Indented()) return Lit(&g_, item_sep_ + Newline(depth + 1));
    return Lit(&g_, item_sep_);
  }
  ExprId KeySep() {
    if (o_.any_whitespace) {
      if (key_sep_expr_ == kNoExpr) key_sep_expr_ = g_.AddSequence({Ws(), Lit(&g_, key_sep_), Ws()});
      return key_sep_expr_;
    }
    return Lit(&g_, key_sep_);
  }

  // ------------------------------------------------------------------ $ref
  Ref Resolve(const std::string& ref, const std::string& at) {
    std::string r = ref;
    size_t hash = r.find('#');
    std::string base = hash == std::string::npos ? r : r.substr(0, hash);
    std::string frag = hash == std::string::npos ? "" : r.substr(hash + 1);
    if (!base.empty()) {
      // A reference to the document itself by its $id is fine; anything else is remote.
      const JsonValue* id = root_.Find("$id");
      if (!(id && id->is_string() && (id->as_string() == base || id->as_string() == base + "#"))) {
        Unsupported("$ref", at, "remote reference '" + ref + "'");
        return Ref{nullptr, ""};
      }
    }
    // percent-decoding
    std::string dec;
    for (size_t i = 0; i < frag.size(); ++i) {
      if (frag[i] == '%' && i + 2 < frag.size() + 0 && i + 2 <= frag.size() - 1 + 1) {
        dec += static_cast<char>(std::strtol(frag.substr(i + 1, 2).c_str(), nullptr, 16));
        i += 2;
      } else {
        dec += frag[i];
      }
    }
    if (!dec.empty() && dec[0] != '/') {
      const JsonValue* found = FindAnchor(root_, dec);
      if (!found) Invalid(at, "$ref '" + ref + "' names no $anchor");
      return Ref{found, "#" + dec};
    }
    const JsonValue* cur = &root_;
    std::string ptr;
    size_t pos = 0;
    while (pos < dec.size()) {
      size_t next = dec.find('/', pos + 1);
      std::string tok = dec.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      pos = next == std::string::npos ? dec.size() : next;
      std::string key;
      for (size_t i = 0; i < tok.size(); ++i) {
        if (tok[i] == '~' && i + 1 < tok.size()) {
          key += tok[i + 1] == '1' ? '/' : '~';
          ++i;
        } else {
          key += tok[i];
        }
      }
      ptr = JsonPointerChild(ptr, key);
      if (cur->is_object()) {
        cur = cur->Find(key);
      } else if (cur->is_array()) {
        char* end = nullptr;
        long idx = std::strtol(key.c_str(), &end, 10);
        cur = (!key.empty() && *end == 0 && idx >= 0 && static_cast<size_t>(idx) < cur->items().size()) ? &cur->items()[idx] : nullptr;
      } else {
        cur = nullptr;
      }
      if (!cur) Invalid(at, "$ref '" + ref + "' does not resolve");
    }
    return Ref{cur, ptr};
  }

  const JsonValue* FindAnchor(const JsonValue& v, const std::string& name) {
    if (v.is_object()) {
      const JsonValue* a = v.Find("$anchor");
      if (a && a->is_string() && a->as_string() == name) return &v;
      const JsonValue* id = v.Find("$id");
      if (id && id->is_string() && id->as_string() == "#" + name) return &v;
      for (const auto& m : v.members()) {
        if (m.first == "enum" || m.first == "const") continue;
        if (const JsonValue* f = FindAnchor(m.second, name)) return f;
      }
    } else if (v.is_array()) {
      for (const auto& it : v.items()) {
        if (const JsonValue* f = FindAnchor(it, name)) return f;
      }
    }
    return nullptr;
  }

  // ------------------------------------------------------------------ merging
  int64_t NonNegInt(const JsonValue& v, const std::string& ptr, const std::string& kw) {
    if (!v.is_number() || !v.is_integer() || v.as_number() < 0) Invalid(ptr, "'" + kw + "' must be a non-negative integer");
    double d = v.as_number();
    return d > 4e18 ? int64_t(4e18) : static_cast<int64_t>(d);
  }
  static std::vector<Ref> One(const JsonValue* v, std::string ptr) { return {Ref{v, std::move(ptr)}}; }

  void MergeInto(Merged* m, const Ref& r, int guard) {
    if (guard > 64) Invalid(r.ptr, "$ref chain too deep or cyclic");
    if (r.v == nullptr) return;
    const JsonValue& s = *r.v;
    if (s.is_bool()) {
      if (!s.as_bool()) m->is_false = true;
      return;
    }
    if (!s.is_object()) Invalid(r.ptr, "a schema must be an object or a boolean");
    const std::string& P = r.ptr;
    bool draft4_excl_min = false, draft4_excl_max = false;
    if (const JsonValue* e = s.Find("exclusiveMinimum")) draft4_excl_min = e->is_bool() && e->as_bool();
    if (const JsonValue* e = s.Find("exclusiveMaximum")) draft4_excl_max = e->is_bool() && e->as_bool();
    const JsonValue* items_v = s.Find("items");
    bool items_is_array = items_v && items_v->is_array();
    bool ref_only = ref_overrides_siblings_ && s.Find("$ref") != nullptr;
    for (const auto& kv : s.members()) {
      const std::string& k = kv.first;
      const JsonValue& v = kv.second;
      std::string kp = JsonPointerChild(P, k);
      if (IsAnnotation(k)) continue;
      if (ref_only && k != "$ref") continue;
      if (k == "$ref") {
        if (!v.is_string()) Invalid(kp, "$ref must be a string");
        Ref t = Resolve(v.as_string(), P);
        if (t.v) MergeRef(m, t, guard + 1);
        continue;
      }
      if (k == "allOf" || k == "anyOf" || k == "oneOf") {
        if (!v.is_array() || v.items().empty()) Invalid(kp, "'" + k + "' must be a non-empty array");
        if (k == "allOf") {
          for (size_t i = 0; i < v.items().size(); ++i) MergeInto(m, Ref{&v.items()[i], kp + "/" + std::to_string(i)}, guard + 1);
        } else {
          std::vector<Ref> alts;
          for (size_t i = 0; i < v.items().size(); ++i) alts.push_back(Ref{&v.items()[i], kp + "/" + std::to_string(i)});
          m->any_of.push_back(alts);
          m->any_of_at.push_back(P);
          m->any_of_exclusive.push_back(k == "oneOf");
        }
        continue;
      }
      if (k == "dependentRequired" || k == "dependentSchemas" || k == "dependencies") {
        MergeDependencies(m, v, kp, k);
        continue;
      }
      if (k == "if") {
        if (!conditions_ignored_) MergeCondition(m, s, P);
        continue;
      }
      if (k == "then" || k == "else") continue;  // read with "if"; without one they assert nothing
      if (IsKnownUnsupported(k)) {
        if (k == "unevaluatedProperties" && v.is_bool() && v.as_bool()) continue;
        if (k == "unevaluatedItems" && v.is_bool() && v.as_bool()) continue;
        if ((k == "minContains" && v.is_number() && v.as_number() == 1 && s.Find("maxContains") == nullptr)) continue;
        Unsupported(k, P);
        continue;
      }
      m->constrained = true;
      if (k == "type") {
        uint8_t t = 0;
        if (v.is_string()) {
          t = TypeFromName(v.as_string());
          if (!t) Invalid(kp, "unknown type '" + v.as_string() + "'");
        } else if (v.is_array()) {
          for (const auto& it : v.items()) {
            uint8_t x = it.is_string() ? TypeFromName(it.as_string()) : 0;
            if (!x) Invalid(kp, "unknown type " + it.Dump());
            t |= x;
          }
        } else {
          Invalid(kp, "'type' must be a string or an array");
        }
        m->types &= t;
      } else if (k == "enum" || k == "const") {
        std::vector<JsonValue> vals;
        if (k == "const") {
          vals.push_back(v);
        } else {
          if (!v.is_array()) Invalid(kp, "'enum' must be an array");
          vals = v.items();
        }
        if (!m->has_enum) {
          m->has_enum = true;
          m->enum_values = vals;
        } else {
          std::vector<JsonValue> keep;
          for (const auto& a : m->enum_values) {
            for (const auto& b : vals) {
              if (a == b) {
                keep.push_back(a);
                break;
              }
            }
          }
          m->enum_values = keep;
        }
        if (!m->not_strings.empty()) {
          std::vector<JsonValue> keep;
          for (const auto& a : m->enum_values) {
            if (!a.is_string() || std::find(m->not_strings.begin(), m->not_strings.end(), a.as_string()) == m->not_strings.end()) keep.push_back(a);
          }
          m->enum_values = keep;
        }
      } else if (k == "minLength") {
        m->min_len = std::max(m->min_len, NonNegInt(v, P, k));
      } else if (k == "maxLength") {
        int64_t x = NonNegInt(v, P, k);
        m->max_len = m->max_len < 0 ? x : std::min(m->max_len, x);
      } else if (k == "pattern") {
        if (!v.is_string()) Invalid(kp, "'pattern' must be a string");
        m->patterns.push_back(Ref{&v, P});
      } else if (k == "format") {
        if (v.is_string()) m->formats.push_back(Ref{&v, P});
      } else if (k == "minimum") {
        if (!v.is_number()) Invalid(kp, "'minimum' must be a number");
        Tighten(&m->lo, Bound(v, draft4_excl_min), true);
      } else if (k == "maximum") {
        if (!v.is_number()) Invalid(kp, "'maximum' must be a number");
        Tighten(&m->hi, Bound(v, draft4_excl_max), false);
      } else if (k == "exclusiveMinimum") {
        if (v.is_number()) Tighten(&m->lo, Bound(v, true), true);
      } else if (k == "exclusiveMaximum") {
        if (v.is_number()) Tighten(&m->hi, Bound(v, true), false);
      } else if (k == "multipleOf") {
        if (!v.is_number() || v.as_number() <= 0) Invalid(kp, "'multipleOf' must be a positive number");
        m->multiple_of.push_back(Ref{&v, P});
      } else if (k == "prefixItems" || (k == "items" && items_is_array)) {
        if (!v.is_array()) Invalid(kp, "'" + k + "' must be an array");
        std::vector<std::vector<Ref>> pre;
        for (size_t i = 0; i < v.items().size(); ++i) {
          std::vector<Ref> c = One(&v.items()[i], kp + "/" + std::to_string(i));
          if (i < m->prefix.size()) c.insert(c.begin(), m->prefix[i].begin(), m->prefix[i].end());
          pre.push_back(c);
        }
        for (size_t i = v.items().size(); i < m->prefix.size(); ++i) pre.push_back(m->prefix[i]);
        if (m->has_prefix && m->prefix.size() != v.items().size()) Unsupported(k, P, "prefix lists of different lengths in allOf");
        m->prefix = pre;
        m->has_prefix = true;
      } else if (k == "items" || (k == "additionalItems" && items_is_array)) {
        m->items_set = true;
        m->items.push_back(Ref{&v, kp});
        if (k == "items" && s.Find("prefixItems") == nullptr) m->items_all.push_back(Ref{&v, kp});
      } else if (k == "additionalItems") {
        continue;  // ignored without an array-form "items"
      } else if (k == "minItems") {
        m->min_items = std::max(m->min_items, NonNegInt(v, P, k));
      } else if (k == "maxItems") {
        int64_t x = NonNegInt(v, P, k);
        m->max_items = m->max_items < 0 ? x : std::min(m->max_items, x);
      } else if (k == "contains") {
        m->contains.push_back(Ref{&v, kp});
      } else if (k == "uniqueItems") {
        if (v.is_bool() && v.as_bool() && !m->unique_items) {
          m->unique_items = true;
          m->unique_items_ptr = P;
        }
      } else if (k == "properties") {
        if (!v.is_object()) Invalid(kp, "'properties' must be an object");
        for (const auto& pm : v.members()) {
          Ref pr{&pm.second, JsonPointerChild(kp, pm.first)};
          auto it = std::find_if(m->props.begin(), m->props.end(), [&](const auto& x) { return x.first == pm.first; });
          if (it == m->props.end()) {
            m->props.push_back({pm.first, {pr}});
          } else {
            it->second.push_back(pr);
          }
        }
      } else if (k == "required") {
        if (!v.is_array()) Invalid(kp, "'required' must be an array");
        for (const auto& it : v.items()) {
          if (!it.is_string()) Invalid(kp, "'required' must list strings");
          if (!m->Requires(it.as_string())) m->required.push_back(it.as_string());
        }
      } else if (k == "additionalProperties") {
        m->additional_set = true;
        m->additional.push_back(Ref{&v, kp});
        m->additional_parent.push_back(&s);
      } else if (k == "patternProperties") {
        if (!v.is_object()) Invalid(kp, "'patternProperties' must be an object");
        for (const auto& pm : v.members()) {
          // The pattern text lives in the member's key; keep a pointer to a string we own.
          pattern_keys_.push_back(std::make_unique<JsonValue>(JsonValue::String(pm.first)));
          m->pattern_props.push_back({Ref{pattern_keys_.back().get(), kp}, One(&pm.second, JsonPointerChild(kp, pm.first))});
        }
      } else if (k == "propertyNames") {
        m->property_names.push_back(Ref{&v, kp});
      } else if (k == "minProperties") {
        m->min_props = std::max(m->min_props, NonNegInt(v, P, k));
        m->min_props_ptr = P;
      } else if (k == "maxProperties") {
        int64_t x = NonNegInt(v, P, k);
        m->max_props = m->max_props < 0 ? x : std::min(m->max_props, x);
        m->max_props_ptr = P;
      } else if (k == "not") {
        MergeNot(m, Ref{&v, kp}, P);
      } else {
        m->constrained = m->constrained;  // unknown keywords are ignored (JSON Schema semantics)
      }
    }
  }

  void MergeRef(Merged* m, const Ref& t, int guard) {
    // A target already being merged on this path is a cycle: A and A is A.
    if (std::find(merging_.begin(), merging_.end(), t.v) != merging_.end()) {
      ++cycle_hits_;
      return;
    }
    merging_.push_back(t.v);
    MergeInto(m, t, guard);
    merging_.pop_back();
  }

  // `not` where it reduces to removing types or enum values.
  void MergeNot(Merged* m, const Ref& r, const std::string& at) {
    const JsonValue& s = *r.v;
    if (s.is_bool()) {
      if (s.as_bool()) m->is_false = true;
      return;
    }
    if (!s.is_object()) Invalid(r.ptr, "a schema must be an object or a boolean");
    bool only_type = true, only_enum = true, empty = true, only_required = true, only_pattern = true;
    for (const auto& kv : s.members()) {
      if (IsAnnotation(kv.first)) continue;
      empty = false;
      if (kv.first != "pattern") only_pattern = false;
      if (kv.first != "required") only_required = false;
      if (kv.first != "type") only_type = false;
      if (kv.first != "enum" && kv.first != "const") only_enum = false;
    }
    if (empty) {
      m->is_false = true;
      return;
    }
    if (only_pattern && !(ref_overrides_siblings_ && s.Find("$ref"))) {
      // A string no match of the pattern is found in (non-strings satisfy `pattern`).
      const JsonValue& pv = *s.Find("pattern");
      if (!pv.is_string()) Invalid(r.ptr + "/pattern", "'pattern' must be a string");
      m->constrained = true;
      m->types &= kStr;
      m->not_patterns.push_back(Ref{&pv, r.ptr});
      return;
    }
    if (only_required) {
      // Not having all of the names: expressible as one absent property (objects only).
      const JsonValue& req = *s.Find("required");
      if (!req.is_array()) Invalid(r.ptr + "/required", "'required' must be an array");
      if (req.items().empty()) {
        m->is_false = true;
        return;
      }
      if (req.items().size() == 1 && req.items()[0].is_string()) {
        // Non-objects satisfy `required`, so they fail its negation.
        m->types &= kObj;
        m->absent.push_back({req.items()[0].as_string(), "not", at});
        return;
      }
      if (MergeNegation(m, r, at)) return;
      Unsupported("not", at, "excluding objects that have all of several properties");
      return;
    }
    if (only_type) {
      Merged sub;
      MergeInto(&sub, r, 0);
      uint8_t t = sub.types;
      if (t & kInt && !(t & kNum)) {
        if (m->types & kNum) {
          Unsupported("not", at, "excluding integers from numbers");
          return;
        }
      }
      m->types &= static_cast<uint8_t>(~t);
      if ((t & kNum) && (m->types & kInt)) m->types &= static_cast<uint8_t>(~kInt);
      return;
    }
    if (only_enum) {
      Merged sub;
      MergeInto(&sub, r, 0);
      not_values_.insert(not_values_.end(), sub.enum_values.begin(), sub.enum_values.end());
      if (m->has_enum) {
        std::vector<JsonValue> keep;
        for (const auto& a : m->enum_values) {
          if (std::find(sub.enum_values.begin(), sub.enum_values.end(), a) == sub.enum_values.end()) keep.push_back(a);
        }
        m->enum_values = keep;
        return;
      }
      // Excluding scalar values is expressible only for booleans and null.
      uint8_t remove = 0;
      bool t = false, f = false;
      for (const auto& x : sub.enum_values) {
        if (x.is_null()) remove |= kNull;
        if (x.is_bool()) (x.as_bool() ? t : f) = true;
      }
      bool other = std::any_of(sub.enum_values.begin(), sub.enum_values.end(),
                               [](const JsonValue& x) { return !x.is_null() && !x.is_bool() && !x.is_string(); });
      if (t && f) remove |= kBool;
      if (other || (t != f)) {
        Unsupported("not", at, "excluding specific values");
        return;
      }
      // Strings: excluded from the string language (StringExpr), values kept only by enum.
      for (const auto& x : sub.enum_values) {
        if (x.is_string()) m->not_strings.push_back(x.as_string());
      }
      m->types &= static_cast<uint8_t>(~remove);
      return;
    }
    if (MergeNegation(m, r, at)) return;
    Unsupported("not", at);
  }

  // A schema made here (kept for the converter's lifetime, once per source node so that
  // recursion through it meets the same pointers and the rule cache).
  const JsonValue* Synthesized(const void* source, int which, const std::function<JsonValue()>& make) {
    auto key = std::make_pair(source, which);
    auto it = synth_cache_.find(key);
    if (it != synth_cache_.end()) return it->second;
    synth_.push_back(std::make_unique<JsonValue>(make()));
    synth_cache_[key] = synth_.back().get();
    return synth_.back().get();
  }

  // dependentRequired / dependentSchemas / draft-7 dependencies, one anyOf per property (see
  // DependencyAlternatives).
  void MergeDependencies(Merged* m, const JsonValue& v, const std::string& kp, const std::string& k) {
    if (!v.is_object()) Invalid(kp, "'" + k + "' must be an object");
    m->constrained = true;
    for (const auto& dm : v.members()) {
      const std::string dp = JsonPointerChild(kp, dm.first);
      const JsonValue& dep = dm.second;
      const bool names = dep.is_array();
      if (k == "dependentRequired" && !names) Invalid(dp, "'dependentRequired' values must be arrays of names");
      if (k == "dependentSchemas" && names) Invalid(dp, "'dependentSchemas' values must be schemas");
      if (!names && !dep.is_object() && !dep.is_bool()) Invalid(dp, "a dependency must be an array of names or a schema");
      if (names) {
        for (const auto& n : dep.items()) {
          if (!n.is_string()) Invalid(dp, "a dependency must list property names");
        }
      }
      const JsonValue* alts = Synthesized(&dep, 0, [&]() { return DependencyAlternatives(dm.first, dep); });
      m->any_of.push_back({Ref{&alts->items()[0], dp}, Ref{&alts->items()[1], dp}});
      m->any_of_at.push_back(kp);
      m->any_of_exclusive.push_back(false);
    }
  }

  // if/then/else as an anyOf (see ConditionAlternatives) when the condition has an exact
  // negation.
  void MergeCondition(Merged* m, const JsonValue& s, const std::string& P) {
    const JsonValue* cond = s.Find("if");
    const JsonValue* then_v = s.Find("then");
    const JsonValue* else_v = s.Find("else");
    if (!then_v && !else_v) return;  // a condition alone asserts nothing
    std::optional<JsonValue> negated = Negate(*cond, P + "/if", 0);
    if (!negated) {
      Unsupported("if", P, "a condition whose negation has no exact form");
      return;
    }
    m->constrained = true;
    const JsonValue* alts = Synthesized(&s, 1, [&]() { return ConditionAlternatives(*cond, then_v, else_v, std::move(*negated)); });
    m->any_of.push_back({Ref{&alts->items()[0], P + "/then"}, Ref{&alts->items()[1], P + "/else"}});
    m->any_of_at.push_back(P);
    m->any_of_exclusive.push_back(false);
  }

  // `not S` for other shapes: S rewritten into an equivalent positive schema (De Morgan over
  // combinators and independent keywords, each keyword's complement within the type it applies
  // to), merged in place of the `not`. Leaves the rewrite produces as {"not": ...} are shapes
  // MergeNot handles directly (type, enum/const, one required name). False when some part has
  // no exact positive form.
  bool MergeNegation(Merged* m, const Ref& r, const std::string& at) {
    const JsonValue* pos = nullptr;
    auto it = neg_cache_.find(r.v);
    if (it != neg_cache_.end()) {
      pos = it->second;
    } else {
      std::optional<JsonValue> n = Negate(*r.v, r.ptr, 0);
      if (!n) return false;
      synth_.push_back(std::make_unique<JsonValue>(std::move(*n)));
      pos = synth_.back().get();
      neg_cache_[r.v] = pos;
    }
    if (pos == nullptr) return false;
    if (++neg_depth_ > 32) {
      --neg_depth_;
      Unsupported("not", at, "negations nested too deeply");
      return true;
    }
    MergeInto(m, Ref{pos, r.ptr}, 0);
    --neg_depth_;
    return true;
  }

  std::optional<JsonValue> Negate(const JsonValue& s, const std::string& ptr, int guard) {
    return NegateSchema(s, ptr, ref_overrides_siblings_, [this](const std::string& ref, const std::string& at) {
      Ref t = Resolve(ref, at);
      return std::make_pair(t.v, t.ptr);
    }, guard);
  }

  // ------------------------------------------------------------------ lowering
  std::string Key(const std::vector<Ref>& parts, int depth) {
    std::string k;
    for (const auto& p : parts) k += p.ptr + "\x01" + std::to_string(reinterpret_cast<uintptr_t>(p.v)) + "\x02";
    return k + "@" + std::to_string(Depth(depth));
  }

  static std::string RuleName(const std::vector<Ref>& parts) {
    if (parts.empty() || parts.back().ptr.empty()) return "root_value";
    const std::string& p = parts.back().ptr;
    size_t s = p.rfind('/');
    std::string last = p.substr(s + 1);
    if (!last.empty() && std::isdigit(static_cast<unsigned char>(last[0])) && s != std::string::npos && s > 0) {
      size_t s2 = p.rfind('/', s - 1);
      last = p.substr(s2 + 1, s - s2 - 1) + "_" + last;
    }
    return last.empty() ? "schema" : last;
  }

  RuleId ConjRule(const std::vector<Ref>& parts, int depth) {
    std::string key = Key(parts, depth);
    auto it = rules_.find(key);
    if (it != rules_.end()) return it->second;
    // Rules are lowered depth-first, so a long chain of distinct $refs nests this call; bound
    // it (the native stack is finite) as the JSON parser bounds document nesting. Each level
    // is a few deep frames (about 4x a JSON level; more under sanitizers), hence the quarter.
    const int kMaxRuleNesting = std::max(1, MaxNestingDepth() / 4);
    struct NestingGuard {
      int* n;
      explicit NestingGuard(int* c) : n(c) { ++*n; }
      ~NestingGuard() { --*n; }
    } guard(&rule_nesting_);
    if (rule_nesting_ > kMaxRuleNesting) {
      throw Error(ErrorKind::kLimitExceeded,
                  "schema nests more than " + std::to_string(kMaxRuleNesting) +
                      " subschemas deep (through $ref) at " +
                      (parts.empty() || parts.back().ptr.empty() ? std::string("(root)") : parts.back().ptr) +
                      " (a quarter of max_nesting_depth, see xg2_jax.set_limits)");
    }
    RuleId r = NewRule(RuleName(parts));
    rules_[key] = r;
    std::string saved = cur_ptr_;
    cur_ptr_ = parts.empty() ? "" : parts.back().ptr;
    Merged m;
    const int cycles_before = cycle_hits_;
    for (const auto& p : parts) MergeInto(&m, p, 0);
    // A $ref cycle that adds no constraint of its own (a -> b -> a, {"$ref": "#"}) defines
    // nothing: it must not silently become "any value".
    if (cycle_hits_ > cycles_before && !m.constrained && !m.is_false && m.any_of.empty()) {
      Invalid(parts.empty() ? std::string() : parts.back().ptr,
              "$ref cycle with no base case (the schema refers to itself without constraining)");
    }
    g_.SetRuleBody(r, Lower(m, depth, 0));
    cur_ptr_ = saved;
    return r;
  }

  ExprId Never() { return g_.AddChoice({}); }

  ExprId Lower(const Merged& m, int depth, int expansion) {
    if (m.is_false) return Never();
    if (!m.any_of.empty()) {
      if (expansion > 16) {
        Unsupported("anyOf", m.any_of[0][0].ptr, "nested too deeply");
        return Never();
      }
      Merged base = m;
      std::vector<Ref> group = base.any_of.front();
      bool exclusive = base.any_of_exclusive.front();
      std::string at = base.any_of_at.front();
      base.any_of.erase(base.any_of.begin());
      base.any_of_at.erase(base.any_of_at.begin());
      base.any_of_exclusive.erase(base.any_of_exclusive.begin());
      std::vector<Merged> rewritten;
      if (exclusive) rewritten = CheckOneOf(base, group, at);
      std::vector<ExprId> alts;
      if (!rewritten.empty()) {
        std::optional<NegationScope> scope;
        if (negated_one_of_.count(at)) scope.emplace(this, at);
        for (const auto& c : rewritten) alts.push_back(Lower(c, depth, expansion + 1));
      } else if (!base.constrained && base.any_of.empty()) {
        for (const auto& a : group) alts.push_back(g_.AddRuleRef(ConjRule({a}, depth)));
      } else {
        for (const auto& a : group) {
          // Each alternative is merged with the rest and lowered inline: nested combinators
          // multiply. A budget per conversion keeps that from going exponential.
          if (--expansion_budget_ < 0) {
            const std::string& ptr = group[0].ptr;
            size_t slash = ptr.rfind('/');
            size_t prev = slash == std::string::npos || slash == 0 ? std::string::npos : ptr.rfind('/', slash - 1);
            std::string kw = prev == std::string::npos ? "anyOf" : ptr.substr(prev + 1, slash - prev - 1);
            Unsupported(kw, ptr.substr(0, prev == std::string::npos ? 0 : prev), "too many combinations of alternatives to expand");
            return Never();
          }
          Merged c = base;
          MergeInto(&c, a, 0);
          alts.push_back(Lower(c, depth, expansion + 1));
        }
      }
      return g_.AddChoice(alts);
    }
    uint8_t types = m.types;
    if (m.has_enum) return EnumExpr(m, depth);
    std::vector<ExprId> alts;
    if (types & kNull) alts.push_back(Lit(&g_, "null"));
    if (types & kBool) alts.push_back(g_.AddChoice({Lit(&g_, "true"), Lit(&g_, "false")}));
    if (types & (kInt | kNum)) alts.push_back(NumericExpr(m, (types & kNum) == 0));
    if (types & kStr) alts.push_back(StringExpr(m));
    if (types & kArr) alts.push_back(ArrayExpr(m, depth));
    if (types & kObj) alts.push_back(ObjectExpr(m, depth));
    if (alts.empty()) return Never();
    return alts.size() == 1 ? alts[0] : g_.AddChoice(alts);
  }

  // oneOf lowers as anyOf, which is exact only when no value matches two alternatives (each
  // merged with the rest of its schema); otherwise the widening is reported.
  // Returns the alternatives to lower in place of the group when it had to rewrite them (see
  // RequiredOnlyOneOf), else an empty vector.
  std::vector<Merged> CheckOneOf(const Merged& base, const std::vector<Ref>& group, const std::string& at) {
    std::vector<Merged> alts;
    for (const auto& a : group) {
      Merged c = base;
      MergeInto(&c, a, 0);
      alts.push_back(std::move(c));
    }
    MergeFn merge = [this](const std::vector<Ref>& parts) {
      Merged c;
      for (const auto& p : parts) MergeInto(&c, p, 0);
      return c;
    };
    for (size_t i = 0; i < alts.size(); ++i) {
      for (size_t j = i + 1; j < alts.size(); ++j) {
        if (!ProvablyDisjoint(alts[i], alts[j], merge)) {
          std::vector<Merged> rewritten = RequiredOnlyOneOf(base, group);
          if (rewritten.empty()) {
            rewritten = NegatedOneOf(base, group, alts, merge, at);
            if (!rewritten.empty()) negated_one_of_.insert(at);
          }
          if (!rewritten.empty()) return rewritten;
          Unsupported("oneOf", at, "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                                       " are not provably exclusive (lowered as anyOf)");
          return {};
        }
      }
    }
    return {};
  }

  // oneOf as "alternative i and none of the others it may overlap": base, A_i and `not A_j`
  // for every j not provably disjoint from i, when each such A_j has an exact negation (see
  // NegateSchema). Empty otherwise.
  std::vector<Merged> NegatedOneOf(const Merged& base, const std::vector<Ref>& group, const std::vector<Merged>& alts,
                                   const MergeFn& merge, const std::string& at) {
    const size_t n = group.size();
    std::vector<std::vector<uint8_t>> overlap(n, std::vector<uint8_t>(n, 0));
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        overlap[i][j] = overlap[j][i] = !ProvablyDisjoint(alts[i], alts[j], merge);
        if (overlap[i][j] && (!Negate(*group[i].v, group[i].ptr, 0) || !Negate(*group[j].v, group[j].ptr, 0))) return {};
      }
    }
    // Everything the rewrite merges and lowers runs in a negation scope: if some part of it
    // turns out unsupported, the conversion restarts without rewriting this oneOf, which is
    // then reported as such (rather than as the `not` it tried).
    if (no_negation_.count(at)) return {};
    std::vector<Merged> out;
    NegationScope scope(this, at);
    for (size_t i = 0; i < n; ++i) {
      Merged c = base;
      MergeInto(&c, group[i], 0);
      for (size_t j = 0; j < n; ++j) {
        if (j != i && overlap[i][j] && !MergeNegation(&c, group[j], at)) Unsupported("not", group[j].ptr);
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  // oneOf whose alternatives only list required properties ("exactly one of these sets"):
  // alternative i holds when its names are present and, for every other alternative j, one of
  // j's names is absent, which is expressible when j has one name that i lacks (i is dropped
  // when it has all of j's). Values that are not objects match every alternative and so none
  // exactly once. Empty when the group has another shape.
  std::vector<Merged> RequiredOnlyOneOf(const Merged& base, const std::vector<Ref>& group) {
    std::vector<std::vector<std::string>> names;
    for (const auto& a : group) {
      if (!a.v->is_object()) return {};
      std::vector<std::string> req;
      for (const auto& kv : a.v->members()) {
        if (IsAnnotation(kv.first)) continue;
        if (kv.first != "required" || !kv.second.is_array()) return {};
        for (const auto& it : kv.second.items()) {
          if (!it.is_string()) return {};
          req.push_back(it.as_string());
        }
      }
      names.push_back(req);
    }
    std::vector<Merged> out;
    for (size_t i = 0; i < group.size(); ++i) {
      Merged c = base;
      MergeInto(&c, group[i], 0);
      c.types &= kObj;
      for (size_t j = 0; j < group.size() && !c.is_false; ++j) {
        if (j == i) continue;
        std::vector<std::string> missing;
        for (const auto& n : names[j]) {
          if (std::find(names[i].begin(), names[i].end(), n) == names[i].end()) missing.push_back(n);
        }
        if (missing.empty()) c.is_false = true;
        else if (missing.size() == 1) c.absent.push_back({missing[0], "oneOf", group[j].ptr});
        else return {};
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  ExprId EnumExpr(const Merged& m, int depth) {
    std::vector<ExprId> alts;
    for (const JsonValue* v : EnumValues(m)) alts.push_back(LiteralExpr(*v, depth));
    return g_.AddChoice(alts);
  }

  // uniqueItems over items with finitely many values (an enum, booleans, null): each value at
  // most once in any order, counted by minItems/maxItems; an AnyOrder node. kNoExpr (after
  // reporting) for items with infinitely many values, or with prefixItems/contains.
  ExprId UniqueArrayExpr(const Merged& m, const std::vector<Ref>& items, int depth) {
    if (m.has_prefix || !m.contains.empty()) {
      Unsupported("uniqueItems", m.unique_items_ptr, "together with prefixItems or contains");
      return kNoExpr;
    }
    Merged im;
    for (const auto& r : items) MergeInto(&im, r, 0);
    std::vector<JsonValue> values;
    if (im.is_false) {
      // no item can be written
    } else if (im.has_enum && im.any_of.empty()) {
      for (const JsonValue* v : EnumValues(im)) {
        if (std::find(values.begin(), values.end(), *v) == values.end()) values.push_back(*v);
      }
    } else if (im.any_of.empty() && (im.types & ~(kBool | kNull)) == 0) {
      // Other keywords do not apply to booleans and null.
      if (im.types & kNull) values.push_back(JsonValue());
      if (im.types & kBool) values.push_back(JsonValue::Bool(false)), values.push_back(JsonValue::Bool(true));
    } else {
      Unsupported("uniqueItems", m.unique_items_ptr, "items with more than an enum of values");
      return kNoExpr;
    }
    int64_t max = m.max_items >= 0 ? std::min<int64_t>(m.max_items, values.size()) : static_cast<int64_t>(values.size());
    if (m.min_items > max) return Never();
    if (max == 0) return Empty('[', ']');
    AnyOrderSpec spec;
    spec.num_optional = static_cast<int32_t>(values.size());
    spec.min_count = std::max<int64_t>(m.min_items, 1);
    spec.max_count = max;
    std::vector<ExprId> children{ItemSep(depth)};
    for (const auto& v : values) children.push_back(LiteralExpr(v, depth + 1));
    ExprId ne = g_.AddSequence({Open('[', depth), g_.AddAnyOrder(spec, children), Close(']', depth)});
    return m.min_items == 0 ? g_.AddChoice({Empty('[', ']'), ne}) : ne;
  }

  ExprId LiteralExpr(const JsonValue& v, int depth) {
    switch (v.type()) {
      case JsonValue::Type::kNull:
      case JsonValue::Type::kBool: return Lit(&g_, v.Dump());
      case JsonValue::Type::kNumber:
        // Numeric equality: 1 matches 1.0 too.
        try {
          return NumberEqualExpr(&g_, v.number_literal());
        } catch (const UnsupportedKeyword&) {
          return Lit(&g_, v.Dump());
        }
      case JsonValue::Type::kString: return g_.AddSequence({Lit(&g_, "\""), JsonStringContentLiteral(&g_, v.as_string()), Lit(&g_, "\"")});
      case JsonValue::Type::kArray: {
        if (v.items().empty()) return Empty('[', ']');
        std::vector<ExprId> parts{Open('[', depth)};
        for (size_t i = 0; i < v.items().size(); ++i) {
          if (i) parts.push_back(ItemSep(depth));
          parts.push_back(LiteralExpr(v.items()[i], depth + 1));
        }
        parts.push_back(Close(']', depth));
        return g_.AddSequence(parts);
      }
      case JsonValue::Type::kObject: {
        if (v.members().empty()) return Empty('{', '}');
        if (o_.any_order && v.members().size() > 1) {
          // The same members in any order (all required, each once).
          AnyOrderSpec spec;
          spec.num_required = static_cast<int32_t>(v.members().size());
          spec.min_count = spec.num_required;
          std::vector<ExprId> children{ItemSep(depth)};
          for (const auto& kv : v.members()) {
            children.push_back(g_.AddSequence({QuotedLiteral(kv.first), KeySep(), LiteralExpr(kv.second, depth + 1)}));
          }
          return g_.AddSequence({Open('{', depth), g_.AddAnyOrder(spec, children), Close('}', depth)});
        }
        std::vector<ExprId> parts{Open('{', depth)};
        for (size_t i = 0; i < v.members().size(); ++i) {
          if (i) parts.push_back(ItemSep(depth));
          parts.push_back(QuotedLiteral(v.members()[i].first));
          parts.push_back(KeySep());
          parts.push_back(LiteralExpr(v.members()[i].second, depth + 1));
        }
        parts.push_back(Close('}', depth));
        return g_.AddSequence(parts);
      }
    }
    return Never();
  }

  ExprId QuotedLiteral(const std::string& s) {
    return g_.AddSequence({Lit(&g_, "\""), JsonStringContentLiteral(&g_, s), Lit(&g_, "\"")});
  }

  ExprId NumericExpr(const Merged& m, bool integer) {
    try {
      if (!m.multiple_of.empty()) {
        const Ref& r = m.multiple_of.front();
        bool int_k = r.v->is_integer() && r.v->as_number() <= 1e15;
        if (m.multiple_of.size() > 1 || !int_k) {
          Unsupported("multipleOf", r.ptr, int_k ? "several divisors" : "non-integer divisor");
        } else {
          return IntegerMultipleOfExpr(&g_, static_cast<int64_t>(r.v->as_number()), m.lo, m.hi);
        }
      }
      return integer ? IntegerExpr(&g_, m.lo, m.hi) : NumberExpr(&g_, m.lo, m.hi);
    } catch (const UnsupportedKeyword& u) {
      Unsupported(u.keyword, cur_ptr_, u.detail);
      return integer ? IntegerExpr(&g_, NumBound(), NumBound()) : NumberExpr(&g_, NumBound(), NumBound());
    }
  }

  ExprId PatternContent(const Ref& pat) {
    try {
      RegexOptions ro;
      ro.search_semantics = true;
      ExprId e = RegexToExpr(&g_, pat.v->as_string(), ro);
      return RegexToJsonContent(&g_, e);
    } catch (const Error& e) {
      Unsupported("pattern", pat.ptr, e.what());
      return kNoExpr;
    }
  }

  // pattern + minLength/maxLength where the pattern is one character class repeated (e.g.
  // "^[a-z0-9_-]+$"): the bounds are intersected. kNoExpr when the pattern has another shape.
  ExprId BoundedClassPattern(const Ref& pat, int64_t min_len, int64_t max_len) {
    ExprId e;
    try {
      RegexOptions ro;
      ro.search_semantics = true;
      e = RegexToExpr(&g_, pat.v->as_string(), ro);
    } catch (const Error&) {
      return kNoExpr;
    }
    Expr x = g_.expr(e);
    while ((x.kind == ExprKind::kSequence || x.kind == ExprKind::kChoice) && x.children.size() == 1) x = g_.expr(x.children[0]);
    int64_t lo = 1, hi = 1;
    ExprId cls = kNoExpr;
    if (x.kind == ExprKind::kCharClass) {
      cls = e;
    } else if (x.kind == ExprKind::kRepeat && g_.expr(x.children[0]).kind == ExprKind::kCharClass) {
      cls = x.children[0];
      lo = x.min;
      hi = x.max;
    } else {
      return kNoExpr;
    }
    int64_t nlo = std::max(lo, min_len);
    int64_t nhi = hi == kUnbounded ? max_len : (max_len < 0 ? hi : std::min(hi, max_len));
    if (nhi != kUnbounded && nlo > nhi) return Never();
    return RegexToJsonContent(&g_, g_.AddRepeat(cls, nlo, nhi));
  }

  // pattern + minLength/maxLength in general: the pattern's automaton over JSON string
  // content times a decoded-character counter, emitted as a ByteDfa node.
  // Several patterns and formats intersect their automata first.
  ExprId LengthBoundedPattern(const std::vector<Ref>& pats, const std::vector<Ref>& formats, int64_t min_len, int64_t max_len) {
    std::vector<ExprId> contents;
    for (const auto& p : pats) {
      contents.push_back(PatternContent(p));
      if (contents.back() == kNoExpr) return kNoExpr;
    }
    for (const auto& f : formats) {
      try {
        contents.push_back(FormatContentExpr(&g_, f.v->as_string()));
      } catch (const UnsupportedKeyword& u) {
        Unsupported(u.keyword, f.ptr, u.detail);
        return kNoExpr;
      }
    }
    const Ref& pat = pats.empty() ? formats[0] : pats[0];
    const char* what = pats.empty() ? "format" : "pattern";
    try {
      std::vector<ByteDfaSpec> parts;
      for (ExprId c : contents) parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g_, c, kMaxPatternDfaStates)));
      ByteDfaSpec dfa = std::move(parts[0]);
      parts.erase(parts.begin());
      if (!parts.empty()) {
        const uint64_t all = (uint64_t{1} << parts.size()) - 1;
        dfa = TrimAndMinimize(SelectByParts(ProductWithParts(dfa, parts, kMaxPatternDfaStates), all, all));
      }
      if (min_len == 0 && max_len < 0) return g_.AddByteDfa(std::move(dfa));
      // A trailing loop over characters (the [a-z]* of "^x[a-z]*$") entered at few counts
      // becomes a counted repetition: compile cost then does not grow with the bound.
      constexpr size_t kMaxLoopExits = 8;
      std::vector<uint8_t> stars = JsonStarStates(dfa);
      std::vector<JsonLengthExit> exits;
      ByteDfaSpec product = IntersectJsonLength(dfa, min_len, max_len, kMaxPatternDfaStates, &stars, &exits);
      if (exits.size() > kMaxLoopExits) {
        exits.clear();
        product = IntersectJsonLength(dfa, min_len, max_len, kMaxPatternDfaStates);
      }
      std::vector<ExprId> alts;
      ByteDfaSpec plain = TrimAndMinimize(product);
      if (!ByteDfaEmpty(plain)) alts.push_back(g_.AddByteDfa(std::move(plain)));
      for (const auto& x : exits) {
        ByteDfaSpec prefix = product;
        std::fill(prefix.is_final.begin(), prefix.is_final.end(), 0);
        prefix.is_final[x.state] = 1;
        int64_t lo = std::max<int64_t>(0, min_len - x.count);
        int64_t hi = max_len < 0 ? kUnbounded : max_len - x.count;
        ExprId tail = g_.AddRepeat(g_.AddByteDfa(JsonCharLoop(dfa, x.content_state)), lo, hi);
        alts.push_back(g_.AddSequence({g_.AddByteDfa(TrimAndMinimize(prefix)), tail}));
      }
      return alts.size() == 1 ? alts[0] : g_.AddChoice(alts);
    } catch (const Error& e) {
      Unsupported(what, pat.ptr, std::string(contents.size() > 1 ? "intersection of patterns and formats" : "together with minLength/maxLength") + ": " + e.what());
      return kNoExpr;
    }
  }

  // 1: every match of the pattern has a length within [min_len, max_len]; -1: none has; 0:
  // some may (or unknown).
  int PatternWithinLength(const Ref& pat, int64_t min_len, int64_t max_len) {
    int64_t lo, hi;
    try {
      RegexOptions ro;
      ro.search_semantics = true;
      if (!CodepointLengthRange(g_, RegexToExpr(&g_, pat.v->as_string(), ro), &lo, &hi)) return 0;
    } catch (const Error&) {
      return 0;
    }
    if ((max_len >= 0 && lo > max_len) || (hi >= 0 && hi < min_len)) return -1;
    return (lo >= min_len && (max_len < 0 || (hi >= 0 && hi <= max_len))) ? 1 : 0;
  }

  // Strings with `not {pattern}`: the automaton of any string content, intersected with the
  // positive patterns and formats and with the complements of the negated patterns (over every
  // JSON spelling, so a match written with escapes is excluded too), then the length bounds.
  ExprId NegatedPatternString(const Merged& m) {
    const std::string at_ptr = m.not_patterns.empty() ? cur_ptr_ : m.not_patterns[0].ptr;
    try {
      if (m.patterns.size() + m.formats.size() + m.not_patterns.size() + 1 > 63) throw Error(ErrorKind::kLimitExceeded, "more than 63 patterns");
      Grammar scratch;
      ByteDfaSpec universe = ByteDfaOfExpr(scratch, scratch.AddRepeat(JsonCharExpr(&scratch), 0, kUnbounded), kMaxPatternDfaStates);
      std::vector<ByteDfaSpec> parts;
      for (const auto& p : m.patterns) {
        ExprId c = PatternContent(p);
        if (c == kNoExpr) return kNoExpr;
        parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g_, c, kMaxPatternDfaStates)));
      }
      for (const auto& f : m.formats) {
        try {
          parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g_, FormatContentExpr(&g_, f.v->as_string()), kMaxPatternDfaStates)));
        } catch (const UnsupportedKeyword& u) {
          Unsupported(u.keyword, f.ptr, u.detail);
          return kNoExpr;
        }
      }
      const uint64_t want = (uint64_t{1} << parts.size()) - 1;
      if (!m.not_strings.empty()) {
        std::vector<ExprId> names;
        for (const auto& x : m.not_strings) names.push_back(JsonStringContentAllSpellings(&scratch, x));
        parts.push_back(TrimAndMinimize(ByteDfaOfExpr(scratch, scratch.AddChoice(names), kMaxPatternDfaStates)));
      }
      for (const auto& p : m.not_patterns) {
        RegexOptions ro;
        ro.search_semantics = true;
        ExprId e = RegexToJsonContentAllSpellings(&scratch, RegexToExpr(&scratch, p.v->as_string(), ro));
        parts.push_back(TrimAndMinimize(ByteDfaOfExpr(scratch, e, kMaxPatternDfaStates)));
      }
      const uint64_t care = (uint64_t{1} << parts.size()) - 1;
      ByteDfaSpec dfa = TrimAndMinimize(SelectByParts(ProductWithParts(universe, parts, kMaxPatternDfaStates), care, want));
      if (m.min_len > 0 || m.max_len >= 0) dfa = TrimAndMinimize(IntersectJsonLength(dfa, m.min_len, m.max_len, kMaxPatternDfaStates));
      if (ByteDfaEmpty(dfa)) return Never();
      return g_.AddSequence({Lit(&g_, "\""), g_.AddByteDfa(std::move(dfa)), Lit(&g_, "\"")});
    } catch (const Error& e) {
      Unsupported("not", at_ptr, std::string("pattern complement: ") + e.what());
      return kNoExpr;
    }
  }

  ExprId StringExpr(const Merged& m) {
    if (!m.not_patterns.empty() || !m.not_strings.empty()) {
      ExprId e = NegatedPatternString(m);
      if (e != kNoExpr) return e;
      return AnyString(m.min_len, m.max_len);  // reported (warn mode widens)
    }
    bool bounded = m.min_len > 0 || m.max_len >= 0;
    std::vector<ExprId> contents;
    if (bounded && m.patterns.size() == 1 && m.formats.empty()) {
      ExprId e = BoundedClassPattern(m.patterns[0], m.min_len, m.max_len);
      if (e != kNoExpr) return g_.AddSequence({Lit(&g_, "\""), e, Lit(&g_, "\"")});
      // Bounds the pattern implies anyway (or that no match meets) need no intersection.
      switch (PatternWithinLength(m.patterns[0], m.min_len, m.max_len)) {
        case 1: bounded = false; break;
        case -1: return Never();
        default: break;
      }
    }
    const size_t languages = m.patterns.size() + m.formats.size();
    if ((bounded && languages >= 1) || languages > 1) {
      if (languages > 64) {
        Unsupported("pattern", (m.patterns.empty() ? m.formats[0] : m.patterns[0]).ptr, "more than 64 patterns and formats");
        return AnyString(m.min_len, m.max_len);
      }
      ExprId e = LengthBoundedPattern(m.patterns, m.formats, m.min_len, m.max_len);
      if (e == kNoExpr) return AnyString(m.min_len, m.max_len);  // reported (warn keeps the bounds)
      return g_.AddSequence({Lit(&g_, "\""), e, Lit(&g_, "\"")});
    }
    // Here at most one pattern or format, and no bounds beside it.
    for (const auto& p : m.patterns) {
      ExprId e = PatternContent(p);
      if (e != kNoExpr) contents.push_back(e);
    }
    for (const auto& f : m.formats) {
      try {
        contents.push_back(FormatContentExpr(&g_, f.v->as_string()));
      } catch (const UnsupportedKeyword& u) {
        Unsupported(u.keyword, f.ptr, u.detail);
      }
    }
    if (contents.empty()) {
      if (m.max_len >= 0 && m.min_len > m.max_len) return Never();
      return AnyString(m.min_len, m.max_len);
    }
    return g_.AddSequence({Lit(&g_, "\""), contents[0], Lit(&g_, "\"")});
  }

  // A value of the conjunction (false: kNoExpr).
  ExprId ValueRef(const std::vector<Ref>& parts, int depth) {
    if (parts.size() == 1 && parts[0].v->is_bool()) {
      if (!parts[0].v->as_bool()) return kNoExpr;
    }
    for (const auto& p : parts) {
      if (p.v->is_bool() && !p.v->as_bool()) return kNoExpr;
    }
    return g_.AddRuleRef(ConjRule(parts, depth));
  }

  ExprId ArrayExpr(const Merged& m, int depth) {
    int d1 = depth + 1;
    std::vector<Ref> items = m.items;
    bool extra_allowed = true;
    if (!m.items_set) {
      if (o_.strict_mode && m.has_prefix) extra_allowed = false;
      static const JsonValue kTrue = JsonValue::Bool(true);
      items = {Ref{&kTrue, "/true"}};
    }
    if (m.unique_items && !(m.max_items >= 0 && m.max_items <= 1)) {
      ExprId unique = UniqueArrayExpr(m, items, depth);
      if (unique != kNoExpr) return unique;  // else reported; on "warn" uniqueness is not enforced
    }
    ExprId item = extra_allowed ? ValueRef(items, d1) : kNoExpr;
    int64_t p = m.has_prefix ? static_cast<int64_t>(m.prefix.size()) : 0;
    int64_t max = m.max_items;
    if (max >= 0 && max < p) p = max;
    std::vector<ExprId> pre;
    for (int64_t i = 0; i < p; ++i) {
      std::vector<Ref> conj = m.prefix[i];
      conj.insert(conj.end(), m.items_all.begin(), m.items_all.end());
      ExprId e = ValueRef(conj, d1);
      if (e == kNoExpr) {
        // Position i cannot hold a value: the array ends before it.
        p = i;
        item = kNoExpr;
        break;
      }
      pre.push_back(e);
    }
    if (m.min_items > p && item == kNoExpr) return Never();
    if (max >= 0 && m.min_items > max) return Never();
    if (!m.contains.empty()) {
      if (m.contains.size() > 1 || p > 0 || m.max_items >= 0 || m.min_items > 1) {
        Unsupported("contains", m.contains[0].ptr, "together with prefixItems, maxItems or minItems > 1");
      } else {
        std::vector<Ref> c = items;
        c.push_back(m.contains[0]);
        ExprId ce = ValueRef(c, d1);
        if (ce == kNoExpr) return Never();
        std::vector<ExprId> parts{Open('[', depth)};
        if (item != kNoExpr) parts.push_back(g_.AddRepeat(g_.AddSequence({item, ItemSep(depth)}), 0, kUnbounded));
        parts.push_back(ce);
        if (item != kNoExpr) parts.push_back(g_.AddRepeat(g_.AddSequence({ItemSep(depth), item}), 0, kUnbounded));
        parts.push_back(Close(']', depth));
        return g_.AddSequence(parts);
      }
    }
    // Tail after the prefix: between lo and hi more items, each preceded by a separator.
    int64_t tail_lo = std::max<int64_t>(0, m.min_items - p);
    int64_t tail_hi = item == kNoExpr ? 0 : (max >= 0 ? max - p : kUnbounded);
    // Build from the end: T_i = sep e_i T_{i+1} (optional when i >= min_items).
    ExprId content;
    if (p == 0) {
      if (item == kNoExpr || tail_hi == 0) return Empty('[', ']');
      ExprId rest = g_.AddRepeat(g_.AddSequence({ItemSep(depth), item}), std::max<int64_t>(0, tail_lo - 1),
                                 tail_hi == kUnbounded ? kUnbounded : tail_hi - 1);
      ExprId ne = g_.AddSequence({Open('[', depth), item, rest, Close(']', depth)});
      return tail_lo == 0 ? g_.AddChoice({Empty('[', ']'), ne}) : ne;
    }
    ExprId tail = (tail_hi == 0) ? g_.AddEmpty() : g_.AddRepeat(g_.AddSequence({ItemSep(depth), item}), tail_lo, tail_hi);
    content = tail;
    for (int64_t i = p - 1; i >= 1; --i) {
      ExprId seq = g_.AddSequence({ItemSep(depth), pre[i], content});
      content = i < m.min_items ? seq : Opt(&g_, seq);
    }
    ExprId ne = g_.AddSequence({Open('[', depth), pre[0], content, Close(']', depth)});
    return m.min_items == 0 ? g_.AddChoice({Empty('[', ']'), ne}) : ne;
  }

  ExprId KeyExprFromNames(const std::vector<Ref>& names, const std::vector<std::string>& declared) {
    if (names.empty()) return declared.empty() ? AnyString(0, kUnbounded) : JsonStringNotIn(&g_, declared, StringRest());
    Merged nm;
    for (const auto& r : names) MergeInto(&nm, r, 0);
    if (nm.is_false) return kNoExpr;
    if (!nm.any_of.empty()) {
      Unsupported("propertyNames", names[0].ptr, "combinators in propertyNames");
    }
    if (nm.has_enum) {
      std::vector<ExprId> alts;
      for (const auto& v : nm.enum_values) {
        if (v.is_string() && std::find(declared.begin(), declared.end(), v.as_string()) == declared.end()) alts.push_back(QuotedLiteral(v.as_string()));
      }
      return alts.empty() ? kNoExpr : g_.AddChoice(alts);
    }
    if (!(nm.types & kStr)) return kNoExpr;
    return StringExpr(nm);
  }

  // Extra keys under patternProperties: one alternative per set of patterns some undeclared
  // key matches exactly, with the conjunction of their schemas; with_none adds the keys no
  // pattern matches, with additionalProperties. False (reported) when the automata are too
  // large.
  bool PatternKeyAlternatives(const Merged& m, const std::vector<std::string>& patterns, const std::vector<std::string>& declared,
                              const std::vector<Ref>& add, int depth, std::vector<ExprId>* alts, bool with_none = true) {
    std::vector<KeyRegion> regions;
    try {
      regions = PatternKeyRegions(patterns, declared, with_none, kMaxPatternDfaStates);
    } catch (const Error& e) {
      Unsupported("patternProperties", m.pattern_props[0].first.ptr, std::string("key automata: ") + e.what());
      return false;
    }
    for (auto& r : regions) {
      std::vector<Ref> conj;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (r.patterns >> i & 1) conj.insert(conj.end(), m.pattern_props[i].second.begin(), m.pattern_props[i].second.end());
      }
      ExprId val = ValueRef(r.patterns == 0 ? add : conj, depth);
      if (val == kNoExpr) continue;
      ExprId key = g_.AddSequence({Lit(&g_, "\""), g_.AddByteDfa(std::move(r.keys)), Lit(&g_, "\"")});
      alts->push_back(g_.AddSequence({key, KeySep(), val}));
    }
    return true;
  }

  ExprId ObjectExpr(const Merged& m, int depth) {
    int d1 = depth + 1;
    std::string saved = cur_ptr_;
    // Declared properties (false schemas drop out).
    struct Prop {
      std::string name;
      bool required;
      ExprId kv;
    };
    std::vector<Prop> props;
    std::vector<std::string> declared;
    // A name matching patternProperties takes those schemas as well.
    std::map<std::string, std::vector<size_t>> name_patterns;
    std::vector<std::string> pattern_texts;
    for (const auto& pp : m.pattern_props) pattern_texts.push_back(pp.first.v->as_string());
    if (!m.pattern_props.empty()) {
      std::vector<std::string> names;
      for (const auto& pr : m.props) names.push_back(pr.first);
      for (const auto& rn : m.required) names.push_back(rn);
      try {
        std::vector<std::vector<size_t>> hits = PatternsMatchingNames(pattern_texts, names, kMaxPatternDfaStates);
        for (size_t i = 0; i < names.size(); ++i) name_patterns[names[i]] = hits[i];
      } catch (const Error& e) {
        Unsupported("patternProperties", m.pattern_props[0].first.ptr, std::string("matching declared names: ") + e.what());
      }
    }
    auto pattern_schemas = [&](const std::string& name, std::vector<Ref>* conj) {
      auto it = name_patterns.find(name);
      if (it == name_patterns.end()) return false;
      for (size_t i : it->second) conj->insert(conj->end(), m.pattern_props[i].second.begin(), m.pattern_props[i].second.end());
      return !it->second.empty();
    };
    for (const auto& a : m.absent) {
      if (m.Requires(a.name)) return Never();
      // A pattern or propertyNames could still admit the name as an extra key.
      if (!m.pattern_props.empty() || !m.property_names.empty()) Unsupported(a.keyword, a.ptr, "together with patternProperties or propertyNames");
      declared.push_back(a.name);  // excluded from the extra keys
    }
    for (const auto& pr : m.props) {
      if (m.Forbids(pr.first)) continue;
      declared.push_back(pr.first);
      std::vector<Ref> conj = pr.second;
      pattern_schemas(pr.first, &conj);
      for (size_t j = 0; j < m.additional.size(); ++j) {
        // Declared only in another allOf branch / $ref target: additionalProperties applies.
        const JsonValue* parent = m.additional_parent[j];
        const JsonValue* sib = parent->Find("properties");
        if (parent->Find("patternProperties") != nullptr) continue;  // cannot tell here; assume a match
        if (sib && sib->is_object() && sib->Find(pr.first)) continue;
        conj.push_back(m.additional[j]);
      }
      ExprId val = ValueRef(conj, d1);
      bool req = m.Requires(pr.first);
      if (val == kNoExpr) {
        if (req) return Never();
        continue;
      }
      props.push_back({pr.first, req, g_.AddSequence({QuotedLiteral(pr.first), KeySep(), val})});
    }
    // Required names without a declaration take the additional schema.
    // Extra key/value pairs.
    std::vector<ExprId> extra_alts;
    bool additional_any = false;
    bool pattern_regions = false;  // extra keys partitioned by the patterns they match
    {
      std::vector<Ref> add = m.additional;
      bool allowed = true;
      // strict_mode forbids undeclared properties of schemas that declare some; an object
      // schema that declares none stays "any object".
      bool declares = !m.props.empty() || !m.pattern_props.empty();
      if (!m.additional_set && o_.strict_mode && declares) allowed = false;
      for (const auto& a : add) {
        if (a.v->is_bool() && !a.v->as_bool()) allowed = false;
      }
      if (allowed) {
        static const JsonValue kTrue = JsonValue::Bool(true);
        if (add.empty()) add = {Ref{&kTrue, "/true"}};
        additional_any = std::all_of(add.begin(), add.end(), [](const Ref& r) { return r.v->is_bool() || (r.v->is_object() && r.v->members().empty()); });
        for (const auto& rn : m.required) {
          if (std::find(declared.begin(), declared.end(), rn) == declared.end()) {
            std::vector<Ref> conj;
            ExprId val = ValueRef(pattern_schemas(rn, &conj) ? conj : add, d1);
            if (val == kNoExpr) return Never();
            props.push_back({rn, true, g_.AddSequence({QuotedLiteral(rn), KeySep(), val})});
            declared.push_back(rn);
          }
        }
        if (!m.pattern_props.empty() && m.property_names.empty()) {
          pattern_regions = PatternKeyAlternatives(m, pattern_texts, declared, add, d1, &extra_alts);
        } else if (!m.pattern_props.empty()) {
          Unsupported("patternProperties", m.pattern_props[0].first.ptr, "together with propertyNames and additionalProperties other than false");
        }
        if (!pattern_regions) {
          ExprId key = KeyExprFromNames(m.property_names, declared);
          ExprId val = ValueRef(add, d1);
          if (key != kNoExpr && val != kNoExpr) extra_alts.push_back(g_.AddSequence({key, KeySep(), val}));
        }
      } else {
        for (const auto& rn : m.required) {
          if (std::find(declared.begin(), declared.end(), rn) == declared.end()) {
            std::vector<Ref> conj;
            if (!pattern_schemas(rn, &conj)) return Never();
            ExprId val = ValueRef(conj, d1);
            if (val == kNoExpr) return Never();
            props.push_back({rn, true, g_.AddSequence({QuotedLiteral(rn), KeySep(), val})});
            declared.push_back(rn);
          }
        }
      }
      if (!allowed && !m.pattern_props.empty() && !m.property_names.empty()) {
        // The pattern keys below do not apply propertyNames: report rather than widen.
        Unsupported("propertyNames", m.property_names[0].ptr, "together with patternProperties");
      }
      if (!allowed && !m.pattern_props.empty()) {
        pattern_regions = PatternKeyAlternatives(m, pattern_texts, declared, {}, d1, &extra_alts, /*with_none=*/false);
      }
      for (const auto& pp : m.pattern_props) {
        if (pattern_regions) break;
        ExprId content = PatternContent(pp.first);
        ExprId val = ValueRef(pp.second, d1);
        if (content == kNoExpr || val == kNoExpr) continue;
        extra_alts.push_back(g_.AddSequence({Lit(&g_, "\""), content, Lit(&g_, "\""), KeySep(), val}));
      }
      if (!m.property_names.empty() && !props.empty()) {
        // Declared names are assumed to satisfy propertyNames.
      }
    }
    (void)additional_any;
    ExprId extra = kNoExpr;
    if (!extra_alts.empty()) {
      RuleId er = NewRule("additional_property");
      g_.SetRuleBody(er, extra_alts.size() == 1 ? extra_alts[0] : g_.AddChoice(extra_alts));
      extra = g_.AddRuleRef(er);
    }
    int64_t n = static_cast<int64_t>(props.size());
    int64_t nreq = std::count_if(props.begin(), props.end(), [](const Prop& p) { return p.required; });
    // min/maxProperties
    int64_t min_p = m.min_props, max_p = m.max_props;
    if (n == 0) {
      if (extra == kNoExpr) return (min_p > 0) ? Never() : Empty('{', '}');
      if (max_p == 0) return Empty('{', '}');
      ExprId rest = g_.AddRepeat(g_.AddSequence({ItemSep(depth), extra}), std::max<int64_t>(0, min_p - 1), max_p < 0 ? kUnbounded : max_p - 1);
      ExprId ne = g_.AddSequence({Open('{', depth), extra, rest, Close('}', depth)});
      return min_p == 0 ? g_.AddChoice({Empty('{', '}'), ne}) : ne;
    }
    if (o_.any_order) {
      cur_ptr_ = saved;
      return AnyOrderObject(props, extra, min_p, max_p, depth);
    }
    if (min_p > nreq) {
      if (extra == kNoExpr && min_p == n) {
        for (auto& p : props) p.required = true;
        nreq = n;
      } else if (extra == kNoExpr && min_p > n) {
        return Never();
      } else {
        Unsupported("minProperties", m.min_props_ptr, "with declared optional properties");
      }
    }
    if (max_p >= 0) {
      if (max_p < nreq) return Never();
      if (!(extra == kNoExpr && max_p >= n)) Unsupported("maxProperties", m.max_props_ptr, "with declared optional properties");
    }
    // Ordered: Tail(i) = X [sep kv_i] Tail(i+1); X = (sep extra)*.
    auto X = [&]() { return g_.AddRepeat(g_.AddSequence({ItemSep(depth), extra}), 0, kUnbounded); };
    std::vector<ExprId> tails(n + 1);
    bool use_rules = n > 6;
    auto make_tail = [&](int64_t i, ExprId body) {
      if (!use_rules) return body;
      RuleId r = NewRule("object_tail");
      g_.SetRuleBody(r, body);
      return g_.AddRuleRef(r);
    };
    tails[n] = make_tail(n, extra == kNoExpr ? g_.AddEmpty() : X());
    for (int64_t i = n - 1; i >= 0; --i) {
      ExprId s = g_.AddSequence({ItemSep(depth), props[i].kv});
      std::vector<ExprId> parts;
      if (extra != kNoExpr) parts.push_back(X());
      parts.push_back(props[i].required ? s : Opt(&g_, s));
      parts.push_back(tails[i + 1]);
      tails[i] = make_tail(i, g_.AddSequence(parts));
    }
    std::vector<ExprId> firsts;
    for (int64_t k = 0; k < n; ++k) {
      firsts.push_back(g_.AddSequence({props[k].kv, tails[k + 1]}));
      if (props[k].required) break;
    }
    if (extra != kNoExpr) firsts.push_back(g_.AddSequence({extra, tails[0]}));
    ExprId ne = g_.AddSequence({Open('{', depth), g_.AddChoice(firsts), Close('}', depth)});
    cur_ptr_ = saved;
    return nreq == 0 ? g_.AddChoice({Empty('{', '}'), ne}) : ne;
  }

  // Properties in any order, each at most once, required ones exactly once, additional ones
  // (extra) any number of times; minProperties/maxProperties count them all. One AnyOrder
  // node: the parser keeps the set of properties written, so no 2^n expansion.
  template <typename PropT>
  ExprId AnyOrderObject(const std::vector<PropT>& props, ExprId extra, int64_t min_p, int64_t max_p, int depth) {
    int64_t nreq = 0;
    std::vector<ExprId> children{ItemSep(depth)};
    for (const auto& p : props) {
      if (p.required) children.push_back(p.kv), ++nreq;
    }
    for (const auto& p : props) {
      if (!p.required) children.push_back(p.kv);
    }
    if (extra != kNoExpr) children.push_back(extra);
    if (max_p >= 0 && max_p < nreq) return Never();
    if (extra == kNoExpr && min_p > static_cast<int64_t>(props.size())) return Never();
    AnyOrderSpec spec;
    spec.num_required = static_cast<int32_t>(nreq);
    spec.num_optional = static_cast<int32_t>(props.size() - nreq);
    spec.num_repeated = extra == kNoExpr ? 0 : 1;
    // The empty object is written as "{}" whatever the layout: the node here has a member.
    spec.min_count = std::max<int64_t>(min_p, 1);
    spec.max_count = max_p;
    bool empty_ok = nreq == 0 && min_p <= 0;
    if (max_p == 0) return empty_ok ? Empty('{', '}') : Never();
    ExprId ne = g_.AddSequence({Open('{', depth), g_.AddAnyOrder(spec, children), Close('}', depth)});
    return empty_ok ? g_.AddChoice({Empty('{', '}'), ne}) : ne;
  }

  const JsonValue& root_;
  JsonSchemaOptions o_;
  Grammar g_;
  std::string item_sep_, key_sep_;
  std::vector<std::string> warnings_;
  std::set<std::string> warned_;
  std::unordered_map<std::string, RuleId> rules_;
  std::vector<const JsonValue*> merging_;
  std::vector<std::unique_ptr<JsonValue>> pattern_keys_;
  std::vector<JsonValue> not_values_;
  std::vector<std::unique_ptr<JsonValue>> synth_;  // positive forms of `not`, dependencies, conditions
  std::map<std::pair<const void*, int>, const JsonValue*> synth_cache_;
  std::map<const JsonValue*, const JsonValue*> neg_cache_;
  int neg_depth_ = 0;
  std::string cur_ptr_;
  int rule_nesting_ = 0;  // ConjRule calls in progress
  int cycle_hits_ = 0;    // $ref cycles met while merging
  bool ref_overrides_siblings_ = false;
  bool conditions_ignored_ = false;  // a draft 3-6 schema: if/then/else are not keywords
  std::unordered_map<std::string, int64_t> rule_name_count_;
  RuleId string_rest_ = -1;
  ExprId ws_ = kNoExpr, item_sep_expr_ = kNoExpr, key_sep_expr_ = kNoExpr;  // memoised separators
  ExprId json_char_ = kNoExpr;
  int64_t expansion_budget_ = 2000;  // inline lowerings of combinator alternatives
  // oneOf groups (by pointer) rewritten with negations, and those not to rewrite (a first
  // conversion found part of the rewrite unsupported). Inside a rewrite (negation_scope_ not
  // empty) Unsupported throws NegationFailed for the outermost one.
  std::set<std::string> negated_one_of_;
  std::set<std::string> no_negation_;
  std::vector<std::string> negation_scope_;
  struct NegationScope {
    NegationScope(Converter* c, const std::string& at) : c_(c) { c_->negation_scope_.push_back(at); }
    ~NegationScope() { c_->negation_scope_.pop_back(); }
    NegationScope(const NegationScope&) = delete;
    NegationScope& operator=(const NegationScope&) = delete;
    Converter* c_;
  };
};

}  // namespace

JsonSchemaResult JsonSchemaToGrammar(const JsonValue& schema, const JsonSchemaOptions& options) {
  if (!schema.is_object() && !schema.is_bool()) {
    throw Error(ErrorKind::kGrammarSemantic, "invalid schema at (root): a schema must be an object or a boolean");
  }
  if (options.indent < -1) throw Error(ErrorKind::kInvalidArgument, "indent must be >= 0 or -1 (none)");
  std::set<std::string> no_negation;
  for (;;) {
    try {
      return Converter(schema, options, no_negation).Run();
    } catch (const NegationFailed& f) {
      // Bounded: every retry adds one of the schema's oneOf pointers.
      no_negation.insert(f.one_of_at);
    }
  }
}

JsonSchemaResult JsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options) {
  JsonValue v = ParseJson(schema_json);
  return JsonSchemaToGrammar(v, options);
}

}  // namespace xg2
