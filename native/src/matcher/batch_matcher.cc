#include "matcher/batch_matcher.h"

#include <optional>
#include <string>
#include <unordered_map>

#include "support/thread_pool.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

void CheckSameSize(size_t matchers, size_t other, const char* what) {
  if (matchers != other) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("got ") + std::to_string(matchers) + " matchers but " + std::to_string(other) + " " + what);
  }
}

}  // namespace

BatchGrammarMatcher::BatchGrammarMatcher(int max_threads) : max_threads_(max_threads) {
  if (max_threads_ <= 0) max_threads_ = ThreadPool::Default().num_threads() + 1;
}

void BatchGrammarMatcher::CheckDistinct(const std::vector<GrammarMatcher*>& matchers) {
  std::unordered_map<const GrammarMatcher*, size_t> seen;
  seen.reserve(matchers.size());
  for (size_t i = 0; i < matchers.size(); ++i) {
    if (matchers[i] == nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "matcher " + std::to_string(i) + " is None");
    }
    auto inserted = seen.emplace(matchers[i], i);
    if (!inserted.second) {
      throw Error(ErrorKind::kInvalidArgument, "matcher " + std::to_string(i) + " is the same object as matcher " +
                                                   std::to_string(inserted.first->second) +
                                                   "; each matcher may occur only once per batch call");
    }
  }
}

void BatchGrammarMatcher::FillNextTokenBitmask(const std::vector<GrammarMatcher*>& matchers, int32_t* bitmask,
                                               int64_t rows, int64_t words, int64_t row_stride,
                                               const std::vector<int32_t>& indices) const {
  CheckDistinct(matchers);
  const int64_t n = static_cast<int64_t>(matchers.size());
  if (!indices.empty()) CheckSameSize(matchers.size(), indices.size(), "indices");
  std::vector<uint8_t> row_used(static_cast<size_t>(rows > 0 ? rows : 0), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = indices.empty() ? i : indices[i];
    if (row < 0 || row >= rows) {
      throw Error(ErrorKind::kInvalidArgument, "bitmask row " + std::to_string(row) + " (for matcher " +
                                                   std::to_string(i) + ") is out of range for batch size " +
                                                   std::to_string(rows));
    }
    if (row_used[row]) {
      throw Error(ErrorKind::kInvalidArgument,
                  "bitmask row " + std::to_string(row) + " is assigned to more than one matcher");
    }
    row_used[row] = 1;
    if (matchers[i]->StopAccepted()) {
      throw Error(ErrorKind::kMatcherState, "matcher " + std::to_string(i) +
                                                " has terminated after accepting the stop token; nothing can follow "
                                                "(no row was written)");
    }
    const int64_t needed = matchers[i]->compiled()->mask_cache().num_words();
    if (words < needed) {
      throw Error(ErrorKind::kInvalidArgument, "bitmask rows have " + std::to_string(words) + " words; matcher " +
                                                   std::to_string(i) + "'s vocabulary needs " + std::to_string(needed));
    }
  }
  ThreadPool::Default().ParallelFor(
      n,
      [&](int64_t i) {
        int64_t row = indices.empty() ? i : indices[i];
        matchers[i]->FillNextTokenBitmask(bitmask + row * row_stride, words);
      },
      max_threads_);
}

std::vector<bool> BatchGrammarMatcher::FillTemperatures(const std::vector<GrammarMatcher*>& matchers, float* out,
                                                        int64_t size, const std::vector<int32_t>& indices) const {
  CheckDistinct(matchers);
  const int64_t n = static_cast<int64_t>(matchers.size());
  if (!indices.empty() && indices.size() != matchers.size()) {
    throw Error(ErrorKind::kInvalidArgument, "indices size (" + std::to_string(indices.size()) +
                                                 ") differs from the number of matchers (" + std::to_string(n) + ")");
  }
  if (indices.empty() && n > size) {
    throw Error(ErrorKind::kInvalidArgument, "the temperatures buffer has " + std::to_string(size) +
                                                 " entries, fewer than the " + std::to_string(n) + " matchers");
  }
  std::vector<uint8_t> used(static_cast<size_t>(size > 0 ? size : 0), 0);
  for (int64_t i = 0; i < n && !indices.empty(); ++i) {
    const int64_t at = indices[i];
    if (at < 0 || at >= size) {
      throw Error(ErrorKind::kInvalidArgument, "temperature index " + std::to_string(at) + " (for matcher " +
                                                   std::to_string(i) + ") is out of bounds for a buffer of " +
                                                   std::to_string(size) + " entries");
    }
    if (used[at]) {
      throw Error(ErrorKind::kInvalidArgument,
                  "temperature index " + std::to_string(at) + " is assigned to more than one matcher");
    }
    used[at] = 1;
  }
  std::vector<uint8_t> conflict(static_cast<size_t>(n), 0);
  ThreadPool::Default().ParallelFor(
      n,
      [&](int64_t i) {
        const int64_t at = indices.empty() ? i : indices[i];
        std::optional<float> t = matchers[i]->Temperature();
        out[at] = t ? *t : -1.0f;
        conflict[i] = matchers[i]->TakeTemperatureConflict() ? 1 : 0;
      },
      max_threads_);
  return std::vector<bool>(conflict.begin(), conflict.end());
}

