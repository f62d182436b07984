// Objects: properties, required, additional and pattern properties, property counts, and
// any-order objects.
#include "frontends/json_schema_converter.h"

namespace xg2::jsonschema {

ExprId Converter::KeyExprFromNames(const std::vector<Ref>& names, const std::vector<std::string>& declared) {
  if (names.empty() && Excluding()) return FilteredString(0, kUnbounded, declared);
  if (names.empty())
    return declared.empty() ? AnyString(0, kUnbounded)
                            : JsonStringNotIn(&g_, declared, [this] { return KeyStringRest(); });
  Merged nm;
  for (const auto& r : names) MergeInto(&nm, r, 0);
  return KeyExpr(nm, declared, names[0].ptr, 0);
}

ByteDfaSpec Converter::PropertyNamesDfa(const std::vector<Ref>& names) {
  ExprId keys = kNoExpr;
  {
    NamesOnlyScope scope(this);
    keys = KeyExprFromNames(names, {});
  }
  if (keys == kNoExpr) {  // no name: one state, not final
    ByteDfaSpec none;
    none.is_final = {0};
    none.edges = {{}};
    return none;
  }
  try {
    return ByteDfaOfExpr(g_, keys, kMaxPatternDfaStates);
  } catch (const Error& e) {
    Unsupported("propertyNames", names[0].ptr, std::string("checking declared names: ") + e.what());
    // (On "warn" / "ignore") every name.
    return ByteDfaOfExpr(g_, JsonStringExpr(&g_, 0, kUnbounded, JsonCharExpr(&g_)), kMaxPatternDfaStates);
  }
}

ExprId Converter::KeyExpr(const Merged& nm, const std::vector<std::string>& declared, const std::string& at,
                          int expansion) {
  if (nm.is_false) return kNoExpr;
  if (!nm.any_of.empty()) return KeyAlternatives(nm, declared, at, expansion);
  if (nm.has_enum) {
    std::vector<ExprId> alts;
    for (const auto& v : nm.enum_values) {
      if (v.is_string() && std::find(declared.begin(), declared.end(), v.as_string()) == declared.end() &&
          EnumValueAllowed(nm, v))
        alts.push_back(QuotedLiteral(v.as_string()));
    }
    return alts.empty() ? kNoExpr : g_.AddChoice(alts);
  }
  if (!(nm.types & kStr)) return kNoExpr;
  const bool length_only = nm.patterns.empty() && nm.formats.empty() && nm.not_patterns.empty() &&
                           nm.not_formats.empty() && !nm.ExcludesStrings();
  if (Excluding() && length_only) return FilteredString(nm.min_len, nm.max_len, declared);
  return WithoutDeclared(StringExpr(nm), declared, at);
}

// As Lower's: each alternative of the first group merged with the rest; a oneOf only where
// CheckOneOf finds its alternatives exclusive (or rewrites them so).
ExprId Converter::KeyAlternatives(const Merged& nm, const std::vector<std::string>& declared, const std::string& at,
                                  int expansion) {
  if (expansion > 16) {
    Unsupported("propertyNames", at, "combinators nested too deeply");
    return kNoExpr;
  }
  Merged base = nm;
  auto [group, exclusive, group_at] = base.TakeFirstAnyOf();
  std::vector<Merged> alts;
  if (exclusive) alts = CheckOneOf(base, group, group_at);
  std::optional<NegationScope> scope;
  if (!alts.empty() && negated_one_of_.count(group_at)) scope.emplace(this, group_at);
  if (alts.empty()) {
    for (const auto& a : group) {
      if (--expansion_budget_ < 0) {
        Unsupported("propertyNames", at, "too many combinations of alternatives to expand");
        return kNoExpr;
      }
      Merged c = base;
      MergeInto(&c, a, 0);
      alts.push_back(std::move(c));
    }
  }
  std::vector<ExprId> keys;
  for (const auto& c : alts) {
    ExprId k = KeyExpr(c, declared, at, expansion + 1);
    if (k != kNoExpr) keys.push_back(k);
  }
  return keys.empty() ? kNoExpr : g_.AddChoice(keys);
}

ExprId Converter::WithoutDeclared(ExprId key, const std::vector<std::string>& declared, const std::string& at) {
  if (declared.empty() || IsNever(key)) return key;
  try {
    ByteDfaProduct p = ProductWithParts(ByteDfaOfExpr(g_, key, kMaxPatternDfaStates),
                                        {JsonStringSpellingsDfa(declared, kMaxPatternDfaStates, /*quoted=*/true)},
                                        kMaxPatternDfaStates);
    bool clash = false;
    for (int32_t s = 0; s < p.dfa.num_states(); ++s) clash = clash || (p.dfa.is_final[s] && (p.accepted_by[s] & 1));
    if (!clash) return key;
    ByteDfaSpec rest = TrimAndMinimize(SelectByParts(std::move(p), 1, 0));
    return ByteDfaEmpty(rest) ? kNoExpr : g_.AddByteDfa(std::move(rest));
  } catch (const Error& e) {
    Unsupported("propertyNames", at, std::string("keys beside declared properties: ") + e.what());
    return key;
  }
}

// Extra keys under patternProperties: one alternative per set of patterns some undeclared
// key matches exactly, with the conjunction of their schemas; with_none adds the keys no
// pattern matches, with additionalProperties. `names` (the quoted keys propertyNames allows,
// or null) narrows every region. False (reported) when the automata are too large.
bool Converter::PatternKeyAlternatives(const Merged& m, const std::vector<std::string>& patterns,
                                       const std::vector<std::string>& declared, const std::vector<Ref>& add, int depth,
                                       std::vector<ExprId>* alts, bool with_none, const ByteDfaSpec* names) {
  std::vector<KeyRegion> regions;
  try {
    regions = PatternKeyRegions(patterns, declared, with_none, kMaxPatternDfaStates);
  } catch (const Error& e) {
    Unsupported("patternProperties", m.pattern_props[0].first.ptr, std::string("key automata: ") + e.what());
    return false;
  }
  for (auto& r : regions) {
    ExprId key = kNoExpr;
    if (names == nullptr) {
      key = g_.AddSequence({Lit(&g_, "\""), g_.AddByteDfa(std::move(r.keys)), Lit(&g_, "\"")});
    } else {
      try {
        ByteDfaSpec quoted = QuotedKeysWithin(std::move(r.keys), *names);
        if (ByteDfaEmpty(quoted)) continue;
        key = g_.AddByteDfa(std::move(quoted));
      } catch (const Error& e) {
        Unsupported("propertyNames", m.property_names[0].ptr, std::string("beside patternProperties: ") + e.what());
        return false;
      }
    }
    std::vector<Ref> conj;
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (r.patterns >> i & 1)
        conj.insert(conj.end(), m.pattern_props[i].second.begin(), m.pattern_props[i].second.end());
    }
    ExprId val = ValueRef(r.patterns == 0 ? add : conj, depth);
    if (val == kNoExpr) continue;
    alts->push_back(g_.AddSequence({key, KeySep(), val}));
  }
  return true;
}

