// Bindings of the performance APIs: BatchGrammarMatcher (batched fill/accept/rollback on the
// persistent thread pool), traverse_draft_tree (masks for a speculative draft tree) and
// CompiledGrammar serialization. Every heavy call releases the GIL.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "bindings.h"
#include "compiler/serialization.h"
#include "matcher/batch_matcher.h"
#include "matcher/draft_tree.h"
#include "ndarray_checks.h"
#include "xg2/errors.h"

namespace xg2::bindings {
namespace {

using IndexArray = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using IndexMatrix = nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

void CheckLength(const IndexArray& a, size_t n, const char* name) {
  if (a.shape(0) != n) {
    throw Error(ErrorKind::kInvalidArgument, std::string(name) + " has " + std::to_string(a.shape(0)) +
                                                 " entries; draft_tokens has " + std::to_string(n));
  }
}

}  // namespace

void BindBatch(nb::module_& m) {
  nb::class_<BatchGrammarMatcher>(m, "BatchGrammarMatcher")
      .def(nb::init<int>(), nb::arg("max_threads") = 0)
      .def_prop_ro("max_threads", &BatchGrammarMatcher::max_threads)
      .def(
          "fill_next_token_bitmask",
          [](const BatchGrammarMatcher& self, const std::vector<GrammarMatcher*>& matchers, nb::ndarray<> bitmask,
             const std::vector<int32_t>& indices) {
            BatchGrammarMatcher::CheckDistinct(matchers);
            BitmaskView v = CheckBitmask(bitmask, /*require_2d=*/false);
            nb::gil_scoped_release release;
            self.FillNextTokenBitmask(matchers, v.data, v.rows, v.words, v.row_stride, indices);
          },
          nb::arg("matchers"), nb::arg("bitmask"), nb::arg("indices") = std::vector<int32_t>())
      .def(
          "fill_temperatures",
          [](const BatchGrammarMatcher& self, const std::vector<GrammarMatcher*>& matchers, nb::ndarray<> temperatures,
             const std::vector<int32_t>& indices) {
            BatchGrammarMatcher::CheckDistinct(matchers);
            int64_t size = 0;
            float* out = CheckTemperatures(temperatures, &size);
            nb::gil_scoped_release release;
            return self.FillTemperatures(matchers, out, size, indices);
          },
          nb::arg("matchers"), nb::arg("temperatures"), nb::arg("indices") = std::vector<int32_t>())
      .def(
          "accept_token",
          [](const BatchGrammarMatcher& self, const std::vector<GrammarMatcher*>& matchers,
             const std::vector<int32_t>& tokens) {
            BatchGrammarMatcher::CheckDistinct(matchers);
            nb::gil_scoped_release release;
            return self.AcceptToken(matchers, tokens);
          },
          nb::arg("matchers"), nb::arg("tokens"))
      .def(
          "accept_string",
          [](const BatchGrammarMatcher& self, const std::vector<GrammarMatcher*>& matchers,
             const std::vector<nb::bytes>& strings) {
            BatchGrammarMatcher::CheckDistinct(matchers);
            std::vector<std::string> data;
            data.reserve(strings.size());
            for (const nb::bytes& b : strings) data.emplace_back(b.c_str(), b.size());
            nb::gil_scoped_release release;
            return self.AcceptString(matchers, data);
          },
          nb::arg("matchers"), nb::arg("strings"))
      .def(
          "rollback",
          [](const BatchGrammarMatcher& self, const std::vector<GrammarMatcher*>& matchers,
             const std::vector<int32_t>& counts) {
            BatchGrammarMatcher::CheckDistinct(matchers);
            nb::gil_scoped_release release;
            self.Rollback(matchers, counts);
          },
          nb::arg("matchers"), nb::arg("counts"))
      .def(
          "traverse_draft_tree",
          [](const BatchGrammarMatcher& self, const std::vector<GrammarMatcher*>& matchers, IndexMatrix draft_tokens,
             nb::ndarray<> bitmask, std::optional<IndexMatrix> parents, std::optional<IndexMatrix> first_child,
             std::optional<IndexMatrix> next_sibling) {
            BatchGrammarMatcher::CheckDistinct(matchers);
            BitmaskView v = CheckBitmask(bitmask, /*require_2d=*/true);
            const size_t b = draft_tokens.shape(0), n = draft_tokens.shape(1);
            if (b != matchers.size()) {
              throw Error(ErrorKind::kInvalidArgument, "draft_tokens has " + std::to_string(b) + " rows for " +
                                                           std::to_string(matchers.size()) + " matchers");
            }
            const bool links = first_child.has_value() || next_sibling.has_value();
            if (parents.has_value() == links || (links && !(first_child && next_sibling))) {
              throw Error(ErrorKind::kInvalidArgument,
                          "give the draft trees either as parents or as first_child and "
                          "next_sibling");
            }
            // Tree arrays: (1, N) for one tree shared by every matcher, or (B, N).
            size_t trees_rows = 0;
            for (const auto* a : {&parents, &first_child, &next_sibling}) {
              if (!a->has_value()) continue;
              const IndexMatrix& x = **a;
              if (x.shape(1) != n || (x.shape(0) != 1 && x.shape(0) != b) ||
                  (trees_rows != 0 && x.shape(0) != trees_rows)) {
                throw Error(ErrorKind::kInvalidArgument,
                            "draft tree arrays must have shape (1, N) or (B, N) with the N of "
                            "draft_tokens");
              }
              trees_rows = x.shape(0);
            }
            nb::gil_scoped_release release;
            std::vector<DraftTree> trees;
            trees.reserve(trees_rows);
            for (size_t i = 0; i < trees_rows; ++i) {
              trees.push_back(parents ? DraftTree::FromParents(parents->data() + i * n, static_cast<int64_t>(n))
                                      : DraftTree::FromLinks(first_child->data() + i * n, next_sibling->data() + i * n,
                                                             static_cast<int64_t>(n)));
            }
            return self.TraverseDraftTrees(matchers, trees, draft_tokens.data(), v.data, v.rows, v.words, v.row_stride);
          },
          nb::arg("matchers"), nb::arg("draft_tokens"), nb::arg("bitmask"), nb::arg("parents") = nb::none(),
          nb::arg("first_child") = nb::none(), nb::arg("next_sibling") = nb::none());

  m.def(
      "traverse_draft_tree",
      [](const GrammarMatcher& matcher, IndexArray draft_tokens, nb::ndarray<> bitmask,
         std::optional<IndexArray> parents, std::optional<IndexArray> first_child,
         std::optional<IndexArray> next_sibling, std::optional<nb::ndarray<>> temperatures, double time_limit_s) {
        BitmaskView v = CheckBitmask(bitmask, /*require_2d=*/true);
        const size_t n = draft_tokens.shape(0);
        float* temperature_out = nullptr;
        if (temperatures) {
          int64_t size = 0;
          temperature_out = CheckTemperatures(*temperatures, &size);
          if (size != static_cast<int64_t>(n)) {
            throw Error(ErrorKind::kInvalidArgument, "the temperatures tensor has " + std::to_string(size) +
                                                         " entries; draft_tokens has " + std::to_string(n));
          }
        }
        const bool links = first_child.has_value() || next_sibling.has_value();
        if (parents.has_value() == links || (links && !(first_child && next_sibling))) {
          throw Error(ErrorKind::kInvalidArgument,
                      "give the draft tree either as parents or as first_child and next_sibling");
        }
        if (parents) CheckLength(*parents, n, "parents");
        if (first_child) CheckLength(*first_child, n, "first_child");
        if (next_sibling) CheckLength(*next_sibling, n, "next_sibling");
        nb::gil_scoped_release release;
        DraftTree tree = parents
                             ? DraftTree::FromParents(parents->data(), static_cast<int64_t>(n))
                             : DraftTree::FromLinks(first_child->data(), next_sibling->data(), static_cast<int64_t>(n));
        bool timed_out = false;
        std::vector<bool> valid = TraverseDraftTree(matcher, tree, draft_tokens.data(), v.data, v.rows, v.words,
                                                    v.row_stride, temperature_out, time_limit_s, &timed_out);
        return std::make_pair(std::move(valid), !timed_out);
      },
      nb::arg("matcher"), nb::arg("draft_tokens"), nb::arg("bitmask"), nb::arg("parents") = nb::none(),
      nb::arg("first_child") = nb::none(), nb::arg("next_sibling") = nb::none(), nb::arg("temperatures") = nb::none(),
      nb::arg("time_limit_s") = 0.0);

  m.def(
      "serialize_compiled_grammar",
      [](const CompiledGrammar& compiled) {
        std::string s;
        {
          nb::gil_scoped_release release;
          s = SerializeCompiledGrammar(compiled);
        }
        return nb::bytes(s.data(), s.size());
      },
      nb::arg("compiled_grammar"));
  m.def(
      "deserialize_compiled_grammar",
      [](nb::bytes data, std::shared_ptr<TokenizerInfo> tokenizer) {
        std::string s(data.c_str(), data.size());
        nb::gil_scoped_release release;
        return DeserializeCompiledGrammar(s, std::shared_ptr<const TokenizerInfo>(tokenizer));
      },
      nb::arg("data"), nb::arg("tokenizer_info"));
  m.def(
      "deserialize_compiled_grammar_with_compiler",
      [](nb::bytes data, GrammarCompiler& compiler) {
        std::string s(data.c_str(), data.size());
        nb::gil_scoped_release release;
        return DeserializeCompiledGrammar(s, compiler);
      },
      nb::arg("data"), nb::arg("compiler"));
}

}  // namespace xg2::bindings
