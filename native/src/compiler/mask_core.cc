#include "compiler/mask_core.h"

#include <cstring>

#include "support/token_bits.h"

namespace xg2 {

size_t MaskCore::MemoryBytes() const {
  return sizeof(*this) + sizeof(int32_t) * (ids.capacity() + bitset.capacity() + dead_nodes.capacity() +
                                            dead_offset_begin.capacity() + dead_offsets.capacity());
}

void MaskCore::WriteInto(uint32_t* words, const std::vector<uint32_t>& normal_tokens, int32_t num_words) const {
  switch (storage) {
    case Storage::kNotAcceptedIds:
      std::memcpy(words, normal_tokens.data(), sizeof(uint32_t) * static_cast<size_t>(num_words));
      for (int32_t t : ids) ClearTokenBit(words, t);
      return;
    case Storage::kAcceptedBitset:
      std::memcpy(words, bitset.data(), sizeof(uint32_t) * static_cast<size_t>(num_words));
      return;
    case Storage::kAcceptedIds:
      std::memset(words, 0, sizeof(uint32_t) * static_cast<size_t>(num_words));
      for (int32_t t : ids) SetTokenBit(words, t);
      return;
  }
}

void MaskCore::OrInto(uint32_t* words, const std::vector<uint32_t>& normal_tokens, int32_t num_words,
                      std::vector<uint32_t>* scratch) const {
  switch (storage) {
    case Storage::kAcceptedIds:
      for (int32_t t : ids) SetTokenBit(words, t);
      return;
    case Storage::kAcceptedBitset:
      for (int32_t w = 0; w < num_words; ++w) words[w] |= bitset[w];
      return;
    case Storage::kNotAcceptedIds:
      *scratch = normal_tokens;
      for (int32_t t : ids) ClearTokenBit(scratch->data(), t);
      for (int32_t w = 0; w < num_words; ++w) words[w] |= (*scratch)[w];
      return;
  }
}

}  // namespace xg2
