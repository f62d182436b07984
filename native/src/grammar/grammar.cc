// Grammar IR construction: the expression arena, rule table and code point range
// normalisation. Ids are validated here so that a front-end bug surfaces as a typed error
// instead of an out-of-bounds access in the automata builder.
#include "xg2/grammar.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "grammar/expr_hash.h"
#include "xg2/errors.h"

namespace xg2 {

namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

// Rule names must stay valid EBNF identifiers so that ToEbnf() output parses back.
std::string SanitizeRuleName(const std::string& name) {
  if (name.empty()) return "rule";
  std::string out;
  out.reserve(name.size() + 1);
  if (!IsNameStart(name[0])) out.push_back('_');
  for (char c : name) out.push_back(IsNameChar(c) ? c : '_');
  return out;
}

}  // namespace

std::vector<CodepointRange> NormalizeRanges(std::vector<CodepointRange> ranges) {
  // Already sorted, disjoint and not touching (most front-end classes): no new vector.
  bool normal = true;
  for (size_t i = 1; i < ranges.size() && normal; ++i) normal = uint64_t{ranges[i - 1].hi} + 1 < uint64_t{ranges[i].lo};
  if (normal) return ranges;
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.lo != b.lo ? a.lo < b.lo : a.hi < b.hi; });
  std::vector<CodepointRange> merged;
  for (const CodepointRange& r : ranges) {
    // Merge when r overlaps or touches the previous range (64-bit so hi + 1 cannot wrap).
    if (!merged.empty() && uint64_t{r.lo} <= uint64_t{merged.back().hi} + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

namespace {

bool SameExpr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.negated != b.negated || a.rule != b.rule || a.min != b.min || a.max != b.max ||
      a.bytes != b.bytes || a.children != b.children || a.ranges.size() != b.ranges.size()) {
    return false;
  }
  for (size_t i = 0; i < a.ranges.size(); ++i) {
    if (a.ranges[i].lo != b.ranges[i].lo || a.ranges[i].hi != b.ranges[i].hi) return false;
  }
  auto same = [](const auto& x, const auto& y) { return x == y || (x && y && *x == *y); };
  return same(a.dispatch, b.dispatch) && same(a.dfa, b.dfa) && same(a.any_order, b.any_order);
}

}  // namespace

ExprId Grammar::Intern(Expr e) {
  TableHasher h;
  HashExprFields(e, &h);
  h.Add(static_cast<uint64_t>(e.rule) + 1);
  h.Add(e.children.size());
  for (ExprId c : e.children) h.Add(static_cast<uint64_t>(c));
  const uint64_t hash = h.Finish();
  if (2 * (exprs_.size() + 1) > intern_table_.size()) {
    // Grow and re-place every node by its stored hash.
    std::vector<int32_t> table(std::max<size_t>(64, 2 * intern_table_.size()), -1);
    const size_t mask = table.size() - 1;
    for (ExprId id = 0; id < num_exprs(); ++id) {
      if (exprs_[id].kind == ExprKind::kRuleRef) continue;  // never looked up (below)
      size_t i = expr_hashes_[id] & mask;
      while (table[i] >= 0) i = (i + 1) & mask;
      table[i] = id;
    }
    intern_table_.swap(table);
  }
  // Rule references stay one node per site (the inliner counts sites by reference nodes), so
  // they are never looked up and stay out of the table: every reference to a rule hashes
  // alike, and probing past the earlier ones made adding the k-th reference cost k.
  if (e.kind != ExprKind::kRuleRef) {
    const size_t mask = intern_table_.size() - 1;
    size_t i = hash & mask;
    for (; intern_table_[i] >= 0; i = (i + 1) & mask) {
      const ExprId id = intern_table_[i];
      if (expr_hashes_[id] == hash && SameExpr(exprs_[id], e)) return id;
    }
    intern_table_[i] = num_exprs();
  }
  expr_hashes_.push_back(hash);
  exprs_.push_back(std::move(e));
  return num_exprs() - 1;
}

ExprId Grammar::AddEmpty() { return Intern(Expr()); }

ExprId Grammar::AddBytes(std::string bytes) {
  Expr e;
  e.kind = ExprKind::kBytes;
  e.bytes = std::move(bytes);
  return Intern(std::move(e));
}

