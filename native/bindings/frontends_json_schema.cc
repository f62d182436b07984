// Binding of the JSON Schema front end.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "frontends/json_schema.h"
#include "json_from_python.h"
#include "xg2/limits.h"

namespace xg2::bindings {

void BindJsonSchema(nb::module_& m) {
  m.def(
      "grammar_from_json_schema",
      [](nb::handle schema, bool any_whitespace, int indent, const std::string& item_separator,
         const std::string& key_separator, bool strict_mode, int max_whitespace_cnt, bool any_order,
         bool on_unsupported_warn) -> nb::object {
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
        if (nb::isinstance<nb::str>(schema)) {
          std::string text = nb::cast<std::string>(schema);
          nb::gil_scoped_release release;
          r = JsonSchemaToGrammar(text, o);
        } else {
          JsonValue value;
          if (!JsonFromPython(schema, StackBoundedNestingDepth(), &value)) return nb::none();
          nb::gil_scoped_release release;
          r = JsonSchemaToGrammar(value, o);
        }
        return nb::make_tuple(std::move(r.grammar), std::move(r.warnings));
      },
      nb::arg("schema"), nb::arg("any_whitespace") = true, nb::arg("indent") = -1, nb::arg("item_separator") = "",
      nb::arg("key_separator") = "", nb::arg("strict_mode") = true, nb::arg("max_whitespace_cnt") = -1,
      nb::arg("any_order") = false, nb::arg("on_unsupported_warn") = false,
      nb::sig("def grammar_from_json_schema(schema: object, any_whitespace: bool = True, indent: int = -1, "
              "item_separator: str = '', key_separator: str = '', strict_mode: bool = True, "
              "max_whitespace_cnt: int = -1, any_order: bool = False, on_unsupported_warn: bool = False) "
              "-> tuple[Grammar, list[str]] | None"),
      "Converts a JSON Schema to a Grammar; returns (grammar, warnings). schema: JSON text, or a dict / bool "
      "taken as it is (None when it holds something only json.dumps can write: convert it to text first). "
      "Empty separators select the defaults.");
}

}  // namespace xg2::bindings
