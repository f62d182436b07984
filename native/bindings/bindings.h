// Shared declarations of the nanobind module xg2_jax._core. Only files in bindings/ include
// nanobind; each Bind* function registers one concern's classes.
#pragma once

#include <nanobind/nanobind.h>

namespace xg2::bindings {

namespace nb = nanobind;

void BindErrors(nb::module_& m);
void BindTokenizer(nb::module_& m);
void BindGrammar(nb::module_& m);
void BindMatcher(nb::module_& m);
void BindJsonSchema(nb::module_& m);
void BindRegex(nb::module_& m);
void BindLark(nb::module_& m);
void BindBatch(nb::module_& m);
void BindStructuralTag(nb::module_& m);

}  // namespace xg2::bindings
