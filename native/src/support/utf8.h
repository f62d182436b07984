// UTF-8 helpers: encoding, validation, and splitting code point ranges into byte-range
// sequences (the building block of UTF-8-aware character classes in byte automata).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xg2 {

struct ByteRange {
  uint8_t lo;
  uint8_t hi;
};

// Appends the UTF-8 encoding of code point cp (cp <= 0x10FFFF) to out.
void AppendUtf8(uint32_t cp, std::string* out);

// Returns the byte offset of the first invalid UTF-8 sequence in s, or -1 if s is valid.
int64_t FindInvalidUtf8(const std::string& s);

// Line and column (both 1-based; columns count code points, so a message points at the right
// character in an editor) of a byte offset in text.
std::pair<int, int> TextLineColumn(const std::string& text, size_t offset);

// Up to four byte ranges whose concatenation encodes a run of code points.
struct Utf8RangeSeq {
  uint8_t len = 0;
  ByteRange ranges[4];
};

// Splits the code point range [lo, hi] (surrogates excluded by the caller) into sequences of
// byte ranges whose concatenations encode exactly the code points of the range.
void Utf8RangeSequences(uint32_t lo, uint32_t hi, std::vector<Utf8RangeSeq>* out);

}  // namespace xg2
