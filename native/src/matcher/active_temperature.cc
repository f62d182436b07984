// Active rule temperature of a parse (see active_temperature.h).
#include "matcher/active_temperature.h"

#include <algorithm>

namespace xg2 {

std::vector<float> RuleTemperatures(const Grammar& grammar, const GrammarAutomaton& automaton) {
  bool any = false;
  for (RuleId r = 0; r < grammar.num_rules(); ++r) any = any || grammar.rule(r).has_temperature();
  if (!any) return {};
  std::vector<float> out(static_cast<size_t>(automaton.num_rules()), Rule::kNoTemperature);
  // Lowering keeps the grammar's rule ids and appends its own rules after them.
  for (RuleId r = 0; r < grammar.num_rules() && r < automaton.num_rules(); ++r) out[r] = grammar.rule(r).temperature;
  return out;
}

void ActiveTemperatureFinder::Summary::Add(float t) {
  lo = found ? std::min(lo, t) : t;
  hi = found ? std::max(hi, t) : t;
  found = true;
}

void ActiveTemperatureFinder::Summary::Merge(const Summary& other) {
  if (!other.found) return;
  Add(other.lo);
  Add(other.hi);
}

const ActiveTemperatureFinder::Summary* ActiveTemperatureFinder::Memoised(Node node) const {
  if (node.origin >= static_cast<int32_t>(memo_.size())) return nullptr;
  for (const auto& [rule, summary] : memo_[node.origin]) {
    if (rule == node.rule) return &summary;
  }
  return nullptr;
}

void ActiveTemperatureFinder::ExpandInRow(const EarleyParser& parser, const std::vector<float>& rule_temperature,
                                          Frame* frame) {
  const GrammarAutomaton& g = parser.automaton();
  const int32_t row = frame->node.origin;
  row_rules_.assign(1, frame->node.rule);
  // Rules of this row already expanded (few: a linear scan beats a set).
  for (size_t k = 0; k < row_rules_.size(); ++k) {
    const RuleId rule = row_rules_[k];
    const uint64_t bit = 1ull << (rule & 63);
    for (const EarleyItem* it = parser.row_items_begin(row); it != parser.row_items_end(row); ++it) {
      if ((g.AwaitedBits(it->state) & bit) == 0) continue;
      bool waits = false;
      g.ForEachRuleEdge(it->state, [&](RuleId r, int32_t) { waits = waits || r == rule; });
      if (!waits) continue;
      const RuleId caller = g.RuleOf(it->state);
      const float t = rule_temperature[caller];
      if (t >= 0.0f) {
        frame->summary.Add(t);  // the innermost temperature rule of these paths
      } else if (it->origin == row) {
        if (std::find(row_rules_.begin(), row_rules_.end(), caller) == row_rules_.end()) row_rules_.push_back(caller);
      } else if (it->origin >= 0) {
        frame->deps.push_back({caller, it->origin});
      }  // else the top item: a path with no temperature
    }
  }
}

ActiveTemperatureFinder::Summary ActiveTemperatureFinder::Summarize(const EarleyParser& parser,
                                                                    const std::vector<float>& rule_temperature,
                                                                    Node node) {
  Summary direct;
  if (rule_temperature[node.rule] >= 0.0f) {
    direct.Add(rule_temperature[node.rule]);
    return direct;
  }
  if (node.origin < 0) return direct;
  if (const Summary* s = Memoised(node)) return *s;
  frames_.clear();
  frames_.push_back({node, {}, {}, 0});
  ExpandInRow(parser, rule_temperature, &frames_.back());
  while (!frames_.empty()) {
    Frame& f = frames_.back();
    bool descended = false;
    while (f.next_dep < f.deps.size()) {
      const Node dep = f.deps[f.next_dep];
      if (const Summary* s = Memoised(dep)) {
        f.summary.Merge(*s);
        ++f.next_dep;
        continue;
      }
      frames_.push_back({dep, {}, {}, 0});  // invalidates f
      ExpandInRow(parser, rule_temperature, &frames_.back());
      descended = true;
      break;
    }
    if (descended) continue;
    if (static_cast<int32_t>(memo_.size()) <= f.node.origin) memo_.resize(static_cast<size_t>(f.node.origin) + 1);
    memo_[f.node.origin].push_back({f.node.rule, f.summary});
    frames_.pop_back();
  }
  return *Memoised(node);
}

ActiveTemperature ActiveTemperatureFinder::Find(const EarleyParser& parser,
                                                const std::vector<float>& rule_temperature) {
  ActiveTemperature result;
  if (rule_temperature.empty()) return result;
  ForgetRowsFrom(parser.num_rows());  // rows the parser no longer has
  const GrammarAutomaton& g = parser.automaton();
  Summary total;
  seen_.clear();
  for (const EarleyItem* it = parser.last_row_begin(); it != parser.last_row_end(); ++it) {
    if (!g.has_byte_edges(it->state)) continue;
    const Node node{g.RuleOf(it->state), it->origin};
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(node.rule)) << 32) | static_cast<uint32_t>(node.origin);
    if (seen_.insert(key).second) total.Merge(Summarize(parser, rule_temperature, node));
  }
  result.found = total.found;
  result.value = total.hi;
  result.conflict = total.found && total.lo != total.hi;
  return result;
}

}  // namespace xg2
