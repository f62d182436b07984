// Typed errors of the native core. The bindings map each kind to a Python exception class.
#pragma once

#include <stdexcept>
#include <string>

namespace xg2 {

enum class ErrorKind {
  kGrammarSyntax,    // malformed EBNF (message carries line:col)
  kGrammarSemantic,  // undefined rule, unproductive root, bad bound, ...
  kTokenizer,        // malformed vocabulary input
  kMatcherState,     // misuse of a matcher (accept after termination, rollback too far)
  kInvalidArgument,  // bad buffer shape, index out of range, ...
  kLimitExceeded,    // a configured size or depth limit was hit
  kStructuralTag,    // invalid structural tag (message starts with the path, e.g. format.tags[2].begin)
  kUnsupported,      // valid input the front end cannot enforce exactly (a JSON Schema keyword at a pointer)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// A syntax error at a 1-based line and column of the source text.
class SyntaxError : public Error {
 public:
  SyntaxError(const std::string& message, int line, int column)
      : Error(ErrorKind::kGrammarSyntax, std::to_string(line) + ":" + std::to_string(column) + ": " + message),
        line_(line),
        column_(column) {}
  // In xgrammar's wording for the front end named `source`:
  // "<source> error at line L, column C: message".
  SyntaxError(const std::string& source, const std::string& message, int line, int column)
      : Error(ErrorKind::kGrammarSyntax, source + " error at line " + std::to_string(line) + ", column " +
                                             std::to_string(column) + ": " + message),
        line_(line),
        column_(column) {}
  // The message as given (already in a front end's wording), at line:column.
  static SyntaxError Verbatim(const std::string& message, int line, int column) {
    return SyntaxError(message, line, column, 0);
  }
  int line() const { return line_; }
  int column() const { return column_; }

 private:
  SyntaxError(const std::string& message, int line, int column, int /*verbatim*/)
      : Error(ErrorKind::kGrammarSyntax, message), line_(line), column_(column) {}
  int line_;
  int column_;
};

// A time or memory budget of the running operation ran out (time_limit_s, max_memory_bytes).
// Not an Error on purpose: the front ends catch Error to fall back to another construction
// or to report a keyword as unsupported, and a budget that ran out must reach the caller
// instead. The bindings raise it as LimitExceededError; limit() names the option.
class BudgetExceeded : public std::runtime_error {
 public:
  BudgetExceeded(const std::string& limit, const std::string& message) : std::runtime_error(message), limit_(limit) {}
  const std::string& limit() const { return limit_; }

 private:
  std::string limit_;
};

}  // namespace xg2
