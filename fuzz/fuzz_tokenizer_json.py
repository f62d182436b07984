"""Fuzz harness: Hugging Face tokenizer.json files (TokenizerInfo.from_tokenizer_json on the
input bytes written to a temporary file), then a compile and a matcher walk on the result.
"""

from __future__ import annotations

import os
import tempfile

from common import (
    Bytes,
    InvariantViolation,
    atheris_main,
    exercise_compiled,
    expect_typed,
    time_limit,
    xg,
)

_GRAMMAR = 'root ::= [a-c]+ ("x" | "é")? | "ab" "c"*'
_TMPDIR = None


def _tmpdir() -> str:
    global _TMPDIR
    if _TMPDIR is None:
        _TMPDIR = tempfile.mkdtemp(prefix="xg2_fuzz_tok_")
    return _TMPDIR


def check_tokenizer(info: "xg.TokenizerInfo", steer: Bytes) -> None:
    vocab = info.decoded_vocab
    if len(vocab) != info.num_tokens:
        raise InvariantViolation(f"decoded_vocab has {len(vocab)} entries, num_tokens {info.num_tokens}")
    if info.num_tokens > info.vocab_size:
        raise InvariantViolation("num_tokens > vocab_size")
    for t in info.stop_token_ids + info.special_token_ids:
        if not 0 <= t < info.vocab_size:
            raise InvariantViolation(f"stop/special id {t} outside [0, {info.vocab_size})")
    ok, compiled = expect_typed(xg.GrammarCompiler(info, max_threads=1, cache_enabled=False)
                                .compile_grammar, _GRAMMAR)
    if not ok:
        raise InvariantViolation(f"a fixed grammar failed to compile on this vocabulary: {compiled}")
    if info.vocab_size <= 2048:
        exercise_compiled(compiled, steer, steps=3)


def one_input(data: bytes) -> None:
    b = Bytes(data)
    steer = Bytes(b.take(2))
    fd, path = tempfile.mkstemp(suffix=".json", dir=_tmpdir())
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b.rest())
        with time_limit("from_tokenizer_json"):
            ok, info = expect_typed(xg.TokenizerInfo.from_tokenizer_json, path)
    finally:
        os.unlink(path)
    if ok:
        with time_limit("tokenizer check"):
            check_tokenizer(info, steer)


if __name__ == "__main__":
    atheris_main(one_input)
