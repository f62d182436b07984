// Negation: `not` merged as the positive form of its complement where one exists, and strings
// that must not match a pattern (automaton products).
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {

// `not` where it reduces to removing types or enum values.
void Converter::MergeNot(Merged* m, const Ref& r, const std::string& at) {
  const JsonValue& s = *r.v;
  if (s.is_bool()) {
    if (s.as_bool()) m->is_false = true;
    return;
  }
  if (!s.is_object()) Invalid(r.ptr, NotASchemaMessage(r.ptr));
  // A negated member list merged as positive members must not count as evaluated for
  // unevaluatedProperties / unevaluatedItems (a `not` keeps no annotations).
  for (const char* k : {"properties", "patternProperties", "additionalProperties", "propertyNames", "items",
                        "prefixItems", "additionalItems", "contains", "allOf", "anyOf", "oneOf", "$ref", "not"}) {
    if (s.Find(k) != nullptr) m->evaluation_unknown = true;
  }
  bool only_type = true, only_enum = true, empty = true, only_required = true, only_pattern = true, only_format = true,
       only_multiple = true;
  for (const auto& kv : s.members()) {
    if (IsAnnotation(kv.first)) continue;
    empty = false;
    if (kv.first != "pattern") only_pattern = false;
    if (kv.first != "format") only_format = false;
    if (kv.first != "multipleOf") only_multiple = false;
    if (kv.first != "required") only_required = false;
    if (kv.first != "type") only_type = false;
    if (kv.first != "enum" && kv.first != "const") only_enum = false;
  }
  if (empty) {
    m->is_false = true;
    return;
  }
  if (MergeSomeProperty(m, r)) return;
  if (only_pattern && !(ref_overrides_siblings_ && s.Find("$ref"))) {
    // A string no match of the pattern is found in (non-strings satisfy `pattern`).
    const JsonValue& pv = *s.Find("pattern");
    if (!pv.is_string()) Invalid(r.ptr + "/pattern", "pattern must be a string");
    m->constrained = true;
    m->types &= kStr;
    m->not_patterns.push_back(Ref{&pv, r.ptr});
    return;
  }
  if (only_multiple && !(ref_overrides_siblings_ && s.Find("$ref"))) {
    // A number no such divisor divides (non-numbers satisfy `multipleOf`).
    const JsonValue& dv = *s.Find("multipleOf");
    if (!dv.is_number() || dv.as_number() <= 0) Invalid(r.ptr + "/multipleOf", BadMultipleOfMessage(dv));
    m->constrained = true;
    m->types &= kInt | kNum;
    m->not_multiple_of.push_back(Ref{&dv, r.ptr + "/multipleOf"});
    return;
  }
  if (only_format) {
    // A string not in the format (non-strings and unknown formats satisfy `format`).
    const JsonValue& fv = *s.Find("format");
    if (!fv.is_string() || !IsAssertedFormat(fv.as_string())) {
      m->is_false = true;
      return;
    }
    m->constrained = true;
    m->types &= kStr;
    m->not_formats.push_back(Ref{&fv, r.ptr});
    return;
  }
  if (only_required) {
    // Not having all of the names: expressible as one absent property (objects only).
    const JsonValue& req = *s.Find("required");
    if (!req.is_array()) Invalid(r.ptr + "/required", "required must be an array");
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
    if (t & kInt && !(t & kNum) && (m->types & kNum)) {
      // Numbers that are not integers: literals with a nonzero fraction digit (NumericExpr).
      m->not_integer = true;
      m->constrained = true;
    }
    m->types &= static_cast<uint8_t>(~t);
    if ((t & kNum) && (m->types & kInt)) m->types &= static_cast<uint8_t>(~kInt);
    return;
  }
  if (only_enum) {
    Merged sub;
    MergeInto(&sub, r, 0);
    if (m->has_enum) {
      std::vector<JsonValue> keep;
      for (const auto& a : m->enum_values) {
        if (std::find(sub.enum_values.begin(), sub.enum_values.end(), a) == sub.enum_values.end()) keep.push_back(a);
      }
      m->enum_values = keep;
      return;
    }
    // Scalars are excluded from their type's language: null and both booleans as types,
    // strings from the string language (StringExpr), numbers from the number language
    // (NumericExpr) and one boolean from the literals written; an enum merged later drops
    // them too. Arrays and objects have no such complement here.
    uint8_t remove = 0;
    bool t = false, f = false;
    for (const auto& x : sub.enum_values) {
      if (x.is_null()) remove |= kNull;
      if (x.is_bool()) (x.as_bool() ? t : f) = true;
    }
    if (std::any_of(sub.enum_values.begin(), sub.enum_values.end(),
                    [](const JsonValue& x) { return x.is_array() || x.is_object(); })) {
      Unsupported("not", at, "excluding specific array or object values");
      return;
    }
    if (t && f) remove |= kBool;
    for (const auto& x : sub.enum_values) {
      if (x.is_string() || x.is_number() || (x.is_bool() && t != f)) m->not_values.push_back(x);
    }
    m->constrained = true;
    m->types &= static_cast<uint8_t>(~remove);
    return;
  }
  if (MergeNegation(m, r, at)) return;
  Unsupported("not", at);
}

// `not` of one member keyword: some property whose key and value break it. Shapes: a
// propertyNames alone (a key outside it); one patternProperties entry alone (a key matching
// the pattern, its value outside the schema); additionalProperties beside properties and
// patternProperties whose schemas are all true (a key none of them names, its value outside
// additionalProperties). NegateMembers leaves the last two; other shapes return false.
bool Converter::MergeSomeProperty(Merged* m, const Ref& r) {
  const JsonValue *props = nullptr, *patterns = nullptr, *add = nullptr, *names = nullptr;
  for (const auto& kv : r.v->members()) {
    if (IsAnnotation(kv.first)) continue;
    if (kv.first == "properties")
      props = &kv.second;
    else if (kv.first == "patternProperties")
      patterns = &kv.second;
    else if (kv.first == "additionalProperties")
      add = &kv.second;
    else if (kv.first == "propertyNames")
      names = &kv.second;
    else
      return false;
  }
  auto all_true = [](const JsonValue* v) {
    return v == nullptr || (v->is_object() && std::all_of(v->members().begin(), v->members().end(),
                                                          [](const auto& pm) { return IsTrueSchema(pm.second); }));
  };
  auto synth = [&](int which, const std::function<JsonValue()>& make) {
    return Ref{Synthesized(r.v, which, make), r.ptr};
  };
  Merged::SomeProperty w;
  w.ptr = r.ptr;
  if (names != nullptr) {
    if (props || patterns || add) return false;
    w.keys.push_back(synth(10, [&] { return NotOf(*names); }));
  } else if (add != nullptr) {
    if (!all_true(props) || !all_true(patterns)) return false;
    if (props && !props->members().empty()) {
      w.keys.push_back(synth(10, [&] {
        std::vector<JsonValue> declared;
        for (const auto& pm : props->members()) declared.push_back(JsonValue::String(pm.first));
        return NotOf(JsonValue::Object({{"enum", JsonValue::Array(std::move(declared))}}));
      }));
    }
    if (patterns) {
      int which = 11;
      for (const auto& pm : patterns->members()) {
        w.keys.push_back(
            synth(which++, [&] { return NotOf(JsonValue::Object({{"pattern", JsonValue::String(pm.first)}})); }));
      }
    }
    w.value.push_back(synth(9, [&] { return NotOf(*add); }));
  } else if (patterns != nullptr && props == nullptr) {
    if (!patterns->is_object() || patterns->members().size() != 1) return false;
    const auto& pm = patterns->members()[0];
    w.keys.push_back(synth(10, [&] { return JsonValue::Object({{"pattern", JsonValue::String(pm.first)}}); }));
    w.value.push_back(synth(9, [&] { return NotOf(pm.second); }));
  } else {
    return false;
  }
  m->types &= kObj;
  m->constrained = true;
  m->some_props.push_back(std::move(w));
  return true;
}

// `not S` for other shapes: S rewritten into an equivalent positive schema (De Morgan over
// combinators and independent keywords, each keyword's complement within the type it applies
// to), merged in place of the `not`. Leaves the rewrite produces as {"not": ...} are shapes
// MergeNot handles directly (type, enum/const, one required name). False when some part has
// no exact positive form.
bool Converter::MergeNegation(Merged* m, const Ref& r, const std::string& at) {
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

std::optional<JsonValue> Converter::Negate(const JsonValue& s, const std::string& ptr, int guard) {
  return NegateSchema(
      s, ptr, ref_overrides_siblings_,
      [this](const std::string& ref, const std::string& at) {
        Ref t = Resolve(ref, at);
        return std::make_pair(t.v, t.ptr);
      },
      guard);
}

// Strings with `not {pattern}`: the automaton of any string content, intersected with the
// positive patterns and formats and with the complements of the negated patterns (over every
// JSON spelling, so a match written with escapes is excluded too), then the length bounds.
ExprId Converter::NegatedPatternString(const Merged& m) {
  const std::string at_ptr = !m.not_patterns.empty()  ? m.not_patterns[0].ptr
                             : !m.not_formats.empty() ? m.not_formats[0].ptr
                                                      : cur_ptr_;
  try {
    if (m.patterns.size() + m.formats.size() + m.not_patterns.size() + m.not_formats.size() + 1 > 63)
      throw Error(ErrorKind::kLimitExceeded, "more than 63 patterns");
    Grammar scratch;
    ByteDfaSpec universe =
        ByteDfaOfExpr(scratch, scratch.AddRepeat(JsonCharExpr(&scratch), 0, kUnbounded), kMaxPatternDfaStates);
    std::vector<ByteDfaSpec> parts;
    for (const auto& p : m.patterns) {
      ExprId c = PatternContent(p);
      if (c == kNoExpr) return kNoExpr;
      parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g_, c, kMaxPatternDfaStates)));
    }
    for (const auto& f : m.formats) {
      try {
        parts.push_back(TrimAndMinimize(ByteDfaOfExpr(g_, FormatContent(f.v->as_string()), kMaxPatternDfaStates)));
      } catch (const UnsupportedKeyword& u) {
        Unsupported(u.keyword, f.ptr, u.detail);
        return kNoExpr;
      }
    }
    const uint64_t want = (uint64_t{1} << parts.size()) - 1;
    if (m.ExcludesStrings()) {
      std::vector<std::string> names;
      for (const auto& x : m.not_values)
        if (x.is_string()) names.push_back(x.as_string());
      parts.push_back(TrimAndMinimize(JsonStringSpellingsDfa(names, kMaxPatternDfaStates)));
    }
    for (const auto& p : m.not_patterns) {
      RegexOptions ro;
      ro.search_semantics = true;
      ExprId e = RegexToJsonContentAllSpellings(&scratch, RegexToExpr(&scratch, p.v->as_string(), ro));
      parts.push_back(TrimAndMinimize(ByteDfaOfExpr(scratch, e, kMaxPatternDfaStates)));
    }
    for (const auto& f : m.not_formats) {
      try {
        ExprId e = FormatContentExpr(&scratch, f.v->as_string());  // every spelling: a complement
        parts.push_back(TrimAndMinimize(ByteDfaOfExpr(scratch, e, kMaxPatternDfaStates)));
      } catch (const UnsupportedKeyword& u) {
        Unsupported(u.keyword, f.ptr, u.detail);
        return kNoExpr;
      }
    }
    const uint64_t care = (uint64_t{1} << parts.size()) - 1;
    ByteDfaSpec dfa =
        TrimAndMinimize(SelectByParts(ProductWithParts(universe, parts, kMaxPatternDfaStates), care, want));
    if (m.min_len > 0 || m.max_len >= 0)
      dfa = TrimAndMinimize(IntersectJsonLength(dfa, m.min_len, m.max_len, kMaxPatternDfaStates));
    if (ByteDfaEmpty(dfa)) return Never();
    return g_.AddSequence({Lit(&g_, "\""), g_.AddByteDfa(std::move(dfa)), Lit(&g_, "\"")});
  } catch (const Error& e) {
    Unsupported("not", at_ptr, std::string("pattern complement: ") + e.what());
    return kNoExpr;
  }
}

}  // namespace xg2::jsonschema
