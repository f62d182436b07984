// Packed token bitmask rows: token t is bit t % 32 of 32-bit word t / 32 (xgrammar's layout,
// what apply_token_bitmask reads on the device).
#pragma once

#include <cstdint>

namespace xg2 {

constexpr int32_t kTokenWordShift = 5;  // token t lives in word t >> 5 ...
constexpr int32_t kTokenBitMask = 31;   // ... at bit t & 31

inline void SetTokenBit(uint32_t* words, int32_t t) { words[t >> kTokenWordShift] |= 1u << (t & kTokenBitMask); }
inline void ClearTokenBit(uint32_t* words, int32_t t) { words[t >> kTokenWordShift] &= ~(1u << (t & kTokenBitMask)); }
inline bool HasTokenBit(const uint32_t* words, int32_t t) {
  return (words[t >> kTokenWordShift] >> (t & kTokenBitMask)) & 1u;
}

}  // namespace xg2
