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

bool IsText(const std::string& bytes) {
  int32_t s = 0;
  for (char c : bytes) {
    s = TextStep(s, static_cast<uint8_t>(c));
    if (s == kTextDead) return false;
  }
  return !bytes.empty() && s == 0;
}

}  // namespace xg2
