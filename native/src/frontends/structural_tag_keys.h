// The key constraints of an object schema in the tool-argument styles of structural-tag
// json_schema formats: patternProperties, additionalProperties (or unevaluatedProperties)
// and propertyNames, as automata over decoded key text. Each style writes a key its own way
// (an XML attribute, a bare identifier, a parameter name); the keys the schema does not fix
// are partitioned by the schema their values take, declared names left out.
#pragma once

#include <string>
#include <vector>

#include "support/json.h"
#include "xg2/grammar.h"

namespace xg2 {

class ObjectKeys {
 public:
  // s: an object schema at `path`; who: the style named in refusals (StructuralTagError).
  ObjectKeys(const JsonValue& s, const std::string& path, std::string who);

  // Whether declared property `name` (schema `prop`, at `path`) may be written: it satisfies
  // propertyNames. A name that also matches a patternProperties entry with another schema is
  // refused (the conjunction of the two is not built).
  bool Admits(const std::string& name, const JsonValue& prop, const std::string& path) const;

  // Keys the schema does not fix, within `alphabet` (the style's writable keys; nullptr: any),
  // `declared` left out: one region per schema their values take (nullptr: any value).
  struct Region {
    ByteDfaSpec keys;
    const JsonValue* schema;
    std::string path;  // of that schema, for errors
  };
  std::vector<Region> FreeRegions(const std::vector<std::string>& declared, const ByteDfaSpec* alphabet) const;

 private:
  [[noreturn]] void Fail(const std::string& path, const std::string& reason) const;
  std::vector<ByteDfaSpec> NameDfas(const JsonValue& names, const std::string& path) const;

  std::string path_, who_;
  std::vector<std::string> patterns_;
  std::vector<const JsonValue*> pattern_schemas_;
  bool extra_allowed_ = false;
  const JsonValue* extra_ = nullptr;  // additionalProperties' schema (nullptr: any value)
  bool names_false_ = false;          // propertyNames false: no property at all
  std::vector<ByteDfaSpec> names_;    // propertyNames as automata over decoded text
};

}  // namespace xg2
