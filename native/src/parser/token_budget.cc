// Token budgets (xgrammar's `[max_tokens=N]` rule attribute) on the Earley chart.
//
// An occurrence of a rule is (rule, origin row). A budgeted occurrence predicted in a row
// whose first token (EarleyParser::set_row_token) is t may consume tokens t .. t + N - 1; it
// has run out before token T when T >= t + N. The
// budget follows the derivation: an item is live when some chain of callers from it up to
// the parser's top item passes only through occurrences that have not run out (nested
// budgets take the smallest). Liveness is read off the chart, so items carry no deadline:
// each row's callers of a rule are the items of its origin row that wait on it.
#include <algorithm>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "automata/byte_dfa_ops.h"
#include "parser/earley_parser.h"

namespace xg2 {

namespace {

uint64_t OccurrenceKey(RuleId rule, int32_t origin) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(rule)) << 32) | static_cast<uint32_t>(origin);
}

}  // namespace

// The callers' graph above the last row's items, and which occurrences are live in it.
class OccurrenceGraph {
 public:
  struct Node {
    RuleId rule;
    int32_t origin;
    bool ran_out;
    bool live = false;
    std::vector<int32_t> callees;
  };

  int32_t Find(RuleId rule, int32_t origin) const {
    auto it = index_.find(OccurrenceKey(rule, origin));
    return it == index_.end() ? -1 : it->second;
  }
  // The node of (rule, origin), made (and queued for its callers) if new.
  int32_t Get(RuleId rule, int32_t origin, bool ran_out) {
    auto [it, inserted] = index_.emplace(OccurrenceKey(rule, origin), static_cast<int32_t>(nodes_.size()));
    if (inserted) {
      nodes_.push_back(Node{rule, origin, ran_out, false, {}});
      pending_.push_back(it->second);
    }
    return it->second;
  }
  bool PopPending(int32_t* id) {
    if (pending_.empty()) return false;
    *id = pending_.back();
    pending_.pop_back();
    return true;
  }
  Node& node(int32_t id) { return nodes_[id]; }
  const Node& node(int32_t id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }

  // Top-level occurrences (origin -1) that have not run out are live, and so is every callee
  // of a live occurrence that has not run out.
  void PropagateLiveness() {
    std::vector<int32_t> stack;
    for (int32_t id = 0; id < static_cast<int32_t>(nodes_.size()); ++id) {
      if (nodes_[id].origin < 0 && !nodes_[id].ran_out) {
        nodes_[id].live = true;
        stack.push_back(id);
      }
    }
    while (!stack.empty()) {
      const int32_t id = stack.back();
      stack.pop_back();
      for (int32_t callee : nodes_[id].callees) {
        Node& c = nodes_[callee];
        if (c.live || c.ran_out) continue;
        c.live = true;
        stack.push_back(callee);
      }
    }
  }

 private:
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> index_;
  std::vector<int32_t> pending_;
};

bool EarleyParser::IsClosed(RuleId rule, int32_t origin) const {
  const std::vector<uint64_t>& closed = budget_commits_.back().closed;
  return std::binary_search(closed.begin(), closed.end(), OccurrenceKey(rule, origin));
}

size_t EarleyParser::BudgetCommitBytes() const {
  size_t bytes = budget_commits_.capacity() * sizeof(BudgetCommit);
  for (const BudgetCommit& c : budget_commits_) bytes += c.closed.capacity() * sizeof(uint64_t);
  return bytes;
}

