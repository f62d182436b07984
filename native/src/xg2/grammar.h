// Grammar IR: rules whose bodies are expression trees stored in one arena.
//
// Front ends (EBNF, JSON Schema, regex, structural tags) all lower to this IR; the automata
// builder turns every rule body into a byte-level DFA whose edges are byte ranges or rule
// references.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xg2 {

using ExprId = int32_t;
using RuleId = int32_t;
constexpr int32_t kNoExpr = -1;
constexpr int64_t kUnbounded = -1;

enum class ExprKind : uint8_t {
  kEmpty,        // matches the empty string
  kBytes,        // a literal byte string (UTF-8 for text)
  kCharClass,    // one code point in (or, if negated, not in) a set of code point ranges
  kSequence,     // children in order
  kChoice,       // one of the children
  kRuleRef,      // a reference to another rule
  kRepeat,       // child repeated min..max times (max == kUnbounded: no upper bound)
  kTagDispatch,  // free text watched by an Aho-Corasick automaton; see TagDispatchSpec
  kByteDfa,      // a deterministic automaton over bytes; see ByteDfaSpec (token-level elements too)
  kAnyOrder,     // members in any order, each at most once or repeatable; see AnyOrderSpec
};

// The fixed part of a ByteDfa node: a DFA over bytes with start state 0 and no rule
// references. Front ends build one when a language comes from automaton operations
// (intersection with a length counter, complement) that have no compact expression form.
struct ByteDfaEdge {
  uint8_t lo;
  uint8_t hi;  // inclusive
  int32_t target;
  bool operator==(const ByteDfaEdge& o) const { return lo == o.lo && hi == o.hi && target == o.target; }
};
struct ByteDfaSpec {
  std::vector<uint8_t> is_final;                // one per state
  std::vector<std::vector<ByteDfaEdge>> edges;  // per state: sorted by lo, disjoint
  // Set on the automaton of a token-level element (grammar/token_set.h): one token whose id is
  // in token_ids (or, if tokens_excluded, not in it); sorted, deduplicated. The edges follow
  // from it; it is what the printer shows.
  bool is_token_set = false;
  bool tokens_excluded = false;
  std::vector<int32_t> token_ids;
  // Set on the stand-in for an EBNF `Regex(...)` whose pattern does not compile: xgrammar
  // reads such a grammar and reports the pattern when the grammar is compiled, so the stand-in
  // (one state, no final) is kept until then. `unbuilt_source` is the macro's text (what the
  // printer shows, so the error survives a print and parse), `unbuilt_error` the reader's
  // message at (unbuilt_line, unbuilt_column). GrammarCompiler refuses any grammar holding one.
  std::string unbuilt_source;
  std::string unbuilt_error;
  int32_t unbuilt_line = 0;
  int32_t unbuilt_column = 0;
  bool is_unbuilt() const { return !unbuilt_source.empty(); }
  int32_t num_states() const { return static_cast<int32_t>(is_final.size()); }
  bool operator==(const ByteDfaSpec& o) const {
    return is_final == o.is_final && edges == o.edges && is_token_set == o.is_token_set &&
           tokens_excluded == o.tokens_excluded && token_ids == o.token_ids && unbuilt_source == o.unbuilt_source &&
           unbuilt_error == o.unbuilt_error;
  }
};

// The fixed part of a TagDispatch node (its children are the per-trigger continuations).
//
// The node matches free UTF-8 text. When a trigger string appears in the text (found by an
// Aho-Corasick automaton over all trigger, end and exclude strings), child i must follow;
// after it the node returns to free text (loop) or ends. An end string in the text ends the
// node right after it; an exclude string may not appear in free text at all. With plain_end
// the node may also end anywhere in free text (on a character boundary); with at_least_one,
// only after a first dispatch. max_chars (-1: none) bounds the characters of free text
// (trigger and end strings not counted).
struct TagDispatchSpec {
  std::vector<std::string> triggers;  // one per child
  std::vector<std::string> ends;
  std::vector<std::string> excludes;
  bool loop = true;
  bool plain_end = true;
  bool at_least_one = false;
  int64_t max_chars = -1;
  bool operator==(const TagDispatchSpec& o) const {
    return triggers == o.triggers && ends == o.ends && excludes == o.excludes && loop == o.loop &&
           plain_end == o.plain_end && at_least_one == o.at_least_one && max_chars == o.max_chars;
  }
};

