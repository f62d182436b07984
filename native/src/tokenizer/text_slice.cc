#include "tokenizer/text_slice.h"

namespace xg2 {

namespace {

// States: 0 boundary; 1, 2, 3: that many continuation bytes (80-BF) still to come; 4 after
// E0 (A0-BF next: no overlongs); 5 after ED (80-9F: no surrogates); 6 after F0 (90-BF: no
// overlongs); 7 after F4 (80-8F: nothing above U+10FFFF).
int32_t BoundaryStep(uint8_t b) {
  if (b < 0x80) return (b < 0x20 || b == '"' || b == '\\') ? kTextDead : 0;
  if (b >= 0xC2 && b <= 0xDF) return 1;
  if (b == 0xE0) return 4;
  if (b == 0xED) return 5;
  if (b >= 0xE1 && b <= 0xEF) return 2;
  if (b == 0xF0) return 6;
  if (b >= 0xF1 && b <= 0xF3) return 3;
  if (b == 0xF4) return 7;
  return kTextDead;  // continuation byte at a boundary, C0, C1, F5-FF
}

}  // namespace

int32_t TextStep(int32_t state, uint8_t b) {
  const bool cont = b >= 0x80 && b <= 0xBF;
  switch (state) {
    case 0: return BoundaryStep(b);
    case 1: return cont ? 0 : kTextDead;
    case 2: return cont ? 1 : kTextDead;
    case 3: return cont ? 2 : kTextDead;
    case 4: return b >= 0xA0 && b <= 0xBF ? 1 : kTextDead;
    case 5: return b >= 0x80 && b <= 0x9F ? 1 : kTextDead;
    case 6: return b >= 0x90 && b <= 0xBF ? 2 : kTextDead;
    case 7: return b >= 0x80 && b <= 0x8F ? 2 : kTextDead;
    default: return kTextDead;
  }
}

TextRanges TextRangesFrom(int32_t state) {
  static const TextRange kBoundary[] = {{0x20, 0x21, 0}, {0x23, 0x5B, 0}, {0x5D, 0x7F, 0}, {0xC2, 0xDF, 1},
                                        {0xE0, 0xE0, 4}, {0xE1, 0xEC, 2}, {0xED, 0xED, 5}, {0xEE, 0xEF, 2},
                                        {0xF0, 0xF0, 6}, {0xF1, 0xF3, 3}, {0xF4, 0xF4, 7}};
  static const TextRange kInside[kTextStates][1] = {{{0, 0, kTextDead}}, {{0x80, 0xBF, 0}}, {{0x80, 0xBF, 1}},
                                                    {{0x80, 0xBF, 2}},   {{0xA0, 0xBF, 1}}, {{0x80, 0x9F, 1}},
                                                    {{0x90, 0xBF, 2}},   {{0x80, 0x8F, 2}}};
  if (state == 0) return {kBoundary, kBoundary + sizeof(kBoundary) / sizeof(kBoundary[0])};
  if (state < 0 || state >= kTextStates) return {nullptr, nullptr};
  return {kInside[state], kInside[state] + 1};
}

int32_t CountChars(const std::string& utf8) {
  int32_t n = 0;
  for (char c : utf8) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

bool IsText(const std::string& bytes) {
  int32_t s = 0;
  for (char c : bytes) {
    s = TextStep(s, static_cast<uint8_t>(c));
    if (s == kTextDead) return false;
  }
  return !bytes.empty() && s == 0;
}

}  // namespace xg2
