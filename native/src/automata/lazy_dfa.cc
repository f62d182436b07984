#include "automata/lazy_dfa.h"

#include <algorithm>

namespace xg2 {

bool LazyDfa::ForLoop(int32_t loop_state) {
  const int32_t start = PlainChildStart(a_.RepeatOf(loop_state));
  if (start < 0) return false;
  loop_child_start_ = start;
  loop_mode_ = true;
  return true;
}

int32_t LazyDfa::Code(int32_t global, int32_t loop_state) {
  if (loop_mode_ && a_.state_final[global]) return Completed(loop_state);
  if (!loop_mode_ && loop_calls_) {
    const int32_t call = LoopCall(global);
    if (call != kNoCall) return call;
  }
  return Config(global, loop_state, 0);
}

int32_t LazyDfa::Resolve(int32_t code, uint8_t byte) {
  const int32_t local = code >> 2;
  const int32_t t = set_index_[local] >= 0 ? ResolveSet(local, byte) : ResolveState(local, byte);
  next_[256 * static_cast<size_t>(local) + byte] = t;
  return t;
}

int32_t LazyDfa::PlainChildStart(const GrammarAutomaton::CountedRepeat& r) const {
  const int32_t start = a_.rule_start[r.child];
  if (a_.state_final[start]) return -1;
  for (int32_t s = start; s < a_.num_states() && a_.state_rule[s] == r.child; ++s) {
    if (a_.rule_edge_begin[s + 1] > a_.rule_edge_begin[s]) return -1;
    if (a_.state_final[s] && a_.byte_edge_begin[s + 1] > a_.byte_edge_begin[s]) return -1;
  }
  return start;
}

void LazyDfa::MarkEdges(size_t row, int32_t state) {
  for (int32_t k = a_.byte_edge_begin[state]; k < a_.byte_edge_begin[state + 1]; ++k) {
    for (int c = a_.byte_edges[k].lo; c <= a_.byte_edges[k].hi; ++c) next_[row + c] = kUnresolved;
  }
}

int32_t LazyDfa::ResolveState(int32_t local, uint8_t byte) {
  const int32_t target = a_.ByteTarget(global_[local], byte);
  return target < 0 ? kDead : Code(target, loop_[local]);
}

int32_t LazyDfa::LoopCall(int32_t global) {
  if (CallOf(global) == nullptr) return kNoCall;
  std::vector<Element> set;
  bool parser = false;
  callers_.clear();
  AddCaller(global, &set, &parser);
  return SetCode(std::move(set), parser);
}

const DfaRuleEdge* LazyDfa::CallOf(int32_t global) const {
  if (a_.rule_edge_begin[global + 1] - a_.rule_edge_begin[global] != 1) return nullptr;
  const DfaRuleEdge& call = a_.rule_edges[a_.rule_edge_begin[global]];
  const int32_t rep = a_.rule_repeat[call.rule];
  if (rep < 0 || PlainChildStart(a_.repeats[rep]) < 0) return nullptr;
  return &call;
}

void LazyDfa::AddCaller(int32_t global, std::vector<Element>* set, bool* parser) {
  // Once per set: a loop that may end right away can lead back to its own caller ((x{0,40})*).
  if (std::find(callers_.begin(), callers_.end(), global) != callers_.end()) return;
  callers_.push_back(global);
  if (a_.rule_edge_begin[global + 1] == a_.rule_edge_begin[global]) {
    set->push_back({global, -1, -1, 0});
    return;
  }
  const DfaRuleEdge* call = CallOf(global);
  if (call == nullptr) {
    *parser = true;
    return;
  }
  // Its own byte edges (and final flag) stay with it.
  if (a_.state_final[global] || a_.byte_edge_begin[global + 1] > a_.byte_edge_begin[global]) {
    set->push_back({global, -1, -1, 0});
  }
  const auto& r = a_.repeats[a_.rule_repeat[call->rule]];
  AddIterationStart(r.base, call->target, set, parser);
}

void LazyDfa::AddIterationStart(int32_t loop_state, int32_t after, std::vector<Element>* set, bool* parser) {
  const auto& r = a_.RepeatOf(loop_state);
  const int32_t first = a_.VirtualNext(loop_state) >= 0 ? a_.rule_start[r.child] : -1;
  set->push_back({first, loop_state, after, 1});
  if (a_.VirtualIsFinal(loop_state)) AddCaller(after, set, parser);
}

int32_t LazyDfa::ResolveSet(int32_t local, uint8_t byte) {
  std::vector<Element> next;
  bool parser = false;
  callers_.clear();
  for (const Element& e : sets_[set_index_[local]]) {
    if (e.state < 0) continue;
    const int32_t t = a_.ByteTarget(e.state, byte);
    if (t < 0) continue;
    if (e.loop < 0) {
      AddCaller(t, &next, &parser);
    } else if (!a_.state_final[t]) {
      next.push_back({t, e.loop, e.after, 0});
    } else {  // the iteration completes
      const int32_t after_iteration = a_.VirtualNext(e.loop);
      if (after_iteration >= 0) AddIterationStart(after_iteration, e.after, &next, &parser);
    }
  }
  if (next.empty() && !parser) return kDead;
  return SetCode(std::move(next), parser);
}

int32_t LazyDfa::SetCode(std::vector<Element> set, bool parser) {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  // A set of one caller's state without rule edges is that state.
  if (!parser && set.size() == 1 && set[0].loop < 0) return Config(set[0].state, 0, 0);
  std::vector<int32_t> key;
  key.reserve(4 * set.size() + 1);
  key.push_back(parser ? 1 : 0);
  for (const Element& e : set) key.insert(key.end(), {e.state, e.loop, e.after, e.at_start});
  auto [it, inserted] = set_local_.emplace(std::move(key), static_cast<int32_t>(global_.size()));
  if (inserted) {
    const size_t row = next_.size();
    next_.resize(row + 256, kDead);
    int32_t flags = parser ? kRuleEdges : 0;
    for (const Element& e : set) {
      if (e.state < 0) continue;
      if (e.loop < 0 && a_.state_final[e.state]) flags |= kFinal;
      MarkEdges(row, e.state);
    }
    global_.push_back(-1);
    loop_.push_back(0);
    set_index_.push_back(static_cast<int32_t>(sets_.size()));
    sets_.push_back(std::move(set));
    codes_.push_back((it->second << 2) | flags);
  }
  return codes_[it->second];
}

int32_t LazyDfa::Completed(int32_t loop_state) {
  const int32_t after = a_.VirtualNext(loop_state);
  if (after < 0) return Config(-1, loop_state, 0);  // the loop allowed no such iteration
  const int32_t may_end = a_.VirtualIsFinal(after) ? 1 : 0;
  // No further iteration: a state with no byte edges (alive, but only as an ending).
  const int32_t next = a_.VirtualNext(after) >= 0 ? loop_child_start_ : -1;
  return Config(next, after, may_end);
}

int32_t LazyDfa::Config(int32_t global, int32_t loop_state, int32_t may_end) {
  const uint64_t key = loop_mode_ ? (static_cast<uint64_t>(static_cast<uint32_t>(global + 1)) << 33) |
                                        (static_cast<uint64_t>(static_cast<uint32_t>(loop_state)) << 1) |
                                        static_cast<uint64_t>(may_end)
                                  : static_cast<uint64_t>(static_cast<uint32_t>(global));
  auto [it, inserted] = local_.emplace(key, static_cast<int32_t>(global_.size()));
  if (inserted) {
    const size_t row = next_.size();
    next_.resize(row + 256, kDead);
    int32_t flags = 0;
    if (global >= 0) {
      MarkEdges(row, global);
      if (!loop_mode_) {
        if (a_.state_final[global]) flags |= kFinal;
        if (a_.rule_edge_begin[global + 1] > a_.rule_edge_begin[global]) flags |= kRuleEdges;
      }
    }
    if (may_end) flags |= kFinal;
    global_.push_back(global);
    loop_.push_back(loop_state);
    set_index_.push_back(-1);
    codes_.push_back((it->second << 2) | flags);
  }
  return codes_[it->second];
}

}  // namespace xg2
