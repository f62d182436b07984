// Tokenizer vocabulary: decoded bytes per token, special and stop tokens, and a byte trie
// over the normal tokens used by the mask compiler and the matcher.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xg2 {

enum class VocabType : int {
  kRaw = 0,           // token strings are the UTF-8 text itself
  kByteFallback = 1,  // SentencePiece: "\u2581" is a space, "<0xNN>" is one raw byte
  kByteLevel = 2,     // GPT-2 byte alphabet: every character stands for one byte
};

// Decodes one token string of a vocabulary of the given type into its bytes.
std::string DecodeTokenString(const std::string& token, VocabType type);

// A prefix trie of the normal tokens' bytes, stored in preorder: the subtree of node i is
// nodes [i, subtree_end[i]). Children are in byte order, so preorder equals the tokens sorted
// by bytes. A walk that rejects a node skips straight to subtree_end.
struct TokenTrie {
  // Per node (node 0 is the root, depth 0, no byte).
  std::vector<uint8_t> byte;
  std::vector<int32_t> depth;
  std::vector<int32_t> subtree_end;
  // Tokens ending exactly at node i: sorted_tokens[token_begin[i] .. token_begin[i + 1]).
  std::vector<int32_t> token_begin;
  std::vector<int32_t> sorted_tokens;  // token ids in byte order (duplicates adjacent)
  // Inverse of sorted_tokens for normal tokens; -1 for special and padding ids.
  std::vector<int32_t> sorted_index;
  // Derived once per vocabulary (every compiled grammar uses them): normal tokens as a bitset
  // of ceil(vocab_size / 32) words, the longest token's length, and (bytes, trie index) of
  // the tokens of at least kLongTokenBytes bytes, longest first.
  static constexpr int32_t kLongTokenBytes = 16;
  std::vector<uint32_t> normal_bitset;
  // Per node: if every token in the node's subtree is text (tokenizer/text_slice.h), the
  // most characters one of them has (at least 1, saturating at 255); else 0.
  std::vector<uint8_t> text_chars;
  // Bitset k - 1 (ceil(vocab_size / 32) words each, back to back) holds the text tokens of at
  // most k characters, k = 1 .. kTextLengthSets: the accepted text of a state that takes text
  // up to k characters and no longer (a maxLength string body).
  static constexpr int32_t kTextLengthSets = 32;
  std::vector<uint32_t> text_up_to;
  // The trie without the insides of its text-only subtrees, in node order and packed: what a
  // walk from a state that accepts all text visits (21K of Llama-3's 274K nodes), read
  // sequentially instead of jumping over the skipped subtrees' node arrays. A text-only
  // subtree's root stands for the subtree (its tokens are all its subtree's).
  struct SkeletonNode {
    int32_t node;
    int32_t next;         // the skeleton index after this node's subtree
    int32_t token_begin;  // this node's tokens (a text root: its subtree's)
    int32_t token_end;
    int32_t depth;
    uint8_t byte;
    uint8_t text_root;
  };
  std::vector<SkeletonNode> text_skeleton;
  int32_t max_token_bytes = 0;
  std::vector<std::pair<int32_t, int32_t>> long_tokens;
  // The children of the nodes with at least kWideFanout of them (the root, common prefixes:
  // 1,427 of Gemma 4's 600K nodes), packed with their bytes: a walk that tries a few bytes
  // reads them in a row instead of hopping over each sibling's subtree (a cache miss each).
  static constexpr int32_t kWideFanout = 16;
  struct Child {
    int32_t node;
    uint8_t byte;
  };
  std::vector<int32_t> wide_nodes;  // sorted
  std::vector<int32_t> wide_begin;  // wide_children[wide_begin[k] .. wide_begin[k + 1]) for wide_nodes[k]
  std::vector<Child> wide_children;
  // The packed children of `node` as [first, last), or (nullptr, nullptr) for a narrow node.
  std::pair<const Child*, const Child*> WideChildren(int32_t node) const;
  int32_t num_nodes() const { return static_cast<int32_t>(byte.size()); }
};

// Special tokens appear in grammars (the token-level structural-tag formats) as 4-byte
// "virtual" strings: 0xFF, then the id in 3 bytes, big-endian. 0xFF never occurs in UTF-8
// text, and normal tokens containing it are left out of the trie (no grammar text can
// contain them), so only the special token itself can match such a string.
constexpr uint8_t kVirtualTokenLead = 0xFF;
std::string VirtualTokenBytes(int32_t token_id);
// A token whose first bytes are text and whose rest enters a token-level free region (an
// ExcludeToken set: any_tokens, a token dispatch's free tokens) is taken whole by the region,
// as xgrammar takes it: the region reads it as this string, 0xFE then the id's 3 bytes, which
// only excluded token sets accept (Token(...) starts at a token boundary). Normal tokens
// holding 0xFE (not UTF-8 either) are left out of the trie as those holding 0xFF are.
constexpr uint8_t kMidTokenLead = 0xFE;
std::string MidTokenEntryBytes(int32_t token_id);

class TokenizerInfo {
 public:
  // encoded_vocab[i] is token i as written in the tokenizer. An empty string marks a special
  // token (as in xgrammar). vocab_size >= encoded_vocab.size() (larger for padded logits);
  // 0 means encoded_vocab.size(). stop_token_ids empty: detected from well-known names.
  TokenizerInfo(const std::vector<std::string>& encoded_vocab, VocabType vocab_type, int32_t vocab_size,
                std::vector<int32_t> stop_token_ids, std::vector<int32_t> special_token_ids, bool add_prefix_space);

  VocabType vocab_type() const { return vocab_type_; }
  int32_t vocab_size() const { return vocab_size_; }
  int32_t num_tokens() const { return static_cast<int32_t>(decoded_.size()); }
  bool add_prefix_space() const { return add_prefix_space_; }
  const std::vector<std::string>& decoded_vocab() const { return decoded_; }
  const std::string& token_bytes(int32_t id) const { return decoded_[id]; }
  const std::vector<int32_t>& stop_token_ids() const { return stop_token_ids_; }
  const std::vector<int32_t>& special_token_ids() const { return special_token_ids_; }
  bool is_special(int32_t id) const { return is_special_[id] != 0; }
  bool is_stop(int32_t id) const { return id >= 0 && id < vocab_size_ && is_stop_[id] != 0; }
  const TokenTrie& trie() const { return trie_; }
  // A normal token the trie holds (so text grammars can accept it).
  bool is_text_token(int32_t id) const { return id >= 0 && id < num_tokens() && trie_.sorted_index[id] >= 0; }
  // The id of the token written `text`: a special token with that text first, else a
  // normal token with those bytes; -1 if none.
  int32_t FindToken(const std::string& text) const;
  // A stable fingerprint of the decoded vocabulary (for cache keys and serialization).
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  VocabType vocab_type_;
  int32_t vocab_size_;
  bool add_prefix_space_;
  std::vector<std::string> decoded_;
  std::vector<int32_t> stop_token_ids_;
  std::vector<int32_t> special_token_ids_;
  std::vector<uint8_t> is_special_;  // per token id < num_tokens
  std::vector<uint8_t> is_stop_;     // per token id < vocab_size
  TokenTrie trie_;
  uint64_t fingerprint_ = 0;
};

}  // namespace xg2
