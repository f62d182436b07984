#include "automata/grammar_automaton.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "automata/char_budget_dist.h"
#include "automata/mid_token_distance.h"
#include "automata/rule_dfa_cache.h"
#include "grammar/any_order_lowering.h"
#include "grammar/reachable_rules.h"
#include "grammar/repeat_lowering.h"
#include "grammar/rule_dedup.h"
#include "grammar/rule_inliner.h"
#include "xg2/errors.h"
#include "xg2/tokenizer.h"

namespace xg2 {

const GrammarAutomaton::CountedRepeat& GrammarAutomaton::RepeatOf(int32_t v) const {
  auto it =
      std::upper_bound(repeats.begin(), repeats.end(), v, [](int32_t x, const CountedRepeat& r) { return x < r.base; });
  return *(it - 1);
}

bool GrammarAutomaton::VirtualIsFinal(int32_t v) const {
  const CountedRepeat& r = RepeatOf(v);
  int32_t off = v - r.base;
  if (off == r.span) return true;
  if (off == r.span + 1) return false;
  return off >= r.min;
}

int32_t GrammarAutomaton::VirtualNext(int32_t v) const {
  const CountedRepeat& r = RepeatOf(v);
  int32_t off = v - r.base;
  if (off >= r.span) return v;  // star forms loop on themselves
  if (r.max == kUnbounded) return r.base + std::min<int64_t>(off + 1, r.min);
  return off < r.max ? v + 1 : -1;
}

size_t GrammarAutomaton::MemoryBytes() const {
  return state_rule.size() * (sizeof(RuleId) + 2 + 2 * sizeof(int32_t)) + byte_edges.size() * sizeof(DfaByteEdge) +
         rule_edges.size() * sizeof(DfaRuleEdge) + rule_start.size() * (2 * sizeof(int32_t) + 1) +
         any_order->MemoryBytes();
}

namespace {
std::shared_ptr<const GrammarAutomaton> BuildOnce(const Grammar& source, const AutomatonLimits& limits);
}  // namespace

std::shared_ptr<const GrammarAutomaton> BuildGrammarAutomaton(const Grammar& source, const AutomatonLimits& limits) {
  try {
    return BuildOnce(source, limits);
  } catch (const Error& e) {
    // Unrolled repetitions can blow up the subset construction; counted loops cannot.
    if (e.kind() != ErrorKind::kLimitExceeded || limits.max_unrolled_repeat <= 1) throw;
    limits.CheckDeadline();  // out of time is final
    AutomatonLimits counted = limits;
    counted.max_unrolled_repeat = 1;
    return BuildOnce(source, counted);
  }
}

namespace {

// The grammar the automaton is built from, with its any-order rules and large repeats lowered.
struct LoweredGrammar {
  Grammar g;
  std::vector<LoweredAnyOrder> any_order;
  std::vector<LoweredRepeat> repeats;
};

LoweredGrammar LowerGrammar(const Grammar& source, const AutomatonLimits& limits) {
  LoweredGrammar out{source, {}, {}};
  Grammar& g = out.g;
  DeduplicateRules(&g);
  limits.CheckDeadline();
  InlineSmallRules(&g);
  limits.CheckDeadline();
  // After inlining, so that repeat and any-order rules are never inlined back into their
  // callers; any-order first, so that large repeats in its members are lowered too.
  out.any_order = LowerAnyOrder(&g);
  out.repeats = LowerLargeRepeats(&g, limits.max_unrolled_repeat, limits.max_counted_span);
  return out;
}

// Per rule: the members of an any-order rule (its callees: its body is only a placeholder).
std::vector<std::vector<RuleId>> AnyOrderMembers(int32_t num_rules, const std::vector<LoweredAnyOrder>& any_order) {
  std::vector<std::vector<RuleId>> member_rules(num_rules);
  for (const LoweredAnyOrder& lo : any_order) {
    member_rules[lo.rule] = lo.first;
    member_rules[lo.rule].insert(member_rules[lo.rule].end(), lo.rest.begin(), lo.rest.end());
  }
  return member_rules;
}

// Per rule: the any-order member rule whose body a "separator, member" rule repeats behind
// its separator (-1: none).
std::vector<RuleId> SeparatedMemberOf(const Grammar& g, const std::vector<LoweredAnyOrder>& any_order) {
  std::vector<RuleId> first_of(g.num_rules(), -1);
  for (const LoweredAnyOrder& lo : any_order) {
    for (size_t i = 0; i < lo.first.size(); ++i) {
      const Expr& e = g.expr(g.rule(lo.rest[i]).body);
      if (e.kind == ExprKind::kSequence && e.children.size() == 2 && e.children[1] == g.rule(lo.first[i]).body &&
          lo.first[i] < lo.rest[i]) {
        first_of[lo.rest[i]] = lo.first[i];
      }
    }
  }
  return first_of;
}

// One DFA per rule; a rule the root cannot reach gets one dead state (no string, no used state).
std::vector<RuleDfa> BuildRuleDfas(const Grammar& g, const std::vector<std::vector<RuleId>>& member_rules,
                                   const std::vector<LoweredAnyOrder>& any_order, const AutomatonLimits& limits) {
  const int32_t num_rules = g.num_rules();
  std::vector<RuleDfa> dfas;
  dfas.reserve(num_rules);
  const std::vector<uint8_t> reachable = RulesReachableFromRoot(g, member_rules);
  // Without minimisation a "separator, member" automaton is the member's behind the
  // separator's (ConcatenatedRuleDfa); minimised ones are left to BuildRuleDfa's size policy.
  const std::vector<RuleId> separated_member =
      limits.minimize ? std::vector<RuleId>(num_rules, -1) : SeparatedMemberOf(g, any_order);
  std::unordered_map<ExprId, RuleDfa> separators;
  for (RuleId r = 0; r < num_rules; ++r) {
    if (g.rule(r).body == kNoExpr) {
      throw Error(ErrorKind::kGrammarSemantic, "rule '" + g.rule(r).name + "' has no body");
    }
    if (reachable[r] && separated_member[r] >= 0 && reachable[separated_member[r]]) {
      const ExprId separator = g.expr(g.rule(r).body).children[0];
      auto it = separators.find(separator);
      if (it == separators.end()) it = separators.emplace(separator, CachedRuleDfa(g, separator, limits)).first;
      RuleDfa joined;
      if (ConcatenatedRuleDfa(it->second, dfas[separated_member[r]], &joined)) {
        dfas.push_back(std::move(joined));
        limits.CheckDeadline();
        continue;
      }
    }
    dfas.push_back(reachable[r] ? CachedRuleDfa(g, g.rule(r).body, limits) : DeadRuleDfa());
    limits.CheckDeadline();
  }
  return dfas;
}

// Live states: those from which a final state is reachable through bytes and productive
// rules, by a backward search from the final states (the buffers kept between rules).
class LivenessSearch {
 public:
  explicit LivenessSearch(const std::vector<uint8_t>& productive) : productive_(productive) {}
  // Returns whether every rule the automaton references was productive (then the result is
  // final: productivity only grows).
  bool ReachesFinal(const RuleDfa& d, uint8_t* live) {
    const int32_t n = d.num_states();
    std::fill(live, live + n, uint8_t{0});
    pred_begin.assign(n + 1, 0);
    bool callees_productive = true;
    for (int32_t s = 0; s < n; ++s) {
      for (const auto& e : d.byte_edges(s)) ++pred_begin[e.target + 1];
      for (const auto& e : d.rule_edges(s)) {
        if (productive_[e.rule])
          ++pred_begin[e.target + 1];
        else
          callees_productive = false;
      }
    }
    for (int32_t s = 0; s < n; ++s) pred_begin[s + 1] += pred_begin[s];
    preds.resize(pred_begin[n]);
    fill.assign(pred_begin.begin(), pred_begin.end() - 1);
    for (int32_t s = 0; s < n; ++s) {
      for (const auto& e : d.byte_edges(s)) preds[fill[e.target]++] = s;
      for (const auto& e : d.rule_edges(s))
        if (productive_[e.rule]) preds[fill[e.target]++] = s;
    }
    live_stack.clear();
    for (int32_t s = 0; s < n; ++s) {
      if (d.is_final[s]) {
        live[s] = 1;
        live_stack.push_back(s);
      }
    }
    while (!live_stack.empty()) {
      const int32_t t = live_stack.back();
      live_stack.pop_back();
      for (int32_t k = pred_begin[t]; k < pred_begin[t + 1]; ++k) {
        if (!live[preds[k]]) {
          live[preds[k]] = 1;
          live_stack.push_back(preds[k]);
        }
      }
    }
    return callees_productive;
  }

