// JSON Schema -> grammar IR: the converter's entry, $ref resolution, rules and separators, and
// the lowering of a merged constraint set to an expression (by type, to the files below).
#include "frontends/json_schema.h"

#include <algorithm>
#include <climits>

#include "frontends/json_schema_converter.h"
#include "grammar/productivity.h"

namespace xg2::jsonschema {

JsonSchemaResult Converter::Run() {
  RuleId root = g_.DeclareRule("root");
  g_.set_root(root);
  ExprId body = g_.AddRuleRef(ConjRule({Ref{&root_, ""}}, 0));
  g_.SetRuleBody(root, body);
  // A schema no JSON value satisfies (minimum above maximum, a false root) is refused here,
  // where the schema is named, rather than by the compile.
  if (o_.refuse_empty_language && !Productivity(g_).Rule(root)) {
    std::string why = empty_reason_.empty() ? "" : " (at " + empty_reason_ + ")";
    throw Error(ErrorKind::kGrammarSemantic, "invalid schema at (root): no JSON value satisfies the schema" + why);
  }
  JsonSchemaResult r;
  r.grammar = std::move(g_);
  r.warnings = warnings_;
  return r;
}

ExprId Converter::NeverBecause(const std::string& why) {
  if (empty_reason_.empty()) empty_reason_ = (cur_ptr_.empty() ? std::string("(root)") : cur_ptr_) + ": " + why;
  return Never();
}

// Declares a rule named base, base_2, base_3, ... Grammar::DeclareRule alone would probe every
// taken suffix, which is quadratic for schemas with thousands of objects.
RuleId Converter::NewRule(const std::string& base) {
  int64_t& n = rule_name_count_[base];
  ++n;
  return g_.DeclareRule(n == 1 ? base : base + "_" + std::to_string(n));
}

// Any JSON string content (no quotes): one rule shared by the whole grammar.
ExprId Converter::StringRest() {
  if (string_rest_ < 0) {
    string_rest_ = NewRule("json_string_rest");
    g_.SetRuleBody(string_rest_, g_.AddRepeat(JsonCharExpr(&g_), 0, kUnbounded));
  }
  return g_.AddRuleRef(string_rest_);
}

// Any undeclared key's content (JsonStringNotIn's `rest`): one rule shared by the grammar.
ExprId Converter::KeyStringRest() {
  if (key_string_rest_ < 0) {
    key_string_rest_ = NewRule("json_key_rest");
    g_.SetRuleBody(key_string_rest_, g_.AddRepeat(JsonKeyCharExpr(&g_), 0, kUnbounded));
  }
  return g_.AddRuleRef(key_string_rest_);
}

void Converter::Invalid(const std::string& ptr, const std::string& msg) {
  throw Error(ErrorKind::kGrammarSemantic, "invalid schema at " + Show(ptr) + ": " + msg);
}

void Converter::Unsupported(const std::string& kw, const std::string& ptr, const std::string& detail) {
  std::string msg = "unsupported keyword '" + kw + "' at " + Show(ptr) + (detail.empty() ? "" : ": " + detail);
  if (!negation_scope_.empty()) throw NegationFailed{negation_scope_.front(), msg};
  if (!o_.on_unsupported_warn) throw Error(ErrorKind::kUnsupported, msg);
  if (warned_.insert(msg).second) warnings_.push_back(msg);
}

// A JSON string of min_len..max_len characters; the character expression is built once
// per grammar (it is the same node everywhere, nodes being hash-consed).
ExprId Converter::AnyString(int64_t min_len, int64_t max_len) {
  if (Excluding()) return FilteredString(min_len, max_len, {});
  if (json_char_ == kNoExpr) json_char_ = JsonCharExpr(&g_);
  return JsonStringExpr(&g_, min_len, max_len, json_char_);
}

ExprId Converter::Ws() {
  // One node (nodes are hash-consed): built once, not per separator.
  if (ws_ == kNoExpr) {
    ws_ = g_.AddRepeat(Cls(&g_, {{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}), 0,
                       o_.max_whitespace_cnt >= 0 ? o_.max_whitespace_cnt : kUnbounded);
  }
  return ws_;
}

// "{" / "[" followed by what precedes the first member at this depth.
ExprId Converter::Open(char c, int depth) {
  if (o_.any_whitespace) return g_.AddSequence({Lit(&g_, std::string(1, c)), Ws()});
  if (Indented()) return Lit(&g_, std::string(1, c) + Newline(depth + 1));
  return Lit(&g_, std::string(1, c));
}

ExprId Converter::Close(char c, int depth) {
  if (o_.any_whitespace) return g_.AddSequence({Ws(), Lit(&g_, std::string(1, c))});
  if (Indented()) return Lit(&g_, Newline(depth) + c);
  return Lit(&g_, std::string(1, c));
}

ExprId Converter::Empty(char open, char close) {
  if (o_.any_whitespace) return g_.AddSequence({Lit(&g_, std::string(1, open)), Ws(), Lit(&g_, std::string(1, close))});
  return Lit(&g_, std::string(1, open) + close);
}

ExprId Converter::ItemSep(int depth) {
  if (o_.any_whitespace) {
    if (item_sep_expr_ == kNoExpr) item_sep_expr_ = g_.AddSequence({Ws(), Lit(&g_, item_sep_), Ws()});
    return item_sep_expr_;
  }
  if (Indented()) return Lit(&g_, item_sep_ + Newline(depth + 1));
  return Lit(&g_, item_sep_);
}

ExprId Converter::KeySep() {
  if (o_.any_whitespace) {
    if (key_sep_expr_ == kNoExpr) key_sep_expr_ = g_.AddSequence({Ws(), Lit(&g_, key_sep_), Ws()});
    return key_sep_expr_;
  }
  return Lit(&g_, key_sep_);
}

// ------------------------------------------------------------------ $ref
Ref Converter::Resolve(const std::string& ref, const std::string& at) {
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
    // xgrammar's phrase (what is missing) leads; then which $ref.
    std::string missing = "Cannot find field '" + key + "'";
    if (cur->is_object()) {
      cur = cur->Find(key);
    } else if (cur->is_array()) {
      missing = "Cannot find array index '" + key + "' (of " + std::to_string(cur->items().size()) + " items)";
      // RFC 6901 array-index: "0" or a digit string without a leading zero (no sign, no space).
      bool digits = !key.empty() && key.size() <= 9 && (key == "0" || key[0] != '0') &&
                    std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      size_t idx = digits ? static_cast<size_t>(std::stol(key)) : 0;
      cur = digits && idx < cur->items().size() ? &cur->items()[idx] : nullptr;
    } else {
      cur = nullptr;
    }
    if (!cur) Invalid(at, missing + ": $ref '" + ref + "' does not resolve");
  }
  return Ref{cur, ptr};
}

const JsonValue* Converter::FindAnchor(const JsonValue& v, const std::string& name) {
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
int64_t Converter::NonNegInt(const JsonValue& v, const std::string& ptr, const std::string& kw) {
  if (!v.is_number() || !v.is_integer()) Invalid(ptr, kw + " must be an integer (a non-negative one)");
  if (v.as_number() < 0) Invalid(ptr, kw + " must be a non-negative integer");
  double d = v.as_number();
  // A maximum past int32 bounds nothing a generation reaches; a minimum past it is refused, as
  // xgrammar refuses it (the counts of the parser's repetitions are int32).
  if (kw.compare(0, 3, "min") == 0 && d > static_cast<double>(INT32_MAX)) {
    throw Error(ErrorKind::kLimitExceeded, "schema at " + Show(ptr) + ": " + kw + " " + v.number_literal() +
                                               " is above the largest supported lower bound, 2147483647");
  }
  return d > 4e18 ? int64_t(4e18) : static_cast<int64_t>(d);
}

// ------------------------------------------------------------------ lowering
std::string Converter::Key(const std::vector<Ref>& parts, int depth) {
  std::string k;
  for (const auto& p : parts) k += p.ptr + "\x01" + std::to_string(reinterpret_cast<uintptr_t>(p.v)) + "\x02";
  return k + "@" + std::to_string(Depth(depth));
}

std::string Converter::RuleName(const std::vector<Ref>& parts) {
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

RuleId Converter::ConjRule(const std::vector<Ref>& given, int depth) {
  std::vector<Ref> parts;
  for (const auto& p : given) parts.push_back(ThroughLoneRefs(p));
  std::string key = Key(parts, depth);
  auto it = rules_.find(key);
  if (it != rules_.end()) return it->second;
  // Rules are lowered depth-first, so a long chain of distinct $refs nests this call; bound
  // it (the native stack is finite) as the JSON parser bounds document nesting. Each level
  // is several deep frames (8 KiB of stack and more where allOf merges through $ref
  // recursion, more under sanitizers), hence the cap of 250.
  const int kMaxRuleNesting = CappedNestingDepth(kMaxSchemaNestingDepth);
  const ScopedDepth level(&rule_nesting_);
  if (rule_nesting_ > kMaxRuleNesting) {
    throw Error(ErrorKind::kLimitExceeded,
                "schema nests more than " + std::to_string(kMaxRuleNesting) + " subschemas deep at " +
                    (parts.empty() || parts.back().ptr.empty() ? std::string("(root)") : parts.back().ptr) +
                    " (max_nesting_depth, at most " + std::to_string(kMaxSchemaNestingDepth) +
                    " here; see xg2_jax.set_limits)");
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
            "Circular $ref chain: the schema refers to itself without constraining ($ref cycle with no base case)");
  }
  g_.SetRuleBody(r, Lower(m, depth, 0));
  cur_ptr_ = saved;
  return r;
}

ExprId Converter::Lower(const Merged& m, int depth, int expansion) {
  if (m.is_false) return Never();
  if (!m.any_of.empty()) {
    if (expansion > 16) {
      Unsupported("anyOf", m.any_of[0][0].ptr, "nested too deeply");
      return Never();
    }
    Merged base = m;
    // A group merged twice (its schema reached along two paths) constrains once.
    auto same_group = [](const std::vector<Ref>& a, const std::vector<Ref>& b) {
      return a.size() == b.size() &&
             std::equal(a.begin(), a.end(), b.begin(), [](const Ref& x, const Ref& y) { return x.v == y.v; });
    };
    for (size_t i = base.any_of.size(); i-- > 1;) {
      for (size_t j = 0; j < i; ++j) {
        if (same_group(base.any_of[i], base.any_of[j]) && base.any_of_exclusive[i] == base.any_of_exclusive[j]) {
          base.any_of.erase(base.any_of.begin() + static_cast<std::ptrdiff_t>(i));
          base.any_of_at.erase(base.any_of_at.begin() + static_cast<std::ptrdiff_t>(i));
          base.any_of_exclusive.erase(base.any_of_exclusive.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    }
    auto [group, exclusive, at] = base.TakeFirstAnyOf();
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
          Unsupported(kw, ptr.substr(0, prev == std::string::npos ? 0 : prev),
                      "too many combinations of alternatives to expand");
          return Never();
        }
        Merged c = base;
        MergeInto(&c, a, 0);
        alts.push_back(Lower(c, depth, expansion + 1));
      }
    }
    return g_.AddChoice(alts);
  }
  if (!m.unevaluated_props.empty() || !m.unevaluated_items.empty()) {
    Merged resolved = m;
    ResolveUnevaluated(&resolved);
    return Lower(resolved, depth, expansion);
  }
  uint8_t types = m.types;
  if (m.has_enum) return EnumExpr(m, depth);  // each value checked (EnumValueAllowed)
  std::vector<ExprId> alts;
  if (types & kNull) alts.push_back(Lit(&g_, "null"));
  if (types & kBool) {
    std::vector<ExprId> bools;
    for (bool b : {true, false})
      if (!m.Excludes(JsonValue::Bool(b))) bools.push_back(Lit(&g_, b ? "true" : "false"));
    alts.push_back(g_.AddChoice(bools));
  }
  if (types & (kInt | kNum)) alts.push_back(NumericExpr(m, (types & kNum) == 0));
  if (types & kStr) alts.push_back(StringExpr(m));
  if (types & kArr) alts.push_back(ArrayExpr(m, depth));
  if (types & kObj) alts.push_back(m.some_props.empty() ? ObjectExpr(m, depth) : SomePropertyObject(m, depth));
  if (alts.empty()) return Never();
  return alts.size() == 1 ? alts[0] : g_.AddChoice(alts);
}

// A value of the conjunction (false: kNoExpr).
Ref Converter::ThroughLoneRefs(const Ref& r) {
  Ref at = r;
  std::vector<const JsonValue*> seen{r.v};
  for (;;) {
    if (at.v == nullptr || !at.v->is_object()) return at;
    const JsonValue* ref = at.v->Find("$ref");
    if (ref == nullptr || !ref->is_string()) return at;
    if (!ref_overrides_siblings_ && !RefStandsAlone(*at.v)) return at;
    Ref next = Resolve(ref->as_string(), at.ptr);
    // A cycle (or a missing target) is left to the merge, which reports it where it starts.
    if (next.v == nullptr || std::find(seen.begin(), seen.end(), next.v) != seen.end()) return r;
    seen.push_back(next.v);
    at = next;
  }
}

ExprId Converter::ValueRef(const std::vector<Ref>& parts, int depth) {
  // A schema met twice (the same property through two allOf branches or $refs) is one
  // conjunct: merging it again would repeat its combinators, which multiply when expanded.
  std::vector<Ref> distinct;
  for (const auto& part : parts) {
    const Ref p = ThroughLoneRefs(part);
    if (p.v->is_bool() && !p.v->as_bool()) return kNoExpr;
    if (std::none_of(distinct.begin(), distinct.end(), [&](const Ref& d) { return d.v == p.v; })) distinct.push_back(p);
  }
  return g_.AddRuleRef(ConjRule(distinct, depth));
}

}  // namespace xg2::jsonschema

namespace xg2 {

using jsonschema::Converter;
using jsonschema::NegationFailed;

JsonSchemaResult JsonSchemaToGrammar(const JsonValue& schema, const JsonSchemaOptions& options) {
  if (!schema.is_object() && !schema.is_bool()) {
    throw Error(ErrorKind::kGrammarSemantic, "invalid schema at (root): a schema must be an object or a boolean");
  }
  if (options.indent < -1) throw Error(ErrorKind::kInvalidArgument, "indent must be >= 0 or -1 (none)");
  return WithDeepStack([&] {
    std::map<std::string, std::string> no_negation;
    for (;;) {
      try {
        return Converter(schema, options, no_negation).Run();
      } catch (const NegationFailed& f) {
        // Bounded: every retry adds one of the schema's oneOf pointers.
        no_negation.emplace(f.one_of_at, f.reason);
      }
    }
  });
}

JsonSchemaResult JsonSchemaToGrammar(const std::string& schema_json, const JsonSchemaOptions& options) {
  // The document is parsed and freed (both recursive) where the conversion runs.
  return WithDeepStack([&] { return JsonSchemaToGrammar(ParseJson(schema_json), options); });
}

}  // namespace xg2
