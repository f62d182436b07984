// Bindings of GrammarMatcher. Bitmask buffers cross as ndarrays with dtype, shape and device
// checked here; heavy calls release the GIL.
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "matcher/grammar_matcher.h"
#include "ndarray_checks.h"
#include "xg2/errors.h"

namespace xg2::bindings {
namespace {

// Returns a pointer to row `index` of a (batch, words) or (words,) int32 CPU array.
int32_t* BitmaskRow(nb::ndarray<>& a, int64_t index, int64_t* num_words) {
  BitmaskView v = CheckBitmask(a, /*require_2d=*/false);
  if (index < 0 || index >= v.rows) {
    throw Error(ErrorKind::kInvalidArgument,
                "bitmask index " + std::to_string(index) + " is out of range for batch size " + std::to_string(v.rows));
  }
  *num_words = v.words;
  return v.data + index * v.row_stride;
}

}  // namespace

void BindMatcher(nb::module_& m) {
  nb::class_<GrammarMatcher>(m, "GrammarMatcher")
      .def(
          "__init__",
          [](GrammarMatcher* self, std::shared_ptr<CompiledGrammar> compiled, std::vector<int32_t> stop_token_ids,
             bool terminate_without_stop_token, std::optional<double> default_temperature) {
            std::optional<float> t;
            if (default_temperature) t = static_cast<float>(*default_temperature);
            new (self) GrammarMatcher(std::move(compiled), std::move(stop_token_ids), terminate_without_stop_token, t);
          },
          nb::arg("compiled_grammar"), nb::arg("stop_token_ids") = std::vector<int32_t>(),
          nb::arg("terminate_without_stop_token") = false, nb::arg("default_temperature") = nb::none())
      .def(
          "temperature",
          [](GrammarMatcher& self) {
            std::optional<float> t = self.Temperature();
            bool conflict = self.TakeTemperatureConflict();
            return std::make_pair(t, conflict);
          },
          "(temperature or None, whether disagreeing paths were met for the first time)")
      .def(
          "accept_token",
          [](GrammarMatcher& self, int32_t token_id) {
            nb::gil_scoped_release release;
            return self.AcceptToken(token_id);
          },
          nb::arg("token_id"))
      .def(
          "accept_tokens",
          [](GrammarMatcher& self, const std::vector<int32_t>& token_ids) {
            nb::gil_scoped_release release;
            return self.AcceptTokens(token_ids.data(), static_cast<int64_t>(token_ids.size()));
          },
          nb::arg("token_ids"))
      .def(
          "count_valid_tokens",
          [](GrammarMatcher& self, const std::vector<int32_t>& token_ids) {
            nb::gil_scoped_release release;
            return self.CountValidTokens(token_ids.data(), static_cast<int64_t>(token_ids.size()));
          },
          nb::arg("token_ids"))
      .def(
          "accept_bytes",
          [](GrammarMatcher& self, nb::bytes data) {
            std::string s(data.c_str(), data.size());
            nb::gil_scoped_release release;
            return self.AcceptString(s);
          },
          nb::arg("data"))
      .def(
          "fill_next_token_bitmask",
          [](GrammarMatcher& self, nb::ndarray<> bitmask, int64_t index) {
            int64_t words = 0;
            int32_t* row = BitmaskRow(bitmask, index, &words);
            nb::gil_scoped_release release;
            return self.FillNextTokenBitmask(row, words);
          },
          nb::arg("bitmask"), nb::arg("index") = 0)
      .def("is_terminated", &GrammarMatcher::IsTerminated)
      .def("is_completed", &GrammarMatcher::IsCompleted)
      .def("has_ended", &GrammarMatcher::HasEnded)
      .def("reset", &GrammarMatcher::Reset)
      .def("rollback", &GrammarMatcher::Rollback, nb::arg("num_tokens") = 1)
      .def("fork", &GrammarMatcher::Fork)
      .def("find_jump_forward_bytes",
           [](GrammarMatcher& self) {
             std::string s;
             {
               nb::gil_scoped_release release;
               s = self.FindJumpForwardString();
             }
             return nb::bytes(s.data(), s.size());
           })
      .def("find_jump_forward_tokens",
           [](GrammarMatcher& self) {
             nb::gil_scoped_release release;
             return self.FindJumpForwardTokens();
           })
      .def(
          "get_captures",
          [](const GrammarMatcher& self, bool deduplicate) {
            nb::list out;
            for (const auto& [name, span] : self.Captures(deduplicate)) {
              out.append(nb::make_tuple(nb::str(name.c_str()), nb::bytes(span.data(), span.size())));
            }
            return out;
          },
          nb::arg("deduplicate") = true)
      .def("debug_state", &GrammarMatcher::DebugState)
      .def("last_fill_stats",
           [](const GrammarMatcher& self) {
             const auto& s = self.last_fill_stats();
             nb::dict d;
             d["scannable_states"] = s.scannable_states;
             d["uncertain_tokens"] = s.uncertain_tokens;
             d["walk_nodes"] = s.walk_nodes;
             d["row_items"] = self.last_row_size();
             return d;
           })
      .def_prop_ro("num_accepted_steps", &GrammarMatcher::num_accepted_steps)
      .def_prop_ro("stop_token_ids", &GrammarMatcher::stop_token_ids);
}

}  // namespace xg2::bindings
