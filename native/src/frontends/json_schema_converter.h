// JSON Schema -> grammar IR. Subschemas are referenced by (value, JSON pointer); a conjunction
// of subschemas (allOf, $ref with siblings, a property declared twice) is merged into one
// constraint set before lowering. Every object/array/conjunction gets its own rule, keyed by
// the pointers of its parts and (with indent) the nesting depth, so $ref recursion and reused
// subschemas share rules.
//
// The converter class (internal to frontends/) and its shared helpers. Its methods are
// defined by concern in json_schema*.cc; JsonSchemaToGrammar (json_schema.h) is the entry.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "automata/byte_dfa_ops.h"
#include "frontends/json_schema.h"
#include "frontends/json_schema_internal.h"
#include "frontends/regex.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2::jsonschema {

// Bounds the automata built for one pattern (its JSON-content DFA and the product with a
// length counter); larger ones are reported as unsupported rather than compiled slowly.
constexpr int64_t kMaxPatternDfaStates = 20000;
// The (declared member, count, witnesses written) states of an ordered object with counted
// members or witness members.
constexpr int64_t kMaxCountedObjectStates = 4096;

inline std::string Show(const std::string& ptr) { return ptr.empty() ? "(root)" : ptr; }

// Messages for a keyword value of the wrong type, led by xgrammar's phrase for it (defined in
// json_schema_merge.cc). `ptr` is where the value that is not a schema sits.
std::string NotASchemaMessage(const std::string& ptr);
std::string BadMultipleOfMessage(const JsonValue& v);

// Thrown out of a conversion when a oneOf rewritten with negations needs something
// unsupported; JsonSchemaToGrammar converts again without that rewrite.
struct NegationFailed {
  std::string one_of_at;
  std::string reason;  // the unsupported part, as Unsupported would have reported it
};