ByteDfaSpec Converter::QuotedKeysWithin(ByteDfaSpec content, const ByteDfaSpec& names) {
  Grammar scratch;
  ExprId quoted =
      scratch.AddSequence({Lit(&scratch, "\""), scratch.AddByteDfa(std::move(content)), Lit(&scratch, "\"")});
  ByteDfaProduct p =
      ProductWithParts(ByteDfaOfExpr(scratch, quoted, kMaxPatternDfaStates), {names}, kMaxPatternDfaStates);
  return TrimAndMinimize(SelectByParts(std::move(p), 1, 1));
}

// Properties in any order, each at most once, required ones exactly once, additional ones
// (extra) any number of times; minProperties/maxProperties count them all. One AnyOrder
// node: the parser keeps the set of properties written, so no 2^n expansion.
template <typename PropT>
ExprId Converter::AnyOrderObject(const std::vector<PropT>& props, ExprId extra, int64_t min_p, int64_t max_p, int depth,
                                 std::vector<AnyOrderPresenceRule> presence) {
  int64_t nreq = 0;
  std::vector<ExprId> children{ItemSep(depth)};
  std::vector<int32_t> member_of(props.size());  // props position -> member index
  for (size_t i = 0; i < props.size(); ++i) {
    if (props[i].required)
      member_of[i] = static_cast<int32_t>(children.size() - 1), children.push_back(props[i].kv), ++nreq;
  }
  for (size_t i = 0; i < props.size(); ++i) {
    if (!props[i].required) member_of[i] = static_cast<int32_t>(children.size() - 1), children.push_back(props[i].kv);
  }
  for (auto& r : presence) {
    r.member = member_of[r.member];
    for (auto& alt : r.any_of) {
      for (auto& k : alt) k = member_of[k];
    }
  }
  if (extra != kNoExpr) children.push_back(extra);
  if (max_p >= 0 && max_p < nreq) {
    return NeverBecause("maxProperties is less than the number of required properties: " + std::to_string(max_p) +
                        " < " + std::to_string(nreq));
  }
  // (minProperties above the members of a closed object is refused by ObjectExpr.)
  AnyOrderSpec spec;
  spec.num_required = static_cast<int32_t>(nreq);
  spec.num_optional = static_cast<int32_t>(props.size() - nreq);
  spec.num_repeated = extra == kNoExpr ? 0 : 1;
  // The empty object is written as "{}" whatever the layout: the node here has a member.
  spec.min_count = std::max<int64_t>(min_p, 1);
  spec.max_count = max_p;
  spec.presence = std::move(presence);
  bool empty_ok = nreq == 0 && min_p <= 0;
  if (max_p == 0) return empty_ok ? Empty('{', '}') : Never();
  ExprId ne = g_.AddSequence({Open('{', depth), g_.AddAnyOrder(spec, children), Close('}', depth)});
  return empty_ok ? g_.AddChoice({Empty('{', '}'), ne}) : ne;
}

