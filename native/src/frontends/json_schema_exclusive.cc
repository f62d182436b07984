// oneOf is exact only when its alternatives cannot both match a value: then "exactly one" and
// "at least one" coincide and the anyOf lowering is right. This file proves that for the shapes
// schemas use to make alternatives distinguishable: different JSON types, disjoint enum/const
// sets, disjoint numeric ranges or length/item-count ranges, and a required property whose
// values cannot match the other alternative (a discriminator such as "kind": {"const": "a"},
// or a property the other alternative forbids).
#include <algorithm>

#include "frontends/json_schema_converter.h"  // NegationFailed

namespace xg2::jsonschema {
namespace {

constexpr int kMaxDepth = 4;  // how deep property discriminators are followed

uint8_t ValueType(const JsonValue& v) {
  if (v.is_null()) return kNull;
  if (v.is_bool()) return kBool;
  if (v.is_number()) return v.is_integer() ? kInt : kNum;
  if (v.is_string()) return kStr;
  if (v.is_array()) return kArr;
  return kObj;
}

// Counts of a string's code points (its decoded length under JSON Schema).
int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Lower bound `lo` lies above upper bound `hi`: no number satisfies both.
bool RangeEmpty(const NumBound& lo, const NumBound& hi) {
  if (!lo.present || !hi.present) return false;
  return lo.value > hi.value || (lo.value == hi.value && (lo.exclusive || hi.exclusive));
}

bool CountsDisjoint(int64_t min_a, int64_t max_a, int64_t min_b, int64_t max_b) {
  return (max_a >= 0 && max_a < min_b) || (max_b >= 0 && max_b < min_a);
}

bool Below(double x, const NumBound& lo) { return lo.present && (x < lo.value || (x == lo.value && lo.exclusive)); }
bool Above(double x, const NumBound& hi) { return hi.present && (x > hi.value || (x == hi.value && hi.exclusive)); }

// True when the literal value v cannot satisfy m (judged on m's simple constraints).
bool ValueExcluded(const JsonValue& v, const Merged& m) {
  if (m.is_false) return true;
  uint8_t t = ValueType(v);
  if (!(EffectiveTypes(m) & (t == kInt ? (kInt | kNum) : t))) return true;
  if (m.has_enum) return std::find(m.enum_values.begin(), m.enum_values.end(), v) == m.enum_values.end();
  if (v.is_number()) return Below(v.as_number(), m.lo) || Above(v.as_number(), m.hi);
  if (v.is_string()) {
    int64_t n = CodePoints(v.as_string());
    return n < m.min_len || (m.max_len >= 0 && n > m.max_len);
  }
  if (v.is_array()) {
    int64_t n = static_cast<int64_t>(v.items().size());
    return n < m.min_items || (m.max_items >= 0 && n > m.max_items);
  }
  if (v.is_object()) {
    for (const auto& r : m.required) {
      if (!v.Find(r)) return true;
    }
  }
  return false;
}

// The schemas a value of property `name` must satisfy in m (a superset: `additionalProperties`
// beside a declaration elsewhere is left out). Sets *forbidden when m allows no such property;
// returns false when nothing is known about it (any value).
bool PropertySchema(const Merged& m, const std::string& name, std::vector<Ref>* out, bool* forbidden) {
  *forbidden = m.Forbids(name);
  if (*forbidden) return true;
  for (const auto& p : m.props) {
    if (p.first == name) {
      *out = p.second;
      return true;
    }
  }
  if (!m.pattern_props.empty()) return false;  // the name may match a pattern
  for (const auto& a : m.additional) {
    if (a.v->is_bool() && !a.v->as_bool()) {
      *forbidden = true;
      return true;
    }
  }
  if (m.additional.empty()) return false;
  *out = m.additional;
  return true;
}

// A property required by `a` whose value cannot satisfy `b`'s schema for it (or that `b`
// forbids).
bool DiscriminatedBy(const Merged& a, const Merged& b, const MergeFn& merge, int depth) {
  if (depth >= kMaxDepth) return false;
  for (const auto& name : a.required) {
    std::vector<Ref> bs;
    bool forbidden = false;
    if (!PropertySchema(b, name, &bs, &forbidden)) continue;
    if (forbidden) return true;
    std::vector<Ref> as;
    bool a_forbidden = false;
    if (!PropertySchema(a, name, &as, &a_forbidden)) continue;
    if (a_forbidden) return true;  // a itself cannot hold a value at all
    if (ProvablyDisjoint(merge(as), merge(bs), merge, depth + 1)) return true;
  }
  return false;
}

// The types a value of m can have, narrowed by its anyOf/oneOf groups: one of each group's
// alternatives must hold, so the value's type is among their types (each alternative merged
// alone, a superset of what it admits beside m). Followed `depth` groups deep; a group whose
// alternative cannot be merged here narrows nothing.
uint8_t TypesWithCombinators(const Merged& m, const MergeFn& merge, int depth) {
  uint8_t t = EffectiveTypes(m);
  if (depth <= 0) return t;
  for (const auto& group : m.any_of) {
    uint8_t any = 0;
    for (const auto& alt : group) {
      try {
        any |= TypesWithCombinators(merge({alt}), merge, depth - 1);
      } catch (const Error&) {
        any = kAllTypes;  // unknown: the group stays unexplored (its lowering reports it)
      } catch (const NegationFailed&) {
        any = kAllTypes;
      }
      if (any == kAllTypes) break;
    }
    t &= any;
  }
  return t;
}

}  // namespace

uint8_t EffectiveTypes(const Merged& m) {
  if (m.is_false) return 0;
  uint8_t t = m.types;
  if (!m.has_enum) return t;
  uint8_t e = 0;
  for (const auto& v : m.enum_values) {
    uint8_t vt = ValueType(v);
    // An integer-valued enum member is a valid "number" too.
    if (vt == kInt ? (t & (kInt | kNum)) : (t & vt)) e |= vt;
  }
  return e;
}

bool ProvablyDisjoint(const Merged& a, const Merged& b, const MergeFn& merge, int depth) {
  constexpr int kCombinatorDepth = 3;  // anyOf/oneOf groups looked into for types
  uint8_t ta = TypesWithCombinators(a, merge, kCombinatorDepth), tb = TypesWithCombinators(b, merge, kCombinatorDepth);
  // Integers are numbers: a kInt value of one side meets the kNum side.
  auto widen = [](uint8_t t) { return static_cast<uint8_t>(t & kNum ? t | kInt : t); };
  uint8_t common = widen(ta) & widen(tb);
  if (!common) return true;
  if (a.has_enum &&
      std::all_of(a.enum_values.begin(), a.enum_values.end(), [&](const JsonValue& v) { return ValueExcluded(v, b); }))
    return true;
  if (b.has_enum &&
      std::all_of(b.enum_values.begin(), b.enum_values.end(), [&](const JsonValue& v) { return ValueExcluded(v, a); }))
    return true;
  if (a.has_enum || b.has_enum) return false;
  // Every type both allow must be told apart by that type's own constraints.
  if (common & (kNull | kBool)) return false;
  if (common & (kInt | kNum)) {
    if (!RangeEmpty(a.lo, b.hi) && !RangeEmpty(b.lo, a.hi)) return false;
  }
  if ((common & kStr) && !CountsDisjoint(a.min_len, a.max_len, b.min_len, b.max_len)) return false;
  if ((common & kArr) && !CountsDisjoint(a.min_items, a.max_items, b.min_items, b.max_items)) return false;
  if ((common & kObj) && !CountsDisjoint(a.min_props, a.max_props, b.min_props, b.max_props) &&
      !DiscriminatedBy(a, b, merge, depth) && !DiscriminatedBy(b, a, merge, depth)) {
    return false;
  }
  return true;
}

}  // namespace xg2::jsonschema
