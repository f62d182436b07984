#include "support/utf8.h"

namespace xg2 {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int64_t FindInvalidUtf8(const std::string& s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    uint8_t c = p[i];
    int len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return static_cast<int64_t>(i);
    }
    if (i + len > n) return static_cast<int64_t>(i);
    for (int k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return static_cast<int64_t>(i);
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static const uint32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return static_cast<int64_t>(i);
    }
    i += len;
  }
  return -1;
}

namespace {

int Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void EncodeFixed(uint32_t cp, uint8_t* bytes) {
  std::string s;
  AppendUtf8(cp, &s);
  for (size_t i = 0; i < s.size(); ++i) bytes[i] = static_cast<uint8_t>(s[i]);
}

}  // namespace

void Utf8RangeSequences(uint32_t lo, uint32_t hi, std::vector<Utf8RangeSeq>* out) {
  if (lo > hi) return;
  // Split at the encoding-length boundaries first.
  static const uint32_t kMaxForLen[4] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  for (int len = 1; len <= 4; ++len) {
    uint32_t max_here = kMaxForLen[len - 1];
    if (Utf8Length(lo) == len && hi > max_here) {
      Utf8RangeSequences(lo, max_here, out);
      Utf8RangeSequences(max_here + 1, hi, out);
      return;
    }
  }
  int n = Utf8Length(lo);
  if (n == 1) {
    Utf8RangeSeq seq;
    seq.len = 1;
    seq.ranges[0] = ByteRange{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)};
    out->push_back(seq);
    return;
  }
  // Split until every continuation position covers a full or aligned sub-range.
  for (int i = 1; i < n; ++i) {
    uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8RangeSequences(lo, lo | m, out);
        Utf8RangeSequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8RangeSequences(lo, (hi & ~m) - 1, out);
        Utf8RangeSequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  EncodeFixed(lo, a);
  EncodeFixed(hi, b);
  Utf8RangeSeq seq;
  seq.len = static_cast<uint8_t>(n);
  for (int i = 0; i < n; ++i) seq.ranges[i] = ByteRange{a[i], b[i]};
  out->push_back(seq);
}

std::pair<int, int> TextLineColumn(const std::string& text, size_t offset) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace xg2
