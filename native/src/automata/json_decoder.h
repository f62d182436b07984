// A decoder of JSON string content bytes that marks where each decoded character starts: the
// JSON Schema length of a string (minLength / maxLength count code points, so a surrogate pair
// is one). Used by the automaton products of byte_dfa_ops and by the parser's character
// budgets (Rule::json_min_chars / json_max_chars).
#pragma once

#include <cstdint>
#include <vector>

namespace xg2 {

// Decoder of JSON string content that marks where each decoded character starts. States:
// a character boundary, UTF-8 continuations due, after '\', hex digits due after "\u" (the
// first 'd' may start a high surrogate), and the "\u" of a low surrogate (not a new one).
enum JsonDec : int8_t { kB, kN1, kN2, kN3, kEsc, kX4, kX3, kX2, kX1, kD3, kH2, kH1, kHs, kHu, kNumDec };

inline bool JsonIsHex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Next decoder state for byte c (-1: not well-formed); *starts: c begins a character.
inline int JsonDecNext(int u, uint8_t c, bool* starts) {
  *starts = false;
  switch (u) {
    case kB:
      *starts = true;
      if (c == '\\') return kEsc;
      if (c < 0x80) return kB;
      if (c >= 0xC2 && c <= 0xDF) return kN1;
      if (c >= 0xE0 && c <= 0xEF) return kN2;
      if (c >= 0xF0 && c <= 0xF4) return kN3;
      *starts = false;
      return -1;
    case kN1: return c >= 0x80 && c <= 0xBF ? kB : -1;
    case kN2: return c >= 0x80 && c <= 0xBF ? kN1 : -1;
    case kN3: return c >= 0x80 && c <= 0xBF ? kN2 : -1;
    case kEsc:
      if (c == 'u') return kX4;
      switch (c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't': return kB;
        default: return -1;
      }
    case kX4:
      if (c == 'd' || c == 'D') return kD3;
      return JsonIsHex(c) ? kX3 : -1;
    case kX3: return JsonIsHex(c) ? kX2 : -1;
    case kX2: return JsonIsHex(c) ? kX1 : -1;
    case kX1: return JsonIsHex(c) ? kB : -1;
    case kD3:
      if (c == '8' || c == '9' || c == 'a' || c == 'b' || c == 'A' || c == 'B') return kH2;
      return JsonIsHex(c) ? kX2 : -1;
    case kH2: return JsonIsHex(c) ? kH1 : -1;
    case kH1: return JsonIsHex(c) ? kHs : -1;
    case kHs: return c == '\\' ? kHu : -1;
    case kHu: return c == 'u' ? kX4 : -1;
  }
  return -1;
}

// Per decoder state, the byte runs the JSON decoder treats alike: (lo, hi, next state, whether
// the byte starts a character); bytes it refuses are left out.
struct DecoderRun {
  uint8_t lo, hi;
  int8_t next;
  bool starts;
};
inline const std::vector<DecoderRun>& DecoderRuns(int u) {
  static const auto* runs = [] {
    auto* all = new std::vector<std::vector<DecoderRun>>(kNumDec);
    for (int v = 0; v < kNumDec; ++v) {
      for (int c = 0; c < 256; ++c) {
        bool starts;
        const int next = JsonDecNext(v, static_cast<uint8_t>(c), &starts);
        if (next < 0) continue;
        auto& r = (*all)[v];
        if (!r.empty() && r.back().hi + 1 == c && r.back().next == next && r.back().starts == starts) {
          r.back().hi = static_cast<uint8_t>(c);
        } else {
          r.push_back({static_cast<uint8_t>(c), static_cast<uint8_t>(c), static_cast<int8_t>(next), starts});
        }
      }
    }
    return all;
  }();
  return (*runs)[u];
}

// Calls visit(run) for each run of decoder state u that overlaps bytes [lo, hi]; returns
// whether the runs cover them all (false: some byte is not well-formed there).
template <class Visit>
bool ForEachDecoderRun(int u, int lo, int hi, Visit&& visit) {
  int covered = 0;
  for (const DecoderRun& run : DecoderRuns(u)) {
    if (run.hi < lo || run.lo > hi) continue;
    covered += (run.hi < hi ? run.hi : hi) - (run.lo > lo ? run.lo : lo) + 1;
    visit(run);
  }
  return covered == hi - lo + 1;
}

}  // namespace xg2
