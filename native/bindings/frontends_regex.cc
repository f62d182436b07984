// Binding of the regex front end: _core.grammar_from_regex(pattern) -> Grammar.
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "frontends/regex.h"
#include "xg2/grammar.h"

namespace xg2::bindings {

void BindRegex(nb::module_& m) {
  m.def(
      "grammar_from_regex",
      [](const std::string& pattern, bool search_semantics, bool python_dialect) {
        RegexOptions options;
        options.search_semantics = search_semantics;
        options.python_dialect = python_dialect;
        nb::gil_scoped_release release;
        return RegexToGrammar(pattern, options);
      },
      nb::arg("pattern"), nb::arg("search_semantics") = false, nb::arg("python_dialect") = false,
      "A grammar whose root rule matches the strings of an ECMAScript regex (the whole string "
      "unless search_semantics, where unanchored ends match any text); python_dialect refuses "
      "the spellings Python's re reads otherwise and reads \\a \\e as BEL and ESC, as xgrammar.");
}

}  // namespace xg2::bindings