std::string EarleyParser::DescribeBudgets() const {
  const GrammarAutomaton& g = *g_;
  if (!g.has_token_budgets) return "";
  std::vector<uint64_t> seen;
  std::string out;
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) {
    const RuleId rule = g.RuleOf(it->state);
    const int64_t budget = g.rule_max_tokens[rule];
    const uint64_t key = OccurrenceKey(rule, it->origin);
    if (budget < 0 || std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    // Token indices are int32, so a deadline past the largest one reads as that one (never
    // reached); the sum itself is taken in 64 bits and cannot wrap.
    const int64_t deadline = std::min<int64_t>(static_cast<int64_t>(row_token_[std::max(it->origin, 0)]) + budget,
                                               std::numeric_limits<int32_t>::max());
    if (!out.empty()) out += ' ';
    out += "budget_deadline=" + std::to_string(deadline) + " (rule " + std::to_string(rule) + "@" +
           std::to_string(it->origin) + ")";
  }
  return out;
}

OccurrenceGraph EarleyParser::LastRowOccurrences(int32_t next_token) const {
  const GrammarAutomaton& g = *g_;
  // The top item's rule starts at the first row.
  auto ran_out = [&](RuleId rule, int32_t origin) {
    const int64_t budget = g.rule_max_tokens[rule];
    if (budget < 0) return false;
    return static_cast<int64_t>(next_token) >= static_cast<int64_t>(row_token_[std::max(origin, 0)]) + budget;
  };
  // Walk up from the last row's items through their callers.
  OccurrenceGraph graph;
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) {
    const RuleId rule = g.RuleOf(it->state);
    graph.Get(rule, it->origin, ran_out(rule, it->origin));
  }
  for (int32_t id; graph.PopPending(&id);) {
    const RuleId rule = graph.node(id).rule;
    const int32_t origin = graph.node(id).origin;
    if (origin < 0) continue;
    const uint64_t bit = 1ull << (rule & 63);
    for (int32_t j = row_begin_[origin]; j < row_begin_[origin + 1]; ++j) {
      const EarleyItem parent = items_[j];
      if (!(g.AwaitedBits(parent.state) & bit) || g.RuleEdgeTarget(parent.state, rule) < 0) continue;
      // An occurrence an earlier commit closed stays closed (so this commit lists it too).
      const RuleId caller = g.RuleOf(parent.state);
      const bool closed = !budget_commits_.empty() && IsClosed(caller, parent.origin);
      const int32_t caller_id = graph.Get(caller, parent.origin, closed || ran_out(caller, parent.origin));
      graph.node(caller_id).callees.push_back(id);
    }
  }
  graph.PropagateLiveness();
  return graph;
}

std::vector<EarleyParser::Occurrence> EarleyParser::BodyCloses(const OccurrenceGraph& graph) const {
  const GrammarAutomaton& g = *g_;
  std::vector<Occurrence> closes;
  if (!g.has_budget_closes) return closes;
  const int32_t last = num_rows() - 1;
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) {
    const RuleId rule = g.RuleOf(it->state);
    // xgrammar closes a suffix/stop rule without its marker only under a budget of its own.
    const ByteDfaSpec* body = g.rule_marker_split[rule].body.get();
    if (body == nullptr || g.rule_max_tokens[rule] < 0 || graph.node(graph.Find(rule, it->origin)).live) continue;
    const bool seen = std::any_of(closes.begin(), closes.end(),
                                  [&](const Occurrence& c) { return c.rule == rule && c.origin == it->origin; });
    const int32_t begin = std::max(it->origin, 0);
    if (!seen && ByteDfaAccepts(*body, row_bytes_.substr(begin, last - begin))) closes.push_back({rule, it->origin});
  }
  return closes;
}

std::vector<EarleyItem> EarleyParser::CompletionItems(const std::vector<Occurrence>& closes) const {
  const GrammarAutomaton& g = *g_;
  std::vector<EarleyItem> out;
  for (const Occurrence& c : closes) {
    if (c.origin < 0) continue;  // the top item: its completion is the end of the input
    const uint64_t bit = 1ull << (c.rule & 63);
    for (int32_t j = row_begin_[c.origin]; j < row_begin_[c.origin + 1]; ++j) {
      const EarleyItem parent = items_[j];
      if (!(g.AwaitedBits(parent.state) & bit)) continue;
      if (!budget_commits_.empty() && IsClosed(g.RuleOf(parent.state), parent.origin)) continue;
      const int32_t target = g.RuleEdgeTarget(parent.state, c.rule);
      if (target >= 0) out.push_back(EarleyItem{target, parent.origin});
    }
  }
  return out;
}