ExprId Grammar::AddCharClass(std::vector<CodepointRange> ranges, bool negated) {
  for (const CodepointRange& r : ranges) {
    if (r.lo > r.hi || r.hi > kMaxCodepoint) {
      throw Error(ErrorKind::kInvalidArgument,
                  "invalid code point range " + std::to_string(r.lo) + ".." + std::to_string(r.hi));
    }
  }
  Expr e;
  e.kind = ExprKind::kCharClass;
  e.negated = negated;
  e.ranges = NormalizeRanges(std::move(ranges));
  return Intern(std::move(e));
}

ExprId Grammar::AddSequence(std::vector<ExprId> children) {
  for (ExprId c : children) {
    if (c < 0 || c >= num_exprs()) {
      throw Error(ErrorKind::kInvalidArgument, "sequence child id out of range");
    }
  }
  Expr e;
  e.kind = ExprKind::kSequence;
  e.children = std::move(children);
  return Intern(std::move(e));
}

ExprId Grammar::AddChoice(std::vector<ExprId> children) {
  for (ExprId c : children) {
    if (c < 0 || c >= num_exprs()) {
      throw Error(ErrorKind::kInvalidArgument, "choice child id out of range");
    }
  }
  Expr e;
  e.kind = ExprKind::kChoice;
  e.children = std::move(children);
  return Intern(std::move(e));
}

ExprId Grammar::AddRuleRef(RuleId rule) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule reference id out of range");
  }
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = rule;
  return Intern(std::move(e));
}

ExprId Grammar::AddRepeat(ExprId child, int64_t min, int64_t max) {
  if (child < 0 || child >= num_exprs()) {
    throw Error(ErrorKind::kInvalidArgument, "repeat child id out of range");
  }
  if (min < 0 || (max != kUnbounded && max < min)) {
    throw Error(ErrorKind::kInvalidArgument,
                "invalid repetition bounds {" + std::to_string(min) + "," + std::to_string(max) + "}");
  }
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.min = min;
  e.max = max;
  e.children = {child};
  return Intern(std::move(e));
}

ExprId Grammar::AddTagDispatch(TagDispatchSpec spec, std::vector<ExprId> children) {
  if (children.size() != spec.triggers.size()) {
    throw Error(ErrorKind::kInvalidArgument, "TagDispatch needs one continuation per trigger");
  }
  for (ExprId c : children) {
    if (c < 0 || c >= num_exprs()) throw Error(ErrorKind::kInvalidArgument, "TagDispatch child id out of range");
  }
  for (const auto* list : {&spec.triggers, &spec.ends, &spec.excludes}) {
    for (const std::string& s : *list) {
      if (s.empty()) throw Error(ErrorKind::kInvalidArgument, "TagDispatch strings must not be empty");
    }
  }
  if (spec.max_chars < -1) throw Error(ErrorKind::kInvalidArgument, "TagDispatch max_chars must be >= 0");
  Expr e;
  e.kind = ExprKind::kTagDispatch;
  e.children = std::move(children);
  e.dispatch = std::make_shared<const TagDispatchSpec>(std::move(spec));
  return Intern(std::move(e));
}

namespace {

// Presence rules name once-only members and have at least one alternative. With a max_count the
// smallest completion would be a set-cover search, so the two are not combined.
void ValidatePresenceRules(const AnyOrderSpec& spec) {
  if (spec.presence.empty()) return;
  if (spec.max_count >= 0) throw Error(ErrorKind::kInvalidArgument, "AnyOrder depends= cannot be combined with max");
  auto check = [&](int32_t m) {
    if (m < 0 || m >= spec.num_once()) {
      throw Error(ErrorKind::kInvalidArgument, "AnyOrder depends= member " + std::to_string(m) +
                                                   " is not a required or optional member (0.." +
                                                   std::to_string(spec.num_once() - 1) + ")");
    }
  };
  for (const auto& r : spec.presence) {
    check(r.member);
    if (r.any_of.empty()) throw Error(ErrorKind::kInvalidArgument, "AnyOrder depends= rule without alternatives");
    for (const auto& alt : r.any_of) {
      for (int32_t m : alt) check(m);
    }
  }
}

}  // namespace

