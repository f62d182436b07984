"""The `not` keyword: each supported shape compiles to exactly the schema's language (instances
checked against the `jsonschema` package); shapes with no exact positive form keep raising."""

from __future__ import annotations

import sys
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402

from xg2_jax._src.errors import GrammarError, UnsupportedSchemaError  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402

SAMPLES = [None, True, False, 0, 1, 2, -3, 2.5, 7, 1.1, 3.0, "", "a", "ab", "abc", "x", "ba", "cab", "a\\b", "\u00e9a", "xc", [], [1], [1, "a"], [True, 2, 3],
           {}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"a": "s"}, {"c": None}, {"a": 1, "b": "x", "c": 3}, {"a": {"b": 1}}, {"a": {"b": {}}}, {"a": {"b": {"a": 1}}}]

CASES = {
    "anyOf_multipleOf": {"not": {"anyOf": [{"type": "string"}, {"multipleOf": 2}]}},
    "multipleOf": {"not": {"multipleOf": 5}},
    "multipleOf_decimal": {"not": {"multipleOf": 0.5}, "type": ["number", "string"]},
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
    "pattern": {"not": {"pattern": "^a*$"}},
    "pattern_search": {"not": {"pattern": "b"}},
    "pattern_type": {"not": {"type": "string", "pattern": "a"}},
    "pattern_with_positive": {"type": "string", "pattern": "^[a-c]+$", "not": {"pattern": "c"}},
    "pattern_with_length": {"minLength": 2, "not": {"pattern": "^ab"}},
    "pattern_in_anyOf": {"not": {"anyOf": [{"pattern": "^a"}, {"pattern": "c$"}]}},
    "pattern_both": {"allOf": [{"not": {"pattern": "^a"}}, {"not": {"pattern": "x"}}]},
    "property_names_not_pattern": {"type": "object", "propertyNames": {"not": {"pattern": "^a"}}},
    "enum_strings": {"not": {"enum": ["a", "ab"]}},
    "const_string_typed": {"type": "string", "not": {"const": "x"}},
    "enum_strings_null": {"not": {"enum": ["", None]}},
    "enum_strings_with_pattern": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "not": {"enum": ["ab", "abc"]}},
    "enum_then_not_enum": {"enum": ["a", "x", 1], "not": {"enum": ["a"]}},
    "not_enum_then_enum": {"allOf": [{"not": {"enum": ["a"]}}, {"enum": ["a", "x", 1]}]},
    "property_names_not_enum": {"type": "object", "propertyNames": {"not": {"enum": ["a", "c"]}}},
    "unique_items_false_and_type": {"not": {"uniqueItems": False, "type": "array"}},
    "draft4_exclusive_minimum": {"$schema": "http://json-schema.org/draft-04/schema#",
                                 "not": {"minimum": 2, "exclusiveMinimum": True}},
    "draft7_ref_siblings_ignored": {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"s": {"type": "string"}},
                                    "not": {"$ref": "#/definitions/s", "type": "number"}},
    "recursive_properties": {"$defs": {"t": {"type": "object", "properties": {"a": {"not": {"properties": {"b": {"$ref": "#/$defs/t"}}}}}}},
                             "$ref": "#/$defs/t"},
    "items_integer": {"not": {"items": {"type": "integer"}}},
    "int_from_number": {"type": "number", "not": {"type": "integer"}},
    "enum_numbers": {"not": {"enum": [6, None]}},
    "const_bool": {"not": {"const": False}},
    "multipleOf_with_enum": {"enum": [2, 3, 2.5, "x"], "not": {"multipleOf": 2}},
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
    "pattern_bad_regex": {"not": {"pattern": "(?<=a)b"}},
    "unique_items": {"not": {"uniqueItems": True}},
    "enum_arrays": {"not": {"enum": [[1], None]}},
}


@pytest.fixture(scope="module")
def runner():
    return lib.Runner()


@pytest.mark.parametrize("name", sorted(CASES))
def test_not_exact(runner, name):
    lib.check_against_jsonschema(runner, CASES[name], SAMPLES)


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_not_unsupported(name):
    with pytest.raises(UnsupportedSchemaError, match="unsupported keyword 'not' at"):
        Grammar.from_json_schema(UNSUPPORTED[name])


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_not_empty_language(runner, name):
    schema = EMPTY[name]
    validator = jsonschema.Draft202012Validator(schema)
    assert not any(validator.is_valid(x) for x in SAMPLES)
    with pytest.raises(GrammarError, match="no JSON value satisfies"):
        Grammar.from_json_schema(schema)
    status, _ = runner.compile(schema)
    assert status.startswith("error:"), status


@pytest.mark.parametrize("schema,text,ok", [
    ({"not": {"pattern": "^a*$"}}, '"\\u0061"', False),  # "a" spelled with an escape
    ({"not": {"pattern": "^a*$"}}, '"\\u0062"', True),
    ({"not": {"pattern": "b"}}, '"x\\u0062"', False),
    ({"not": {"enum": ["ab"]}}, '"a\\u0062"', False),
    ({"not": {"enum": ["ab"]}}, '"a\\u0063"', True),
    ({"type": "object", "propertyNames": {"not": {"pattern": "^a"}}}, '{"\\u0061x": 1}', False),
])
def test_not_pattern_escaped_spellings(runner, schema, text, ok):
    import xg2_jax as xg
    from xg2_jax import greedy_tokenize

    cg = runner.compiler.compile_grammar(Grammar.from_json_schema(schema), lazy=True)
    m = xg.GrammarMatcher(cg)
    accepted = all(m.accept_token(t) for t in greedy_tokenize(runner.tok_info, text.encode())) and m.accept_token(runner.stop)
    assert accepted == ok
