"""Fuzz harness: EBNF grammars (Grammar.from_ebnf), printer round trip, compile, matcher walk.

Input: the first two bytes steer the matcher walk; the rest is the grammar text (UTF-8,
invalid sequences replaced).
"""

from __future__ import annotations

import sys

from common import Bytes, atheris_main, compile_and_exercise, expect_typed, roundtrip_ebnf, time_limit, xg


def one_input(data: bytes) -> None:
    b = Bytes(data)
    steer = Bytes(b.take(2))
    text = b.rest().decode("utf-8", errors="replace")
    with time_limit("from_ebnf"):
        ok, grammar = expect_typed(xg.Grammar.from_ebnf, text)
    if not ok:
        if isinstance(grammar, xg.GrammarSyntaxError) and (grammar.line < 0 or grammar.column < 0):
            raise AssertionError(f"negative location {grammar.line}:{grammar.column}")
        return
    grammar = roundtrip_ebnf(grammar)
    compile_and_exercise(grammar, steer)


if __name__ == "__main__":
    atheris_main(one_input)
