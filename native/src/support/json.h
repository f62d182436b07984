// A small JSON document model and parser for the front ends (JSON Schema, structural tags).
// Parse errors carry line:col; values keep object member order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xg2 {

class JsonValue {
 public:
  enum class Type : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

  JsonValue() = default;  // null
  static JsonValue Bool(bool b);
  static JsonValue Number(double value, std::string literal);  // literal: text as written
  static JsonValue String(std::string s);
  static JsonValue Array(std::vector<JsonValue> items);
  static JsonValue Object(std::vector<std::pair<std::string, JsonValue>> members);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  // True for numbers written without fraction/exponent, or whose value is integral.
  bool is_integer() const;

  bool as_bool() const { return bool_; }
  double as_number() const { return number_; }
  const std::string& number_literal() const { return string_; }  // for kNumber
  const std::string& as_string() const { return string_; }
  const std::vector<JsonValue>& items() const { return items_; }
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // Object member lookup (first match), nullptr if absent or not an object.
  const JsonValue* Find(const std::string& key) const;

  // Compact serialization (keys in stored order; strings escaped per RFC 8259; numbers as
  // their literal). Deterministic, so it can be used as a cache key.
  std::string Dump() const;
  bool operator==(const JsonValue& other) const;  // JSON equality (numbers by value)

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

struct JsonParseOptions {
  int max_depth = -1;  // deeper nesting raises Error(kLimitExceeded); -1: MaxNestingDepth()
};

// Parses one JSON document (RFC 8259; rejects trailing garbage, invalid UTF-8, lone
// surrogate escapes are kept as U+FFFD). Throws SyntaxError with line:col.
JsonValue ParseJson(const std::string& text, const JsonParseOptions& options = JsonParseOptions());

// Escapes a string as a JSON string literal including the quotes.
std::string JsonQuote(const std::string& s);

// Encodes a JSON pointer reference token ("~" -> "~0", "/" -> "~1").
std::string JsonPointerEscape(const std::string& token);
// parent + "/" + the escaped token, built in one allocation (the JSON Schema front end makes
// one per keyword it reads).
std::string JsonPointerChild(const std::string& parent, const std::string& token);

}  // namespace xg2
