// Substring automaton (see substring_dfa.h).
#include "automata/substring_dfa.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "xg2/errors.h"

namespace xg2 {

ByteDfaSpec SubstringDfa(const std::vector<std::string>& chunks, int64_t max_states) {
  std::string text;
  std::vector<uint8_t> boundary(1, 1);  // per position of text: a run may start or end here
  for (const std::string& c : chunks) {
    text += c;
    boundary.resize(text.size() + 1, 0);
    boundary[text.size()] = 1;
  }
  using Set = std::vector<int32_t>;  // sorted positions
  std::map<Set, int32_t> ids;
  std::vector<const Set*> sets;
  ByteDfaSpec out;
  auto id_of = [&](Set set) {
    auto [it, inserted] = ids.emplace(std::move(set), static_cast<int32_t>(sets.size()));
    if (inserted) {
      if (static_cast<int64_t>(sets.size()) >= max_states) {
        throw Error(ErrorKind::kLimitExceeded,
                    "Substring: the automaton has more than " + std::to_string(max_states) + " states");
      }
      sets.push_back(&it->first);
      bool final = false;
      for (int32_t p : it->first) final |= boundary[p] != 0;
      out.is_final.push_back(final);
      out.edges.emplace_back();
    }
    return it->second;
  };
  Set start;
  for (int32_t p = 0; p <= static_cast<int32_t>(text.size()); ++p) {
    if (boundary[p]) start.push_back(p);
  }
  id_of(std::move(start));
  for (size_t k = 0; k < sets.size(); ++k) {
    Set next[256];
    for (int32_t p : *sets[k]) {
      if (p < static_cast<int32_t>(text.size())) next[static_cast<uint8_t>(text[p])].push_back(p + 1);
    }
    for (int b = 0; b < 256; ++b) {
      if (next[b].empty()) continue;
      int32_t target = id_of(std::move(next[b]));
      out.edges[k].push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(b), target});
    }
  }
  return out;
}

}  // namespace xg2
