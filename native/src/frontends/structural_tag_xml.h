// The XML argument styles of structural-tag json_schema formats: a tool's top-level object
// properties written as XML-like parameters (Qwen3-Coder, MiniMax, DeepSeek DSML, GLM, Kimi-K3), each
// value raw text for string properties and JSON otherwise.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "frontends/json_schema.h"
#include "frontends/structural_tag_keys.h"
#include "support/json.h"
#include "xg2/errors.h"
#include "xg2/grammar.h"

namespace xg2 {

// A value or parameter that no text can be written for (each value, or the required name,
// holds an excluded substring): a located StructuralTagError where nothing else is left, but
// an optional parameter or one alternative of a union is only left out.
class UnwritableValue : public Error {
 public:
  explicit UnwritableValue(const std::string& message) : Error(ErrorKind::kStructuralTag, message) {}
};

enum class XmlStyle { kQwen, kMiniMax, kDeepSeek, kDeepSeekV41, kGlm, kKimiK3 };

// "qwen_xml", "minimax_xml", "deepseek_xml", "deepseek_v4_1_xml", "glm_xml", "kimi_k3_xml"; false for
// anything else.
bool ParseXmlStyle(const std::string& name, XmlStyle* style);

class XmlParameterLowering {
 public:
  // path: the structural-tag path of the json_schema field (for errors).
  // excludes: substrings no raw string value or parameter name may contain.
  XmlParameterLowering(Grammar* g, XmlStyle style, JsonSchemaOptions options, std::string path,
                       std::vector<std::string>* warnings, std::vector<std::string> excludes = {})
      : g_(g),
        style_(style),
        options_(std::move(options)),
        path_(std::move(path)),
        warnings_(warnings),
        excludes_(std::move(excludes)) {}

  // The parameters of the tool's argument schema: those of its object schema or, for a union
  // at the root ($ref, anyOf, oneOf, const, enum), of one of the objects it allows.
  ExprId Lower(const JsonValue& schema);

 private:
  // The parameters of one object schema (at `path`), in declaration order (any order with
  // options.any_order; optional ones may be left out), separated by optional whitespace.
  ExprId ParameterList(const JsonValue& schema, const std::string& path);
  ExprId Parameter(const std::string& name, const JsonValue& prop, const std::string& path);
  // A declared name as the style writes it (Kimi-K3 escapes attribute text).
  std::string EmittedName(const std::string& name) const;
  // kimi_type: the Kimi-K3 type attribute to write (empty: the one the value's schema names).
  ExprId NamedParameter(ExprId name, const std::string& path, const JsonValue& prop, const JsonValue& root,
                        const std::string& kimi_type = "");
  ExprId ExtraParameters(const JsonValue& schema, const ObjectKeys& keys);
  // minProperties / maxProperties: how many parameters may be written (max -1: no bound).
  struct ParameterCount {
    int64_t min = 0;
    int64_t max = -1;
  };
  ParameterCount ParameterCountOf(const JsonValue& schema, const std::string& path) const;
  // The ordered parameters (required flag each) and the undeclared ones, within `count`.
  ExprId CountedParameters(const std::vector<std::pair<ExprId, bool>>& params, ExprId extra,
                           const ParameterCount& count, const std::string& path);
  ExprId RawTextUntil(const std::string& end);
  // A string value written raw, then `end`. padded: a newline may come on each side of a
  // constrained or enumerated value (Qwen's template writes them; DSML's text is the value).
  ExprId StringValue(const JsonValue& s, const std::string& path, const std::string& end, bool padded);
  // One JSON value of `prop`, whose $refs resolve against the tool's root schema `root`.
  ExprId JsonValueOf(const JsonValue& prop, const JsonValue& root, const std::string& path);
  // The leaves of a value's union by kind (structural_tag_dsml.cc), string schemas (each with
  // its path) and non-string ones: the templates write a str raw and anything else as JSON
  // (DeepSeek DSML also sets its string attribute by that kind).
  struct ValueKinds {
    std::vector<std::pair<JsonValue, std::string>> strings;
    std::vector<JsonValue> json;
    std::set<std::string> refs;  // the $refs already visited
    bool revisited = false;      // a $ref was met again (its leaves are counted once)
  };
  void CollectValueKinds(const JsonValue& s, const JsonValue& root, const std::string& path, ValueKinds* out);
  // The string attribute, the value and `end`, one alternative per kind the schema allows.
  ExprId DsmlValue(const JsonValue& prop, const JsonValue& root, const std::string& path, const std::string& end);
  // Qwen, MiniMax and GLM (no attribute): the raw text of each string leaf, or a JSON value of
  // the others padded with whitespace, then `end`.
  ExprId RawOrJsonValue(const JsonValue& prop, const JsonValue& root, const std::string& path, const std::string& end);
  // Kimi-K3 with no single type named: the value's union split by the type attribute each leaf
  // is written with (strings raw), one alternative per leaf; kNoExpr where a leaf may take
  // several types (its attribute is then not determined).
  ExprId KimiK3SplitValue(ExprId name, const std::string& path, const JsonValue& prop, const JsonValue& root);
  // The choice of the alternatives that can be written (see UnwritableValue); the first
  // failure is rethrown when none can.
  ExprId WritableChoice(const std::vector<std::function<ExprId()>>& alternatives);
  ExprId Whitespace();
  bool Excluded(const std::string& text) const;

  Grammar* g_;
  XmlStyle style_;
  JsonSchemaOptions options_;
  std::string path_;
  std::vector<std::string>* warnings_;
  std::vector<std::string> excludes_;
  const JsonValue* root_ = nullptr;  // the tool's argument schema (its $defs, the target of "#")
  int imports_ = 0;
};

}  // namespace xg2
