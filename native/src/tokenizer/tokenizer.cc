// TokenizerInfo: decodes a vocabulary into bytes, classifies special and stop tokens, and
// builds the preorder byte trie over the normal tokens (see xg2/tokenizer.h).
#include "xg2/tokenizer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <string_view>
#include <utility>

#include "tokenizer/text_slice.h"
#include "xg2/errors.h"

namespace xg2 {
namespace {

// ---------------------------------------------------------------------------------------------
// GPT-2 byte alphabet. bytes_to_unicode() maps the printable bytes 0x21..0x7E, 0xA1..0xAC and
// 0xAE..0xFF to the code point of the same value, and the remaining 68 bytes, in increasing
// order, to U+0100, U+0101, ... U+0143. The inverse table below maps a code point below U+0144
// to its byte, or -1 when the code point is not part of the alphabet.
constexpr int kByteLevelLimit = 0x144;

struct ByteLevelTable {
  std::array<int16_t, kByteLevelLimit> cp_to_byte{};
  ByteLevelTable() {
    cp_to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 0x100;
    for (int b = 0; b < 256; ++b) {
      if (printable(b)) {
        cp_to_byte[b] = static_cast<int16_t>(b);
      } else {
        cp_to_byte[next++] = static_cast<int16_t>(b);
      }
    }
  }
};

const ByteLevelTable& GetByteLevelTable() {
  static const ByteLevelTable table;
  return table;
}

// Decodes one UTF-8 code point starting at s[i]; returns its length, or 0 if the sequence is
// malformed (overlong forms and surrogates are not checked: they are not in the table anyway).
inline int DecodeUtf8(const unsigned char* s, size_t n, size_t i, uint32_t* cp) {
  unsigned char c = s[i];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  int len;
  uint32_t v;
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    v = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    v = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > n) return 0;
  for (int k = 1; k < len; ++k) {
    unsigned char d = s[i + k];
    if ((d & 0xC0) != 0x80) return 0;
    v = (v << 6) | (d & 0x3F);
  }
  *cp = v;
  return len;
}

std::string DecodeByteLevel(const std::string& token) {
  const auto& table = GetByteLevelTable().cp_to_byte;
  const auto* s = reinterpret_cast<const unsigned char*>(token.data());
  const size_t n = token.size();
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int len = DecodeUtf8(s, n, i, &cp);
    if (len == 0 || cp >= static_cast<uint32_t>(kByteLevelLimit) || table[cp] < 0) {
      return token;  // not in the byte alphabet: the token is its own UTF-8 text
    }
    out.push_back(static_cast<char>(table[cp]));
    i += static_cast<size_t>(len);
  }
  return out;
}

inline int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string DecodeByteFallback(const std::string& token) {
  // "<0xNN>" is exactly one raw byte.
  if (token.size() == 6 && token[0] == '<' && token[1] == '0' && token[2] == 'x' && token[5] == '>') {
    int hi = HexValue(token[3]);
    int lo = HexValue(token[4]);
    if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  // Otherwise U+2581 (E2 96 81) stands for a space.
  static constexpr char kSpaceMark[] = "\xE2\x96\x81";
  if (token.find(kSpaceMark) == std::string::npos) return token;
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    if (i + 3 <= token.size() && std::memcmp(token.data() + i, kSpaceMark, 3) == 0) {
      out.push_back(' ');
      i += 3;
    } else {
      out.push_back(token[i]);
      ++i;
    }
  }
  return out;
}

// Names of end-of-sequence / end-of-turn tokens across common model families, used when the
// caller does not give stop_token_ids.
constexpr const char* kStopTokenNames[] = {
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|im_end|>",
    "<eos>",
    "<end_of_turn>",
    "<|end|>",
    "<|eom_id|>",
    "<turn|>",
    "<|eos|>",
    "<|return|>",
    "<|end\xE2\x96\x81of\xE2\x96\x81sentence|>",
};

// 64-bit FNV-1a with a final avalanche (splitmix64 finalizer).
class Fnv1a {
 public:
  void Bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      h_ ^= p[i];
      h_ *= 0x100000001B3ULL;
    }
  }
  void U64(uint64_t v) { Bytes(&v, sizeof(v)); }  // little-endian hosts only in practice
  uint64_t Finish() const {
    uint64_t z = h_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t h_ = 0xCBF29CE484222325ULL;
};

[[noreturn]] void Fail(const std::string& message) { throw Error(ErrorKind::kTokenizer, message); }

}  // namespace

std::string DecodeTokenString(const std::string& token, VocabType type) {
  switch (type) {
    case VocabType::kByteLevel: return DecodeByteLevel(token);
    case VocabType::kByteFallback: return DecodeByteFallback(token);
    case VocabType::kRaw: return token;
  }
  Fail("unknown vocab type " + std::to_string(static_cast<int>(type)));
}

