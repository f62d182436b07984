// A tool's argument schema whose root is a union (a $ref, anyOf, oneOf, single-branch allOf,
// const or enum) rather than one object schema: the argument styles write each object it
// allows as a parameter list of its own, so the union is split into those object schemas
// first. Shared by the XML styles (structural_tag_xml.cc) and the recursive styles
// (structural_tag_args.cc).
#pragma once

#include <string>
#include <vector>

#include "frontends/json_schema.h"
#include "support/json.h"

namespace xg2 {

struct ArgumentAlternative {
  JsonValue schema;  // an object schema (or a boolean), its $refs still relative to the root
  std::string path;  // where it came from, for errors
};

// Whether `root` is a union at its top (see above) rather than one object schema.
bool IsArgumentUnion(const JsonValue& root);

// The object schemas the union `root` allows, each once: anyOf and $ref take their
// alternatives' union (a definition reached again, through a cycle or from two branches,
// adds nothing: the least fixed point, and linear in the schema); oneOf is taken only where
// the JSON front end proves its alternatives disjoint; const/enum values that are objects
// become fixed parameter lists (each property required with its value as const, no others),
// other values name no arguments and drop out. `who` names the style in refusals
// (StructuralTagError at `path`, a JSON pointer below it).
std::vector<ArgumentAlternative> ArgumentAlternatives(const JsonValue& root, const std::string& path,
                                                      const JsonSchemaOptions& options, const std::string& who);

}  // namespace xg2
