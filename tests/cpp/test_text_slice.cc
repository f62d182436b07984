// The text slice (tokenizer/text_slice.h) against a reference: a string is text when it is
// non-empty, valid UTF-8 (support/utf8.h's validator) and free of '"', '\\' and C0 controls.
// Every string of up to three bytes and random four- to six-byte strings; the automaton's byte
// ranges against its step function; then the trie's text_chars against the tokens under each
// node, its text-by-length sets against each token, and its packed wide-node children
// against sibling hops.
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "support/utf8.h"
#include "tokenizer/text_slice.h"
#include "xg2/tokenizer.h"

namespace {

bool ReferenceIsText(const std::string& s) {
  if (s.empty() || xg2::FindInvalidUtf8(s) >= 0) return false;
  for (char c : s) {
    const auto b = static_cast<uint8_t>(c);
    if (b < 0x20 || b == '"' || b == '\\') return false;
  }
  return true;
}

void CheckStrings() {
  std::string s;
  int64_t mismatches = 0;
  auto check = [&] {
    if (xg2::IsText(s) != ReferenceIsText(s) && ++mismatches <= 5) {
      std::fprintf(stderr, "IsText mismatch on %zu bytes, first byte %02x\n", s.size(), static_cast<uint8_t>(s[0]));
    }
  };
  check();  // empty
  for (int a = 0; a < 256; ++a) {
    s.assign(1, static_cast<char>(a));
    check();
    for (int b = 0; b < 256; ++b) {
      s.assign({static_cast<char>(a), static_cast<char>(b)});
      check();
      for (int c = 0; c < 256; ++c) {
        s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
        check();
      }
    }
  }
  // Longer strings, biased towards UTF-8 lead and continuation bytes.
  std::mt19937 rng(7);
  const std::vector<uint8_t> interesting = {0x00, 0x1f, 0x20, 0x22, 0x5c, 0x61, 0x7f, 0x80, 0x8f, 0x90,
                                            0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec,
                                            0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  for (int n = 0; n < 2000000; ++n) {
    s.resize(4 + rng() % 3);
    for (char& c : s) c = static_cast<char>(interesting[rng() % interesting.size()]);
    check();
  }
  CHECK(mismatches == 0);
}

void CheckRanges() {
  for (int32_t state = 0; state < xg2::kTextStates; ++state) {
    for (int b = 0; b < 256; ++b) {
      int32_t by_range = xg2::kTextDead;
      const xg2::TextRanges ranges = xg2::TextRangesFrom(state);
      for (const xg2::TextRange* r = ranges.begin; r != ranges.end; ++r) {
        if (b >= r->lo && b <= r->hi) by_range = r->next;
      }
      CHECK(by_range == xg2::TextStep(state, static_cast<uint8_t>(b)));
    }
  }
}

void CheckTrieFlags() {
  std::vector<std::string> vocab = {
      "a",     "ab", "ab\"", "abc", "b",   std::string(300, 'w'), "wwww",         "\"", "\"a", "é", "\xc3", "\xc3\xa9x",
      "x\x01", "x",  "xy",   "xyz", "\\n", "\xed\xa0\x80",        "\xe0\xa0\x80", "z"};
  xg2::TokenizerInfo tok(vocab, xg2::VocabType::kRaw, 0, {}, {}, false);
  const xg2::TokenTrie& t = tok.trie();
  CHECK(t.text_chars.size() == t.byte.size());
  for (int32_t i = 1; i < t.num_nodes(); ++i) {
    bool all_text = true;
    int32_t most = 0;
    for (int32_t k = t.token_begin[i]; k < t.token_begin[t.subtree_end[i]]; ++k) {
      const std::string& bytes = tok.decoded_vocab()[t.sorted_tokens[k]];
      all_text = all_text && ReferenceIsText(bytes);
      int32_t chars = 0;
      for (char c : bytes) chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
      most = std::max(most, chars);
    }
    CHECK(t.text_chars[i] == (all_text ? std::min(most, 255) : 0));
  }
  // The text-by-length sets.
  const size_t words = t.normal_bitset.size();
  CHECK(t.text_up_to.size() == words * xg2::TokenTrie::kTextLengthSets);
  for (int32_t k = 1; k <= xg2::TokenTrie::kTextLengthSets; ++k) {
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      const std::string& bytes = tok.decoded_vocab()[id];
      int32_t chars = 0;
      for (char c : bytes) chars += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
      const bool want = !tok.is_special(id) && ReferenceIsText(bytes) && chars <= k;
      CHECK(((t.text_up_to[(k - 1) * words + (id >> 5)] >> (id & 31)) & 1) == (want ? 1u : 0u));
    }
  }
}

// The packed children of wide nodes are exactly the children a sibling hop visits, in order,
// with their bytes; narrow nodes have none packed.
void CheckWideChildren() {
  std::vector<std::string> vocab;
  for (int c = 0; c < 40; ++c) vocab.push_back(std::string(1, static_cast<char>('A' + c)));        // root: 40 children
  for (int c = 0; c < 20; ++c) vocab.push_back("q" + std::string(1, static_cast<char>('a' + c)));  // "q": 20
  for (int c = 0; c < 5; ++c) vocab.push_back("r" + std::string(1, static_cast<char>('a' + c)));   // "r": 5
  xg2::TokenizerInfo tok(vocab, xg2::VocabType::kRaw, 0, {}, {}, false);
  const xg2::TokenTrie& t = tok.trie();
  int32_t wide = 0;
  for (int32_t i = 0; i < t.num_nodes(); ++i) {
    std::vector<int32_t> hops;
    for (int32_t c = i + 1; c < t.subtree_end[i]; c = t.subtree_end[c]) hops.push_back(c);
    auto [first, last] = t.WideChildren(i);
    if (static_cast<int32_t>(hops.size()) < xg2::TokenTrie::kWideFanout) {
      CHECK(first == nullptr && last == nullptr);
      continue;
    }
    ++wide;
    CHECK(last - first == static_cast<std::ptrdiff_t>(hops.size()));
    for (size_t k = 0; k < hops.size() && first + k < last; ++k) {
      CHECK(first[k].node == hops[k] && first[k].byte == t.byte[hops[k]]);
    }
  }
  CHECK(wide == 2);  // the root and "q"
}

}  // namespace

int main() {
  CheckStrings();
  CheckRanges();
  CheckTrieFlags();
  CheckWideChildren();
  if (g_failures) {
    std::fprintf(stderr, "%d failures\n", g_failures);
    return 1;
  }
  std::printf("test_text_slice: OK\n");
  return 0;
}
