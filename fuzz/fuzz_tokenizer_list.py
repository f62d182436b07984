"""Fuzz harness: TokenizerInfo(list of token strings) with every vocab type, stop/special ids
and a vocab_size, then a compile and a matcher walk on the result.

Input: byte 0 = vocab type and flags, byte 1 = number of stop ids, bytes 2-3 steer the walk,
then the stop ids (2 bytes each), then the tokens separated by 0xFF bytes (as bytes objects
when flag 0x10 is set, else as str with invalid UTF-8 replaced).
"""

from __future__ import annotations

from common import Bytes, atheris_main, expect_typed, time_limit, xg
from fuzz_tokenizer_json import check_tokenizer


def one_input(data: bytes) -> None:
    b = Bytes(data)
    flags = b.u8()
    n_stop = b.u8() % 4
    steer = Bytes(b.take(2))
    stops = [b.u16() - 8 for _ in range(n_stop)]  # may be negative or out of range
    raw = b.rest().split(b"\xff")
    if flags & 0x10:
        tokens = raw
    else:
        tokens = [t.decode("utf-8", errors="replace") for t in raw]
    vocab_size = None
    if flags & 0x20:
        vocab_size = len(tokens) + (flags >> 6) * 37 - 8  # may be below the number of tokens
    with time_limit("TokenizerInfo"):
        ok, info = expect_typed(xg.TokenizerInfo, tokens, flags % 3, vocab_size=vocab_size,
                                stop_token_ids=stops or None,
                                special_token_ids=[0] if flags & 8 else None,
                                add_prefix_space=bool(flags & 4))
    if ok:
        with time_limit("tokenizer check"):
            check_tokenizer(info, steer)


if __name__ == "__main__":
    atheris_main(one_input)
