// Bindings of Grammar, GrammarCompiler and CompiledGrammar.
#include "xg2/grammar.h"

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "compiler/cache_registry.h"
#include "compiler/grammar_compiler.h"
#include "grammar/nullability.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2::bindings {
namespace {

// One cache's counters as dict entries named prefix + hits, misses, entries, bytes,
// limit_bytes, evictions.
void PutCacheStats(nb::dict& d, const std::string& prefix, const CacheStats& c) {
  d[(prefix + "hits").c_str()] = c.hits;
  d[(prefix + "misses").c_str()] = c.misses;
  d[(prefix + "entries").c_str()] = c.entries;
  d[(prefix + "bytes").c_str()] = c.bytes;
  d[(prefix + "limit_bytes").c_str()] = c.limit_bytes;
  d[(prefix + "evictions").c_str()] = c.evictions;
}

}  // namespace

void BindGrammar(nb::module_& m) {
  nb::class_<Grammar>(m, "Grammar")
      .def_static(
          "from_ebnf",
          [](const std::string& text, const std::string& root_rule_name) {
            nb::gil_scoped_release release;
            return ParseEbnf(text, root_rule_name);
          },
          nb::arg("text"), nb::arg("root_rule_name") = "root")
      .def_static("builtin_json_ebnf", []() { return BuiltinJsonGrammarEbnf(); })
      .def("to_ebnf", &Grammar::ToEbnf)
      .def_prop_ro("num_rules", &Grammar::num_rules)
      .def_prop_ro("num_exprs", &Grammar::num_exprs)
      .def_prop_ro("nullable_rule_ids", [](const Grammar& g) { return NullableRuleIds(g); });

  nb::class_<CompiledGrammar>(m, "CompiledGrammar")
      .def_prop_ro("grammar", [](const CompiledGrammar& c) { return c.grammar(); })
      .def_prop_ro("memory_size_bytes", &CompiledGrammar::MemoryBytes)
      .def_prop_ro("num_states", [](const CompiledGrammar& c) { return c.automaton()->num_states(); })
      .def_prop_ro("has_rule_temperatures", [](const CompiledGrammar& c) { return !c.rule_temperatures().empty(); })
      .def_prop_ro("num_scannable_states",
                   [](const CompiledGrammar& c) {
                     const auto& a = *c.automaton();
                     int64_t n = 0;
                     for (int32_t s = 0; s < a.num_states(); ++s) n += a.state_used[s] && a.has_byte_edges(s);
                     return n;
                   })
      .def("mask_cache_stats",
           [](const CompiledGrammar& c) {
             TokenMaskCacheStats s = c.mask_cache().Stats();
             nb::dict d;
             d["num_entries"] = s.num_entries;
             d["memory_bytes"] = s.memory_bytes;
             d["num_accepted_list"] = s.num_accepted_list;
             d["num_not_accepted_list"] = s.num_not_accepted_list;
             d["num_bitset"] = s.num_bitset;
             d["num_uncertain_suffixes"] = s.num_uncertain_suffixes;
             d["max_uncertain_suffixes"] = s.max_uncertain_suffixes;
             PutCacheStats(d, "by_id_", c.by_id_cache().Stats());
             return d;
           })
      .def(
          "precompute",
          [](CompiledGrammar& c, int num_threads) {
            nb::gil_scoped_release release;
            c.mask_cache().PrecomputeAll(num_threads);
          },
          nb::arg("num_threads") = 1);

  m.def("set_max_nesting_depth", [](int depth) { SetMaxNestingDepth(depth); }, nb::arg("depth"));
  m.def("max_nesting_depth", []() { return MaxNestingDepth(); });

  m.def("cross_grammar_cache_stats", []() {
    const CacheRegistryStats s = cache_registry::Stats();
    nb::dict d;
    PutCacheStats(d, "", s.masks);
    PutCacheStats(d, "automaton_", s.automata);
    PutCacheStats(d, "suffix_", s.suffixes);
    PutCacheStats(d, "key_exclusion_", s.key_exclusion);
    PutCacheStats(d, "pattern_automaton_", s.patterns);
    PutCacheStats(d, "format_dfa_", s.format_dfa);
    d["total_bytes"] = s.total_bytes();
    d["total_limit_bytes"] = s.total_limit_bytes();
    d["budget_bytes"] = s.budget_bytes;
    return d;
  });
  m.def(
      "set_cross_grammar_cache_limit", [](int64_t bytes) { cache_registry::SetBudget(bytes); }, nb::arg("limit_bytes"));
  m.def("clear_cross_grammar_cache", []() { cache_registry::Clear(); });
  m.def("release_freed_memory", []() { cache_registry::ReleaseFreedMemory(); });

  // A time limit for the front end's work on this thread (see ScopedTimeLimit).
  struct TimeLimitScope {
    double seconds;
    std::unique_ptr<ScopedTimeLimit> scope;
  };
  nb::class_<TimeLimitScope>(m, "TimeLimit")
      .def(nb::init<double>(), nb::arg("seconds"))
      .def("__enter__",
           [](TimeLimitScope& t) {
             t.scope.reset();
             t.scope = std::make_unique<ScopedTimeLimit>(t.seconds);
           })
      .def(
          "__exit__", [](TimeLimitScope& t, nb::handle, nb::handle, nb::handle) { t.scope.reset(); },
          nb::arg("exc_type").none(), nb::arg("exc_value").none(), nb::arg("traceback").none());

  nb::class_<PrecomputeTask>(m, "PrecomputeTask")
      .def(
          "wait",
          [](PrecomputeTask& t, double timeout_ms) {
            nb::gil_scoped_release release;
            return t.Wait(timeout_ms);
          },
          nb::arg("timeout_ms") = -1.0)
      .def("done",
           [](PrecomputeTask& t) {
             t.RethrowIfFailed();
             return t.done();
           })
      .def("completed", &PrecomputeTask::completed)
      .def("cancel", &PrecomputeTask::Cancel);

  m.def(
      "precompute_async",
      [](std::shared_ptr<CompiledGrammar> compiled, int num_threads, double budget_ms) {
        return std::make_unique<PrecomputeTask>(std::move(compiled), num_threads, budget_ms);
      },
      nb::arg("compiled"), nb::arg("num_threads") = 1, nb::arg("budget_ms") = -1.0);

  nb::class_<GrammarCompiler>(m, "GrammarCompiler")
      .def(
          "__init__",
          [](GrammarCompiler* self, std::shared_ptr<TokenizerInfo> tokenizer, int max_threads, bool cache_enabled,
             int64_t cache_limit_bytes) {
            new (self) GrammarCompiler(std::move(tokenizer), max_threads, cache_enabled, cache_limit_bytes);
          },
          nb::arg("tokenizer_info"), nb::arg("max_threads") = 0, nb::arg("cache_enabled") = true,
          nb::arg("cache_limit_bytes") = cache_registry::kDefaultCompiledCacheBytes)
      .def(
          "compile",
          [](GrammarCompiler& c, const Grammar& g, bool precompute, int64_t max_unrolled_repeat, double time_limit_s,
             int64_t max_nfa_states, int64_t max_dfa_states, int64_t max_memory_bytes) {
            if (max_nfa_states < 1 || max_dfa_states < 1) {
              throw Error(ErrorKind::kInvalidArgument, "max_nfa_states and max_dfa_states must be >= 1");
            }
            CompileOptions options;
            options.precompute_masks = precompute;
            options.limits.max_unrolled_repeat = max_unrolled_repeat;
            options.limits.max_nfa_states = max_nfa_states;
            options.limits.max_dfa_states = max_dfa_states;
            options.time_limit_s = time_limit_s;
            options.max_memory_bytes = max_memory_bytes;
            nb::gil_scoped_release release;
            return c.Compile(g, options);
          },
          nb::arg("grammar"), nb::arg("precompute") = true, nb::arg("max_unrolled_repeat") = 32,
          nb::arg("time_limit_s") = 0.0, nb::arg("max_nfa_states") = 4'000'000, nb::arg("max_dfa_states") = 1'000'000,
          nb::arg("max_memory_bytes") = 0)
      .def("clear_cache", &GrammarCompiler::ClearCache)
      .def("cache_stats",
           [](const GrammarCompiler& c) {
             nb::dict d;
             PutCacheStats(d, "", c.cache_stats());
             return d;
           })
      .def_prop_rw("cache_limit_bytes", &GrammarCompiler::cache_limit_bytes, &GrammarCompiler::SetCacheLimit)
      .def_prop_ro("cache_enabled", &GrammarCompiler::cache_enabled)
      .def_prop_ro("cache_size", &GrammarCompiler::cache_size)
      .def_prop_ro("max_threads", &GrammarCompiler::num_threads);
}

}  // namespace xg2::bindings