TokenizerInfo::TokenizerInfo(const std::vector<std::string>& encoded_vocab, VocabType vocab_type, int32_t vocab_size,
                             std::vector<int32_t> stop_token_ids, std::vector<int32_t> special_token_ids,
                             bool add_prefix_space)
    : vocab_type_(vocab_type), vocab_size_(vocab_size), add_prefix_space_(add_prefix_space) {
  if (vocab_type != VocabType::kRaw && vocab_type != VocabType::kByteFallback && vocab_type != VocabType::kByteLevel) {
    Fail("unknown vocab type " + std::to_string(static_cast<int>(vocab_type)));
  }
  if (encoded_vocab.size() > static_cast<size_t>(INT32_MAX - 1)) {
    Fail("vocabulary too large: " + std::to_string(encoded_vocab.size()) + " tokens");
  }
  const int32_t num_tokens = static_cast<int32_t>(encoded_vocab.size());
  // An empty vocabulary is valid: its matchers take strings only (accept_string), and its
  // masks have no words.
  if (vocab_size_ == 0) vocab_size_ = num_tokens;
  if (vocab_size_ < 0) Fail("vocab_size must not be negative, got " + std::to_string(vocab_size));
  if (vocab_size_ < num_tokens) {
    Fail("vocab_size " + std::to_string(vocab_size_) + " is smaller than the number of tokens " +
         std::to_string(num_tokens));
  }

  // --- special and stop ids -------------------------------------------------------------------
  is_special_.assign(static_cast<size_t>(num_tokens), 0);
  is_stop_.assign(static_cast<size_t>(vocab_size_), 0);
  for (int32_t id : special_token_ids) {
    if (id < 0 || id >= vocab_size_) {
      Fail("special token id " + std::to_string(id) + " is out of range [0, " + std::to_string(vocab_size_) + ")");
    }
    if (id < num_tokens) is_special_[id] = 1;
  }
  for (int32_t id = 0; id < num_tokens; ++id) {
    if (encoded_vocab[id].empty()) is_special_[id] = 1;
  }

  // The ids listed as special: the given ones and the empty tokens. A stop token is never text
  // either (is_special_), but it is listed among the stop ids only, as in xgrammar.
  std::vector<uint8_t> listed_special = is_special_;

  if (stop_token_ids.empty()) {
    // Detect by name. Prefer matches among the tokens already known to be special, so that a
    // plain-text BPE token spelled "</s>" (Qwen, Gemma) does not become a stop token.
    std::vector<int32_t> matches_special, matches_all;
    for (int32_t id = 0; id < num_tokens; ++id) {
      const std::string& tok = encoded_vocab[id];
      if (tok.size() < 4 || tok.front() != '<' || tok.back() != '>') continue;
      for (const char* name : kStopTokenNames) {
        if (tok == name) {
          matches_all.push_back(id);
          if (is_special_[id]) matches_special.push_back(id);
          break;
        }
      }
    }
    stop_token_ids = matches_special.empty() ? std::move(matches_all) : std::move(matches_special);
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0 || id >= vocab_size_) {
      Fail("stop token id " + std::to_string(id) + " is out of range [0, " + std::to_string(vocab_size_) + ")");
    }
    if (!is_stop_[id]) {
      is_stop_[id] = 1;
      stop_token_ids_.push_back(id);
      if (id < num_tokens) is_special_[id] = 1;  // a stop token is never text
    }
  }

  // --- decode -----------------------------------------------------------------------------------
  decoded_.resize(static_cast<size_t>(num_tokens));
  for (int32_t id = 0; id < num_tokens; ++id) {
    const std::string& tok = encoded_vocab[id];
    // Special tokens keep their text as UTF-8 (as written), normal ones are decoded.
    decoded_[id] = is_special_[id] ? tok : DecodeTokenString(tok, vocab_type_);
    if (decoded_[id].empty()) is_special_[id] = listed_special[id] = 1;
  }
  for (int32_t id = 0; id < num_tokens; ++id) {
    if (listed_special[id]) special_token_ids_.push_back(id);
  }

  // --- trie -------------------------------------------------------------------------------------
  // Sort the normal tokens by bytes (then id). The first 8 bytes, big-endian and zero-padded,
  // form a key whose order agrees with the byte order wherever two keys differ, so most
  // comparisons stay inside the key array; equal keys fall back to the full strings.
  struct SortKey {
    uint64_t prefix;
    int32_t id;
  };
  std::vector<SortKey> keys;
  keys.reserve(static_cast<size_t>(num_tokens) - special_token_ids_.size());
  for (int32_t id = 0; id < num_tokens; ++id) {
    if (is_special_[id]) continue;
    const std::string& s = decoded_[id];
    // See VirtualTokenBytes and MidTokenEntryBytes.
    if (s.find(static_cast<char>(kVirtualTokenLead)) != std::string::npos) continue;
    if (s.find(static_cast<char>(kMidTokenLead)) != std::string::npos) continue;
    uint64_t prefix = 0;
    const size_t n = std::min<size_t>(s.size(), 8);
    for (size_t k = 0; k < 8; ++k) {
      prefix = (prefix << 8) | (k < n ? static_cast<uint8_t>(s[k]) : 0);
    }
    keys.push_back({prefix, id});
  }
  std::sort(keys.begin(), keys.end(), [this](const SortKey& a, const SortKey& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    int c = decoded_[a.id].compare(decoded_[b.id]);  // char_traits<char>::compare: unsigned
    return c != 0 ? c < 0 : a.id < b.id;
  });
  std::vector<int32_t> order(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].id;
  std::vector<SortKey>().swap(keys);

  TokenTrie& t = trie_;
  size_t total_bytes = 0;
  for (int32_t id : order) total_bytes += decoded_[id].size();
  const size_t node_guess = std::min(total_bytes, order.size() * 4) + 1;
  t.byte.reserve(node_guess);
  t.depth.reserve(node_guess);
  t.subtree_end.reserve(node_guess);
  t.token_begin.reserve(node_guess + 1);
  t.sorted_tokens.reserve(order.size());

  auto new_node = [&t](uint8_t b, int32_t d) {
    int32_t index = static_cast<int32_t>(t.byte.size());
    t.byte.push_back(b);
    t.depth.push_back(d);
    t.subtree_end.push_back(-1);
    t.token_begin.push_back(static_cast<int32_t>(t.sorted_tokens.size()));
    return index;
  };
  // path[d] is the node at depth d on the path of the previous token; path[0] is the root.
  std::vector<int32_t> path;
  path.push_back(new_node(0, 0));
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& cur = decoded_[id];
    size_t common = 0;
    if (prev != nullptr) {
      const size_t limit = std::min(prev->size(), cur.size());
      while (common < limit && (*prev)[common] == cur[common]) ++common;
    }
    // Close the nodes of the previous path below the common prefix.
    while (path.size() > common + 1) {
      t.subtree_end[path.back()] = t.num_nodes();
      path.pop_back();
    }
    for (size_t d = common; d < cur.size(); ++d) {
      path.push_back(new_node(static_cast<uint8_t>(cur[d]), static_cast<int32_t>(d + 1)));
    }
    // The token ends at the last node of the path, which is also the newest node (a token whose
    // node already existed has the same bytes as the previous one).
    t.sorted_tokens.push_back(id);
    prev = &cur;
  }
  while (!path.empty()) {
    t.subtree_end[path.back()] = t.num_nodes();
    path.pop_back();
  }
  t.token_begin.push_back(static_cast<int32_t>(t.sorted_tokens.size()));
  t.sorted_index.assign(static_cast<size_t>(vocab_size_), -1);
  for (size_t i = 0; i < t.sorted_tokens.size(); ++i) {
    t.sorted_index[t.sorted_tokens[i]] = static_cast<int32_t>(i);
  }
  t.normal_bitset.assign((static_cast<size_t>(vocab_size_) + 31) / 32, 0);
  for (int32_t id : t.sorted_tokens) t.normal_bitset[id >> 5] |= 1u << (id & 31);
  for (int32_t d : t.depth) t.max_token_bytes = std::max(t.max_token_bytes, d);
  // Per token (trie order): its characters if it is text, else 0.
  std::vector<int32_t> token_text_chars(t.sorted_tokens.size(), 0);
  for (size_t k = 0; k < t.sorted_tokens.size(); ++k) {
    const std::string& bytes = decoded_[t.sorted_tokens[k]];
    if (IsText(bytes)) token_text_chars[k] = CountChars(bytes);
  }
  // Children follow their parent, so a backward pass sees every child before its parent.
  t.text_chars.assign(t.byte.size(), 0);
  for (int32_t i = t.num_nodes() - 1; i >= 1; --i) {
    int32_t most = 0;
    bool text = true;
    for (int32_t k = t.token_begin[i]; k < t.token_begin[i + 1] && text; ++k) {
      text = token_text_chars[k] != 0;
      most = std::max(most, token_text_chars[k]);
    }
    for (int32_t c = i + 1; c < t.subtree_end[i] && text; c = t.subtree_end[c]) {
      text = t.text_chars[c] != 0;
      most = std::max<int32_t>(most, t.text_chars[c]);
    }
    t.text_chars[i] = text ? static_cast<uint8_t>(std::min(most, kTextCharsCap)) : 0;
  }
  {
    std::vector<int32_t> open;  // skeleton entries whose subtree is not closed yet
    for (int32_t i = 1; i < t.num_nodes();) {
      while (!open.empty() && t.subtree_end[t.text_skeleton[open.back()].node] <= i) {
        t.text_skeleton[open.back()].next = static_cast<int32_t>(t.text_skeleton.size());
        open.pop_back();
      }
      const int32_t index = static_cast<int32_t>(t.text_skeleton.size());
      if (t.text_chars[i] != 0) {
        t.text_skeleton.push_back(
            {i, index + 1, t.token_begin[i], t.token_begin[t.subtree_end[i]], t.depth[i], t.byte[i], 1});
        i = t.subtree_end[i];
      } else {
        t.text_skeleton.push_back({i, -1, t.token_begin[i], t.token_begin[i + 1], t.depth[i], t.byte[i], 0});
        open.push_back(index);
        ++i;
      }
    }
    for (int32_t k : open) t.text_skeleton[k].next = static_cast<int32_t>(t.text_skeleton.size());
  }
  const size_t words = t.normal_bitset.size();
  t.text_up_to.assign(words * TokenTrie::kTextLengthSets, 0);
  for (size_t k = 0; k < t.sorted_tokens.size(); ++k) {
    const int32_t id = t.sorted_tokens[k];
    if (token_text_chars[k] == 0) continue;
    for (int32_t n = token_text_chars[k]; n <= TokenTrie::kTextLengthSets; ++n) {
      t.text_up_to[(n - 1) * words + (id >> 5)] |= 1u << (id & 31);
    }
  }
  t.wide_begin.push_back(0);
  std::vector<TokenTrie::Child> children;
  for (int32_t i = 0; i < t.num_nodes(); ++i) {
    children.clear();
    for (int32_t c = i + 1; c < t.subtree_end[i]; c = t.subtree_end[c]) children.push_back({c, t.byte[c]});
    if (static_cast<int32_t>(children.size()) < TokenTrie::kWideFanout) continue;
    t.wide_children.insert(t.wide_children.end(), children.begin(), children.end());
    t.wide_nodes.push_back(i);
    t.wide_begin.push_back(static_cast<int32_t>(t.wide_children.size()));
  }
  for (int32_t k = 0; k < static_cast<int32_t>(t.sorted_tokens.size()); ++k) {
    int32_t len = static_cast<int32_t>(decoded_[t.sorted_tokens[k]].size());
    if (len >= TokenTrie::kLongTokenBytes) t.long_tokens.emplace_back(len, k);
  }
  std::sort(t.long_tokens.begin(), t.long_tokens.end(), [](const auto& a, const auto& b) { return a.first > b.first; });

  // --- fingerprint ------------------------------------------------------------------------------
  Fnv1a h;
  h.U64(static_cast<uint64_t>(vocab_type_));
  h.U64(static_cast<uint64_t>(vocab_size_));
  h.U64(static_cast<uint64_t>(num_tokens));
  for (int32_t id = 0; id < num_tokens; ++id) {
    const std::string& s = decoded_[id];
    h.U64(static_cast<uint64_t>(s.size()) | (static_cast<uint64_t>(is_special_[id]) << 62) |
          (static_cast<uint64_t>(is_stop_[id]) << 63));
    h.Bytes(s.data(), s.size());
  }
  for (int32_t id = num_tokens; id < vocab_size_; ++id) {
    if (is_stop_[id]) h.U64(static_cast<uint64_t>(id));
  }
  fingerprint_ = h.Finish();
}

