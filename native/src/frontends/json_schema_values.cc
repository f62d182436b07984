// Values: enum/const literals, numbers and arrays (items, prefixItems, uniqueItems).
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {

ExprId Converter::EnumExpr(const Merged& m, int depth) {
  std::vector<ExprId> alts;
  for (const JsonValue* v : EnumValues(m))
    if (EnumValueAllowed(m, *v)) alts.push_back(LiteralExpr(*v, depth));
  return g_.AddChoice(alts);
}

ExprId Converter::LiteralExpr(const JsonValue& v, int depth) {
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
    case JsonValue::Type::kString: return QuotedLiteral(v.as_string());
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

ExprId Converter::QuotedLiteral(const std::string& s) {
  ExprId content = JsonStringContentLiteral(&g_, s);
  if (Excluding()) content = WithoutExcluded(content);  // the spellings without an excluded substring
  return g_.AddSequence({Lit(&g_, "\""), content, Lit(&g_, "\"")});
}

ExprId Converter::NumericExpr(const Merged& m, bool integer) {
  ExprId e = NumericExprOf(m, integer);
  if (e == kNoExpr || !IsNever(e)) return e;
  if (m.lo.present && m.hi.present &&
      (m.lo.value > m.hi.value || (m.lo.value == m.hi.value && (m.lo.exclusive || m.hi.exclusive)))) {
    return NeverBecause("minimum is greater than maximum: " + m.lo.literal + " > " + m.hi.literal);
  }
  if (!m.multiple_of.empty()) return NeverBecause("range contains no multipleOf value");
  return NeverBecause(integer ? "the range contains no integer" : "no number is left");
}

ExprId Converter::NumericExprOf(const Merged& m, bool integer) {
  if (std::any_of(m.not_values.begin(), m.not_values.end(), [](const JsonValue& v) { return v.is_number(); })) {
    Merged rest = m;
    rest.not_values.clear();
    try {
      return WithoutNumbers(m, NumericExprOf(rest, integer));
    } catch (const UnsupportedKeyword& u) {
      Unsupported(u.keyword, cur_ptr_, u.detail);
      return NumericExprOf(rest, integer);
    }
  }
  try {
    if (!m.multiple_of.empty() || m.not_integer || !m.not_multiple_of.empty()) {
      const JsonValue* k = m.multiple_of.empty() ? nullptr : m.multiple_of.front().v;
      bool int_k = k && k->is_integer() && k->as_number() <= 1e15;
      if (integer && m.multiple_of.size() == 1 && int_k && !m.not_integer && m.not_multiple_of.empty()) {
        try {
          return IntegerMultipleOfExpr(&g_, static_cast<int64_t>(k->as_number()), m.lo, m.hi);
        } catch (const UnsupportedKeyword&) {
          // one-sided bounds, large divisors: the automaton below
        }
      }
      std::vector<std::string> divisors;
      for (const auto& d : m.multiple_of) divisors.push_back(d.v->number_literal());
      if (divisors.size() > 64) throw UnsupportedKeyword{"multipleOf", "more than 64 divisors"};
      std::vector<std::string> not_divisors;
      for (const auto& d : m.not_multiple_of) not_divisors.push_back(d.v->number_literal());
      return MultipleOfExpr(&g_, divisors, m.not_integer, integer, m.lo, m.hi, not_divisors);
    }
    return integer ? IntegerExpr(&g_, m.lo, m.hi) : NumberExpr(&g_, m.lo, m.hi);
  } catch (const UnsupportedKeyword& u) {
    Unsupported(u.keyword, cur_ptr_, u.detail);
    return integer ? IntegerExpr(&g_, NumBound(), NumBound()) : NumberExpr(&g_, NumBound(), NumBound());
  }
}

ExprId Converter::WithoutNumbers(const Merged& m, ExprId e) {
  try {
    Grammar scratch;
    std::vector<ExprId> excluded;
    for (const auto& v : m.not_values)
      if (v.is_number()) excluded.push_back(NumberEqualExpr(&scratch, v.number_literal()));
    ExprId any = scratch.AddRepeat(scratch.AddCharClass({{0, 0x7F}}, false), 0, kUnbounded);
    ExprId exponent = scratch.AddSequence({any, scratch.AddCharClass({{'E', 'E'}, {'e', 'e'}}, false), any});
    std::vector<ByteDfaSpec> parts{
        TrimAndMinimize(ByteDfaOfExpr(scratch, scratch.AddChoice(excluded), kMaxPatternDfaStates)),
        TrimAndMinimize(ByteDfaOfExpr(scratch, exponent, kMaxPatternDfaStates))};
    ByteDfaSpec numbers = TrimAndMinimize(ByteDfaOfExpr(g_, e, kMaxPatternDfaStates));
    ByteDfaSpec dfa = TrimAndMinimize(SelectByParts(ProductWithParts(numbers, parts, kMaxPatternDfaStates), 3, 0));
    return ByteDfaEmpty(dfa) ? Never() : g_.AddByteDfa(std::move(dfa));
  } catch (const Error& err) {
    throw UnsupportedKeyword{"not", std::string("excluding numbers: ") + err.what()};
  }
}

ExprId Converter::ArrayExpr(const Merged& m, int depth) {
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
  if (m.min_items > p && item == kNoExpr) {
    return NeverBecause("minItems is greater than the number of prefixItems, but additional items are not allowed: " +
                        std::to_string(m.min_items) + " > " + std::to_string(p));
  }
  if (max >= 0 && m.min_items > max) {
    return NeverBecause("minItems is greater than maxItems: " + std::to_string(m.min_items) + " > " +
                        std::to_string(max));
  }
  const bool vacuous = std::all_of(m.contains_counts.begin(), m.contains_counts.end(),
                                   [](const auto& c) { return c.first == 0 && c.second < 0; });
  if (!m.contains.empty() && !vacuous) {  // (minContains 0 without maxContains asserts nothing)
    ExprId e = ContainsArrayExpr(m, items, item, p, depth);
    if (e != kNoExpr) return e;  // else reported; on "warn" contains is not enforced
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

// Arrays with one `contains` and no prefix: some item k matches items and contains, the
// others items, and the count lies in [minItems, maxItems]. One alternative per position k of
// a matching item up to the last one the bounds pin down (k exactly, then at least k when
// unbounded): arrays with several matches are in several alternatives, which a union allows.
ExprId Converter::ContainsArrayExpr(const Merged& m, const std::vector<Ref>& items, ExprId item, int64_t prefix,
                                    int depth) {
  constexpr int64_t kMaxPositions = 64;  // alternatives one array expression may list
  const bool counted = std::any_of(m.contains_counts.begin(), m.contains_counts.end(),
                                   [](const auto& c) { return c.first != 1 || c.second >= 0; });
  if (counted) return CountedContainsArrayExpr(m, items, item, prefix, depth);
  const int64_t lo = std::max<int64_t>(m.min_items, 1), hi = m.max_items;
  const int64_t last = hi >= 0 ? hi - 1 : lo - 1;
  if (m.contains.size() == 2 && prefix == 0 && hi < 0 && lo <= 1) return TwoContainsArrayExpr(m, items, item, depth);
  if (m.contains.size() > 1 || prefix > 0 || last >= kMaxPositions) {
    Unsupported(
        "contains", m.contains[0].ptr,
        "together with prefixItems, another contains, or minItems/maxItems above " + std::to_string(kMaxPositions));
    return kNoExpr;
  }
  if (hi >= 0 && lo > hi) {
    return NeverBecause("minItems is greater than maxItems: " + std::to_string(lo) + " > " + std::to_string(hi));
  }
  std::vector<Ref> c = items;
  c.push_back(m.contains[0]);
  ExprId ce = ValueRef(c, depth + 1);
  if (ce == kNoExpr) return Never();
  if (item == kNoExpr) return lo <= 1 ? g_.AddSequence({Open('[', depth), ce, Close(']', depth)}) : Never();
  std::vector<ExprId> alts;
  for (int64_t k = 0; k <= last; ++k) {
    bool open_before = hi < 0 && k == last;  // the last position of an unbounded array: k or more before
    ExprId before = g_.AddRepeat(g_.AddSequence({item, ItemSep(depth)}), k, open_before ? kUnbounded : k);
    int64_t after_lo = std::max<int64_t>(0, lo - 1 - k);
    int64_t after_hi = hi >= 0 ? hi - 1 - k : kUnbounded;
    ExprId after = g_.AddRepeat(g_.AddSequence({ItemSep(depth), item}), after_lo, after_hi);
    alts.push_back(g_.AddSequence({before, ce, after}));
  }
  ExprId body = alts.size() == 1 ? alts[0] : g_.AddChoice(alts);
  return g_.AddSequence({Open('[', depth), body, Close(']', depth)});
}

// Arrays with one `contains` C counted by minContains / maxContains (cmin..cmax matching
// items) and no prefix, as an automaton over items with one rule per state (a, b): a items
// counted as matching C, b items written (each capped where it no longer matters: a at cmin
// when cmax is unbounded, b at minItems when maxItems is). An item matching C may be counted;
// with cmax bounded every other item must match `not C` (refused where C has no exact
// negation), with cmax unbounded any item may go uncounted, which a union allows.
ExprId Converter::CountedContainsArrayExpr(const Merged& m, const std::vector<Ref>& items, ExprId item, int64_t prefix,
                                           int depth) {
  constexpr int64_t kMaxStates = 4096;  // rules one array may take
  const Ref& c = m.contains[0];
  const auto [cmin, cmax] = m.contains_counts[0];
  const char* kw = cmax >= 0 ? "maxContains" : "minContains";
  const std::string at = c.ptr.substr(0, c.ptr.rfind('/'));  // the schema holding the keywords
  if (m.contains.size() > 1 || prefix > 0) {
    Unsupported(kw, at, "together with prefixItems or another contains");
    return kNoExpr;
  }
  if (cmax >= 0 && cmin > cmax) {
    return NeverBecause("minContains is greater than maxContains: " + std::to_string(cmin) + " > " +
                        std::to_string(cmax));
  }
  const int64_t lo = m.min_items, hi = m.max_items;  // hi -1: unbounded
  const int64_t top_a = cmax >= 0 ? cmax : cmin, top_b = hi >= 0 ? hi : lo;
  if (top_a >= kMaxStates || top_b >= kMaxStates || (top_a + 1) * (top_b + 1) > kMaxStates) {
    Unsupported(kw, at, "the counts (with minItems/maxItems) need more than " + std::to_string(kMaxStates) + " states");
    return kNoExpr;
  }
  auto matching = [&](const Ref& extra) {
    std::vector<Ref> refs = items;
    refs.push_back(extra);
    const ExprId e = ValueRef(refs, depth + 1);
    return e == kNoExpr ? Never() : e;
  };
  const ExprId counted = item == kNoExpr ? Never() : matching(c);
  ExprId other = item == kNoExpr ? Never() : item;
  if (cmax >= 0 && item != kNoExpr) {
    if (!Negate(*c.v, c.ptr, 0)) {
      Unsupported(kw, at, "the contains schema has no exact negation (the items it does not count)");
      return kNoExpr;
    }
    other = matching(Ref{Synthesized(c.v, 2, [&]() { return NotOf(*c.v); }), c.ptr + "/not"});
  }
  auto accepts = [&](int64_t a, int64_t b) { return a >= cmin && b >= lo; };
  auto next_a = [&](int64_t a) { return cmax >= 0 ? a + 1 : std::min(a + 1, cmin); };
  auto next_b = [&](int64_t b) { return hi >= 0 ? b + 1 : std::min(b + 1, lo); };
  // rules[a][b]: the items after state (a, b), each after a separator; made when first
  // reached, filled from the work list.
  std::vector<std::vector<RuleId>> rules(top_a + 1, std::vector<RuleId>(top_b + 1, -1));
  std::vector<std::pair<int64_t, int64_t>> pending;
  auto rule_of = [&](int64_t a, int64_t b) {
    if (rules[a][b] < 0) {
      rules[a][b] = NewRule("counted_items");
      pending.emplace_back(a, b);
    }
    return g_.AddRuleRef(rules[a][b]);
  };
  // The items of state (a, b) on, `lead` before the next (a separator, or nothing first).
  auto steps = [&](int64_t a, int64_t b, ExprId lead) {
    std::vector<ExprId> alts;
    if (hi >= 0 && b >= hi) return alts;
    if (cmax < 0 || a < cmax) alts.push_back(g_.AddSequence({lead, counted, rule_of(next_a(a), next_b(b))}));
    alts.push_back(g_.AddSequence({lead, other, rule_of(a, next_b(b))}));
    return alts;
  };
  const std::vector<ExprId> first = steps(0, 0, g_.AddEmpty());
  while (!pending.empty()) {
    const auto [a, b] = pending.back();
    pending.pop_back();
    std::vector<ExprId> alts = steps(a, b, ItemSep(depth));
    if (accepts(a, b)) alts.push_back(g_.AddEmpty());
    g_.SetRuleBody(rules[a][b], g_.AddChoice(alts));
  }
  const ExprId non_empty = g_.AddSequence({Open('[', depth), g_.AddChoice(first), Close(']', depth)});
  return accepts(0, 0) ? g_.AddChoice({Empty('[', ']'), non_empty}) : non_empty;
}

// Arrays of any length with two `contains` (A, B): one item matching both, or an item
// matching A before one matching B, or B before A; the other items match items.
ExprId Converter::TwoContainsArrayExpr(const Merged& m, const std::vector<Ref>& items, ExprId item, int depth) {
  auto matching = [&](std::vector<Ref> extra) {
    std::vector<Ref> c = items;
    c.insert(c.end(), extra.begin(), extra.end());
    return ValueRef(c, depth + 1);
  };
  ExprId a = matching({m.contains[0]}), b = matching({m.contains[1]}), both = matching(m.contains);
  if (a == kNoExpr || b == kNoExpr) return Never();
  std::vector<ExprId> alts;
  if (item == kNoExpr) {
    if (both != kNoExpr) alts.push_back(both);
  } else {
    ExprId before = g_.AddRepeat(g_.AddSequence({item, ItemSep(depth)}), 0, kUnbounded);
    ExprId after = g_.AddRepeat(g_.AddSequence({ItemSep(depth), item}), 0, kUnbounded);
    if (both != kNoExpr) alts.push_back(g_.AddSequence({before, both, after}));
    alts.push_back(g_.AddSequence({before, a, ItemSep(depth), before, b, after}));
    alts.push_back(g_.AddSequence({before, b, ItemSep(depth), before, a, after}));
  }
  if (alts.empty()) return Never();
  ExprId body = alts.size() == 1 ? alts[0] : g_.AddChoice(alts);
  return g_.AddSequence({Open('[', depth), body, Close(']', depth)});
}

// uniqueItems over items with finitely many values (an enum, booleans, null): each value at
// most once in any order, counted by minItems/maxItems; an AnyOrder node. kNoExpr (after
// reporting) for items with infinitely many values, or with prefixItems/contains.
ExprId Converter::UniqueArrayExpr(const Merged& m, const std::vector<Ref>& items, int depth) {
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

}  // namespace xg2::jsonschema
