#include "compiler/serialization.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "xg2/errors.h"

namespace xg2 {
namespace {

constexpr char kMagic[4] = {'X', 'G', '2', 'C'};
constexpr size_t kHeaderSize = 24;
constexpr uint8_t kFlagPrecomputed = 1;
constexpr uint8_t kKnownFlags = kFlagPrecomputed;

uint64_t Fnv1a64(const char* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<uint8_t>(data[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Fixed(v, 4); }
  void U64(uint64_t v) { Fixed(v, 8); }
  void Str(const std::string& s) {
    if (s.size() > std::numeric_limits<uint32_t>::max()) {
      throw Error(ErrorKind::kLimitExceeded, "grammar text too large to serialize");
    }
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string& out() { return out_; }

 private:
  void Fixed(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

Error Corrupted(const std::string& what) {
  return Error(ErrorKind::kInvalidArgument, "corrupted xg2-jax compiled grammar: " + what);
}

class Reader {
 public:
  Reader(const char* data, size_t size) : p_(data), end_(data + size) {}
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  std::string Str(const char* field) {
    uint32_t len = U32();
    if (static_cast<size_t>(end_ - p_) < len) {
      throw Corrupted(std::string(field) + " length " + std::to_string(len) + " runs past the end of the data");
    }
    std::string s(p_, len);
    p_ += len;
    return s;
  }
  bool AtEnd() const { return p_ == end_; }

 private:
  uint64_t Fixed(int bytes) {
    if (end_ - p_ < bytes) throw Corrupted("a field runs past the end of the data");
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p_[i])) << (8 * i);
    p_ += bytes;
    return v;
  }
  const char* p_;
  const char* end_;
};

bool MasksPrecomputed(const CompiledGrammar& compiled) {
  const GrammarAutomaton& a = *compiled.automaton();
  for (int32_t s = 0; s < a.num_states(); ++s) {
    if (a.state_used[s] && a.has_byte_edges(s) && !compiled.mask_cache().IsBuilt(s)) return false;
  }
  return true;
}

struct Decoded {
  uint64_t fingerprint = 0;
  uint32_t vocab_size = 0;
  uint8_t flags = 0;
  AutomatonLimits limits;
  std::string root;
  std::string ebnf;
};

Decoded Decode(const std::string& data) {
  if (data.size() < 4 || std::memcmp(data.data(), kMagic, 4) != 0) {
    throw Error(ErrorKind::kInvalidArgument, "not an xg2-jax compiled grammar (the data does not start with \"XG2C\")");
  }
  if (data.size() < kHeaderSize) {
    throw Error(ErrorKind::kInvalidArgument, "truncated xg2-jax compiled grammar: " + std::to_string(data.size()) +
                                                 " bytes, shorter than the " + std::to_string(kHeaderSize) +
                                                 "-byte header");
  }
  Reader header(data.data() + 4, kHeaderSize - 4);
  uint32_t version = header.U32();
  uint64_t length = header.U64();
  uint64_t checksum = header.U64();
  if (version != kSerializationVersion) {
    throw Error(ErrorKind::kInvalidArgument, "unsupported format version " + std::to_string(version) +
                                                 " of an xg2-jax compiled grammar (this build reads version " +
                                                 std::to_string(kSerializationVersion) + ")");
  }
  const uint64_t available = data.size() - kHeaderSize;
  if (length > available) {
    throw Error(ErrorKind::kInvalidArgument, "truncated xg2-jax compiled grammar: the header announces " +
                                                 std::to_string(length) + " payload bytes, " +
                                                 std::to_string(available) + " present");
  }
  if (length < available) {
    throw Corrupted(std::to_string(available - length) + " unexpected bytes after the payload");
  }
  const char* payload = data.data() + kHeaderSize;
  if (Fnv1a64(payload, static_cast<size_t>(length)) != checksum) {
    throw Error(ErrorKind::kInvalidArgument, "checksum mismatch: the xg2-jax compiled grammar data is corrupted");
  }
  Reader r(payload, static_cast<size_t>(length));
  Decoded d;
  d.fingerprint = r.U64();
  d.vocab_size = r.U32();
  d.flags = r.U8();
  if (d.flags & ~kKnownFlags) throw Corrupted("unknown flags " + std::to_string(d.flags));
  d.limits.max_nfa_states = static_cast<int64_t>(r.U64());
  d.limits.max_dfa_states = static_cast<int64_t>(r.U64());
  // A blob may not lift the process's limits (its checksum is no authentication).
  const AutomatonLimits defaults;
  d.limits.max_nfa_states = std::min<int64_t>(d.limits.max_nfa_states, defaults.max_nfa_states);
  d.limits.max_dfa_states = std::min<int64_t>(d.limits.max_dfa_states, defaults.max_dfa_states);
  if (d.limits.max_nfa_states <= 0 || d.limits.max_dfa_states <= 0) {
    throw Corrupted("automaton limits must be positive");
  }
  d.root = r.Str("root rule name");
  d.ebnf = r.Str("grammar text");
  if (!r.AtEnd()) throw Corrupted("unexpected bytes after the grammar text");
  return d;
}

}  // namespace

std::string SerializeCompiledGrammar(const CompiledGrammar& compiled) {
  const Grammar& g = compiled.grammar();
  const TokenizerInfo& tok = *compiled.tokenizer();
  Writer payload;
  payload.U64(tok.fingerprint());
  payload.U32(static_cast<uint32_t>(tok.vocab_size()));
  payload.U8(MasksPrecomputed(compiled) ? kFlagPrecomputed : 0);
  // The compiled automaton does not record the limits it was built under; store the defaults,
  // which GrammarCompiler uses for every grammar it is given from Python.
  AutomatonLimits limits;
  payload.U64(static_cast<uint64_t>(limits.max_nfa_states));
  payload.U64(static_cast<uint64_t>(limits.max_dfa_states));
  payload.Str(g.root() >= 0 ? g.rule(g.root()).name : std::string("root"));
  payload.Str(g.ToEbnf());

  Writer out;
  out.out().append(kMagic, 4);
  out.U32(kSerializationVersion);
  out.U64(payload.out().size());
  out.U64(Fnv1a64(payload.out().data(), payload.out().size()));
  out.out().append(payload.out());
  return std::move(out.out());
}

std::shared_ptr<CompiledGrammar> DeserializeCompiledGrammar(const std::string& data, GrammarCompiler& compiler) {
  Decoded d = Decode(data);
  const TokenizerInfo& tok = *compiler.tokenizer();
  if (d.fingerprint != tok.fingerprint() || d.vocab_size != static_cast<uint32_t>(tok.vocab_size())) {
    throw Error(ErrorKind::kInvalidArgument,
                "the compiled grammar was written for a different vocabulary (vocab_size " +
                    std::to_string(d.vocab_size) + ", fingerprint " + std::to_string(d.fingerprint) +
                    "); this tokenizer has vocab_size " + std::to_string(tok.vocab_size()) + ", fingerprint " +
                    std::to_string(tok.fingerprint()));
  }
  Grammar grammar;
  try {
    grammar = ParseEbnf(d.ebnf, d.root);
  } catch (const Error& e) {
    // Only reachable with a blob whose checksum was forged or recomputed after editing.
    throw Corrupted(std::string("its grammar text does not parse: ") + e.what());
  }
  CompileOptions options;
  options.precompute_masks = (d.flags & kFlagPrecomputed) != 0;
  options.limits = d.limits;
  return compiler.Compile(grammar, options);
}

std::shared_ptr<CompiledGrammar> DeserializeCompiledGrammar(const std::string& data,
                                                            const std::shared_ptr<const TokenizerInfo>& tokenizer) {
  GrammarCompiler compiler(tokenizer, 0, /*cache_enabled=*/false);
  return DeserializeCompiledGrammar(data, compiler);
}

}  // namespace xg2
