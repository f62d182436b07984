// Structural hashes of rule automata, the keys of the cross-grammar mask cache.
//
// A rule's hash covers its DFA (final flags, byte edges, rule edges by the callee's hash) and,
// through the callees, everything it can reach; counted-loop rules hash their bounds and
// child. Recursive rules are hashed per strongly connected component by a breadth-first
// serialisation from each member, so identical structures hash alike in any grammar.
#pragma once

#include <cstdint>
#include <vector>

#include "automata/grammar_automaton.h"

namespace xg2 {

struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Hash128& o) const { return lo == o.lo && hi == o.hi; }
};

class Hasher {
 public:
  void Add(uint64_t x) {
    a_ = Mix(a_ ^ (x + 0x9E3779B97F4A7C15ull));
    b_ = Mix(b_ + x * 0xC2B2AE3D27D4EB4Full + 0x165667B19E3779F9ull);
  }
  void Add(const Hash128& h) {
    Add(h.lo);
    Add(h.hi);
  }
  Hash128 Finish() const { return {Mix(a_ ^ 0x27D4EB2F165667C5ull), Mix(b_ ^ 0x94D049BB133111EBull)}; }

 private:
  static uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t a_ = 0x243F6A8885A308D3ull;
  uint64_t b_ = 0x13198A2E03707344ull;
};

struct RuleHashes {
  std::vector<Hash128> rule;          // per rule
  std::vector<int32_t> first_state;   // per rule: first global state of its DFA
};

RuleHashes ComputeRuleHashes(const GrammarAutomaton& g);

// Key of the mask entry of `state` (in loop context `loop_state`, or -1).
Hash128 MaskEntryKey(const GrammarAutomaton& g, const RuleHashes& hashes, int32_t state,
                     int32_t loop_state);

}  // namespace xg2