// A presence dependency becomes an AnyOrderPresenceRule when every name it mentions is a
// declared property of an any-order object without maxProperties (an undeclared name could
// also come as an additional property, which the rule cannot see).
bool Converter::PresenceDepAttachable(const Merged& m, const Merged::PresenceDep& d) const {
  if (!o_.any_order || m.max_props >= 0) return false;
  auto declared = [&](const std::string& name) {
    return std::any_of(m.props.begin(), m.props.end(), [&](const auto& pr) { return pr.first == name; });
  };
  if (!declared(d.name)) return false;
  return std::all_of(d.any_of.begin(), d.any_of.end(),
                     [&](const auto& alt) { return std::all_of(alt.begin(), alt.end(), declared); });
}

std::optional<Merged> Converter::WithDependencyNamesDeclared(const Merged& m) const {
  if (!o_.any_order || m.max_props >= 0 || m.presence_deps.empty()) return std::nullopt;
  if (!m.pattern_props.empty() || !m.property_names.empty()) return std::nullopt;
  // Undeclared keys must be allowed, as ObjectExpr decides it.
  const bool declares = !m.props.empty();
  if (!m.additional_set && o_.strict_mode && declares) return std::nullopt;
  for (const auto& a : m.additional) {
    if (a.v->is_bool() && !a.v->as_bool()) return std::nullopt;
  }
  Merged out = m;
  auto declare = [&](const std::string& name) {
    if (std::any_of(out.props.begin(), out.props.end(), [&](const auto& pr) { return pr.first == name; })) return true;
    if (m.Forbids(name)) return false;
    out.props.push_back({name, {}});  // ObjectExpr adds the additionalProperties schemas
    return true;
  };
  const size_t before = out.props.size();
  for (const auto& d : m.presence_deps) {
    if (!declare(d.name)) return std::nullopt;
    for (const auto& alt : d.any_of) {
      for (const auto& n : alt) {
        if (!declare(n)) return std::nullopt;
      }
    }
  }
  if (out.props.size() == before) return std::nullopt;
  return out;
}

