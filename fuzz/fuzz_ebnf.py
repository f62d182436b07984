"""Fuzz harness: EBNF grammars (Grammar.from_ebnf), printer round trip, compile, matcher walk.

Input: the first two bytes steer the matcher walk; the rest is the grammar text (UTF-8,
invalid sequences replaced).
"""

from __future__ import annotations

from common import Bytes, atheris_main, parse_and_exercise, xg


def one_input(data: bytes) -> None:
    ok, grammar, _ = parse_and_exercise(Bytes(data), "from_ebnf", xg.Grammar.from_ebnf)
    if not ok and isinstance(grammar, xg.GrammarSyntaxError) and (grammar.line < 0 or grammar.column < 0):
        raise AssertionError(f"negative location {grammar.line}:{grammar.column}")


if __name__ == "__main__":
    atheris_main(one_input)