class Converter {
 public:
  Converter(const JsonValue& root, const JsonSchemaOptions& o, std::map<std::string, std::string> no_negation = {})
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
      // Whitespace written in a separator is the least there is: (", ", ":") needs the space.
      item_sep_ = o_.item_separator.empty() ? "," : o_.item_separator;
      key_sep_ = o_.key_separator.empty() ? ":" : o_.key_separator;
    } else {
      item_sep_ = !o_.item_separator.empty() ? o_.item_separator : (o_.indent >= 0 ? "," : ", ");
      key_sep_ = !o_.key_separator.empty() ? o_.key_separator : ": ";
    }
  }

  JsonSchemaResult Run();
  // Whether no value satisfies two subschemas of the root (JSON pointers ptrs, for $ref
  // resolution and messages): true is a proof, false means "not proven". Front ends that
  // write oneOf as a choice need it to be exact.
  bool ProvablyDisjointSchemas(const JsonValue& a, const std::string& a_ptr, const JsonValue& b,
                               const std::string& b_ptr);

 private:
  // Declares a rule named base, base_2, base_3, ... Grammar::DeclareRule alone would probe every
  // taken suffix, which is quadratic for schemas with thousands of objects.
  RuleId NewRule(const std::string& base);

  // Any JSON string content (no quotes): one rule shared by the whole grammar.
  ExprId StringRest();
  ExprId KeyStringRest();
  // A pattern string the converter writes, alive for the conversion.
  const JsonValue& WrittenPattern(const std::string& pattern) {
    return written_patterns_.emplace_back(JsonValue::String(pattern));
  }

  [[noreturn]] void Invalid(const std::string& ptr, const std::string& msg);

  void Unsupported(const std::string& kw, const std::string& ptr, const std::string& detail = "");

  // ------------------------------------------------------------------ formatting
  bool Indented() const { return !o_.any_whitespace && o_.indent >= 0; }
  int Depth(int d) const { return Indented() ? std::min(d, 24) : 0; }
  // A JSON string of min_len..max_len characters; the character expression is built once
  // per grammar (it is the same node everywhere, nodes being hash-consed).
  ExprId AnyString(int64_t min_len, int64_t max_len);

  // ------------------------------------------------------------------ excluded substrings
  // (o_.excludes; json_schema_excludes.cc). Exact: each filtered language is the product of
  // the content automaton with the complement of "contains an excluded substring".
  bool Excluding() const { return !o_.excludes.empty() && !names_only_; }
  // A quoted JSON string of min_len..max_len characters whose content is not one of
  // `declared` and contains no excluded substring (one rule per distinct request).
  ExprId FilteredString(int64_t min_len, int64_t max_len, const std::vector<std::string>& declared);
  // `content` (string content without quotes or rule references) without the strings that
  // contain an excluded substring; Never() when nothing is left.
  ExprId WithoutExcluded(ExprId content);
  // Whether every spelling of `text` as string content contains an excluded substring.
  bool LiteralExcluded(const std::string& text);
  const ByteDfaSpec& ExcludedText();  // built once per conversion
  ExprId Ws();
  std::string Newline(int depth) const { return "\n" + std::string(static_cast<size_t>(o_.indent) * depth, ' '); }
  // "{" / "[" followed by what precedes the first member at this depth.
  ExprId Open(char c, int depth);
  ExprId Close(char c, int depth);
  ExprId Empty(char open, char close);
  ExprId ItemSep(int depth);
  ExprId KeySep();

  // ------------------------------------------------------------------ $ref
  Ref Resolve(const std::string& ref, const std::string& at);
  // `r` with each schema that is only a "$ref" (beside annotations, or any siblings where
  // drafts 3-7 ignore them) replaced by its target, so every site of {"$ref": "#"} shares the
  // target's rule; `r` itself where the chain is cyclic or does not resolve.
  Ref ThroughLoneRefs(const Ref& r);

  const JsonValue* FindAnchor(const JsonValue& v, const std::string& name);

  // ------------------------------------------------------------------ merging
  int64_t NonNegInt(const JsonValue& v, const std::string& ptr, const std::string& kw);
  static std::vector<Ref> One(const JsonValue* v, std::string ptr) { return {Ref{v, std::move(ptr)}}; }

  void MergeInto(Merged* m, const Ref& r, int guard);
  MergeFn Merger();  // MergeInto over a conjunction, from a fresh constraint set

  void MergeRef(Merged* m, const Ref& t, int guard);

  // `not` where it reduces to removing types or enum values.
  void MergeNot(Merged* m, const Ref& r, const std::string& at);
  // Reads unevaluatedProperties as additionalProperties of a schema declaring every merged
  // property and pattern, and unevaluatedItems as items past the prefix, where exact (see
  // Merged::unevaluated_props); drops them where everything is evaluated (additionalProperties
  // or items present); reports them elsewhere.
  void ResolveUnevaluated(Merged* m);

  // A schema made here (kept for the converter's lifetime, once per source node so that
  // recursion through it meets the same pointers and the rule cache).
  const JsonValue* Synthesized(const void* source, int which, const std::function<JsonValue()>& make);

  // dependentRequired / dependentSchemas / draft-7 dependencies, one anyOf per property (see
  // DependencyAlternatives).
  void MergeDependencies(Merged* m, const JsonValue& v, const std::string& kp, const std::string& k);

  // if/then/else as an anyOf (see ConditionAlternatives) when the condition has an exact
  // negation.
  void MergeCondition(Merged* m, const JsonValue& s, const std::string& P);

  // `not` of one member keyword as a property the object must have (Merged::some_props);
  // false for other shapes.
  bool MergeSomeProperty(Merged* m, const Ref& r);

  // `not S` for other shapes: S rewritten into an equivalent positive schema (De Morgan over
  // combinators and independent keywords, each keyword's complement within the type it applies
  // to), merged in place of the `not`. Leaves the rewrite produces as {"not": ...} are shapes
  // MergeNot handles directly (type, enum/const, one required name, member keywords: see
  // MergeSomeProperty). False when some part has no exact positive form.
  bool MergeNegation(Merged* m, const Ref& r, const std::string& at);

  std::optional<JsonValue> Negate(const JsonValue& s, const std::string& ptr, int guard);

  // ------------------------------------------------------------------ lowering
  std::string Key(const std::vector<Ref>& parts, int depth);

  static std::string RuleName(const std::vector<Ref>& parts);

  RuleId ConjRule(const std::vector<Ref>& parts, int depth);

  ExprId Never() { return g_.AddChoice({}); }
  // Never(), noting why at the subschema being lowered (the first such note names the cause
  // when no JSON value satisfies the whole schema).
  ExprId NeverBecause(const std::string& why);
  bool IsNever(ExprId e) const { return g_.expr(e).kind == ExprKind::kChoice && g_.expr(e).children.empty(); }

  ExprId Lower(const Merged& m, int depth, int expansion);

  // oneOf lowers as anyOf, which is exact only when no value matches two alternatives (each
  // merged with the rest of its schema); otherwise the widening is reported.
  // Returns the alternatives to lower in place of the group when it had to rewrite them (see
  // RequiredOnlyOneOf), else an empty vector.
  std::vector<Merged> CheckOneOf(const Merged& base, const std::vector<Ref>& group, const std::string& at);

  // oneOf as "alternative i and none of the others it may overlap": base, A_i and `not A_j`
  // for every j not provably disjoint from i, when each such A_j has an exact negation (see
  // NegateSchema). Empty otherwise.
  std::vector<Merged> NegatedOneOf(const Merged& base, const std::vector<Ref>& group, const std::vector<Merged>& alts,
                                   const MergeFn& merge, const std::string& at);

  // `not s` for an object schema s with additionalProperties (which NegateSchema cannot
  // negate: "some key outside s's properties" has no positive form), exact only among objects
  // whose keys lie in `keys`: the extra keys are then those of `keys` s does not declare.
  // nullopt for other shapes.
  std::optional<JsonValue> NegateWithinKeys(const JsonValue& s, const std::string& ptr,
                                            const std::vector<std::string>& keys, int guard);

  // not group[j] merged into *c, the merged alternative i: the plain negation, else the one
  // within c's closed set of keys (NegateWithinKeys). False when neither exists.
  bool MergeExclusion(Merged* c, const Ref& other, const std::string& at);
  // Whether MergeExclusion can exclude `other` from `within`.
  bool Negatable(const Merged& within, const Ref& other);

  // oneOf whose alternatives only list required properties ("exactly one of these sets"):
  // alternative i holds when its names are present and, for every other alternative j, one of
  // j's names is absent, which is expressible when j has one name that i lacks (i is dropped
  // when it has all of j's). Values that are not objects match every alternative and so none
  // exactly once. Empty when the group has another shape.
  std::vector<Merged> RequiredOnlyOneOf(const Merged& base, const std::vector<Ref>& group);

  ExprId EnumExpr(const Merged& m, int depth);
  // Whether an enum/const value satisfies the keywords beside it (json_schema_enum.cc);
  // reports (refuses) keywords it cannot check a literal against.
  bool EnumValueAllowed(const Merged& m, const JsonValue& v);
  bool EnumStringAllowed(const Merged& m, const std::string& s);
  // The text DFA of a pattern ('p') or asserted format ('f'); nullptr for a format without an
  // expression ("regex").
  const ByteDfaSpec* ValueDfa(char kind, const std::string& text);
  // Whether a value (inside an enum value) satisfies the conjunction of subschemas `refs`.
  bool ValueSatisfies(const std::vector<Ref>& refs, const JsonValue& v);

  // Arrays with `contains` (one, no prefixItems) and minItems/maxItems up to 64 positions;
  // kNoExpr (after reporting) otherwise.
  ExprId ContainsArrayExpr(const Merged& m, const std::vector<Ref>& items, ExprId item, int64_t prefix, int depth);

  // Arrays with one `contains` counted by minContains / maxContains (see the definition).
  ExprId CountedContainsArrayExpr(const Merged& m, const std::vector<Ref>& items, ExprId item, int64_t prefix,
                                  int depth);

  // Arrays of any length with two `contains` (see ContainsArrayExpr).
  ExprId TwoContainsArrayExpr(const Merged& m, const std::vector<Ref>& items, ExprId item, int depth);

  // uniqueItems over items with finitely many values (an enum, booleans, null): each value at
  // most once in any order, counted by minItems/maxItems; an AnyOrder node. kNoExpr (after
  // reporting) for items with infinitely many values, or with prefixItems/contains.
  ExprId UniqueArrayExpr(const Merged& m, const std::vector<Ref>& items, int depth);

  ExprId LiteralExpr(const JsonValue& v, int depth);

  ExprId QuotedLiteral(const std::string& s);

  ExprId NumericExpr(const Merged& m, bool integer);
  ExprId NumericExprOf(const Merged& m, bool integer);  // NumericExpr before the emptiness note
  // The numbers of `e` (a number language without rule references) other than the excluded
  // values m.not_values, in every plain spelling; exponent spellings are dropped (they are
  // not compared with the values). Throws UnsupportedKeyword when the automaton is too large.
  ExprId WithoutNumbers(const Merged& m, ExprId e);

  ExprId PatternContent(const Ref& pat);
  ExprId SearchedPatternAutomaton(const std::string& text, ExprId content);
  std::shared_ptr<const ByteDfaSpec> ContentAutomaton(const std::vector<ExprId>& contents, const std::string& words,
                                                      int64_t max_states);
  // FormatContentExpr(&g_, f) once per format and conversion (throws UnsupportedKeyword alike).
  ExprId FormatContent(const std::string& f);

  // pattern + minLength/maxLength where the pattern is one character class repeated (e.g.
  // "^[a-z0-9_-]+$"): the bounds are intersected. kNoExpr when the pattern has another shape.
  ExprId BoundedClassPattern(const Ref& pat, int64_t min_len, int64_t max_len);

  // pattern + minLength/maxLength in general: the pattern's automaton over JSON string
  // content times a decoded-character counter, emitted as a ByteDfa node.
  // Several patterns and formats intersect their automata first.
  ExprId LengthBoundedPattern(const std::vector<Ref>& pats, const std::vector<Ref>& formats, int64_t min_len,
                              int64_t max_len);
  // Its lowering of the contents (pattern and format nodes); `words` spells the patterns and
  // formats (the key of their automata in SchemaAutomatonCache::Patterns()); `pat` and `what`
  // name the keyword an unsupported product is reported at.
  ExprId LowerLengthBounded(const std::vector<ExprId>& contents, const std::string& words, const Ref& pat,
                            const char* what, int64_t min_len, int64_t max_len);

  // 1: every match of the pattern has a length within [min_len, max_len]; -1: none has; 0:
  // some may (or unknown).
  int PatternWithinLength(const Ref& pat, int64_t min_len, int64_t max_len);

  // Strings with `not {pattern}`: the automaton of any string content, intersected with the
  // positive patterns and formats and with the complements of the negated patterns (over every
  // JSON spelling, so a match written with escapes is excluded too), then the length bounds.
  ExprId NegatedPatternString(const Merged& m);

  ExprId StringExpr(const Merged& m);

  // A value of the conjunction (false: kNoExpr).
  ExprId ValueRef(const std::vector<Ref>& parts, int depth);

  ExprId ArrayExpr(const Merged& m, int depth);

  // The quoted keys an object takes beyond its declared properties: those propertyNames
  // allows (any key without it) but no spelling of a declared name, which properties
  // governs (additionalProperties and propertyNames apply to the other keys only).
  // kNoExpr when there is none.
  ExprId KeyExprFromNames(const std::vector<Ref>& names, const std::vector<std::string>& declared);
  ExprId KeyExpr(const Merged& nm, const std::vector<std::string>& declared, const std::string& at, int expansion);
  ExprId KeyAlternatives(const Merged& nm, const std::vector<std::string>& declared, const std::string& at,
                         int expansion);
  // The automaton of the quoted keys propertyNames allows (reported when it cannot be built).
  ByteDfaSpec PropertyNamesDfa(const std::vector<Ref>& names);
  // `key` (a quoted string expression) without any spelling of `declared`: unchanged when it
  // holds none; reported (and kept) when its automaton is too large or not regular here.
  ExprId WithoutDeclared(ExprId key, const std::vector<std::string>& declared, const std::string& at);

  // Extra keys under patternProperties: one alternative per set of patterns some undeclared
  // key matches exactly, with the conjunction of their schemas; with_none adds the keys no
  // pattern matches, with additionalProperties. `names` (the quoted keys propertyNames
  // allows, or null) narrows every region. False (reported) when the automata are too large.
  bool PatternKeyAlternatives(const Merged& m, const std::vector<std::string>& patterns,
                              const std::vector<std::string>& declared, const std::vector<Ref>& add, int depth,
                              std::vector<ExprId>* alts, bool with_none = true, const ByteDfaSpec* names = nullptr);
  // The quoted keys whose content `content` takes and `names` (quoted keys) allows.
  static ByteDfaSpec QuotedKeysWithin(ByteDfaSpec content, const ByteDfaSpec& names);

  // witnesses: members the object must have, each with a key it does not declare (see
  // SomePropertyObject).
  ExprId ObjectExpr(const Merged& m, int depth, const std::vector<Merged::SomeProperty>& witnesses = {});

  // Objects with some_props (json_schema_some_property.cc): each required property is one the
  // object declares or requires (its value then also satisfies the witness), one its key
  // schema enumerates, or a key it does not declare, which witnesses may share. Every such
  // assignment is one alternative, lowered by ObjectExpr.
  ExprId SomePropertyObject(const Merged& m, int depth);
  void SomePropertyCases(const std::vector<Merged::SomeProperty>& ws, size_t i, const Merged& c,
                         std::vector<std::vector<size_t>>* groups, int depth, std::vector<ExprId>* alts);
  // The member for a witness whose key the object does not declare: its key within the witness's
  // key schemas and propertyNames, none of `declared`, one alternative per set of patterns it
  // matches, its value within the witness's value and the schemas that key takes (add: those of
  // keys no pattern matches; nullptr when there are none). Never() when no such member exists.
  ExprId WitnessMember(const Merged& m, const Merged::SomeProperty& w, const std::vector<std::string>& declared,
                       const std::vector<Ref>* add, int depth);

  // Properties in any order, each at most once, required ones exactly once, additional ones
  // (extra) any number of times; minProperties/maxProperties count them all. One AnyOrder
  // node: the parser keeps the set of properties written, so no 2^n expansion.
  template <typename PropT>
  ExprId AnyOrderObject(const std::vector<PropT>& props, ExprId extra, int64_t min_p, int64_t max_p, int depth,
                        std::vector<AnyOrderPresenceRule> presence);
  // The ordered layout of declared members (props, in order) and extras when min_p / max_p
  // bound the number of members beyond what the required and declared members give, or the
  // object must have witness members; limit names the keyword reported when the states
  // would be too many.
  struct OrderedObjectLimit {
    const char* keyword;
    std::string ptr;
  };
  template <typename PropT>
  ExprId CountedOrderedObject(const std::vector<PropT>& props, ExprId extra, int64_t min_p, int64_t max_p, int depth,
                              const OrderedObjectLimit& limit, const std::vector<ExprId>& witnesses);
  // Presence dependencies (Merged::presence_deps): attached to the any-order node as
  // AnyOrderPresenceRules where they can be, else expanded into a union of objects.
  bool PresenceDepAttachable(const Merged& m, const Merged::PresenceDep& d) const;
  // `m` with the names its presence dependencies mention but it does not declare declared as
  // optional properties taking the schema an undeclared key would (additionalProperties, or
  // any value), so the dependencies attach as presence rules instead of expanding into 2^k
  // objects; empty where that would change the language (closed, patternProperties,
  // propertyNames, a name it forbids) or nothing is to be declared.
  std::optional<Merged> WithDependencyNamesDeclared(const Merged& m) const;
  ExprId ExpandPresenceDep(const Merged& m, size_t k, int depth, const std::vector<Merged::SomeProperty>& witnesses);
  template <typename PropT>
  bool ResolvePresenceRules(const Merged& m, std::vector<PropT>* props, size_t named,
                            std::vector<AnyOrderPresenceRule>* rules);

  const JsonValue& root_;
  JsonSchemaOptions o_;
  // Set while building the names propertyNames allows: the excludes bound what is written,
  // not which names are valid.
  bool names_only_ = false;
  Grammar g_;
  std::string item_sep_, key_sep_;
  std::vector<std::string> warnings_;
  std::set<std::string> warned_;
  std::unordered_map<std::string, RuleId> rules_;
  std::vector<const JsonValue*> merging_;
  std::vector<std::unique_ptr<JsonValue>> pattern_keys_;
  std::vector<std::unique_ptr<JsonValue>> synth_;  // positive forms of `not`, dependencies, conditions
  std::map<std::pair<const void*, int>, const JsonValue*> synth_cache_;
  std::map<const JsonValue*, const JsonValue*> neg_cache_;
  // Text DFAs of the patterns and formats enum values are checked against, built once per
  // conversion (an enum of many strings beside one pattern); keyed by kind and text.
  std::map<std::pair<char, std::string>, ByteDfaSpec> value_dfas_;
  // JSON-string content of each pattern and format lowered so far: a schema uses the same
  // one at many nodes (an email per property and array item), and lowering a format (every
  // escape spelling of its characters) cost more than the rest of the conversion. The grammar
  // interns nodes, so a hit is the node a second lowering would return.
  std::unordered_map<std::string, ExprId> pattern_contents_, format_contents_;
  // Length-bounded pattern strings lowered so far, by their contents' nodes and the bounds:
  // a schema repeats one (an identifier of at most 64 characters) at many properties, and each
  // lowering is a product with a character counter and its minimisation.
  std::map<std::pair<std::vector<ExprId>, std::pair<int64_t, int64_t>>, ExprId> length_bounded_;
  int neg_depth_ = 0;
  std::string cur_ptr_;
  std::string empty_reason_;  // "PTR: why" of the first NeverBecause
  int rule_nesting_ = 0;      // ConjRule calls in progress
  int cycle_hits_ = 0;        // $ref cycles met while merging
  bool ref_overrides_siblings_ = false;
  bool conditions_ignored_ = false;  // a draft 3-6 schema: if/then/else are not keywords
  std::unordered_map<std::string, int64_t> rule_name_count_;
  // Patterns the converter writes (the parts of a pattern that starts with lookaheads), kept
  // where Refs can point at them for the whole conversion.
  std::deque<JsonValue> written_patterns_;
  RuleId string_rest_ = -1;
  RuleId key_string_rest_ = -1;
  std::map<std::pair<std::pair<int64_t, int64_t>, std::vector<std::string>>, RuleId> filtered_strings_;
  std::unique_ptr<ByteDfaSpec> excluded_text_;  // strings with an excluded substring, over bytes
  ExprId ws_ = kNoExpr, item_sep_expr_ = kNoExpr, key_sep_expr_ = kNoExpr;  // memoised separators
  ExprId json_char_ = kNoExpr;
  int64_t expansion_budget_ = 20000;  // inline lowerings of combinator alternatives
  // oneOf groups (by pointer) rewritten with negations, and those not to rewrite (a first
  // conversion found part of the rewrite unsupported). Inside a rewrite (negation_scope_ not
  // empty) Unsupported throws NegationFailed for the outermost one.
  std::set<std::string> negated_one_of_;
  std::map<std::string, std::string> no_negation_;  // oneOf pointer -> why its rewrite failed
  std::vector<std::string> negation_scope_;
  // Sets names_only_ for its lifetime.
  struct NamesOnlyScope {
    explicit NamesOnlyScope(Converter* c) : c_(c), saved_(c->names_only_) { c_->names_only_ = true; }
    ~NamesOnlyScope() { c_->names_only_ = saved_; }
    NamesOnlyScope(const NamesOnlyScope&) = delete;
    NamesOnlyScope& operator=(const NamesOnlyScope&) = delete;
    Converter* c_;
    bool saved_;
  };
  struct NegationScope {
    NegationScope(Converter* c, const std::string& at) : c_(c) { c_->negation_scope_.push_back(at); }
    ~NegationScope() { c_->negation_scope_.pop_back(); }
    NegationScope(const NegationScope&) = delete;
    NegationScope& operator=(const NegationScope&) = delete;
    Converter* c_;
  };
};

}  // namespace xg2::jsonschema