// The union of objects the dependency stands for (DependencyAlternatives): the name absent, or
// present with the names of one alternative. Used where it cannot be a presence rule; each
// object keeps the witnesses (members it must have) of the caller.
ExprId Converter::ExpandPresenceDep(const Merged& m, size_t k, int depth,
                                    const std::vector<Merged::SomeProperty>& witnesses) {
  Merged base = m;
  base.presence_deps.erase(base.presence_deps.begin() + static_cast<std::ptrdiff_t>(k));
  const Merged::PresenceDep& d = m.presence_deps[k];
  const JsonValue* alts = Synthesized(d.dep, 0, [&]() { return DependencyAlternatives(d.name, *d.dep); });
  std::vector<ExprId> out;
  auto budget = [&]() {
    if (--expansion_budget_ >= 0) return true;
    Unsupported("dependencies", d.ptr, "too many combinations of alternatives to expand");
    return false;
  };
  if (!budget()) return Never();
  Merged absent = base;
  MergeInto(&absent, Ref{&alts->items()[0], d.ptr}, 0);  // {"properties": {name: false}}
  out.push_back(ObjectExpr(absent, depth, witnesses));
  for (const auto& alt : d.any_of) {
    if (!budget()) return Never();
    Merged present = base;
    if (!present.Requires(d.name)) present.required.push_back(d.name);  // the order "required" lists them
    for (const std::string& n : alt) {
      if (!present.Requires(n)) present.required.push_back(n);
    }
    out.push_back(ObjectExpr(present, depth, witnesses));
  }
  return g_.AddChoice(out);
}

// The presence rules of the declared properties kept in props[0, named): a dependency on a
// property that was dropped holds; an alternative naming one cannot be met, and a property
// with no alternative left cannot be present (it is dropped too, false if it is required).
template <typename PropT>
bool Converter::ResolvePresenceRules(const Merged& m, std::vector<PropT>* props, size_t named,
                                     std::vector<AnyOrderPresenceRule>* rules) {
  for (bool changed = true; changed;) {
    changed = false;
    auto position = [&](const std::string& name) -> int32_t {
      for (size_t i = 0; i < named; ++i)
        if ((*props)[i].name == name) return static_cast<int32_t>(i);
      return -1;
    };
    rules->clear();
    for (const auto& d : m.presence_deps) {
      const int32_t member = position(d.name);
      if (member < 0) continue;
      AnyOrderPresenceRule r{member, {}};
      for (const auto& alt : d.any_of) {
        std::vector<int32_t> members;
        for (const auto& n : alt) members.push_back(position(n));
        if (std::find(members.begin(), members.end(), -1) == members.end()) r.any_of.push_back(std::move(members));
      }
      if (r.any_of.empty()) {
        if ((*props)[member].required) return false;
        props->erase(props->begin() + member);
        --named;
        changed = true;
        break;
      }
      rules->push_back(std::move(r));
    }
  }
  return true;
}