// The fixed part of an AnyOrder node; its children are the separator then the members:
// num_required, then num_optional, then num_repeated of them.
//
// The node matches m_1 sep m_2 sep ... m_k (k >= 0) where every required member appears exactly
// once, every optional member at most once and every repeated member any number of times, in any
// order, and min_count <= k <= max_count. No member may match the empty string. This is an
// unordered JSON object: a context-free grammar for it needs 2^n rules, while the parser runs
// it with the set of members seen so far in its state (see automata/any_order_states.h).
//
// Presence rules (JSON Schema's dependentRequired, and dependencies on anyOf of required
// names) constrain which once-only members may appear together: when `member` appears, every
// member of at least one of `any_of` appears too (indices count the required, then the
// optional members). They are checked on the set of members seen, so a schema with several
// dependencies stays one node instead of a union of objects, one per combination.
struct AnyOrderPresenceRule {
  int32_t member = 0;
  std::vector<std::vector<int32_t>> any_of;
  bool operator==(const AnyOrderPresenceRule& o) const { return member == o.member && any_of == o.any_of; }
};

struct AnyOrderSpec {
  int32_t num_required = 0;
  int32_t num_optional = 0;
  int32_t num_repeated = 0;
  int64_t min_count = 0;
  int64_t max_count = -1;  // -1: no bound
  std::vector<AnyOrderPresenceRule> presence;
  int32_t num_members() const { return num_required + num_optional + num_repeated; }
  int32_t num_once() const { return num_required + num_optional; }
  bool operator==(const AnyOrderSpec& o) const {
    return num_required == o.num_required && num_optional == o.num_optional && num_repeated == o.num_repeated &&
           min_count == o.min_count && max_count == o.max_count && presence == o.presence;
  }
};

struct CodepointRange {
  uint32_t lo;
  uint32_t hi;  // inclusive
  bool operator==(const CodepointRange& o) const { return lo == o.lo && hi == o.hi; }
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  bool negated = false;                             // kCharClass
  RuleId rule = -1;                                 // kRuleRef
  int64_t min = 0;                                  // kRepeat
  int64_t max = 0;                                  // kRepeat
  std::string bytes;                                // kBytes
  std::vector<CodepointRange> ranges;               // kCharClass, sorted and merged
  std::vector<ExprId> children;                     // kSequence, kChoice, kRepeat (one child), kTagDispatch
  std::shared_ptr<const TagDispatchSpec> dispatch;  // kTagDispatch
  std::shared_ptr<const ByteDfaSpec> dfa;           // kByteDfa
  std::shared_ptr<const AnyOrderSpec> any_order;    // kAnyOrder
};

// How captures see a suffix/stop rule, whose text is a body followed by a marker (its own
// body is the lazy automaton of both). The split of an occurrence's text is its first place
// where the text before is in `body` and the text after in `marker` (ByteDfa expressions):
// the rule's own capture holds the body, a `stop_capture` name the marker, and with
// `hides_marker` (stop=) captures of enclosing rules leave the marker out too. With
// `whole_capture` (xgrammar's `[lazy]` rule `TEXT "t"` under a budget, printed `lazy=(B, M)`)
// the split only says where a spent budget may end the rule (after a body); captures see the
// rule's whole text.
struct MarkerSplit {
  ExprId body = kNoExpr;
  ExprId marker = kNoExpr;
  bool hides_marker = false;
  bool whole_capture = false;
  std::string stop_capture;  // "" when the marker is not captured
  bool operator==(const MarkerSplit& o) const {
    return body == o.body && marker == o.marker && hides_marker == o.hides_marker && whole_capture == o.whole_capture &&
           stop_capture == o.stop_capture;
  }
};

// The marker a dynamic dispatch read just before an occurrence of a rule (xgrammar's dispatch
// head `head[stop="M"]` / `[suffix="M"]`, whose trigger M the dispatch consumes and whose
// tool body the rule is): `length` bytes before the occurrence. With `hides` (stop=) the
// captures of the occurrences around it leave it out; `capture` names its own capture
// (stop_capture). Printed `trigger_stop=L` / `trigger_suffix=L`, `trigger_capture="n"`.
struct MarkerBefore {
  int32_t length = 0;  // 0: none
  bool hides = false;
  std::string capture;
  bool operator==(const MarkerBefore& o) const {
    return length == o.length && hides == o.hides && capture == o.capture;
  }
};

// `split` with its expressions renumbered through map (old id -> new id), for passes that
// copy a grammar's expressions.
MarkerSplit MapMarkerSplit(const MarkerSplit& split, const std::vector<ExprId>& map);

