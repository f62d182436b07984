#include "automata/word_set_dfa.h"

#include <algorithm>
#include <string>

#include "support/sequence_interner.h"
#include "xg2/errors.h"

namespace xg2 {

WordSetDfaBuilder::WordSetDfaBuilder() { NewNode(); }

int32_t WordSetDfaBuilder::NewNode() {
  edges_.emplace_back();
  final_.push_back(0);
  is_letter_.push_back(0);
  return static_cast<int32_t>(edges_.size()) - 1;
}

// The node that `byte` leads to from `from` (to, or a new node when to < 0).
int32_t WordSetDfaBuilder::Child(int32_t from, uint8_t byte, int32_t to) {
  for (const auto& [b, t] : edges_[from]) {
    if (b != byte) continue;
    // Ending a spelling inside another, or going on past one's end.
    if (to >= 0 ? t != to : is_letter_[t]) {
      throw Error(ErrorKind::kInvalidArgument, "word set: spellings that are prefixes of one another");
    }
    return t;
  }
  const int32_t target = to >= 0 ? to : NewNode();
  edges_[from].push_back({byte, target});
  return target;
}

// The same for a set of bytes: every byte of the set leads to one node.
int32_t WordSetDfaBuilder::Child(int32_t from, const std::vector<uint8_t>& bytes, int32_t to) {
  int32_t target = to;
  for (uint8_t b : bytes) target = Child(from, b, target);
  return target;
}

int32_t WordSetDfaBuilder::AddByteLetter(int32_t from, uint8_t byte) {
  for (const auto& [b, t] : edges_[from]) {
    if (b != byte) continue;
    if (!is_letter_[t])
      throw Error(ErrorKind::kInvalidArgument, "word set: spellings that are prefixes of one another");
    return t;
  }
  const int32_t target = NewNode();
  is_letter_[target] = 1;
  edges_[from].push_back({byte, target});
  return target;
}

int32_t WordSetDfaBuilder::AddLetter(int32_t from, uint32_t letter, const std::vector<Spelling>& spellings) {
  // One spelling of one byte: the edge is the letter (whichever call adds it).
  if (spellings.size() == 1 && spellings[0].size() == 1 && spellings[0][0].size() == 1) {
    return AddByteLetter(from, spellings[0][0][0]);
  }
  auto [it, inserted] = letter_child_.emplace(std::make_pair(from, letter), -1);
  if (inserted) {
    it->second = NewNode();
    is_letter_[it->second] = 1;
  }
  const int32_t to = it->second;
  for (const Spelling& s : spellings) {
    if (s.empty()) throw Error(ErrorKind::kInvalidArgument, "word set: an empty spelling");
    int32_t at = from;
    for (size_t k = 0; k < s.size(); ++k) at = Child(at, s[k], k + 1 == s.size() ? to : -1);
  }
  return to;
}

ByteDfaSpec WordSetDfaBuilder::Minimal(int64_t max_states) {
  const int32_t n = static_cast<int32_t>(edges_.size());
  // Children before parents (the trie is acyclic): a node's class is its finality and its
  // edges to its children's classes, so equal subtrees share one class.
  std::vector<int32_t> order, stack{0};
  std::vector<uint8_t> state(n, 0);  // 0 new, 1 on the stack, 2 done
  while (!stack.empty()) {
    const int32_t v = stack.back();
    if (state[v] == 0) {
      state[v] = 1;
      for (const auto& [b, t] : edges_[v])
        if (state[t] == 0) stack.push_back(t);
      continue;
    }
    stack.pop_back();
    if (state[v] == 1) {
      state[v] = 2;
      order.push_back(v);
    }
  }
  SequenceInterner classes;
  classes.Clear(order.size());
  std::vector<int32_t> cls(n, -1), signature;
  std::vector<int32_t> representative;
  std::vector<std::vector<std::pair<uint8_t, int32_t>>>& edges = edges_;
  for (auto& e : edges) std::sort(e.begin(), e.end());
  for (int32_t v : order) {
    signature.assign(1, final_[v]);
    for (const auto& [b, t] : edges[v]) {
      signature.push_back(b);
      signature.push_back(cls[t]);
    }
    bool inserted = false;
    cls[v] = classes.Intern(signature, &inserted);
    if (inserted) representative.push_back(v);
  }
  // Breadth first from the start's class; consecutive bytes to one class make one range.
  std::vector<int32_t> number(representative.size(), -1), queue{cls[0]};
  number[cls[0]] = 0;
  ByteDfaSpec out;
  for (size_t i = 0; i < queue.size(); ++i) {
    const int32_t v = representative[queue[i]];
    out.is_final.push_back(final_[v]);
    std::vector<ByteDfaEdge> out_edges;
    for (const auto& [b, t] : edges[v]) {
      const int32_t c = cls[t];
      if (number[c] < 0) {
        if (static_cast<int64_t>(queue.size()) >= max_states) {
          throw Error(ErrorKind::kLimitExceeded,
                      "word set automaton exceeds " + std::to_string(max_states) + " states");
        }
        number[c] = static_cast<int32_t>(queue.size());
        queue.push_back(c);
      }
      if (!out_edges.empty() && out_edges.back().target == number[c] && out_edges.back().hi + 1 == b)
        out_edges.back().hi = b;
      else
        out_edges.push_back({b, b, number[c]});
    }
    out.edges.push_back(std::move(out_edges));
  }
  return out;
}

}  // namespace xg2
