"""enum/const beside other keywords: only the values that satisfy every keyword are written
(an enum narrows a schema, never widens it); what no value satisfies is an empty language.

`jsonschema` (formats asserted) is the oracle: each candidate is accepted exactly when it
validates.
"""

import json

import jsonschema
import pytest

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string

CASES = [
    ({"enum": [3, 4], "minimum": 4}, [3, 4]),
    ({"enum": [3, 4], "exclusiveMaximum": 4}, [3, 4]),
    ({"enum": [3, 4, 6], "multipleOf": 2}, [3, 4, 6]),
    ({"enum": [0.5, 0.75, 0.3], "multipleOf": 0.25}, [0.5, 0.75, 0.3]),
    ({"enum": [1.5, 0.25, 2], "multipleOf": 0.5}, [1.5, 0.25, 2]),
    ({"enum": ["ab", "abc", ""], "maxLength": 2, "minLength": 1}, ["ab", "abc", ""]),
    ({"enum": ["é", "éé"], "maxLength": 1}, ["é", "éé"]),  # code points, not bytes
    ({"enum": ["ab", "x1", "zz"], "pattern": "^[a-z]+$"}, ["ab", "x1", "zz"]),
    ({"enum": ["ab", "x1"], "pattern": "[0-9]"}, ["ab", "x1"]),  # search semantics
    ({"enum": ["ab", "x1"], "not": {"pattern": "[0-9]"}}, ["ab", "x1"]),
    ({"enum": ["a@b.com", "nope"], "format": "email"}, ["a@b.com", "nope"]),
    ({"enum": ["2024-01-02", "yesterday"], "format": "date"}, ["2024-01-02", "yesterday"]),
    ({"enum": [[1], [1, 2, 3]], "maxItems": 2}, [[1], [1, 2, 3]]),
    ({"enum": [{"a": 1}, {"a": 1, "b": 2}], "required": ["b"]}, [{"a": 1}, {"a": 1, "b": 2}]),
    ({"enum": [{"a": 1}, {"a": 1, "b": 2}], "maxProperties": 1}, [{"a": 1}, {"a": 1, "b": 2}]),
    ({"const": "abc", "minLength": 2}, ["abc"]),
    # values inside object/array values, checked against the property and item schemas
    ({"enum": [{"a": 1}, {"a": "x"}], "properties": {"a": {"type": "integer"}}},
     [{"a": 1}, {"a": "x"}]),
    ({"enum": [{"a": 5}, {"a": 1}], "properties": {"a": {"minimum": 2}}}, [{"a": 5}, {"a": 1}]),
    ({"enum": [{"a": "b"}, {"a": "c"}], "properties": {"a": {"enum": ["b"]}}},
     [{"a": "b"}, {"a": "c"}]),
    ({"enum": [{"a": 1, "z": 2}, {"a": 1}], "properties": {"a": {}}, "additionalProperties": False},
     [{"a": 1, "z": 2}, {"a": 1}]),
    ({"enum": [[1, 2], [1, "x"]], "items": {"type": "integer"}}, [[1, 2], [1, "x"]]),
    ({"enum": [["a", 1], ["a", "b"]], "prefixItems": [{"type": "string"}, {"type": "integer"}]},
     [["a", 1], ["a", "b"]]),
    ({"enum": [[[1]], [[1, 2]]], "items": {"items": {"maximum": 1}}}, [[[1]], [[1, 2]]]),
    ({"type": "string", "enum": ["a", 1, "bb"], "maxLength": 1}, ["a", 1, "bb"]),
    # names matched by patternProperties (search) and propertyNames; additionalProperties
    # applies to names its own schema's patterns do not match
    ({"enum": [{"ab": 1}, {"ab": "s"}, {"b": 1}, {"b": "t"}, {"xa": "t", "c": 2}],
      "patternProperties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
     [{"ab": 1}, {"ab": "s"}, {"b": 1}, {"b": "t"}, {"xa": "t", "c": 2}]),
    ({"enum": [{"ab": 1}, {"abc": 1}, {}], "propertyNames": {"maxLength": 2}}, [{"ab": 1}, {"abc": 1}, {}]),
    ({"allOf": [{"patternProperties": {"^x": {}}, "additionalProperties": False}], "enum": [{"xa": 1}, {"ya": 1}]},
     [{"xa": 1}, {"ya": 1}]),
    # contains (each its own item) and uniqueItems (JSON equality: 1 == 1.0)
    ({"enum": [[1, 1, 2], [1, 2], [3, 1.0, 1], [3]], "uniqueItems": True, "contains": {"const": 1}},
     [[1, 1, 2], [1, 2], [3, 1.0, 1], [3]]),
    ({"enum": [[1], ["x"]], "contains": {"type": "integer"}}, [[1], ["x"]]),
    ({"enum": [[1, "a"], [1, 2], ["a"]], "allOf": [{"contains": {"type": "string"}}, {"contains": {"type": "integer"}}]},
     [[1, "a"], [1, 2], ["a"]]),
]


@pytest.mark.parametrize("schema, candidates", CASES, ids=lambda v: json.dumps(v)[:60])
def test_enum_values_follow_the_keywords_beside_them(schema, candidates):
    grammar = xg.Grammar.from_json_schema(schema, any_whitespace=False)
    for value in candidates:
        expected = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).is_valid(value)
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        assert _is_grammar_accept_string(grammar, text) == expected, (schema, value)


@pytest.mark.parametrize("schema", [
    {"enum": [3, 5], "minimum": 6},
    {"const": "abc", "maxLength": 2},
    {"const": {"a": 1}, "required": ["b"]},
])
def test_an_enum_no_value_satisfies_is_an_empty_language(schema):
    with pytest.raises(xg.GrammarError, match="no JSON value satisfies"):
        xg.Grammar.from_json_schema(schema)


def test_enum_value_beside_nested_anyof_is_refused_not_widened():
    schema = {"enum": [{"a": 1}], "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}}
    with pytest.raises(xg.XG2Error, match="enum"):
        xg.Grammar.from_json_schema(schema)