ExprId Converter::ObjectExpr(const Merged& m, int depth, const std::vector<Merged::SomeProperty>& witnesses) {
  for (size_t k = 0; k < m.presence_deps.size(); ++k) {
    if (PresenceDepAttachable(m, m.presence_deps[k])) continue;
    if (std::optional<Merged> declared = WithDependencyNamesDeclared(m)) return ObjectExpr(*declared, depth, witnesses);
    return ExpandPresenceDep(m, k, depth, witnesses);
  }
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
      Unsupported("patternProperties", m.pattern_props[0].first.ptr,
                  std::string("matching declared names: ") + e.what());
    }
  }
  auto pattern_schemas = [&](const std::string& name, std::vector<Ref>* conj) {
    auto it = name_patterns.find(name);
    if (it == name_patterns.end()) return false;
    for (size_t i : it->second)
      conj->insert(conj->end(), m.pattern_props[i].second.begin(), m.pattern_props[i].second.end());
    return !it->second.empty();
  };
  for (const auto& a : m.absent) {
    if (m.Requires(a.name)) return Never();
    // A pattern or propertyNames could still admit the name as an extra key.
    if (!m.pattern_props.empty() || !m.property_names.empty())
      Unsupported(a.keyword, a.ptr, "together with patternProperties or propertyNames");
    declared.push_back(a.name);  // excluded from the extra keys
  }
  // propertyNames applies to every key, declared ones too: a name is tested against the
  // automaton of the keys it allows (built on first use).
  std::optional<ByteDfaSpec> names_dfa;
  auto names_automaton = [&]() -> const ByteDfaSpec* {
    if (m.property_names.empty()) return nullptr;
    if (!names_dfa) names_dfa = PropertyNamesDfa(m.property_names);
    return &*names_dfa;
  };
  auto name_allowed = [&](const std::string& name) {
    const ByteDfaSpec* names = names_automaton();
    return names == nullptr || ByteDfaAccepts(*names, JsonQuote(name));
  };
  auto name_refused = [&](const std::string& name) {
    return NeverBecause("required property \"" + name + "\" is not a name propertyNames allows");
  };
  for (const auto& pr : m.props) {
    if (m.Forbids(pr.first)) continue;
    declared.push_back(pr.first);
    if (!name_allowed(pr.first)) {
      if (m.Requires(pr.first)) return name_refused(pr.first);
      continue;
    }
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
    if (val == kNoExpr || LiteralExcluded(pr.first)) {  // an excluded name cannot be written
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
  std::vector<Ref> unmatched;    // the schemas of extra keys no pattern matches
  bool unmatched_allowed = false;
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
      additional_any = std::all_of(add.begin(), add.end(), [](const Ref& r) {
        return r.v->is_bool() || (r.v->is_object() && r.v->members().empty());
      });
      for (const auto& rn : m.required) {
        if (std::find(declared.begin(), declared.end(), rn) == declared.end()) {
          if (!name_allowed(rn)) return name_refused(rn);
          std::vector<Ref> conj;
          ExprId val = ValueRef(pattern_schemas(rn, &conj) ? conj : add, d1);
          if (val == kNoExpr) return Never();
          props.push_back({rn, true, g_.AddSequence({QuotedLiteral(rn), KeySep(), val})});
          declared.push_back(rn);
        }
      }
      if (!m.pattern_props.empty()) {
        pattern_regions = PatternKeyAlternatives(m, pattern_texts, declared, add, d1, &extra_alts,
                                                 /*with_none=*/true, names_automaton());
      }
      if (!pattern_regions) {
        ExprId key = KeyExprFromNames(m.property_names, declared);
        ExprId val = ValueRef(add, d1);
        if (key != kNoExpr && val != kNoExpr) extra_alts.push_back(g_.AddSequence({key, KeySep(), val}));
      }
      unmatched = add;
      unmatched_allowed = true;
    } else {
      for (const auto& rn : m.required) {
        if (std::find(declared.begin(), declared.end(), rn) == declared.end()) {
          if (!name_allowed(rn)) return name_refused(rn);
          std::vector<Ref> conj;
          if (!pattern_schemas(rn, &conj)) return Never();
          ExprId val = ValueRef(conj, d1);
          if (val == kNoExpr) return Never();
          props.push_back({rn, true, g_.AddSequence({QuotedLiteral(rn), KeySep(), val})});
          declared.push_back(rn);
        }
      }
    }
    if (!allowed && !m.pattern_props.empty()) {
      pattern_regions = PatternKeyAlternatives(m, pattern_texts, declared, {}, d1, &extra_alts, /*with_none=*/false,
                                               names_automaton());
    }
    for (const auto& pp : m.pattern_props) {
      if (pattern_regions) break;
      ExprId content = PatternContent(pp.first);
      ExprId val = ValueRef(pp.second, d1);
      if (content == kNoExpr || val == kNoExpr) continue;
      extra_alts.push_back(g_.AddSequence({Lit(&g_, "\""), content, Lit(&g_, "\""), KeySep(), val}));
    }
  }
  (void)additional_any;
  std::vector<AnyOrderPresenceRule> presence;
  if (!ResolvePresenceRules(m, &props, props.size(), &presence)) return Never();
  // Members the object must have: in any order, required members of the AnyOrder node; in
  // the ordered layout, members written once among the extras, as are the names a witness
  // enumerates that the schema does not declare.
  std::vector<ExprId> witness_members;
  if (!o_.any_order) {
    for (auto it = props.begin(); it != props.end();) {
      if (std::find(m.witness_names.begin(), m.witness_names.end(), it->name) == m.witness_names.end()) {
        ++it;
        continue;
      }
      witness_members.push_back(it->kv);
      it = props.erase(it);
    }
  }
  for (const auto& w : witnesses) {
    ExprId member = WitnessMember(m, w, declared, unmatched_allowed ? &unmatched : nullptr, d1);
    if (o_.any_order) {
      props.push_back({"", true, member});
    } else {
      witness_members.push_back(member);
    }
  }
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
  if (max_p >= 0 && min_p > max_p) {
    return NeverBecause("minProperties is greater than maxProperties: " + std::to_string(min_p) + " > " +
                        std::to_string(max_p));
  }
  if (extra == kNoExpr && witness_members.empty() && min_p > n) {
    return NeverBecause(
        "minProperties is greater than the number of properties, but additional properties aren't allowed: " +
        std::to_string(min_p) + " > " + std::to_string(n));
  }
  if (!witness_members.empty()) {
    cur_ptr_ = saved;
    OrderedObjectLimit limit{"not", witnesses.empty() ? saved : witnesses[0].ptr};
    ExprId counted = CountedOrderedObject(props, extra, min_p, max_p, depth, limit, witness_members);
    if (counted != kNoExpr) return counted;
    // Refused and reported (on "warn" / "ignore"): the members are not required, a widening.
  }
  if (n == 0) {
    if (extra == kNoExpr) return (min_p > 0) ? Never() : Empty('{', '}');
    if (max_p == 0) return Empty('{', '}');
    ExprId rest = g_.AddRepeat(g_.AddSequence({ItemSep(depth), extra}), std::max<int64_t>(0, min_p - 1),
                               max_p < 0 ? kUnbounded : max_p - 1);
    ExprId ne = g_.AddSequence({Open('{', depth), extra, rest, Close('}', depth)});
    return min_p == 0 ? g_.AddChoice({Empty('{', '}'), ne}) : ne;
  }
  if (o_.any_order) {
    cur_ptr_ = saved;
    return AnyOrderObject(props, extra, min_p, max_p, depth, std::move(presence));
  }
  if (min_p > nreq && extra == kNoExpr && min_p >= n) {  // (min_p > n is refused above)
    for (auto& p : props) p.required = true;
    nreq = n;
  }
  if (max_p >= 0 && max_p < nreq) {
    return NeverBecause("maxProperties is less than the number of required properties: " + std::to_string(max_p) +
                        " < " + std::to_string(nreq));
  }
  if (min_p > nreq || (max_p >= 0 && (extra != kNoExpr || max_p < n))) {
    cur_ptr_ = saved;
    OrderedObjectLimit limit = min_p > nreq ? OrderedObjectLimit{"minProperties", m.min_props_ptr}
                                            : OrderedObjectLimit{"maxProperties", m.max_props_ptr};
    ExprId counted = CountedOrderedObject(props, extra, min_p, max_p, depth, limit, {});
    if (counted != kNoExpr) return counted;
    // Refused and reported (on "warn" / "ignore"): the count is not enforced, a widening.
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

// The ordered layout with a member count to keep within min_p..max_p (max_p < 0: none) and
// witness members (undeclared members the object must have, each written once, anywhere
// among the extras): rule T(i, c, w) reads the rest of the object after c members were
// written, the declared members before i were decided and the witnesses in mask w were
// written. Counts are capped at max_p, or, with no maximum, at min_p (every count from there
// on is alike; at least 1, so that the first member goes without a separator). A state that
// cannot end within the bounds is left out.
template <typename PropT>
ExprId Converter::CountedOrderedObject(const std::vector<PropT>& props, ExprId extra, int64_t min_p, int64_t max_p,
                                       int depth, const OrderedObjectLimit& limit,
                                       const std::vector<ExprId>& witnesses) {
  const int64_t n = static_cast<int64_t>(props.size());
  const int64_t k = static_cast<int64_t>(witnesses.size());
  const int64_t cap = max_p >= 0 ? max_p : std::max<int64_t>(min_p, 1);
  // Each factor is checked alone first: a huge maxProperties must not overflow the product.
  if (k > 12 || cap >= kMaxCountedObjectStates || n >= kMaxCountedObjectStates ||
      (n + 1) * (cap + 1) * (int64_t{1} << k) > kMaxCountedObjectStates) {
    Unsupported(limit.keyword, limit.ptr,
                "more than " + std::to_string(kMaxCountedObjectStates) +
                    " (declared member, count, witnesses written) states in the ordered layout (any_order takes it)");
    return kNoExpr;  // on "warn" / "ignore" the caller lays the object out without them
  }
  const int64_t all = (int64_t{1} << k) - 1;
  std::vector<int64_t> required_from(n + 1, 0);
  for (int64_t i = n - 1; i >= 0; --i) required_from[i] = required_from[i + 1] + (props[i].required ? 1 : 0);
  auto unwritten = [&](int64_t w) { return k - static_cast<int64_t>(__builtin_popcountll(static_cast<uint64_t>(w))); };
  auto live = [&](int64_t i, int64_t c, int64_t w) {
    if (c == 0 && i == n && w == all) return false;  // the empty object is written as "{}" below
    if (max_p >= 0 && c + required_from[i] + unwritten(w) > max_p) return false;
    return extra != kNoExpr || c + (n - i) + unwritten(w) >= min_p;
  };
  auto next = [&](int64_t c) { return max_p >= 0 ? c + 1 : std::min(c + 1, cap); };
  // Rules are made for live states first, then given bodies.
  constexpr RuleId kNoRule = -1;
  std::vector<RuleId> state_rule(static_cast<size_t>((n + 1) * (cap + 1) * (all + 1)), kNoRule);
  auto at = [&](int64_t i, int64_t c, int64_t w) -> RuleId& {
    return state_rule[static_cast<size_t>((i * (cap + 1) + c) * (all + 1) + w)];
  };
  for (int64_t i = 0; i <= n; ++i) {
    for (int64_t c = 0; c <= cap; ++c) {
      for (int64_t w = 0; w <= all; ++w)
        if (live(i, c, w)) at(i, c, w) = NewRule("object_count");
    }
  }
  auto ref = [&](int64_t i, int64_t c, int64_t w) { return g_.AddRuleRef(at(i, c, w)); };
  auto has = [&](int64_t i, int64_t c, int64_t w) { return at(i, c, w) != kNoRule; };
  for (int64_t i = 0; i <= n; ++i) {
    for (int64_t c = 0; c <= cap; ++c) {
      for (int64_t w = 0; w <= all; ++w) {
        if (!has(i, c, w)) continue;
        auto written = [&](ExprId item) { return c == 0 ? item : g_.AddSequence({ItemSep(depth), item}); };
        std::vector<ExprId> alts;
        if (max_p < 0 && c == cap && w == all) {
          // Past the minimum with no maximum and every witness written: extras repeat freely,
          // as in the uncounted layout.
          ExprId extras =
              extra == kNoExpr ? g_.AddEmpty() : g_.AddRepeat(g_.AddSequence({ItemSep(depth), extra}), 0, kUnbounded);
          if (i == n) {
            alts.push_back(extras);
          } else {
            ExprId member = g_.AddSequence({ItemSep(depth), props[i].kv});
            alts.push_back(g_.AddSequence({extras, props[i].required ? member : Opt(&g_, member), ref(i + 1, c, w)}));
          }
        } else {
          const bool room = max_p < 0 || c < max_p;
          if (room && extra != kNoExpr && has(i, next(c), w))
            alts.push_back(g_.AddSequence({written(extra), ref(i, next(c), w)}));
          for (int64_t j = 0; j < k; ++j) {
            const int64_t wj = w | (int64_t{1} << j);
            if (room && wj != w && has(i, next(c), wj))
              alts.push_back(g_.AddSequence({written(witnesses[j]), ref(i, next(c), wj)}));
          }
          if (i < n && room && has(i + 1, next(c), w))
            alts.push_back(g_.AddSequence({written(props[i].kv), ref(i + 1, next(c), w)}));
          if (i < n && !props[i].required && has(i + 1, c, w)) alts.push_back(ref(i + 1, c, w));
          if (i == n && c >= min_p && w == all) alts.push_back(g_.AddEmpty());
        }
        g_.SetRuleBody(at(i, c, w), alts.size() == 1 ? alts[0] : g_.AddChoice(alts));
      }
    }
  }
  const bool empty_ok = required_from[0] == 0 && min_p <= 0 && k == 0;
  if (!has(0, 0, 0)) return empty_ok ? Empty('{', '}') : Never();
  ExprId ne = g_.AddSequence({Open('{', depth), ref(0, 0, 0), Close('}', depth)});
  return empty_ok ? g_.AddChoice({Empty('{', '}'), ne}) : ne;
}

}  // namespace xg2::jsonschema