std::vector<bool> BatchGrammarMatcher::AcceptToken(const std::vector<GrammarMatcher*>& matchers,
                                                   const std::vector<int32_t>& tokens) const {
  CheckDistinct(matchers);
  CheckSameSize(matchers.size(), tokens.size(), "tokens");
  const int64_t n = static_cast<int64_t>(matchers.size());
  for (int64_t i = 0; i < n; ++i) {
    const int32_t vocab = matchers[i]->compiled()->tokenizer()->vocab_size();
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      throw Error(ErrorKind::kInvalidArgument, "token id " + std::to_string(tokens[i]) + " (for matcher " +
                                                   std::to_string(i) + ") is outside the vocabulary [0, " +
                                                   std::to_string(vocab) + ")");
    }
  }
  std::vector<uint8_t> result(static_cast<size_t>(n), 0);
  ThreadPool::Default().ParallelFor(
      n, [&](int64_t i) { result[i] = matchers[i]->AcceptToken(tokens[i]) ? 1 : 0; }, max_threads_);
  return std::vector<bool>(result.begin(), result.end());
}

std::vector<bool> BatchGrammarMatcher::AcceptString(const std::vector<GrammarMatcher*>& matchers,
                                                    const std::vector<std::string>& strings) const {
  CheckDistinct(matchers);
  CheckSameSize(matchers.size(), strings.size(), "strings");
  const int64_t n = static_cast<int64_t>(matchers.size());
  std::vector<uint8_t> result(static_cast<size_t>(n), 0);
  ThreadPool::Default().ParallelFor(
      n, [&](int64_t i) { result[i] = matchers[i]->AcceptString(strings[i]) ? 1 : 0; }, max_threads_);
  return std::vector<bool>(result.begin(), result.end());
}

void BatchGrammarMatcher::Rollback(const std::vector<GrammarMatcher*>& matchers,
                                   const std::vector<int32_t>& counts) const {
  CheckDistinct(matchers);
  CheckSameSize(matchers.size(), counts.size(), "rollback counts");
  const int64_t n = static_cast<int64_t>(matchers.size());
  for (int64_t i = 0; i < n; ++i) {
    if (counts[i] < 0) {
      throw Error(ErrorKind::kInvalidArgument, "rollback count " + std::to_string(counts[i]) + " (for matcher " +
                                                   std::to_string(i) + ") must be >= 0");
    }
    if (counts[i] > matchers[i]->num_accepted_steps()) {
      throw Error(ErrorKind::kMatcherState, "cannot roll back matcher " + std::to_string(i) + " by " +
                                                std::to_string(counts[i]) + " steps: only " +
                                                std::to_string(matchers[i]->num_accepted_steps()) + " accepted");
    }
  }
  // Rollback only truncates history: cheap, so run it on the caller.
  for (int64_t i = 0; i < n; ++i) matchers[i]->Rollback(counts[i]);
}

std::vector<std::vector<bool>> BatchGrammarMatcher::TraverseDraftTrees(const std::vector<GrammarMatcher*>& matchers,
                                                                       const std::vector<DraftTree>& trees,
                                                                       const int64_t* draft_tokens, int32_t* bitmask,
                                                                       int64_t rows, int64_t words,
                                                                       int64_t row_stride) const {
  CheckDistinct(matchers);
  const int64_t b = static_cast<int64_t>(matchers.size());
  if (trees.size() != 1) CheckSameSize(matchers.size(), trees.size(), "draft trees");
  if (b == 0) return {};
  const int64_t n = trees[0].num_nodes();
  for (const DraftTree& t : trees) {
    if (t.num_nodes() != n) {
      throw Error(ErrorKind::kInvalidArgument, "all draft trees of a batch need the same size");
    }
  }
  if (rows < b * n) {
    throw Error(ErrorKind::kInvalidArgument, "the bitmask has " + std::to_string(rows) + " rows; " + std::to_string(b) +
                                                 " trees of " + std::to_string(n) + " nodes need " +
                                                 std::to_string(b * n));
  }
  for (int64_t i = 0; i < b; ++i) {
    const int64_t needed = matchers[i]->compiled()->mask_cache().num_words();
    if (words < needed) {
      throw Error(ErrorKind::kInvalidArgument, "bitmask rows have " + std::to_string(words) + " words; matcher " +
                                                   std::to_string(i) + "'s vocabulary needs " + std::to_string(needed));
    }
  }
  std::vector<std::vector<bool>> valid(static_cast<size_t>(b));
  ThreadPool::Default().ParallelFor(
      b,
      [&](int64_t i) {
        const DraftTree& tree = trees.size() == 1 ? trees[0] : trees[i];
        valid[i] = TraverseDraftTree(*matchers[i], tree, draft_tokens + i * n, bitmask + i * n * row_stride, n, words,
                                     row_stride);
      },
      max_threads_);
  return valid;
}

}  // namespace xg2
