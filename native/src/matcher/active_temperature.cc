// Active rule temperature of a parse (see active_temperature.h).
#include "matcher/active_temperature.h"

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

ActiveTemperature ActiveTemperatureFinder::Find(const EarleyParser& parser,
                                                const std::vector<float>& rule_temperature) {
  ActiveTemperature result;
  if (rule_temperature.empty()) return result;
  const GrammarAutomaton& g = parser.automaton();
  stack_.clear();
  seen_.clear();
  auto push = [&](RuleId rule, int32_t origin) {
    uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(rule)) << 32) | static_cast<uint32_t>(origin);
    if (seen_.insert(key).second) stack_.push_back({rule, origin});
  };
  for (const EarleyItem* it = parser.last_row_begin(); it != parser.last_row_end(); ++it) {
    if (g.has_byte_edges(it->state)) push(g.RuleOf(it->state), it->origin);
  }
  while (!stack_.empty()) {
    const Node node = stack_.back();
    stack_.pop_back();
    const float t = rule_temperature[node.rule];
    if (t >= 0.0f) {  // the innermost temperature rule of this path
      if (result.found && t != result.value) result.conflict = true;
      if (!result.found || t > result.value) result.value = t;
      result.found = true;
      continue;
    }
    if (node.origin < 0) continue;  // the top item: this path has no temperature
    const uint64_t bit = 1ull << (node.rule & 63);
    for (const EarleyItem* it = parser.row_items_begin(node.origin); it != parser.row_items_end(node.origin); ++it) {
      if ((g.AwaitedBits(it->state) & bit) == 0) continue;
      bool waits = false;
      g.ForEachRuleEdge(it->state, [&](RuleId rule, int32_t) { waits = waits || rule == node.rule; });
      if (waits) push(g.RuleOf(it->state), it->origin);
    }
  }
  return result;
}

}  // namespace xg2