struct Rule {
  std::string name;
  ExprId body = kNoExpr;
  // Optional lookahead assertion `(= ...)`: a hint that whatever follows this rule in any
  // context starts with a string of this expression. It never changes the language.
  ExprId lookahead = kNoExpr;
  // Sampling temperature while the parse is inside this rule (xgrammar's `[temperature=T]`):
  // the matcher reports the temperature of the innermost such rule on the current parse.
  // kNoTemperature when the rule sets none; otherwise finite and >= 0.
  float temperature = kNoTemperature;
  static constexpr float kNoTemperature = -1.0f;
  bool has_temperature() const { return temperature >= 0.0f; }
  // Token budget of each occurrence (xgrammar's `[max_tokens=N]`): the matcher closes an
  // occurrence that has consumed N tokens where its body can end (see EarleyParser's
  // EnforceTokenBudgets). kNoTokenBudget when the rule sets none; otherwise 0..INT32_MAX.
  int64_t max_tokens = kNoTokenBudget;
  static constexpr int64_t kNoTokenBudget = -1;
  bool has_token_budget() const { return max_tokens >= 0; }
  // Decoded JSON string characters of each occurrence (`[json_chars=MIN..MAX]`; the JSON
  // Schema front end writes it where a pattern's automaton times a length counter is too
  // large): the parser counts the characters the occurrence's bytes decode to (an escape, a
  // UTF-8 sequence or a surrogate pair is one) and lets it end only with MIN..MAX of them.
  // The body reads JSON string content and references no rule.
  int64_t json_min_chars = 0;
  int64_t json_max_chars = kNoCharBudget;
  static constexpr int64_t kNoCharBudget = -1;
  bool has_char_budget() const { return json_min_chars > 0 || json_max_chars >= 0; }
  // Capture name (xgrammar's `[capture]` / `[capture="name"]`): the matcher records the
  // span of every completion of the rule under this name. Empty when the rule captures none.
  std::string capture;
  bool has_capture() const { return !capture.empty(); }
  // A suffix/stop rule's split (xgrammar's `[suffix=M]` / `[stop=M]`, see MarkerSplit).
  MarkerSplit marker_split;
  // Its texts are sentences only where nothing follows them (grammar/end_forms.h): the
  // grammar says so by where it references the rule; captures keep only its completions at
  // the end of the input, since the others lie on parses that cannot go on.
  bool end_only = false;
  MarkerBefore marker_before;
  bool has_marker_before() const { return marker_before.length > 0; }
  bool has_marker_split() const { return marker_split.body != kNoExpr; }
  // The matcher reads this rule's identity on the parse (temperature, token budget, captures),
  // so passes keep it a rule of its own: not inlined into callers, not merged with equal ones.
  bool keeps_identity() const {
    return has_temperature() || has_token_budget() || has_char_budget() || has_capture() || has_marker_split() ||
           has_marker_before();
  }
};

// Why `name` is not a valid capture name (non-empty; letters, digits, '_', '-', '.'), or "".
std::string CaptureNameError(const std::string& name);

class Grammar {
 public:
  // Expression constructors; each returns the node's id. Nodes are immutable and
  // hash-consed: adding a node equal to an existing one (same kind, fields and children)
  // returns the existing id, so front ends that rebuild the same pieces (whitespace, string
  // bodies, a schema used in many places) leave one copy for every pass to process. Rule
  // references are the exception: each AddRuleRef is a new node (one per reference site).
  ExprId AddEmpty();
  ExprId AddBytes(std::string bytes);
  ExprId AddCharClass(std::vector<CodepointRange> ranges, bool negated);
  ExprId AddSequence(std::vector<ExprId> children);
  ExprId AddChoice(std::vector<ExprId> children);
  ExprId AddRuleRef(RuleId rule);
  ExprId AddRepeat(ExprId child, int64_t min, int64_t max);
  // children[i] follows spec.triggers[i]. Throws Error(kInvalidArgument) for an empty or
  // malformed string, or a child count that differs from the trigger count.
  ExprId AddTagDispatch(TagDispatchSpec spec, std::vector<ExprId> children);
  // Throws Error(kInvalidArgument) for no states, a final-flag count that differs from the
  // state count, an edge target out of range, or edges not sorted and disjoint.
  ExprId AddByteDfa(ByteDfaSpec spec);
  // The same over a shared automaton (not copied: kept by the node).
  ExprId AddByteDfa(std::shared_ptr<const ByteDfaSpec> spec);
  // children = {separator, members...} as AnyOrderSpec describes. Throws
  // Error(kInvalidArgument) for a member count that differs from the spec's, no members, or
  // bounds that are negative or crossed.
  ExprId AddAnyOrder(AnyOrderSpec spec, std::vector<ExprId> children);

