// JSON document model and a strict RFC 8259 parser with line:col errors and a depth limit.
#include "support/json.h"

#include <cmath>
#include <cstdlib>

#include "support/utf8.h"
#include "xg2/errors.h"
#include "xg2/limits.h"

namespace xg2 {

JsonValue JsonValue::Bool(bool b) {
  JsonValue v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

JsonValue JsonValue::Number(double value, std::string literal) {
  JsonValue v;
  v.type_ = Type::kNumber;
  v.number_ = value;
  v.string_ = std::move(literal);
  return v;
}

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

JsonValue JsonValue::Array(std::vector<JsonValue> items) {
  JsonValue v;
  v.type_ = Type::kArray;
  v.items_ = std::move(items);
  return v;
}

JsonValue JsonValue::Object(std::vector<std::pair<std::string, JsonValue>> members) {
  JsonValue v;
  v.type_ = Type::kObject;
  v.members_ = std::move(members);
  return v;
}

bool JsonValue::is_integer() const {
  if (type_ != Type::kNumber) return false;
  if (string_.find_first_of(".eE") == std::string::npos) return true;
  return std::isfinite(number_) && std::floor(number_) == number_;
}

const JsonValue* JsonValue::Find(const std::string& key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& m : members_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

std::string JsonQuote(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

namespace {
void AppendJsonPointerToken(const std::string& token, std::string* out) {
  for (char c : token) {
    if (c == '~') {
      *out += "~0";
    } else if (c == '/') {
      *out += "~1";
    } else {
      *out += c;
    }
  }
}
}  // namespace

std::string JsonPointerEscape(const std::string& token) {
  std::string out;
  AppendJsonPointerToken(token, &out);
  return out;
}

std::string JsonPointerChild(const std::string& parent, const std::string& token) {
  std::string out;
  out.reserve(parent.size() + 1 + token.size());  // escapes ("~0", "~1") are rare
  out += parent;
  out += '/';
  AppendJsonPointerToken(token, &out);
  return out;
}

std::string JsonValue::Dump() const {
  switch (type_) {
    case Type::kNull: return "null";
    case Type::kBool: return bool_ ? "true" : "false";
    case Type::kNumber: return string_;
    case Type::kString: return JsonQuote(string_);
    case Type::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        out += items_[i].Dump();
      }
      return out + "]";
    }
    case Type::kObject: {
      std::string out = "{";
      for (size_t i = 0; i < members_.size(); ++i) {
        if (i) out += ',';
        out += JsonQuote(members_[i].first);
        out += ':';
        out += members_[i].second.Dump();
      }
      return out + "}";
    }
  }
  return "null";
}

namespace {

// A number literal's exact value as "[-]digits e exponent", digits without leading or
// trailing zeros ("0" for zero), so equal values of any spelling (1, 1.0, 10e-1) compare equal.
std::string ExactNumber(const std::string& literal) {
  size_t i = 0;
  bool negative = i < literal.size() && literal[i] == '-';
  if (negative) ++i;
  std::string digits;
  long long exponent = 0;
  bool in_fraction = false;
  for (; i < literal.size() && literal[i] != 'e' && literal[i] != 'E'; ++i) {
    char c = literal[i];
    if (c == '.') {
      in_fraction = true;
    } else if (c >= '0' && c <= '9') {
      if (!(digits.empty() && c == '0')) digits += c;
      if (in_fraction) --exponent;
    }
  }
  if (i < literal.size()) {  // exponent: saturates far beyond any double's range
    long long e = 0;
    bool e_negative = false;
    for (++i; i < literal.size(); ++i) {
      if (literal[i] == '-') e_negative = true;
      if (literal[i] >= '0' && literal[i] <= '9' && e < 1000000000LL) e = e * 10 + (literal[i] - '0');
    }
    exponent += e_negative ? -e : e;
  }
  if (digits.empty()) return "0";
  while (digits.back() == '0') {
    digits.pop_back();
    ++exponent;
  }
  return (negative ? "-" : "") + digits + "e" + std::to_string(exponent);
}

}  // namespace

bool JsonValue::operator==(const JsonValue& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::kNull: return true;
    case Type::kBool: return bool_ == o.bool_;
    case Type::kNumber:
      // Different doubles are different values; equal ones may still differ past double
      // precision (9007199254740992 and 9007199254740993).
      if (number_ != o.number_) return false;
      return string_.empty() || o.string_.empty() || ExactNumber(string_) == ExactNumber(o.string_);
    case Type::kString: return string_ == o.string_;
    case Type::kArray: return items_ == o.items_;
    case Type::kObject: {
      if (members_.size() != o.members_.size()) return false;
      for (const auto& m : members_) {
        const JsonValue* other = o.Find(m.first);
        if (other == nullptr || !(*other == m.second)) return false;
      }
      return true;
    }
  }
  return false;
}

namespace {

class Parser {
 public:
  Parser(const std::string& text, const JsonParseOptions& options) : s_(text), options_(options) {}