void EarleyParser::RecloseLastRow(const std::vector<EarleyItem>& extra) {
  // The row's predictions (origin == the row) follow again from the items that scanned or
  // completed into it, so only those seed the row.
  const int32_t last = num_rows() - 1;
  std::vector<EarleyItem> seeds;
  for (const EarleyItem* it = last_row_begin(); it != last_row_end(); ++it) {
    if (it->origin != last) seeds.push_back(*it);
  }
  seeds.insert(seeds.end(), extra.begin(), extra.end());
  const int32_t token = token_index_;
  token_index_ = row_token_.back();
  PopLeoEntries(last);
  items_.resize(static_cast<size_t>(row_begin_[last]));
  row_begin_.pop_back();
  row_can_end_.pop_back();
  leo_head_.pop_back();
  row_token_.pop_back();
  NewRowStamp();
  for (const EarleyItem& it : seeds) AddItem(it.state, it.origin);
  CloseRow(last);
  token_index_ = token;
}

EarleyParser::BudgetOutcome EarleyParser::PruneClosed(const OccurrenceGraph& graph) {
  const GrammarAutomaton& g = *g_;
  const int32_t last = num_rows() - 1;
  // Which items of the last row stay, and whether one of them can go on.
  const int32_t begin = row_begin_[last];
  std::vector<uint8_t> keep(items_.size() - begin, 0);
  bool any_closed = false, live_continues = false;
  for (int32_t i = begin; i < static_cast<int32_t>(items_.size()); ++i) {
    const EarleyItem it = items_[i];
    const bool live = graph.node(graph.Find(g.RuleOf(it.state), it.origin)).live;
    keep[i - begin] = live;
    any_closed = any_closed || !live;
    live_continues = live_continues || (live && g.has_byte_edges(it.state));
  }
  if (!any_closed) return BudgetOutcome::kNone;
  if (!live_continues && !CanEnd()) return BudgetOutcome::kRelaxed;
  // Everything that allocates comes first, so a throw leaves the row as it was.
  BudgetCommit commit{last, {}};
  for (const OccurrenceGraph::Node& n : graph.nodes()) {
    if (!n.live) commit.closed.push_back(OccurrenceKey(n.rule, n.origin));
  }
  std::sort(commit.closed.begin(), commit.closed.end());
  budget_commits_.reserve(budget_commits_.size() + 1);
  int32_t out = begin;
  for (int32_t i = begin; i < static_cast<int32_t>(items_.size()); ++i) {
    if (keep[i - begin]) items_[out++] = items_[i];
  }
  items_.resize(out);
  row_begin_.back() = out;
  budget_commits_.push_back(std::move(commit));
  return BudgetOutcome::kEnforced;
}

EarleyParser::BudgetOutcome EarleyParser::EnforceTokenBudgets(int32_t next_token, std::vector<Occurrence>* forced) {
  if (!g_->has_token_budgets) return BudgetOutcome::kNone;
  const OccurrenceGraph graph = LastRowOccurrences(next_token);
  const std::vector<Occurrence> closes = BodyCloses(graph);
  if (!closes.empty()) {
    // Tried on a copy: where the completions lead nowhere, the plain closing below decides.
    EarleyParser trial = *this;
    trial.RecloseLastRow(CompletionItems(closes));
    if (trial.PruneClosed(trial.LastRowOccurrences(next_token)) == BudgetOutcome::kEnforced) {
      forced->insert(forced->end(), closes.begin(), closes.end());
      *this = std::move(trial);
      return BudgetOutcome::kEnforced;
    }
  }
  return PruneClosed(graph);
}

}  // namespace xg2
