"""Objects that must have some property: `not` of patternProperties, propertyNames or
additionalProperties (alone, beside properties, or inside anyOf/oneOf) compiles to exactly the
schema's language, each instance checked against the `jsonschema` package; shapes beyond the
supported sizes keep raising UnsupportedSchemaError naming `not`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402
from test_json_schema_coverage import drive, oracle  # noqa: E402

from xg2_jax._src.errors import UnsupportedSchemaError  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402

SAMPLES = [None, 1, "a", [], [1],
           {}, {"a": 1}, {"a": "s"}, {"b": 1}, {"b": True}, {"ab": "s"}, {"ab": 2}, {"0": 1}, {"1": []},
           {"a": 1, "b": 2}, {"a": "s", "b": True}, {"a": 1, "ab": "x"}, {"x1": "abc"}, {"x1": "a"},
           {"x2": "abc"}, {"y1": "abc"}, {"x1": "a", "x21": "abcd"}, {"foo": 1}, {"foo": "s"},
           {"foo": 1, "x": True}, {"foo": 1, "x": 1}, {"x": True, "y": "s"}, {"c": None, "d": 2},
           {"a": 1, "b": "x", "c": 3}, {"ac": 1, "b": 2}, {"0": 1, "1": 2}, {"bo": 2, "foo": 1}]

CASES = {
    "pattern_props": {"type": "object", "not": {"patternProperties": {"^a": {"type": "integer"}}}},
    "pattern_props_false": {"not": {"patternProperties": {"b": False}}},
    "pattern_props_two": {"not": {"patternProperties": {"^a": {"type": "integer"}, "b": {"type": "boolean"}}}},
    "pattern_props_required": {"type": "object", "required": ["foo"],
                               "not": {"patternProperties": {"o": {"type": "integer"}}}},
    "pattern_props_beside_patterns": {"type": "object", "patternProperties": {"^x": {"type": "string"}},
                                      "additionalProperties": False,
                                      "not": {"patternProperties": {"1$": {"maxLength": 2}}}},
    "pattern_props_declared": {"type": "object", "properties": {"ab": {"type": "string"}},
                               "not": {"patternProperties": {"^a": {"type": "integer"}}}},
    "property_names_const": {"type": "object", "not": {"propertyNames": {"not": {"const": "0"}}}},
    "property_names_pattern": {"not": {"propertyNames": {"not": {"pattern": "^[ab]"}}}},
    "property_names_false": {"not": {"propertyNames": False}},
    "property_names_enum_closed": {"type": "object", "patternProperties": {"^[0-9]$": {"type": "integer"}},
                                   "additionalProperties": False,
                                   "not": {"anyOf": [{"propertyNames": {"not": {"enum": ["1", "3"]}}},
                                                     {"propertyNames": {"not": {"enum": ["0", "3"]}}}]}},
    "property_names_enum_beside": {"propertyNames": {"enum": ["a", "ab", "b"]},
                                   "not": {"patternProperties": {"a": {"type": "integer"}}}},
    "additional": {"not": {"additionalProperties": False, "properties": {"a": {}}}},
    "additional_typed": {"type": "object", "properties": {"foo": {"type": "integer"}},
                         "not": {"additionalProperties": {"type": "boolean"}, "properties": {"foo": {}}}},
    "additional_with_patterns": {"not": {"additionalProperties": {"type": "integer"}, "patternProperties": {"^a": {}},
                                         "properties": {"b": {"type": "integer"}}}},
    "two_witnesses": {"type": "object", "allOf": [{"not": {"propertyNames": {"not": {"pattern": "a"}}}},
                                                  {"not": {"propertyNames": {"not": {"pattern": "b"}}}}],
                      "maxProperties": 2},
    "witness_values": {"allOf": [{"not": {"patternProperties": {"a": {"not": {"type": "integer"}}}}},
                                 {"not": {"patternProperties": {"b": {"not": {"type": "integer"}}}}}]},
    "in_one_of": {"type": "object", "oneOf": [{"required": ["a"]}, {"not": {"patternProperties": {"^b": False}}}]},
    "one_of_closed": {"oneOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
                                {"type": "object", "properties": {"b": {}}, "additionalProperties": {"type": "string"}}]},
    "one_of_open_and_closed": {"oneOf": [{"properties": {"a": {"type": "string"}}},
                                         {"properties": {"a": {}}, "additionalProperties": False}]},
    "in_property": {"type": "object",
                    "properties": {"a": {"not": {"patternProperties": {"b": {"type": "boolean"}}}}}},
    "enum_beside": {"enum": [{"a": 1}, {"a": "s"}, {"b": 1}, 3], "not": {"patternProperties": {"a": {"type": "string"}}}},
}

UNSUPPORTED = {
    "six_members": {"type": "object",
                    "allOf": [{"not": {"propertyNames": {"not": {"pattern": c}}}} for c in "abcdef"]},
}


@pytest.fixture(scope="module", params=[True, False], ids=["any_order", "ordered"])
def runner(request):
    return lib.Runner(any_order=request.param)


@pytest.mark.parametrize("name", sorted(CASES))
def test_some_property_exact(runner, name):
    valid = lib.check_against_jsonschema(runner, CASES[name], SAMPLES)
    assert 0 < valid < len(SAMPLES)  # the samples tell the language apart


@pytest.mark.parametrize("name", ["pattern_props_declared", "two_witnesses", "additional_with_patterns",
                                  "one_of_open_and_closed"])
def test_some_property_mask_matches_matcher(runner, name):
    """Along every sample the mask allows exactly the tokens the matcher accepts."""
    schema = CASES[name]
    grammar = Grammar.from_json_schema(schema, strict_mode=False, any_order=runner.any_order)
    cg = runner.compiler.compile_grammar(grammar, lazy=True)
    validator = oracle(schema)
    for x in SAMPLES:
        written = x if runner.any_order else lib.schema_ordered(schema, x)
        assert drive(runner, cg, json.dumps(written)) == validator.is_valid(x), x


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_some_property_unsupported(name):
    with pytest.raises(UnsupportedSchemaError, match="unsupported keyword 'not' at"):
        Grammar.from_json_schema(UNSUPPORTED[name])


def test_some_property_ordered_layout_anywhere_among_extras():
    """In the ordered layout the member the object must have is written once among the extras,
    before, between or after the declared members; each declared member keeps its place."""
    schema = {"type": "object", "properties": {"p": {"type": "integer"}, "q": {"type": "integer"}},
              "not": {"patternProperties": {"^a": {"type": "integer"}}}}
    runner = lib.Runner(any_order=False)
    cg = runner.compiler.compile_grammar(Grammar.from_json_schema(schema, strict_mode=False), lazy=True)
    for text, ok in (('{"a1": "s", "p": 1, "q": 2}', True), ('{"p": 1, "a1": "s", "q": 2}', True),
                     ('{"p": 1, "q": 2, "a1": "s"}', True), ('{"b": 1, "a1": "s", "a2": 3}', True),
                     ('{"p": 1, "q": 2}', False), ('{"q": 2, "p": 1, "a1": "s"}', False), ('{"a1": 1}', False)):
        assert (runner.match(cg, json.loads(text)) == "accepted") == ok, text