 private:
  const std::vector<uint8_t>& productive_;
  std::vector<int32_t> pred_begin, preds, fill, live_stack;
};

// An any-order rule completes if its required members do and enough members can complete
// to reach min_count within max_count.
bool AnyOrderProductive(const LoweredAnyOrder& lo, const std::vector<uint8_t>& productive) {
  const AnyOrderSpec& sp = lo.spec;
  if (!sp.presence.empty()) {  // the members' presence rules decide (AnyOrderStates::StartLive)
    AnyOrderStates::Node n;
    n.spec = sp;
    for (size_t i = 0; i < lo.first.size(); ++i) {
      n.first.push_back(productive[lo.first[i]] ? lo.first[i] : -1);
      n.rest.push_back(productive[lo.first[i]] ? lo.rest[i] : -1);
    }
    AnyOrderStates::Prepare(&n);
    return AnyOrderStates::StartLive(n);
  }
  int64_t available = 0;
  for (int32_t i = 0; i < sp.num_members(); ++i) {
    if (!productive[lo.first[i]]) {
      if (i < sp.num_required) return false;
      continue;
    }
    available += i < sp.num_once() ? 1 : INT32_MAX;
  }
  int64_t need = std::max<int64_t>(sp.num_required, sp.min_count);
  int64_t room = sp.max_count >= 0 ? sp.max_count : INT64_MAX;
  return need <= std::min(available, room);
}

// Productive rules (the start state reaches a final state through bytes and productive rules)
// and live states. Rule r's states are offset[r] .. offset[r + 1] - 1 in the global numbering;
// liveness uses the same layout (one buffer for all rules).
struct Productivity {
  std::vector<uint8_t> productive;   // per rule
  std::vector<int32_t> offset;       // per rule, and the total after the last
  std::vector<uint8_t> live_states;  // per global state
  uint8_t* live(RuleId r) { return live_states.data() + offset[r]; }
  const uint8_t* live(RuleId r) const { return live_states.data() + offset[r]; }
};

Productivity FindProductiveRules(const std::vector<RuleDfa>& dfas, const std::vector<std::vector<RuleId>>& member_rules,
                                 const std::vector<LoweredAnyOrder>& any_order) {
  const int32_t num_rules = static_cast<int32_t>(dfas.size());
  Productivity p;
  std::vector<uint8_t>& productive = p.productive;
  productive.assign(num_rules, 0);
  LivenessSearch search(productive);
  p.offset.assign(num_rules + 1, 0);
  for (RuleId r = 0; r < num_rules; ++r) p.offset[r + 1] = p.offset[r] + dfas[r].num_states();
  p.live_states.assign(static_cast<size_t>(p.offset[num_rules]), 0);
  std::vector<int32_t> any_order_of(num_rules, -1);
  for (size_t i = 0; i < any_order.size(); ++i) any_order_of[any_order[i].rule] = static_cast<int32_t>(i);
  // Worklist: a rule is re-examined only when one of its callees (or any-order members)
  // became productive; sweeping every rule until nothing changed took one sweep per level
  // of nesting.
  std::vector<std::vector<RuleId>> callers(num_rules);
  for (RuleId r = 0; r < num_rules; ++r) {
    for (const auto& e : dfas[r].rule_list) callers[e.rule].push_back(r);
    for (RuleId m : member_rules[r]) callers[m].push_back(r);
  }
  std::vector<RuleId> work(num_rules);
  std::vector<uint8_t> queued(num_rules, 1);
  for (RuleId r = 0; r < num_rules; ++r) work[r] = num_rules - 1 - r;
  // Liveness computed while every rule the automaton references was already productive is
  // final; the others are computed again once productivity is known.
  std::vector<uint8_t> live_final(num_rules, 0);
  while (!work.empty()) {
    const RuleId r = work.back();
    work.pop_back();
    queued[r] = 0;
    if (productive[r]) continue;
    live_final[r] = search.ReachesFinal(dfas[r], p.live(r));
    if (any_order_of[r] >= 0 ? AnyOrderProductive(any_order[any_order_of[r]], productive) : p.live(r)[0] != 0) {
      productive[r] = 1;
      for (RuleId c : callers[r]) {
        if (!productive[c] && !queued[c]) {
          queued[c] = 1;
          work.push_back(c);
        }
      }
    }
  }
  for (RuleId r = 0; r < num_rules; ++r)
    if (!live_final[r]) search.ReachesFinal(dfas[r], p.live(r));
  return p;
}

// The root rule, which must exist and complete.
RuleId CheckedRoot(const Grammar& g, const std::vector<uint8_t>& productive) {
  RuleId root = g.root();
  if (root < 0 || root >= g.num_rules()) {
    throw Error(ErrorKind::kGrammarSemantic, "the grammar has no root rule");
  }
  if (!productive[root]) {
    throw Error(ErrorKind::kGrammarSemantic,
                "the grammar accepts no finite string (rule '" + g.rule(root).name + "' never completes)");
  }
  return root;
}

// The rules' states in the global numbering, keeping only edges into live states (and
// references to productive rules).
void CopyLiveStates(const Grammar& g, const std::vector<RuleDfa>& dfas, const Productivity& p, GrammarAutomaton* out) {
  const int32_t num_rules = static_cast<int32_t>(dfas.size());
  const std::vector<int32_t>& offset = p.offset;
  out->rule_start.resize(num_rules);
  out->rule_nullable.assign(num_rules, 0);
  for (RuleId r = 0; r < num_rules; ++r) out->rule_names.push_back(g.rule(r).name);
  out->rule_max_tokens.assign(num_rules, Rule::kNoTokenBudget);
  out->rule_json_min_chars.assign(num_rules, 0);
  out->rule_json_max_chars.assign(num_rules, -1);
  out->rule_capture.assign(num_rules, "");
  for (RuleId r = 0; r < num_rules && r < g.num_rules(); ++r) {
    out->rule_max_tokens[r] = g.rule(r).max_tokens;
    out->rule_json_min_chars[r] = static_cast<int32_t>(g.rule(r).json_min_chars);
    out->rule_json_max_chars[r] = static_cast<int32_t>(g.rule(r).json_max_chars);
    out->has_char_budgets = out->has_char_budgets || g.rule(r).has_char_budget();
    out->has_token_budgets = out->has_token_budgets || g.rule(r).has_token_budget();
    out->rule_capture[r] = g.rule(r).capture;
    out->has_captures = out->has_captures || g.rule(r).has_capture();
  }
  out->rule_marker_split.resize(num_rules);
  out->rule_end_only.assign(num_rules, 0);
  out->rule_marker_before.resize(num_rules);
  for (RuleId r = 0; r < num_rules && r < g.num_rules(); ++r) {
    out->rule_end_only[r] = g.rule(r).end_only;
    out->rule_marker_before[r] = g.rule(r).marker_before;
    out->has_captures = out->has_captures || !g.rule(r).marker_before.capture.empty();
  }
  for (RuleId r = 0; r < num_rules && r < g.num_rules(); ++r) {
    const MarkerSplit& split = g.rule(r).marker_split;
    if (!g.rule(r).has_marker_split()) continue;
    GrammarAutomaton::MarkerSplitDfas& dfas = out->rule_marker_split[r];
    dfas.body = g.expr(split.body).dfa;
    dfas.marker = g.expr(split.marker).dfa;
    dfas.hides_marker = split.hides_marker;
    dfas.whole_capture = split.whole_capture;
    dfas.stop_capture = split.stop_capture;
    out->has_captures = out->has_captures || !split.stop_capture.empty();
    out->has_budget_closes = out->has_budget_closes || g.rule(r).has_token_budget();
  }
  int32_t total = offset[num_rules];
  out->state_rule.resize(total);
  out->state_final.resize(total);
  out->state_used.assign(total, 0);
  out->byte_edge_begin.assign(total + 1, 0);
  out->rule_edge_begin.assign(total + 1, 0);
  size_t byte_edges = 0, rule_edges = 0;
  for (const RuleDfa& d : dfas) byte_edges += d.byte_list.size(), rule_edges += d.rule_list.size();
  out->byte_edges.reserve(byte_edges);  // an open object's key automaton: thousands of edges
  out->rule_edges.reserve(rule_edges);
  for (RuleId r = 0; r < num_rules; ++r) {
    const RuleDfa& d = dfas[r];
    out->rule_start[r] = offset[r];
    for (int32_t s = 0; s < d.num_states(); ++s) {
      int32_t gs = offset[r] + s;
      out->state_rule[gs] = r;
      out->state_final[gs] = d.is_final[s];
      for (const auto& e : d.byte_edges(s)) {
        if (!p.live(r)[e.target]) continue;
        out->byte_edges.push_back({e.lo, e.hi, offset[r] + e.target});
        if (e.hi == kVirtualTokenLead) out->scans_virtual_tokens = true;
      }
      for (const auto& e : d.rule_edges(s)) {
        if (p.productive[e.rule] && p.live(r)[e.target]) {
          out->rule_edges.push_back({e.rule, offset[r] + e.target});
        }
      }
      out->byte_edge_begin[gs + 1] = static_cast<int32_t>(out->byte_edges.size());
      out->rule_edge_begin[gs + 1] = static_cast<int32_t>(out->rule_edges.size());
    }
  }
}

// A rule with a character budget reads bytes only (the parser counts its own bytes) and is no
// counted loop's iteration (whose masks are kept per loop count), and the parser does not keep
// budget counts through a token budget's row rewrites.
void CheckCharBudgetRules(const Grammar& g, const GrammarAutomaton* out) {
  if (!out->has_char_budgets) return;
  if (out->has_token_budgets) {
    throw Error(ErrorKind::kGrammarSemantic, "json_chars and max_tokens rules cannot be used in one grammar");
  }
  for (int32_t s = 0; s < out->num_states(); ++s) {
    const RuleId r = out->state_rule[s];
    if (out->HasCharBudget(r) && (out->rule_edge_begin[s + 1] > out->rule_edge_begin[s] || out->child_repeat[r] >= 0)) {
      throw Error(ErrorKind::kGrammarSemantic,
                  "rule '" + g.rule(r).name + "': json_chars needs a body that references no rule");
    }
  }
}

// Nullable rules: the start reaches a final state through nullable rule references only.
void MarkNullableRules(const std::vector<uint8_t>& productive, GrammarAutomaton* out) {
  const int32_t num_rules = static_cast<int32_t>(productive.size());
  bool changed = true;
  std::vector<int32_t> null_stack;
  std::vector<uint32_t> null_seen(static_cast<size_t>(out->num_states()), 0);  // == stamp: seen in this search
  uint32_t null_stamp = 0;
  while (changed) {
    changed = false;
    for (RuleId r = 0; r < num_rules; ++r) {
      if (out->rule_nullable[r] || !productive[r]) continue;
      // An empty occurrence has no characters: below a character minimum it cannot end.
      if (out->HasCharBudget(r) && out->rule_json_min_chars[r] > 0) continue;
      null_stack.assign(1, out->rule_start[r]);
      ++null_stamp;
      null_seen[out->rule_start[r]] = null_stamp;
      bool nullable = false;
      while (!null_stack.empty() && !nullable) {
        int32_t s = null_stack.back();
        null_stack.pop_back();
        if (out->state_final[s]) nullable = true;
        for (int32_t k = out->rule_edge_begin[s]; k < out->rule_edge_begin[s + 1]; ++k) {
          const auto& e = out->rule_edges[k];
          if (out->rule_nullable[e.rule] && null_seen[e.target] != null_stamp) {
            null_seen[e.target] = null_stamp;
            null_stack.push_back(e.target);
          }
        }
      }
      if (nullable) {
        out->rule_nullable[r] = 1;
        changed = true;
      }
    }
  }
}

// Counted repetitions: virtual loop states above the real ones.
void AddCountedRepeats(const std::vector<LoweredRepeat>& lowered, GrammarAutomaton* out) {
  const int32_t num_rules = static_cast<int32_t>(out->rule_start.size());
  out->rule_repeat.assign(num_rules, -1);
  out->child_repeat.assign(num_rules, -1);
  int64_t next_base = out->num_states();
  for (const LoweredRepeat& lr : lowered) {
    GrammarAutomaton::CountedRepeat r;
    r.rule = lr.rule;
    r.child = lr.child;
    r.min = lr.min;
    r.max = lr.max;
    int64_t span = (lr.max == kUnbounded ? lr.min : lr.max) + 1;
    if (next_base + span + 2 > INT32_MAX / 2) {
      throw Error(ErrorKind::kLimitExceeded,
                  "repetition bounds too large in total (" + std::to_string(next_base + span) + " counts)");
    }
    r.base = static_cast<int32_t>(next_base);
    r.span = static_cast<int32_t>(span);
    next_base += span + 2;
    out->rule_repeat[lr.rule] = static_cast<int32_t>(out->repeats.size());
    out->child_repeat[lr.child] = static_cast<int32_t>(out->repeats.size());
    out->rule_start[lr.rule] = r.base;
    out->repeats.push_back(r);
  }
}

// Any-order rules: virtual states after the loops' (members that never complete dropped).
void AddAnyOrderRules(const Grammar& g, const std::vector<LoweredAnyOrder>& lowered_any_order,
                      const std::vector<uint8_t>& productive, GrammarAutomaton* out) {
  int64_t next_base = out->num_states();
  if (!out->repeats.empty()) next_base = int64_t{out->repeats.back().base} + out->repeats.back().span + 2;
  std::vector<AnyOrderStates::Node> nodes;
  for (const LoweredAnyOrder& lo : lowered_any_order) {
    AnyOrderStates::Node n;
    n.rule = lo.rule;
    n.spec = lo.spec;
    for (size_t i = 0; i < lo.first.size(); ++i) {
      if (productive[lo.first[i]] && !productive[lo.rest[i]]) {
        throw Error(ErrorKind::kGrammarSemantic,
                    "the separator of AnyOrder rule '" + g.rule(lo.rule).name + "' never completes");
      }
      n.first.push_back(productive[lo.first[i]] ? lo.first[i] : -1);
      n.rest.push_back(productive[lo.rest[i]] ? lo.rest[i] : -1);
    }
    nodes.push_back(std::move(n));
  }
  if (!nodes.empty()) {
    if (next_base > INT32_MAX / 2) throw Error(ErrorKind::kLimitExceeded, "too many automaton states");
    const int32_t num_rules = static_cast<int32_t>(out->rule_start.size());
    out->any_order->Init(std::move(nodes), static_cast<int32_t>(next_base), num_rules);
    for (const auto& n : out->any_order->nodes()) out->rule_start[n.rule] = n.start_state;
  }
}

// Calls visit(state) for a rule's first states: looking through repeat rules to their child
// and through any-order rules to their members.
void VisitEntryStates(const GrammarAutomaton& a, RuleId r, const std::function<void(int32_t)>& visit) {
  int32_t rep = a.rule_repeat[r];
  if (rep >= 0) return VisitEntryStates(a, a.repeats[rep].child, visit);
  int32_t node = a.any_order->NodeOfRule(r);
  if (node < 0) return visit(a.rule_start[r]);
  const AnyOrderStates::Node& n = a.any_order->nodes()[node];
  for (size_t i = 0; i < n.first.size(); ++i) {
    if (n.first[i] >= 0) VisitEntryStates(a, n.first[i], visit);
    if (n.rest[i] >= 0) VisitEntryStates(a, n.rest[i], visit);
  }
}

// Used states: reachable from the root's start through kept edges, following references.
void MarkUsedStates(RuleId root, GrammarAutomaton* out) {
  std::vector<int32_t> stack{out->rule_start[root]};
  out->state_used[out->rule_start[root]] = 1;
  while (!stack.empty()) {
    int32_t s = stack.back();
    stack.pop_back();
    auto visit = [&](int32_t t) {
      if (!out->state_used[t]) {
        out->state_used[t] = 1;
        stack.push_back(t);
      }
    };
    for (int32_t k = out->byte_edge_begin[s]; k < out->byte_edge_begin[s + 1]; ++k) visit(out->byte_edges[k].target);
    for (int32_t k = out->rule_edge_begin[s]; k < out->rule_edge_begin[s + 1]; ++k) {
      visit(out->rule_edges[k].target);
      VisitEntryStates(*out, out->rule_edges[k].rule, visit);
    }
  }
}

// Per state: whether its closure is trivial (closure_trivial) and which rules it awaits.
void SummariseStates(GrammarAutomaton* out) {
  const int32_t total = out->num_states();
  out->closure_trivial.assign(total, 0);
  for (int32_t s = 0; s < total; ++s) {
    bool no_rules = out->rule_edge_begin[s + 1] == out->rule_edge_begin[s];
    out->closure_trivial[s] = (no_rules ? 1 : 0) | (no_rules && !out->state_final[s] ? 2 : 0);
  }
  out->awaited_rule_bits.assign(total, 0);
  for (int32_t s = 0; s < total; ++s) {
    for (int32_t k = out->rule_edge_begin[s]; k < out->rule_edge_begin[s + 1]; ++k) {
      out->awaited_rule_bits[s] |= 1ull << (out->rule_edges[k].rule & 63);
    }
  }
}

// Per rule: the states and rules predicting it brings in.
void ComputeRulePredictions(GrammarAutomaton* out) {
  const int32_t num_rules = static_cast<int32_t>(out->rule_start.size());
  out->rule_prediction_states.assign(num_rules, {});
  out->rule_prediction_rules.assign(num_rules, {});
  std::vector<uint32_t> state_mark(out->num_states(), 0), rule_mark(num_rules, 0);
  std::unordered_set<int32_t> virtual_mark;
  uint32_t mark = 0;
  for (RuleId q = 0; q < num_rules; ++q) {
    ++mark;
    virtual_mark.clear();
    auto& states = out->rule_prediction_states[q];
    auto& rules = out->rule_prediction_rules[q];
    auto add_state = [&](int32_t s) {
      if (out->is_virtual(s)) {
        if (virtual_mark.insert(s).second) states.push_back(s);
      } else if (state_mark[s] != mark) {
        state_mark[s] = mark;
        states.push_back(s);
      }
    };
    rules.push_back(q);
    rule_mark[q] = mark;
    add_state(out->rule_start[q]);
    for (size_t k = 0; k < states.size(); ++k) {
      out->ForEachRuleEdge(states[k], [&](RuleId rule, int32_t target) {
        if (rule_mark[rule] != mark) {
          rule_mark[rule] = mark;
          rules.push_back(rule);
        }
        add_state(out->rule_start[rule]);
        if (out->rule_nullable[rule]) add_state(target);
      });
    }
  }
}

// Follow targets: where each rule's callers continue after it completes.
void ComputeFollowTargets(GrammarAutomaton* out) {
  out->rule_follow_targets.assign(out->rule_start.size(), {});
  for (int32_t s = 0; s < out->num_states(); ++s) {
    if (!out->state_used[s]) continue;
    for (int32_t k = out->rule_edge_begin[s]; k < out->rule_edge_begin[s + 1]; ++k) {
      auto& targets = out->rule_follow_targets[out->rule_edges[k].rule];
      int32_t t = out->rule_edges[k].target;
      if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
    }
  }
  for (const auto& r : out->repeats) out->rule_follow_targets[r.child].push_back(r.star());
  for (const auto& n : out->any_order->nodes()) {
    for (size_t i = 0; i < n.first.size(); ++i) {
      if (n.first[i] >= 0) out->rule_follow_targets[n.first[i]].push_back(n.any_state);
      if (n.rest[i] >= 0) out->rule_follow_targets[n.rest[i]].push_back(n.any_state);
    }
  }
}

std::shared_ptr<const GrammarAutomaton> BuildOnce(const Grammar& source, const AutomatonLimits& limits) {
  const LoweredGrammar lowered = LowerGrammar(source, limits);
  const Grammar& g = lowered.g;
  const std::vector<std::vector<RuleId>> member_rules = AnyOrderMembers(g.num_rules(), lowered.any_order);
  const std::vector<RuleDfa> dfas = BuildRuleDfas(g, member_rules, lowered.any_order, limits);
  const Productivity productivity = FindProductiveRules(dfas, member_rules, lowered.any_order);
  const RuleId root = CheckedRoot(g, productivity.productive);

  auto out = std::make_shared<GrammarAutomaton>();
  out->root_rule = root;
  CopyLiveStates(g, dfas, productivity, out.get());
  MarkNullableRules(productivity.productive, out.get());
  AddCountedRepeats(lowered.repeats, out.get());
  CheckCharBudgetRules(g, out.get());
  ComputeCharBudgetDistances(out.get());
  AddAnyOrderRules(g, lowered.any_order, productivity.productive, out.get());
  MarkUsedStates(root, out.get());
  SummariseStates(out.get());
  ComputeRulePredictions(out.get());
  ComputeFollowTargets(out.get());
  out->mid_token_distance = MidTokenEntryDistances(*out);
  return out;
}

}  // namespace

}  // namespace xg2
