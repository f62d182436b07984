// Token masks for a speculative-decoding draft tree.
//
// Layout (xgrammar's traverse_draft_tree and sglang's retrieve_next_token /
// retrieve_next_sibling convention): the tree has N nodes and node 0 is the root. The root
// stands for the position the matcher is at now: its token (draft_tokens[0], usually the last
// token the target model produced, already accepted) is not accepted again. Every other node
// i holds a draft token that follows its parent's token.
//
// Output: N bitmask rows. Row i is the mask of the tokens allowed AFTER node i's token, i.e.
// after accepting the tokens on the path from the root (exclusive) to node i (inclusive); row
// 0 is the mask at the current state. The target model's verify logits at node i are masked
// with row i. A row is all zero when the node's path is invalid: some token on it was
// rejected by the grammar (or is outside the vocabulary), or the path continues after the
// matcher terminated (a stop token was accepted, or, with terminate_without_stop_token, the
// output is complete: xgrammar's IsTerminated); the row of the node that terminates is zero
// too (nothing may follow). Nodes not reachable from the root also get zero rows.
//
// The tree is walked depth first on a fork of the matcher, with one accept, one fill and one
// rollback per node; the caller's matcher is never changed.
#pragma once

#include <cstdint>
#include <vector>

#include "matcher/grammar_matcher.h"

namespace xg2 {

// The tree as first-child / next-sibling links (-1: none). Built by the two factories below,
// which validate their input and throw Error(kInvalidArgument) on malformed arrays.
struct DraftTree {
  std::vector<int32_t> first_child;
  std::vector<int32_t> next_sibling;
  int32_t num_nodes() const { return static_cast<int32_t>(first_child.size()); }

  // parents[0] must be -1 (node 0 is the root); parents[i] in [0, i) for every i >= 1.
  // Children are visited in index order.
  static DraftTree FromParents(const int64_t* parents, int64_t n);
  // Links in [-1, n); the root has no sibling; every node is reached at most once from the
  // root (no cycles, no node shared by two parents).
  static DraftTree FromLinks(const int64_t* first_child, const int64_t* next_sibling, int64_t n);
};

// Writes one mask row per node into the (rows, words) int32 array at `bitmask`, row r at
// bitmask + r * row_stride (rows >= N; rows past N are left alone). draft_tokens has N entries. Returns, per node,
// whether its path is valid (every token on it accepted; the root is always valid).
// With `temperatures` (N floats), also writes each node's temperature after its token (the
// matcher's Temperature() there, as xgrammar's traverse_draft_tree), -1 where it has none and
// for the nodes whose row is zero (invalid paths, a node that terminates).
// With time_limit_s > 0 (xgrammar's time_threshold), the walk stops once that many seconds
// have passed after a node's token was accepted: *timed_out is set, and the rows of the
// nodes not yet reached stay zero (the root's row is always filled).
std::vector<bool> TraverseDraftTree(const GrammarMatcher& matcher, const DraftTree& tree, const int64_t* draft_tokens,
                                    int32_t* bitmask, int64_t rows, int64_t words, int64_t row_stride,
                                    float* temperatures = nullptr, double time_limit_s = 0.0,
                                    bool* timed_out = nullptr);

}  // namespace xg2
