"""The `not` keyword: each supported shape compiles to exactly the schema's language (instances
checked against the `jsonschema` package); shapes with no exact positive form keep raising."""

from __future__ import annotations

import sys
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402
from xg2_jax._src.errors import UnsupportedSchemaError  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402

SAMPLES = [None, True, False, 0, 1, 2, -3, 2.5, 7, 1.1, 3.0, "", "a", "ab", "abc", "x", [], [1], [1, "a"], [True, 2, 3],
           {}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"a": "s"}, {"c": None}, {"a": 1, "b": "x", "c": 3}]

CASES = {
    "false": {"not": False},
    "not_not_type": {"not": {"not": {"type": "string"}}},
    "required_two": {"not": {"required": ["a", "b"]}},
    "anyOf_required": {"not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    "allOf_required": {"type": "object", "not": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}},
    "anyOf_types": {"not": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
    "anyOf_false": {"not": {"anyOf": [False, False]}},
    "allOf_empty_number": {"not": {"allOf": [{}, {"type": "number"}]}},
    "oneOf_number_any": {"not": {"oneOf": [{"type": "number"}, {}]}},
    "oneOf_types": {"not": {"oneOf": [{"type": ["string", "null"]}, {"type": ["string", "array"]}]}},
    "minLength": {"not": {"minLength": 2}},
    "maxLength": {"not": {"maxLength": 1}},
    "minItems": {"not": {"minItems": 2}},
    "maxItems": {"not": {"maxItems": 1}},
    "minProperties": {"not": {"minProperties": 1}},
    "maxProperties": {"not": {"maxProperties": 1}},
    "minimum": {"not": {"minimum": 1.1}},
    "maximum": {"not": {"maximum": 2}},
    "exclusiveMinimum": {"not": {"exclusiveMinimum": 2}},
    "exclusiveMaximum": {"not": {"exclusiveMaximum": 2}},
    "type_and_minLength": {"not": {"type": "string", "minLength": 2}},
    "properties": {"not": {"properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}}}},
    "items": {"not": {"items": {"type": "string"}}},
    "contains": {"not": {"contains": {"type": "string"}}},
    "ref": {"$defs": {"s": {"type": "string"}}, "not": {"$ref": "#/$defs/s"}},
    "ref_anyOf": {"$defs": {"r": {"required": ["a"]}}, "not": {"anyOf": [{"$ref": "#/$defs/r"}, {"required": ["c"]}]}},
    "nested_in_property": {"type": "object", "properties": {"a": {"not": {"anyOf": [{"type": "string"}, {"minimum": 3}]}}}},
}

# Negations that no value satisfies: the schema converts, the (empty) grammar does not compile.
EMPTY = {
    "true": {"not": True},
    "empty": {"not": {}},
    "anyOf_true": {"not": {"anyOf": [True, True]}},
    "minLength0": {"not": {"minLength": 0}},
    "items_true": {"not": {"items": True}},
    "properties_empty": {"not": {"properties": {"a": {}}}},
    "annotations_only": {"not": {"description": "x", "unknownKeyword": 1}},
}

UNSUPPORTED = {
    "items_integer": {"not": {"items": {"type": "integer"}}},
    "pattern_props": {"not": {"patternProperties": {"b": False}}},
    "multipleOf": {"not": {"multipleOf": 5}},
    "additional": {"not": {"additionalProperties": False, "properties": {"a": {}}}},
    "int_from_number": {"type": "number", "not": {"type": "integer"}},
    "enum_numbers": {"not": {"enum": [6, None]}},
    "anyOf_multipleOf": {"not": {"anyOf": [{"type": "string"}, {"multipleOf": 2}]}},
}


@pytest.fixture(scope="module")
def runner():
    return lib.Runner()


@pytest.mark.parametrize("name", sorted(CASES))
def test_not_exact(runner, name):
    schema = CASES[name]
    status, cg = runner.compile(schema)
    assert status == "compiled", status
    validator = jsonschema.Draft202012Validator(schema)
    for x in SAMPLES:
        expect = validator.is_valid(x)
        got = runner.match(cg, x)
        assert got == ("accepted" if expect else "rejected"), (x, expect, got)


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_not_unsupported(name):
    with pytest.raises(UnsupportedSchemaError, match="unsupported keyword 'not' at"):
        Grammar.from_json_schema(UNSUPPORTED[name])


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_not_empty_language(runner, name):
    schema = EMPTY[name]
    validator = jsonschema.Draft202012Validator(schema)
    assert not any(validator.is_valid(x) for x in SAMPLES)
    Grammar.from_json_schema(schema)
    status, _ = runner.compile(schema)
    assert status.startswith("error:"), status
