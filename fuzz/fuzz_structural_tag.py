"""Fuzz harness: structural tags (Grammar.from_structural_tag, JSON text, resolved against the
small fuzz vocabulary so token-level formats work), printer round trip, compile, matcher walk.

Input: bytes 0-1 steer the matcher walk, the rest is the structural tag's JSON text.
"""

from __future__ import annotations

import functools

from common import Bytes, atheris_main, parse_and_exercise, small_tokenizer, xg


def one_input(data: bytes) -> None:
    b = Bytes(data)
    parse = functools.partial(xg.Grammar.from_structural_tag, tokenizer_info=small_tokenizer())
    parse_and_exercise(b, "from_structural_tag", parse, on_unsupported="warn")


if __name__ == "__main__":
    atheris_main(one_input)