ExprId Grammar::AddAnyOrder(AnyOrderSpec spec, std::vector<ExprId> children) {
  if (spec.num_required < 0 || spec.num_optional < 0 || spec.num_repeated < 0 || spec.num_members() == 0 ||
      children.size() != static_cast<size_t>(spec.num_members()) + 1) {
    throw Error(ErrorKind::kInvalidArgument, "AnyOrder needs a separator and at least one member");
  }
  for (ExprId c : children) {
    if (c < 0 || c >= num_exprs()) throw Error(ErrorKind::kInvalidArgument, "AnyOrder child id out of range");
  }
  if (spec.min_count < 0 || spec.max_count < -1 || (spec.max_count >= 0 && spec.max_count < spec.min_count)) {
    throw Error(ErrorKind::kInvalidArgument, "invalid AnyOrder count bounds");
  }
  ValidatePresenceRules(spec);
  Expr e;
  e.kind = ExprKind::kAnyOrder;
  e.children = std::move(children);
  e.any_order = std::make_shared<const AnyOrderSpec>(spec);
  return Intern(std::move(e));
}

ExprId Grammar::AddByteDfa(ByteDfaSpec spec) {
  return AddByteDfa(std::make_shared<const ByteDfaSpec>(std::move(spec)));
}

ExprId Grammar::AddByteDfa(std::shared_ptr<const ByteDfaSpec> shared) {
  if (!shared) throw Error(ErrorKind::kInvalidArgument, "ByteDfa needs an automaton");
  const ByteDfaSpec& spec = *shared;
  const int32_t n = spec.num_states();
  if (n == 0) throw Error(ErrorKind::kInvalidArgument, "ByteDfa needs at least one state");
  if (spec.edges.size() != spec.is_final.size()) {
    throw Error(ErrorKind::kInvalidArgument, "ByteDfa needs one edge list per state");
  }
  for (const auto& edges : spec.edges) {
    int prev_hi = -1;
    for (const auto& e : edges) {
      if (e.lo > e.hi || static_cast<int>(e.lo) <= prev_hi) {
        throw Error(ErrorKind::kInvalidArgument, "ByteDfa edges must be sorted, disjoint byte ranges");
      }
      if (e.target < 0 || e.target >= n) throw Error(ErrorKind::kInvalidArgument, "ByteDfa edge target out of range");
      prev_hi = e.hi;
    }
  }
  for (uint8_t f : spec.is_final) {
    if (f > 1) throw Error(ErrorKind::kInvalidArgument, "ByteDfa final flags must be 0 or 1");
  }
  Expr e;
  e.kind = ExprKind::kByteDfa;
  e.dfa = std::move(shared);
  return Intern(std::move(e));
}

RuleId Grammar::DeclareRule(const std::string& name) {
  Rule r;
  r.name = UniqueRuleName(name);
  rules_.push_back(std::move(r));
  rule_index_.emplace(rules_.back().name, num_rules() - 1);
  return num_rules() - 1;
}

void Grammar::RenameRule(RuleId rule, const std::string& name) {
  if (rule < 0 || rule >= num_rules()) throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  if (SanitizeRuleName(name) == rules_[rule].name) return;
  rule_index_.erase(rules_[rule].name);
  rules_[rule].name = UniqueRuleName(name);
  rule_index_.emplace(rules_[rule].name, rule);
}

std::string Grammar::UniqueRuleName(const std::string& name) {
  std::string unique = SanitizeRuleName(name);
  if (rule_index_.count(unique)) {
    const std::string base = unique;
    int64_t& suffix = next_suffix_.try_emplace(base, 2).first->second;
    for (;; ++suffix) {
      unique = base + "_" + std::to_string(suffix);
      if (!rule_index_.count(unique)) break;
    }
    ++suffix;
  }
  return unique;
}

void Grammar::SetRuleBody(RuleId rule, ExprId body) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  if (body < 0 || body >= num_exprs()) {
    throw Error(ErrorKind::kInvalidArgument, "body id out of range");
  }
  rules_[rule].body = body;
}

void Grammar::SetRuleLookahead(RuleId rule, ExprId lookahead) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  if (lookahead != kNoExpr && (lookahead < 0 || lookahead >= num_exprs())) {
    throw Error(ErrorKind::kInvalidArgument, "lookahead id out of range");
  }
  rules_[rule].lookahead = lookahead;
}

void Grammar::SetRuleTemperature(RuleId rule, float temperature) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  if (temperature != Rule::kNoTemperature && !(std::isfinite(temperature) && temperature >= 0.0f)) {
    throw Error(ErrorKind::kInvalidArgument, "temperature must be a finite non-negative number");
  }
  rules_[rule].temperature = temperature;
}

