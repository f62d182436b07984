"""minProperties / maxProperties in both layouts: the ordered default counts the members it has
written (rules per declared member and count), any_order counts them in its AnyOrder node.
Every subset of the declared names, with undeclared names before, between and after them, is
judged as the `jsonschema` package judges it, over a sweep of bounds, with optional, required,
additional and pattern properties."""

from __future__ import annotations

import itertools
import json
import re

import jsonschema
import pytest

import xg2_jax as xg
from xg2_jax._src.errors import UnsupportedSchemaError, UnsupportedSchemaWarning

VOCAB = [bytes([c]) for c in range(32, 127)] + [b"</s>"]
TOK = xg.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
COMPILER = xg.GrammarCompiler(TOK, cache_enabled=False)

BASES = {
    "optional": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                                  "c": {"type": "integer"}}},
    "one_required": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                                      "c": {"type": "integer"}}, "required": ["b"]},
    "additional_string": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                          "additionalProperties": {"type": "string"}},
    "closed": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                                "c": {"type": "integer"}}, "additionalProperties": False},
    "pattern": {"type": "object", "properties": {"a": {"type": "integer"}},
                "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
    "required_undeclared": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["z"],
                            "additionalProperties": {"type": "integer"}},
}
BOUNDS = [(1, None), (2, None), (None, 1), (None, 2), (1, 2), (2, 2), (0, 3), (3, None), (4, None)]


def schema_with(base: dict, lo, hi) -> dict:
    s = dict(base)
    if lo is not None:
        s["minProperties"] = lo
    if hi is not None:
        s["maxProperties"] = hi
    return s


def accepts(compiled, text: str) -> bool:
    m = xg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.accept_token(TOK.stop_token_ids[0])


def instances(schema):
    """Each subset of the declared names in declaration order, with undeclared members (an
    integer z, a string y, an integer x1) at the start, between and at the end."""
    declared = list(schema["properties"])
    for r in range(len(declared) + 1):
        for subset in itertools.combinations(declared, r):
            members = [(k, 1) for k in subset]
            yield members
            for extra in ([("z", 1)], [("y", "s")], [("x1", 2), ("z", 3)]):
                for at in range(len(members) + 1):
                    yield members[:at] + extra + members[at:]


def in_layout_order(schema, members) -> bool:
    """The ordered layout writes declared names, then required undeclared ones, in that order."""
    layout = list(schema["properties"]) + [r for r in schema.get("required", []) if r not in schema["properties"]]
    seen = [layout.index(k) for k, _ in members if k in layout]
    return seen == sorted(seen)


def text_of(members) -> str:
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members) + "}"


@pytest.mark.parametrize("any_order", [False, True], ids=["ordered", "any_order"])
@pytest.mark.parametrize("base", list(BASES))
def test_property_counts_match_jsonschema(base, any_order):
    checked = 0
    for lo, hi in BOUNDS:
        schema = schema_with(BASES[base], lo, hi)
        validator = jsonschema.Draft202012Validator(schema)
        try:
            compiled = COMPILER.compile_json_schema(schema, any_whitespace=False, strict_mode=False,
                                                    any_order=any_order)
        except xg.GrammarError:
            # Nothing satisfies the schema: every instance must be invalid.
            assert not any(validator.is_valid(dict(m)) for m in instances(schema)), (lo, hi)
            continue
        for members in instances(schema):
            if len({k for k, _ in members}) != len(members):
                continue
            expected = validator.is_valid(dict(members)) and (any_order or in_layout_order(schema, members))
            assert accepts(compiled, text_of(members)) == expected, (base, lo, hi, members)
            checked += 1
    assert checked > 50


def test_counted_ordered_layout_keeps_declaration_order():
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "minProperties": 1}
    compiled = COMPILER.compile_json_schema(s, any_whitespace=False, strict_mode=True)
    assert accepts(compiled, '{"a": 1, "b": 2}') and accepts(compiled, '{"b": 2}')
    assert not accepts(compiled, '{"b": 2, "a": 1}')
    assert not accepts(compiled, "{}")


def test_counted_ordered_layout_with_indent():
    s = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "integer"},
         "minProperties": 1, "maxProperties": 2}
    compiled = COMPILER.compile_json_schema(s, indent=2, any_whitespace=False)
    for obj, ok in (({"a": 1}, True), ({"q": 1, "a": 2}, True), ({"a": 1, "q": 2, "r": 3}, False), ({}, False)):
        assert accepts(compiled, json.dumps(obj, indent=2)) == ok, obj


def test_counted_ordered_layout_refuses_too_many_states():
    s = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(100)},
         "maxProperties": 90}
    with pytest.raises(UnsupportedSchemaError, match=r"maxProperties.*any_order"):
        xg.Grammar.from_json_schema(s)
    xg.Grammar.from_json_schema(s, any_order=True)
    huge = {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"},
            "maxProperties": 2**63 - 1}
    with pytest.raises(UnsupportedSchemaError, match="maxProperties"):
        xg.Grammar.from_json_schema(huge)
    # on_unsupported="warn" widens: the count is not enforced, the members keep their schemas.
    with pytest.warns(UnsupportedSchemaWarning, match="maxProperties"):
        g = xg.Grammar.from_json_schema(s, on_unsupported="warn", any_whitespace=False)
    compiled = COMPILER.compile_grammar(g)
    assert accepts(compiled, '{"p0": 1, "p1": 2}')
    assert accepts(compiled, "{" + ", ".join(f'"p{i}": {i}' for i in range(95)) + "}")
    assert not accepts(compiled, '{"p0": "s"}')


@pytest.mark.parametrize("any_order", [False, True])
@pytest.mark.parametrize("schema, why", [
    ({"type": "object", "minProperties": 5, "maxProperties": 3},
     "minProperties is greater than maxProperties: 5 > 3"),
    ({"type": "object", "properties": {"k": {}}, "additionalProperties": False,
      "minProperties": 2},
     "minProperties is greater than the number of properties, but additional properties "
     "aren't allowed: 2 > 1"),
    ({"type": "object", "additionalProperties": False, "minProperties": 1},
     "aren't allowed: 1 > 0"),
])
def test_unsatisfiable_counts_say_why(schema, why, any_order):
    """An object no count can satisfy is refused at conversion with the reason (xgrammar's
    phrases), not an internal repetition error."""
    with pytest.raises(xg.GrammarError, match=re.escape(why)):
        xg.Grammar.from_json_schema(schema, any_order=any_order)
