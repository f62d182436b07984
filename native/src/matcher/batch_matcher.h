// BatchGrammarMatcher: per-step operations over many matchers at once (one per request of a
// decoding batch), run in parallel on the process-wide persistent thread pool.
//
// Every matcher of one call must be a distinct object (they are advanced concurrently); the
// calls check this and throw Error(kInvalidArgument) naming the repeated position. Arguments
// are validated before any matcher is touched, so a call that throws changes nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "matcher/draft_tree.h"
#include "matcher/grammar_matcher.h"

namespace xg2 {

class BatchGrammarMatcher {
 public:
  // max_threads: the most threads one call uses (the caller included); <= 0: the size of the
  // default pool plus the caller.
  explicit BatchGrammarMatcher(int max_threads = 0);

  int max_threads() const { return max_threads_; }

  // Fills row indices[i] (i when indices is empty) of the (rows, words) int32 bitmask at
  // `bitmask` (row r starts at bitmask + r * row_stride) with matcher i's next-token mask.
  // Rows must be distinct. Returns nothing, as xgrammar's batch fill (apply every row).
  void FillNextTokenBitmask(const std::vector<GrammarMatcher*>& matchers, int32_t* bitmask, int64_t rows, int64_t words,
                            int64_t row_stride, const std::vector<int32_t>& indices) const;
  // Writes matcher i's Temperature() into out[indices[i]] (out[i] when indices is empty),
  // -1 where it has none (xgrammar's batch_fill_temperature). Indices must be distinct and
  // in [0, size). Returns, per matcher, whether it met disagreeing paths for the first time
  // (the caller warns, once per matcher).
  std::vector<bool> FillTemperatures(const std::vector<GrammarMatcher*>& matchers, float* out, int64_t size,
                                     const std::vector<int32_t>& indices) const;
  // Accepts tokens[i] into matcher i; returns whether each was accepted. Throws (changing
  // nothing) if a token id is outside the vocabulary or a matcher has terminated.
  std::vector<bool> AcceptToken(const std::vector<GrammarMatcher*>& matchers, const std::vector<int32_t>& tokens) const;
  // Accepts strings[i] (bytes) into matcher i as one step; returns whether each was accepted.
  // Throws (changing nothing) if a matcher has terminated.
  std::vector<bool> AcceptString(const std::vector<GrammarMatcher*>& matchers,
                                 const std::vector<std::string>& strings) const;
  // Rolls matcher i back by counts[i] steps. Throws (changing nothing) if a count is negative
  // or exceeds that matcher's history.
  void Rollback(const std::vector<GrammarMatcher*>& matchers, const std::vector<int32_t>& counts) const;

  // TraverseDraftTree for every matcher in parallel: matcher b walks trees[b] (or trees[0]
  // when there is one tree for all) with tokens draft_tokens[b * N .. (b + 1) * N) and writes
  // rows [b * N, (b + 1) * N) of the bitmask, N the number of nodes (equal for all trees).
  // Returns each matcher's per-node validity. The matchers are not changed.
  std::vector<std::vector<bool>> TraverseDraftTrees(const std::vector<GrammarMatcher*>& matchers,
                                                    const std::vector<DraftTree>& trees, const int64_t* draft_tokens,
                                                    int32_t* bitmask, int64_t rows, int64_t words,
                                                    int64_t row_stride) const;

  // Throws Error(kInvalidArgument) if a matcher pointer is null or occurs twice.
  static void CheckDistinct(const std::vector<GrammarMatcher*>& matchers);

 private:
  int max_threads_;
};

}  // namespace xg2