std::string VirtualTokenBytes(int32_t token_id) {
  std::string out(1, static_cast<char>(kVirtualTokenLead));
  for (int shift = 16; shift >= 0; shift -= 8) out.push_back(static_cast<char>((token_id >> shift) & 0xFF));
  return out;
}

std::string MidTokenEntryBytes(int32_t token_id) {
  std::string out = VirtualTokenBytes(token_id);
  out[0] = static_cast<char>(kMidTokenLead);
  return out;
}

int32_t TokenizerInfo::FindToken(const std::string& text) const {
  int32_t normal = -1;
  for (int32_t id = 0; id < num_tokens(); ++id) {
    if (decoded_[id] != text) continue;
    if (is_special_[id]) return id;
    if (normal < 0) normal = id;
  }
  return normal;
}

std::pair<const TokenTrie::Child*, const TokenTrie::Child*> TokenTrie::WideChildren(int32_t node) const {
  auto it = std::lower_bound(wide_nodes.begin(), wide_nodes.end(), node);
  if (it == wide_nodes.end() || *it != node) return {nullptr, nullptr};
  const size_t k = static_cast<size_t>(it - wide_nodes.begin());
  return {wide_children.data() + wide_begin[k], wide_children.data() + wide_begin[k + 1]};
}

}  // namespace xg2
