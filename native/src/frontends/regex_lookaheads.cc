#include "frontends/regex_lookaheads.h"

namespace xg2 {
namespace {

// Visits the group parentheses and '|' of `p` from `from`, skipping escapes and character
// classes (where they are literal and ']' closes, as in ECMAScript): visit(index, char, depth)
// with the depth outside a '(' / ')'; a true return stops there. Returns that index or npos.
template <typename Visit>
size_t FindStructure(const std::string& p, size_t from, Visit visit) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = from; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(' || c == ')' || c == '|') {
      if (c == ')') --depth;
      if (visit(i, c, depth)) return i;
      if (c == '(') ++depth;
    }
  }
  return std::string::npos;
}

// The ')' that closes the group opened at `open`.
size_t GroupEnd(const std::string& p, size_t open) {
  return FindStructure(p, open, [](size_t, char c, int depth) { return c == ')' && depth == 0; });
}

bool HasTopLevelAlternation(const std::string& p) {
  return FindStructure(p, 0, [](size_t, char c, int depth) { return c == '|' && depth == 0; }) != std::string::npos;
}

}  // namespace

bool SplitLeadingLookaheads(const std::string& pattern, LookaheadSplit* out) {
  if (pattern.empty() || pattern[0] != '^') return false;
  LookaheadSplit split;
  size_t pos = 1;
  while (pattern.compare(pos, 3, "(?=") == 0 || pattern.compare(pos, 3, "(?!") == 0) {
    const size_t end = GroupEnd(pattern, pos);
    if (end == std::string::npos) return false;
    const std::string body = pattern.substr(pos + 3, end - pos - 3);
    (pattern[pos + 2] == '=' ? split.must : split.must_not).push_back("^(?:" + body + ")");
    pos = end + 1;
  }
  const std::string rest = pattern.substr(pos);
  if (pos == 1 || HasTopLevelAlternation(rest)) return false;
  split.must.push_back("^(?:" + rest + ")");
  *out = std::move(split);
  return true;
}

}  // namespace xg2
