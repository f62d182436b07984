// Bindings of the Lark front end and of grammar union / concatenation.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "frontends/lark.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"
#include "xg2/tokenizer.h"

namespace xg2::bindings {

void BindLark(nb::module_& m) {
  m.def(
      "grammar_from_lark",
      [](const std::string& text, const TokenizerInfo* tokenizer, const std::vector<std::string>& names,
         const std::vector<const Grammar*>& grammars) {
        if (names.size() != grammars.size()) throw Error(ErrorKind::kInvalidArgument, "one grammar per name");
        LarkOptions options;
        options.tokenizer = tokenizer;
        for (size_t i = 0; i < names.size(); ++i) options.named_grammars[names[i]] = grammars[i];
        nb::gil_scoped_release release;
        return LarkToGrammar(text, options);
      },
      nb::arg("text"), nb::arg("tokenizer").none() = nb::none(), nb::arg("names") = std::vector<std::string>(),
      nb::arg("grammars") = std::vector<const Grammar*>(),
      "The grammar of a Lark grammar's start rule; @name references resolve to grammars[names.index(name)].");
  m.def(
      "combine_grammars",
      [](const std::vector<const Grammar*>& parts, bool concatenate) {
        nb::gil_scoped_release release;
        return CombineGrammars(parts, concatenate);
      },
      nb::arg("parts"), nb::arg("concatenate"),
      "A grammar matching one of the parts (concatenate=False) or all of them in order.");
}

}  // namespace xg2::bindings
