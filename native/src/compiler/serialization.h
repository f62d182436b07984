// CompiledGrammar to bytes and back.
//
// A compiled grammar is a pure function of its grammar, its tokenizer and its compile options,
// so the blob stores the grammar (as EBNF text, which the printer guarantees round-trips) plus
// what is needed to check it is loaded against the same vocabulary; loading recompiles.
//
// Format (little endian):
//   offset 0   magic "XG2C"
//          4   u32 format version (kSerializationVersion)
//          8   u64 payload length in bytes
//         16   u64 FNV-1a 64 checksum of the payload
//         24   payload:
//                u64 tokenizer fingerprint (TokenizerInfo::fingerprint())
//                u32 tokenizer vocab_size
//                u8  flags (bit 0: the masks were precomputed -> precompute on load)
//                i64 AutomatonLimits::max_nfa_states, i64 max_dfa_states
//                u32 length + bytes: root rule name
//                u32 length + bytes: EBNF text (Grammar::ToEbnf())
//
// Every problem with a blob (wrong magic, other version, truncation, trailing bytes, checksum
// mismatch, bad fields, other vocabulary) throws Error(kInvalidArgument); nothing crashes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "compiler/grammar_compiler.h"

namespace xg2 {

constexpr uint32_t kSerializationVersion = 1;

std::string SerializeCompiledGrammar(const CompiledGrammar& compiled);

// Checks the blob and recompiles it with `compiler` (whose tokenizer must be the one the blob
// was written for; its cache is used).
std::shared_ptr<CompiledGrammar> DeserializeCompiledGrammar(const std::string& data, GrammarCompiler& compiler);
// Same, with a private, uncached compiler for `tokenizer`.
std::shared_ptr<CompiledGrammar> DeserializeCompiledGrammar(const std::string& data,
                                                            const std::shared_ptr<const TokenizerInfo>& tokenizer);

}  // namespace xg2