  JsonValue ParseDocument() {
    if (FindInvalidUtf8(s_) >= 0) {
      pos_ = static_cast<size_t>(FindInvalidUtf8(s_));
      Fail("invalid UTF-8");
    }
    SkipWs();
    JsonValue v = ParseValue(0);
    SkipWs();
    if (pos_ < s_.size()) Fail("unexpected trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& message) const { FailAt(pos_, message); }
  [[noreturn]] void FailAt(size_t at, const std::string& message) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(s_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    throw SyntaxError("Failed to parse JSON: " + message, line, col);  // xgrammar's phrase
  }

  void SkipWs() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(const char* lit) {
    size_t n = std::char_traits<char>::length(lit);
    if (s_.compare(pos_, n, lit) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }

  JsonValue ParseValue(int depth) {
    const int max_depth = options_.max_depth < 0 ? MaxNestingDepth() : options_.max_depth;
    if (depth > max_depth) {
      throw Error(ErrorKind::kLimitExceeded, "Maximum recursion depth exceeded: JSON nesting deeper than " +
                                                 std::to_string(max_depth) + " levels" +
                                                 (options_.max_depth < 0 ? NestingLimitNote() : std::string()));
    }
    if (pos_ >= s_.size()) Fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') return JsonValue::String(ParseString());
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    if (Consume("true")) return JsonValue::Bool(true);
    if (Consume("false")) return JsonValue::Bool(false);
    if (Consume("null")) return JsonValue();
    Fail(std::string("unexpected character '") + c + "'");
  }

  JsonValue ParseObject(int depth) {
    ++pos_;  // {
    std::vector<std::pair<std::string, JsonValue>> members;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return JsonValue::Object(std::move(members));
    }
    while (true) {
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != '"') Fail("expected a string key");
      std::string key = ParseString();
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != ':') Fail("expected ':'");
      ++pos_;
      SkipWs();
      JsonValue v = ParseValue(depth + 1);
      members.emplace_back(std::move(key), std::move(v));
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return JsonValue::Object(std::move(members));
      }
      Fail("expected ',' or '}'");
    }
  }

  JsonValue ParseArray(int depth) {
    ++pos_;  // [
    std::vector<JsonValue> items;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return JsonValue::Array(std::move(items));
    }
    while (true) {
      SkipWs();
      items.push_back(ParseValue(depth + 1));
      SkipWs();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return JsonValue::Array(std::move(items));
      }
      Fail("expected ',' or ']'");
    }
  }

  int Hex4() {
    if (pos_ + 4 > s_.size()) Fail("truncated \\u escape");
    int v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_ + i];
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        Fail("invalid hex digit in \\u escape");
      }
      v = v * 16 + d;
    }
    pos_ += 4;
    return v;
  }

  std::string ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) Fail("raw control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) Fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const size_t escape = pos_ - 2;
          uint32_t cp = static_cast<uint32_t>(Hex4());
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.compare(pos_, 2, "\\u") == 0) {
            const size_t save = pos_;
            pos_ += 2;
            const uint32_t lo = static_cast<uint32_t>(Hex4());
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              pos_ = save;
            }
          }
          // JSON text may hold a lone surrogate, but no UTF-8 text can: a schema or tag that
          // names one could never be matched as written, so it is refused, not replaced.
          if (cp >= 0xD800 && cp <= 0xDFFF)
            FailAt(escape, "lone surrogate " + s_.substr(escape, 6) + " cannot be encoded as UTF-8");
          AppendUtf8(cp, &out);
          break;
        }
        default:
          pos_ -= 2;  // report the backslash
          Fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  JsonValue ParseNumber() {
    size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    auto digit = [&]() { return pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9'; };
    if (!digit()) Fail("expected a digit");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digit()) Fail("expected a digit after '.'");
      while (digit()) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digit()) Fail("expected a digit in the exponent");
      while (digit()) ++pos_;
    }
    std::string lit = s_.substr(start, pos_ - start);
    return JsonValue::Number(std::strtod(lit.c_str(), nullptr), lit);
  }

  const std::string& s_;
  const JsonParseOptions& options_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue ParseJson(const std::string& text, const JsonParseOptions& options) {
  return Parser(text, options).ParseDocument();
}

}  // namespace xg2