  // Declares a rule with no body yet (so bodies can reference rules defined later). The
  // stored name is made a valid EBNF identifier (other characters become '_') and unique
  // (a "_2", "_3", ... suffix), so ToEbnf() output always parses; read it back via rule().
  RuleId DeclareRule(const std::string& name);
  void SetRuleBody(RuleId rule, ExprId body);
  void SetRuleLookahead(RuleId rule, ExprId lookahead);
  // Throws Error(kInvalidArgument) unless temperature is finite and >= 0 (or kNoTemperature).
  void SetRuleTemperature(RuleId rule, float temperature);
  // Throws Error(kInvalidArgument) unless max_tokens is in [0, INT32_MAX] (or kNoTokenBudget).
  void SetRuleMaxTokens(RuleId rule, int64_t max_tokens);
  // Throws Error(kInvalidArgument) unless 0 <= min <= INT32_MAX and max is kNoCharBudget or in
  // [min, INT32_MAX].
  void SetRuleJsonChars(RuleId rule, int64_t min, int64_t max);
  // Throws Error(kInvalidArgument) unless `name` is empty (none) or made of letters, digits,
  // '_', '-' and '.' (CaptureNameError says what is wrong with a name, or "" if it is valid).
  void SetRuleCapture(RuleId rule, const std::string& name);
  // Throws Error(kInvalidArgument) unless body and marker are ByteDfa expressions of this
  // grammar (or both kNoExpr: none) and stop_capture is empty or a valid capture name.
  void SetRuleMarkerSplit(RuleId rule, const MarkerSplit& split);
  void SetRuleEndOnly(RuleId rule, bool end_only);
  // Throws Error(kInvalidArgument) for a negative length or an invalid capture name.
  void SetRuleMarkerBefore(RuleId rule, const MarkerBefore& marker);
  // Gives the rule a new name (made valid and unique as DeclareRule does).
  void RenameRule(RuleId rule, const std::string& name);
  // Returns the id of the rule with this name, or -1.
  RuleId FindRule(const std::string& name) const;

  const Expr& expr(ExprId id) const { return exprs_[id]; }
  const Rule& rule(RuleId id) const { return rules_[id]; }
  int32_t num_rules() const { return static_cast<int32_t>(rules_.size()); }
  int32_t num_exprs() const { return static_cast<int32_t>(exprs_.size()); }
  RuleId root() const { return root_; }
  void set_root(RuleId r) { root_ = r; }

  // Prints the grammar in the EBNF dialect accepted by ParseEbnf; root rule first.
  std::string ToEbnf() const;

 private:
  ExprId Intern(Expr e);
  // `name` made a valid EBNF identifier and unique among the rules.
  std::string UniqueRuleName(const std::string& name);

  std::vector<Expr> exprs_;
  std::vector<uint64_t> expr_hashes_;  // per node, for Intern
  std::vector<int32_t> intern_table_;  // open addressing over node ids (-1: empty)
  std::vector<Rule> rules_;
  std::unordered_map<std::string, RuleId> rule_index_;  // name -> id, for FindRule
  // Per taken base name, the next "_N" suffix DeclareRule tries: declaring many rules under one
  // name (the members of a large any-order object) stays linear instead of probing 2, 3, ...
  std::unordered_map<std::string, int64_t> next_suffix_;
  RuleId root_ = -1;
};

// Throws the error of the first Regex(...) stand-in of `g` (ByteDfaSpec::unbuilt_source), as a
// SyntaxError "Failed to build the automaton for rule R: <reader's message>" at its line and
// column; does nothing for a grammar without one.
void ThrowIfUnbuilt(const Grammar& g);

// Parses the GBNF/XGrammar EBNF dialect. Throws SyntaxError (line:col) for malformed text and
// for references to undefined rules, Error(kGrammarSemantic) for a missing root rule, and
// Error(kLimitExceeded) for nesting deeper than 1000 levels.
Grammar ParseEbnf(const std::string& text, const std::string& root_rule_name = "root");

// Copies every rule of `src` into `dst` (names prefixed with `prefix`, made unique) and
// returns the id of src's root rule there.
RuleId ImportGrammar(Grammar* dst, const Grammar& src, const std::string& prefix);

// A grammar whose root matches one of `parts` (concatenate = false) or all of them in order,
// each part's rules copied under a "g<i>_" prefix. Throws Error(kInvalidArgument) for no parts.
Grammar CombineGrammars(const std::vector<const Grammar*>& parts, bool concatenate);

// The builtin JSON grammar (any JSON value; RFC 8259 strings and numbers).
const std::string& BuiltinJsonGrammarEbnf();

// Normalises code point ranges: sorts, merges overlapping/adjacent ones.
std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges);

}  // namespace xg2
