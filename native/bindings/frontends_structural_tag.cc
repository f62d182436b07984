// Binding of the structural tag front end.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "frontends/structural_tag.h"

namespace xg2::bindings {

void BindStructuralTag(nb::module_& m) {
  m.def(
      "grammar_from_structural_tag",
      [](const std::string& tag_json, const TokenizerInfo* tokenizer, bool on_unsupported_warn) {
        StructuralTagOptions o;
        o.tokenizer = tokenizer;
        o.on_unsupported_warn = on_unsupported_warn;
        StructuralTagResult r;
        {
          nb::gil_scoped_release release;
          r = StructuralTagToGrammar(tag_json, o);
        }
        return std::make_tuple(std::move(r.grammar), std::move(r.warnings));
      },
      nb::arg("tag_json"), nb::arg("tokenizer").none() = nb::none(), nb::arg("on_unsupported_warn") = false,
      "Converts a structural tag (JSON text) to a Grammar; returns (grammar, warnings).");
}

}  // namespace xg2::bindings
