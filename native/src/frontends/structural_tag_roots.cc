#include "frontends/structural_tag_roots.h"

#include <set>

#include "frontends/json_schema_converter.h"
#include "frontends/json_schema_internal.h"
#include "frontends/structural_tag_args.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& reason) {
  throw Error(ErrorKind::kStructuralTag, path + ": " + reason);
}

const char* const kUnionKeywords[] = {"$ref", "anyOf", "oneOf", "allOf", "const", "enum"};

// The union keyword of `s`, or nullptr when it has none.
const char* UnionKeyword(const JsonValue& s) {
  if (!s.is_object()) return nullptr;
  for (const char* key : kUnionKeywords) {
    if (s.Find(key)) return key;
  }
  return nullptr;
}

// The arguments a const/enum object value fixes: each of its properties, required, with its
// value as const, and no others.
JsonValue FixedArguments(const JsonValue& value) {
  std::vector<std::pair<std::string, JsonValue>> props;
  std::vector<JsonValue> required;
  for (const auto& [k, v] : value.members()) {
    props.emplace_back(k, JsonValue::Object({{"const", v}}));
    required.push_back(JsonValue::String(k));
  }
  return JsonValue::Object({{"type", JsonValue::String("object")},
                            {"properties", JsonValue::Object(std::move(props))},
                            {"required", JsonValue::Array(std::move(required))},
                            {"additionalProperties", JsonValue::Bool(false)}});
}

class UnionSplitter {
 public:
  UnionSplitter(const JsonValue& root, const JsonSchemaOptions& options, std::string who)
      : root_(root), judge_(root, options), who_(std::move(who)) {
    seen_refs_.insert("#");  // the root is the union being split: reaching it again adds nothing
  }

  // Adds the object schemas `s` allows; ptr: its JSON pointer in the root (for the judge).
  void Add(const JsonValue& s, const std::string& path, const std::string& ptr) {
    const char* key = UnionKeyword(s);
    if (!key) {
      out.push_back({s, path});
      return;
    }
    // The union keyword must stand alone: a sibling would narrow every alternative, and that
    // conjunction is not built here. "type": "object" narrows nothing arguments can be.
    for (const auto& [k, v] : s.members()) {
      if (k == key || jsonschema::IsAnnotation(k) || k == "strict") continue;
      if (k == "type" && v.is_string() && v.as_string() == "object") continue;
      Fail(path + "/" + JsonPointerEscape(k),
           "keyword '" + k + "' beside '" + key + "' at the root of the arguments is not supported for " + who_);
    }
    const JsonValue& v = *s.Find(key);
    const std::string at = path + "/" + key;
    const std::string at_ptr = ptr + "/" + key;
    const std::string k = key;
    if (k == "$ref") {
      if (!v.is_string()) Fail(at, "must be a string");
      if (!seen_refs_.insert(v.as_string()).second) return;  // its alternatives are in already
      const JsonValue* target = DefinitionTarget(root_, v.as_string());
      if (!target)
        Fail(at, "'" + v.as_string() + "' does not name the root or a schema under #/$defs or #/definitions");
      Add(*target, at, v.as_string().substr(1));
    } else if (k == "anyOf" || k == "oneOf") {
      if (!v.is_array() || v.items().empty()) Fail(at, "must be a non-empty list");
      // oneOf is written as a choice: exact only when no value satisfies two alternatives.
      for (size_t i = 0; k == "oneOf" && i < v.items().size(); ++i) {
        for (size_t j = i + 1; j < v.items().size(); ++j) {
          if (!judge_.ProvablyDisjointSchemas(v.items()[i], at_ptr + "/" + std::to_string(i), v.items()[j],
                                              at_ptr + "/" + std::to_string(j)))
            Fail(at, "alternatives " + std::to_string(i) + " and " + std::to_string(j) +
                         " are not provably exclusive (" + who_ + " write oneOf as a choice)");
        }
      }
      for (size_t i = 0; i < v.items().size(); ++i)
        Add(v.items()[i], at + "/" + std::to_string(i), at_ptr + "/" + std::to_string(i));
    } else if (k == "allOf") {
      if (!v.is_array() || v.items().empty()) Fail(at, "must be a non-empty list");
      std::vector<size_t> constraining;
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (!jsonschema::IsTrueSchema(v.items()[i])) constraining.push_back(i);
      }
      if (constraining.size() > 1) Fail(at, "allOf of several schemas at the root is not supported for " + who_);
      const size_t i = constraining.empty() ? 0 : constraining[0];
      Add(v.items()[i], at + "/" + std::to_string(i), at_ptr + "/" + std::to_string(i));
    } else {  // const, enum
      if (k == "enum" && (!v.is_array() || v.items().empty())) Fail(at, "must be a non-empty list");
      const std::vector<JsonValue> values = k == "const" ? std::vector<JsonValue>{v} : v.items();
      size_t objects = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i].is_object()) continue;  // not an argument object: no call writes it
        out.push_back({FixedArguments(values[i]), k == "const" ? at : at + "/" + std::to_string(i)});
        ++objects;
      }
      if (objects == 0) Fail(at, "no value is an object (tool arguments are one)");
    }
  }

  std::vector<ArgumentAlternative> out;

 private:
  const JsonValue& root_;
  jsonschema::Converter judge_;
  std::string who_;
  std::set<std::string> seen_refs_;
};

}  // namespace

bool IsArgumentUnion(const JsonValue& root) { return UnionKeyword(root) != nullptr; }

std::vector<ArgumentAlternative> ArgumentAlternatives(const JsonValue& root, const std::string& path,
                                                      const JsonSchemaOptions& options, const std::string& who) {
  UnionSplitter splitter(root, options, who);
  splitter.Add(root, path, "");
  return std::move(splitter.out);
}

}  // namespace xg2
