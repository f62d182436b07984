"""Fuzz harness: JSON Schema (Grammar.from_json_schema, str input, on_unsupported="warn"),
printer round trip, compile, matcher walk.

Input: byte 0 picks the options (whitespace, indent, strict mode, property order), bytes 1-2
steer the matcher walk, the rest is the schema text.
"""

from __future__ import annotations

from common import Bytes, atheris_main, parse_and_exercise, xg


def options(flags: int) -> dict:
    return dict(
        any_whitespace=not flags & 1,
        indent=(None, 0, 2, 4)[(flags >> 1) & 3],
        strict_mode=not flags & 8,
        any_order=bool(flags & 16),
        max_whitespace_cnt=(None, 2)[(flags >> 5) & 1],
        separators=(None, (",", ":"))[(flags >> 6) & 1],
    )


def one_input(data: bytes) -> None:
    b = Bytes(data)
    opts = options(b.u8())
    parse_and_exercise(b, "from_json_schema", xg.Grammar.from_json_schema, on_unsupported="warn", **opts)


if __name__ == "__main__":
    atheris_main(one_input)
