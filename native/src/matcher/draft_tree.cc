#include "matcher/draft_tree.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "xg2/errors.h"

namespace xg2 {
namespace {

void CheckNodeCount(int64_t n) {
  if (n < 1) {
    throw Error(ErrorKind::kInvalidArgument, "a draft tree needs at least one node (node 0, the root)");
  }
  if (n > INT32_MAX) {
    throw Error(ErrorKind::kInvalidArgument, "a draft tree may have at most 2^31 - 1 nodes; got " + std::to_string(n));
  }
}

void CheckLink(const char* name, int64_t node, int64_t value, int64_t n) {
  if (value < -1 || value >= n) {
    throw Error(ErrorKind::kInvalidArgument, std::string(name) + "[" + std::to_string(node) +
                                                 "] = " + std::to_string(value) + " is not a node index in [0, " +
                                                 std::to_string(n) + ") or -1");
  }
}

}  // namespace

DraftTree DraftTree::FromParents(const int64_t* parents, int64_t n) {
  CheckNodeCount(n);
  if (parents[0] != -1) {
    throw Error(ErrorKind::kInvalidArgument,
                "parents[0] must be -1 (node 0 is the root); got " + std::to_string(parents[0]));
  }
  DraftTree tree;
  tree.first_child.assign(static_cast<size_t>(n), -1);
  tree.next_sibling.assign(static_cast<size_t>(n), -1);
  for (int64_t i = 1; i < n; ++i) {
    if (parents[i] < 0 || parents[i] >= i) {
      throw Error(ErrorKind::kInvalidArgument, "parents[" + std::to_string(i) + "] = " + std::to_string(parents[i]) +
                                                   " must be in [0, " + std::to_string(i) +
                                                   ") (a parent precedes its children; only the root has parent -1)");
    }
  }
  // Prepending from the last node keeps every child list in increasing index order.
  for (int64_t i = n - 1; i >= 1; --i) {
    int64_t p = parents[i];
    tree.next_sibling[i] = tree.first_child[p];
    tree.first_child[p] = static_cast<int32_t>(i);
  }
  return tree;
}

DraftTree DraftTree::FromLinks(const int64_t* first_child, const int64_t* next_sibling, int64_t n) {
  CheckNodeCount(n);
  DraftTree tree;
  tree.first_child.resize(static_cast<size_t>(n));
  tree.next_sibling.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    CheckLink("first_child", i, first_child[i], n);
    CheckLink("next_sibling", i, next_sibling[i], n);
    tree.first_child[i] = static_cast<int32_t>(first_child[i]);
    tree.next_sibling[i] = static_cast<int32_t>(next_sibling[i]);
  }
  if (next_sibling[0] != -1) {
    throw Error(ErrorKind::kInvalidArgument,
                "the root (node 0) cannot have a sibling; next_sibling[0] = " + std::to_string(next_sibling[0]));
  }
  // Every node may be reached once: this rejects cycles and nodes with two parents.
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  std::vector<int32_t> stack{0};
  seen[0] = 1;
  while (!stack.empty()) {
    int32_t u = stack.back();
    stack.pop_back();
    for (int32_t c = tree.first_child[u]; c != -1; c = tree.next_sibling[c]) {
      if (seen[c]) {
        throw Error(ErrorKind::kInvalidArgument,
                    "draft tree node " + std::to_string(c) +
                        " is reached twice from the root (a cycle, or a node with two parents)");
      }
      seen[c] = 1;
      stack.push_back(c);
    }
  }
  return tree;
}

std::vector<bool> TraverseDraftTree(const GrammarMatcher& matcher, const DraftTree& tree, const int64_t* draft_tokens,
                                    int32_t* bitmask, int64_t rows, int64_t words, int64_t row_stride,
                                    float* temperatures, double time_limit_s, bool* timed_out) {
  const auto start = std::chrono::steady_clock::now();
  if (timed_out != nullptr) *timed_out = false;
  const int32_t n = tree.num_nodes();
  CheckNodeCount(n);
  if (rows < n) {
    throw Error(ErrorKind::kInvalidArgument, "the bitmask has " + std::to_string(rows) + " rows; the draft tree has " +
                                                 std::to_string(n) + " nodes (one row each)");
  }
  const int64_t needed = matcher.compiled()->mask_cache().num_words();
  if (words < needed) {
    throw Error(ErrorKind::kInvalidArgument, "bitmask rows have " + std::to_string(words) +
                                                 " words; the vocabulary of " +
                                                 std::to_string(matcher.compiled()->tokenizer()->vocab_size()) +
                                                 " tokens needs " + std::to_string(needed));
  }
  const int64_t vocab = matcher.compiled()->tokenizer()->vocab_size();
  for (int32_t i = 0; i < n; ++i) {
    std::memset(bitmask + i * row_stride, 0, sizeof(int32_t) * static_cast<size_t>(words));
  }
  std::vector<uint8_t> valid(static_cast<size_t>(n), 0);
  valid[0] = 1;

  if (temperatures != nullptr) std::fill(temperatures, temperatures + n, -1.0f);
  auto record_temperature = [&](GrammarMatcher* fork, int32_t node) {
    if (temperatures == nullptr) return;
    std::optional<float> t = fork->Temperature();
    temperatures[node] = t ? *t : -1.0f;
  };

  std::unique_ptr<GrammarMatcher> m = matcher.Fork();
  if (m->IsTerminated()) return std::vector<bool>(valid.begin(), valid.end());
  m->FillNextTokenBitmask(bitmask, words);
  record_temperature(m.get(), 0);

  // Depth-first walk. Each frame is a node whose token the fork has accepted (the root's
  // frame accepted nothing); next_child is the next child to try.
  struct Frame {
    int32_t node;
    int32_t next_child;
  };
  std::vector<Frame> stack;
  stack.push_back({0, tree.first_child[0]});
  while (!stack.empty()) {
    Frame& frame = stack.back();
    const int32_t c = frame.next_child;
    if (c == -1) {
      if (frame.node != 0) m->Rollback(1);
      stack.pop_back();
      continue;
    }
    frame.next_child = tree.next_sibling[c];
    const int64_t token = draft_tokens[c];
    if (token < 0 || token >= vocab) continue;  // not a token: an invalid path
    if (!m->AcceptToken(static_cast<int32_t>(token))) continue;
    if (time_limit_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > time_limit_s) {
      if (timed_out != nullptr) *timed_out = true;
      break;
    }
    valid[c] = 1;
    if (m->IsTerminated()) {  // as xgrammar: the output ends here; zero row, children invalid
      m->Rollback(1);
      continue;
    }
    m->FillNextTokenBitmask(bitmask + static_cast<int64_t>(c) * row_stride, words);
    record_temperature(m.get(), c);
    stack.push_back({c, tree.first_child[c]});
  }
  return std::vector<bool>(valid.begin(), valid.end());
}

}  // namespace xg2