void Grammar::SetRuleMaxTokens(RuleId rule, int64_t max_tokens) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  if (max_tokens != Rule::kNoTokenBudget && (max_tokens < 0 || max_tokens > INT32_MAX)) {
    throw Error(ErrorKind::kInvalidArgument, "max_tokens must be between 0 and 2147483647");
  }
  rules_[rule].max_tokens = max_tokens;
}

void Grammar::SetRuleJsonChars(RuleId rule, int64_t min, int64_t max) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  if (min < 0 || min > INT32_MAX || (max != Rule::kNoCharBudget && (max < min || max > INT32_MAX))) {
    throw Error(ErrorKind::kInvalidArgument, "json_chars must be MIN..MAX with 0 <= MIN <= MAX <= 2147483647");
  }
  rules_[rule].json_min_chars = min;
  rules_[rule].json_max_chars = max;
}

std::string CaptureNameError(const std::string& name) {
  if (name.empty()) return "capture name must not be empty";
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!ok) return "capture name must only contain letters, digits, '_', '-' and '.'";
  }
  return "";
}

void Grammar::SetRuleEndOnly(RuleId rule, bool end_only) {
  if (rule < 0 || rule >= num_rules()) throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  rules_[rule].end_only = end_only;
}

void Grammar::SetRuleMarkerBefore(RuleId rule, const MarkerBefore& marker) {
  if (rule < 0 || rule >= num_rules()) throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  if (marker.length < 0) throw Error(ErrorKind::kInvalidArgument, "a trigger marker's length must be >= 0");
  if (!marker.capture.empty()) {
    const std::string why = CaptureNameError(marker.capture);
    if (!why.empty()) throw Error(ErrorKind::kInvalidArgument, why + ", not '" + marker.capture + "'");
  }
  rules_[rule].marker_before = marker;
}

void Grammar::SetRuleCapture(RuleId rule, const std::string& name) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  if (!name.empty()) {
    const std::string why = CaptureNameError(name);
    if (!why.empty()) throw Error(ErrorKind::kInvalidArgument, why + ", not '" + name + "'");
  }
  rules_[rule].capture = name;
}

MarkerSplit MapMarkerSplit(const MarkerSplit& split, const std::vector<ExprId>& map) {
  MarkerSplit out = split;
  if (split.body != kNoExpr) out.body = map[split.body];
  if (split.marker != kNoExpr) out.marker = map[split.marker];
  return out;
}

void Grammar::SetRuleMarkerSplit(RuleId rule, const MarkerSplit& split) {
  if (rule < 0 || rule >= num_rules()) {
    throw Error(ErrorKind::kInvalidArgument, "rule id out of range");
  }
  const bool none = split.body == kNoExpr && split.marker == kNoExpr;
  auto is_dfa = [&](ExprId id) { return id >= 0 && id < num_exprs() && expr(id).kind == ExprKind::kByteDfa; };
  if (!none && !(is_dfa(split.body) && is_dfa(split.marker))) {
    throw Error(ErrorKind::kInvalidArgument, "a marker split's body and marker must be byte automata");
  }
  if ((none || split.whole_capture) && (split.hides_marker || !split.stop_capture.empty())) {
    throw Error(ErrorKind::kInvalidArgument, "stop_capture requires stop or suffix");
  }
  if (!split.stop_capture.empty()) {
    const std::string why = CaptureNameError(split.stop_capture);
    if (!why.empty()) throw Error(ErrorKind::kInvalidArgument, why + ", not '" + split.stop_capture + "'");
  }
  rules_[rule].marker_split = split;
}

RuleId Grammar::FindRule(const std::string& name) const {
  auto it = rule_index_.find(name);
  return it == rule_index_.end() ? -1 : it->second;
}

namespace {

// Whether `target` is `root` or inside it (not through rule references).
bool ExprHolds(const Grammar& g, ExprId root, ExprId target, std::vector<uint8_t>* seen) {
  std::vector<ExprId> stack{root};
  while (!stack.empty()) {
    ExprId id = stack.back();
    stack.pop_back();
    if (id == kNoExpr || (*seen)[id]) continue;
    if (id == target) return true;
    (*seen)[id] = 1;
    for (ExprId c : g.expr(id).children) stack.push_back(c);
  }
  return false;
}

}  // namespace

