// Python objects to JsonValue without a text round trip (json.dumps, then ParseJson): a
// dict schema reaches the front end as it is.
#pragma once

#include <nanobind/nanobind.h>

#include "support/json.h"

namespace xg2::bindings {

// Converts dict / list / tuple / str / int / float / bool / None (exact types; dict
// subclasses too) into *out. Returns false, leaving the caller to go through json.dumps and
// its rules, for anything else: another type, a non-str key, a float that is not finite, a
// str with a lone surrogate, or nesting deeper than max_depth.
bool JsonFromPython(nanobind::handle obj, int max_depth, JsonValue* out);

}  // namespace xg2::bindings
