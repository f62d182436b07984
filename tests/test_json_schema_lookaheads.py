"""A JSON Schema pattern that starts with lookaheads (`^(?!org\\.bukkit\\.)...`, from
JsonSchemaStore) is the intersection of patterns that must match with the complements of
patterns that must not; judged like ECMAScript (Python's `re` agrees on these patterns),
for every JSON spelling of the string."""

from __future__ import annotations

import json
import re

import pytest

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string as accepts

CASES = [
    # (pattern, strings), patterns as written in JSONSchemaBench schemas
    (r"^(?!org\.bukkit\.)([a-zA-Z_$][a-zA-Z\d_$]*\.)*[a-zA-Z_$][a-zA-Z\d_$]*$",
     ["org.bukkit.X", "org.bukkitx.Main", "a.b.C", "org.Main", "x", "1a", ""]),
    (r"^(?![i|I][o|O][b|B][r|R][o|O][k|K][e|E][r|R])", ["iobroker", "IOBroker.x", "adapter", "io", ""]),
    (r"^(?=[^=]+$)(?!\s+$)(.|\n)+$", ["a=b", "   ", "abc", " a ", "", "a\tb"]),
    (r"^(?!^lucene\.|builtin\.|mongodb\.).*", ["lucene.x", "builtin.y", "mongodb.z", "my.lucene.", "x"]),
    (r'^(?!.*(\{TriggerCondition\}|\{IncTrigger\|[0-9]*\}|["<>*?:/\\])).*\.[bB][lL][fF]$',
     ["a.blf", "a{TriggerCondition}.blf", "a{IncTrigger|12}.blf", "a:b.BLF", 'a"b.blf', "x.txt", "é.blf"]),
    (r"^(?![ \t\n]*\(default(.*)\))[\s\S]*", ["(default x)", "  (default)", "ok", "(defaults", "\n(default)"]),
    (r"^(?=a)(?=.*z$)[a-z]{2,5}$", ["az", "abz", "bz", "abcdez", "abcdefz", "aZ"]),
]


@pytest.mark.parametrize("pattern,strings", CASES, ids=[f"p{i}" for i in range(len(CASES))])
def test_leading_lookaheads_match_like_ecmascript(pattern, strings):
    grammar = xg.Grammar.from_json_schema({"type": "string", "pattern": pattern})
    for s in strings:
        want = re.search(pattern, s) is not None
        for text in {json.dumps(s), json.dumps(s, ensure_ascii=False)}:  # escaped and raw spellings
            assert accepts(grammar, text) == want, (pattern, text)


def test_leading_lookaheads_with_lengths_enums_and_other_keywords():
    schema = {"type": "string", "pattern": r"^(?!org\.bukkit\.)[a-z.]+$", "maxLength": 12}
    grammar = xg.Grammar.from_json_schema(schema)
    assert accepts(grammar, '"org.example"') and not accepts(grammar, '"org.bukkit.x"')
    assert not accepts(grammar, '"org.exampleab"')  # 13 characters
    enum = {"enum": ["org.bukkit.a", "org.b", 3], "pattern": r"^(?!org\.bukkit\.)"}
    grammar = xg.Grammar.from_json_schema(enum)
    assert accepts(grammar, '"org.b"') and accepts(grammar, "3") and not accepts(grammar, '"org.bukkit.a"')
    # A pattern asserts nothing about other types.
    grammar = xg.Grammar.from_json_schema({"pattern": r"^(?!x)"})
    assert accepts(grammar, "12") and accepts(grammar, '"y"') and not accepts(grammar, '"xy"')


@pytest.mark.parametrize("pattern", [
    r"^(?!a)b|c",       # the lookahead binds to the first alternative only
    r"a(?!b)",          # not at the start
    r"^(?:a(?=b))b",    # inside a group
    r"^(?<!a)b",        # a lookbehind
])
def test_other_lookarounds_stay_refused(pattern):
    with pytest.raises(xg.UnsupportedSchemaError, match="pattern"):
        xg.Grammar.from_json_schema({"type": "string", "pattern": pattern})
