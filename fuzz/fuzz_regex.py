"""Fuzz harness: regular expressions (Grammar.from_regex), printer round trip, compile,
matcher walk, and a differential check against Python's ``re`` on patterns whose meaning is
the same in both dialects (letters a/b, groups, alternation, quantifiers).

Input: the first two bytes steer the matcher walk; the rest is the pattern.
"""

from __future__ import annotations

import itertools
import re

from common import (
    Bytes,
    InvariantViolation,
    atheris_main,
    expect_typed,
    parse_and_exercise,
    small_compiler,
    time_limit,
    xg,
)

_SAFE = set("ab()|*+?{}0123456789,")


def _python_equivalent(pattern: str):
    """A compiled Python regex with the same language, or None if the dialects may differ."""
    if not pattern or not set(pattern) <= _SAFE or "{," in pattern or "{" in pattern and "}" not in pattern:
        return None
    if re.search(r"[{}]", re.sub(r"\{\d+(,\d*)?\}", "", pattern)):
        return None  # a brace that is not a quantifier: literal in JS, differs in Python
    if re.search(r"[*+?}]\+", pattern):
        return None  # possessive quantifiers in Python >= 3.11, a syntax error in JS
    if re.search(r"\{\d{4,}", pattern):
        return None  # large bounds: slow in Python
    try:
        return re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return None


def _differential(pattern: str, grammar: "xg.Grammar") -> None:
    py = _python_equivalent(pattern)
    if py is None:
        return
    ok, compiled = expect_typed(small_compiler().compile_grammar, grammar)
    if not ok:
        return
    for n in range(0, 6):
        for chars in itertools.product("ab", repeat=n):
            s = "".join(chars)
            m = xg.GrammarMatcher(compiled)
            accepted = m.accept_string(s)
            matches = py.fullmatch(s) is not None
            complete = accepted and m.is_completed()
            if matches != complete:
                raise InvariantViolation(
                    f"pattern {pattern!r} on {s!r}: Python re fullmatch={matches}, "
                    f"xg2 accepted={accepted} completed={m.is_completed() if accepted else None}")


def one_input(data: bytes) -> None:
    ok, grammar, pattern = parse_and_exercise(Bytes(data), "from_regex", xg.Grammar.from_regex)
    if not ok:
        return
    with time_limit("differential"):
        _differential(pattern, grammar)


if __name__ == "__main__":
    atheris_main(one_input)
