"""Fuzz harness: serialized compiled grammars (CompiledGrammar.deserialize(data, tok)).

Byte 0 picks how the rest is used:
  0: the rest is the whole blob (the checksum rejects almost every mutation);
  1: the rest is the payload; the harness writes a valid header (length and FNV-1a checksum)
     so that mutations reach the payload parser;
  2: structured: the rest is "root name \\0 grammar text"; the harness writes the right
     vocabulary fingerprint, small automaton limits and a valid header.
A blob that loads must behave like a compiled grammar (matcher walk with invariant checks).
"""

from __future__ import annotations

import struct

from common import (
    Bytes,
    atheris_main,
    exercise_compiled,
    expect_typed,
    small_tokenizer,
    time_limit,
    xg,
)

MAGIC = b"XG2C"
VERSION = 1


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def wrap(payload: bytes, version: int = VERSION) -> bytes:
    return MAGIC + struct.pack("<IQQ", version, len(payload), fnv1a64(payload)) + payload


def make_payload(tok: "xg.TokenizerInfo", root: bytes, ebnf: bytes, *, flags: int = 0,
                 max_nfa: int = 1 << 16, max_dfa: int = 1 << 14) -> bytes:
    return (struct.pack("<QIBQQ", tok.fingerprint, tok.vocab_size, flags, max_nfa, max_dfa)
            + struct.pack("<I", len(root)) + root + struct.pack("<I", len(ebnf)) + ebnf)


def one_input(data: bytes) -> None:
    tok = small_tokenizer()
    b = Bytes(data)
    mode = b.u8() % 3
    steer = Bytes(b.take(2))
    rest = b.rest()
    if mode == 0:
        blob = rest
    elif mode == 1:
        blob = wrap(rest)
    else:
        root, _, ebnf = rest.partition(b"\0")
        blob = wrap(make_payload(tok, root, ebnf, flags=len(root) & 1))
    with time_limit("deserialize"):
        ok, compiled = expect_typed(xg.CompiledGrammar.deserialize, blob, tok)
    if ok:
        with time_limit("matcher walk"):
            exercise_compiled(compiled, steer)


if __name__ == "__main__":
    atheris_main(one_input)
