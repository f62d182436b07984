// Binding of the JSON Schema front end.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "frontends/json_schema.h"

namespace xg2::bindings {

void BindJsonSchema(nb::module_& m) {
  m.def(
      "grammar_from_json_schema",
      [](const std::string& schema_json, bool any_whitespace, int indent, const std::string& item_separator,
         const std::string& key_separator, bool strict_mode, int max_whitespace_cnt, bool any_order,
         bool on_unsupported_warn) {
        JsonSchemaOptions o;
        o.any_whitespace = any_whitespace;
        o.indent = indent;
        o.item_separator = item_separator;
        o.key_separator = key_separator;
        o.strict_mode = strict_mode;
        o.max_whitespace_cnt = max_whitespace_cnt;
        o.any_order = any_order;
        o.on_unsupported_warn = on_unsupported_warn;
        JsonSchemaResult r;
        {
          nb::gil_scoped_release release;
          r = JsonSchemaToGrammar(schema_json, o);
        }
        return std::make_tuple(std::move(r.grammar), std::move(r.warnings));
      },
      nb::arg("schema_json"), nb::arg("any_whitespace") = true, nb::arg("indent") = -1, nb::arg("item_separator") = "",
      nb::arg("key_separator") = "", nb::arg("strict_mode") = true, nb::arg("max_whitespace_cnt") = -1,
      nb::arg("any_order") = false, nb::arg("on_unsupported_warn") = false,
      "Converts a JSON Schema (text) to a Grammar; returns (grammar, warnings). Empty separators select the defaults.");
}

}  // namespace xg2::bindings