void ThrowIfUnbuilt(const Grammar& g) {
  for (ExprId id = 0; id < g.num_exprs(); ++id) {
    const Expr& e = g.expr(id);
    if (e.kind != ExprKind::kByteDfa || !e.dfa->is_unbuilt()) continue;
    std::string rule_name = g.rule(g.root()).name;
    std::vector<uint8_t> seen(static_cast<size_t>(g.num_exprs()), 0);
    for (RuleId r = 0; r < g.num_rules(); ++r) {
      const Rule& rule = g.rule(r);
      if (ExprHolds(g, rule.body, id, &seen) || ExprHolds(g, rule.lookahead, id, &seen)) {
        rule_name = rule.name;
        break;
      }
    }
    throw SyntaxError::Verbatim("Failed to build the automaton for rule " + rule_name + ": " + e.dfa->unbuilt_error,
                                e.dfa->unbuilt_line, e.dfa->unbuilt_column);
  }
}

RuleId ImportGrammar(Grammar* dst, const Grammar& src, const std::string& prefix) {
  std::vector<RuleId> rules(src.num_rules());
  for (RuleId r = 0; r < src.num_rules(); ++r) rules[r] = dst->DeclareRule(prefix + src.rule(r).name);
  // Copying in arena order keeps children before parents; equal nodes may fold into nodes
  // dst already has (hash-consing), so ids are mapped, not shifted.
  std::vector<ExprId> map(src.num_exprs(), kNoExpr);
  auto mapped = [&](const std::vector<ExprId>& ids) {
    std::vector<ExprId> out(ids);
    for (ExprId& id : out) id = map[id];
    return out;
  };
  for (ExprId id = 0; id < src.num_exprs(); ++id) {
    const Expr& e = src.expr(id);
    ExprId out = kNoExpr;
    switch (e.kind) {
      case ExprKind::kEmpty: out = dst->AddEmpty(); break;
      case ExprKind::kBytes: out = dst->AddBytes(e.bytes); break;
      case ExprKind::kCharClass: out = dst->AddCharClass(e.ranges, e.negated); break;
      case ExprKind::kSequence: out = dst->AddSequence(mapped(e.children)); break;
      case ExprKind::kChoice: out = dst->AddChoice(mapped(e.children)); break;
      case ExprKind::kRuleRef: out = dst->AddRuleRef(rules[e.rule]); break;
      case ExprKind::kRepeat: out = dst->AddRepeat(map[e.children[0]], e.min, e.max); break;
      case ExprKind::kTagDispatch: out = dst->AddTagDispatch(*e.dispatch, mapped(e.children)); break;
      case ExprKind::kByteDfa: out = dst->AddByteDfa(e.dfa); break;
      case ExprKind::kAnyOrder: out = dst->AddAnyOrder(*e.any_order, mapped(e.children)); break;
    }
    map[id] = out;
  }
  for (RuleId r = 0; r < src.num_rules(); ++r) {
    if (src.rule(r).body != kNoExpr) dst->SetRuleBody(rules[r], map[src.rule(r).body]);
    if (src.rule(r).lookahead != kNoExpr) dst->SetRuleLookahead(rules[r], map[src.rule(r).lookahead]);
    dst->SetRuleTemperature(rules[r], src.rule(r).temperature);
    dst->SetRuleMaxTokens(rules[r], src.rule(r).max_tokens);
    dst->SetRuleJsonChars(rules[r], src.rule(r).json_min_chars, src.rule(r).json_max_chars);
    dst->SetRuleCapture(rules[r], src.rule(r).capture);
    dst->SetRuleMarkerSplit(rules[r], MapMarkerSplit(src.rule(r).marker_split, map));
    dst->SetRuleEndOnly(rules[r], src.rule(r).end_only);
    dst->SetRuleMarkerBefore(rules[r], src.rule(r).marker_before);
  }
  return rules[src.root()];
}

Grammar CombineGrammars(const std::vector<const Grammar*>& parts, bool concatenate) {
  if (parts.empty()) throw Error(ErrorKind::kInvalidArgument, "at least one grammar is needed");
  Grammar result;
  RuleId root = result.DeclareRule("root");
  std::vector<ExprId> refs;
  for (size_t i = 0; i < parts.size(); ++i) {
    refs.push_back(result.AddRuleRef(ImportGrammar(&result, *parts[i], "g" + std::to_string(i) + "_")));
  }
  ExprId body = refs.size() == 1 ? refs[0] : concatenate ? result.AddSequence(refs) : result.AddChoice(refs);
  result.SetRuleBody(root, body);
  result.set_root(root);
  return result;
}

}  // namespace xg2
