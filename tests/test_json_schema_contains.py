"""minContains / maxContains: counted `contains` judged as `jsonschema` judges it, and the
shapes refused with the keyword and the schema holding it."""

from __future__ import annotations

import json

import jsonschema
import pytest

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string

COUNTED = [
    {"contains": {"const": 1}, "minContains": 2},
    {"contains": {"const": 1}, "maxContains": 1},
    {"contains": {"const": 1}, "minContains": 0, "maxContains": 1},
    {"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3, "minItems": 3, "maxItems": 5},
    {"items": {"type": "integer"}, "contains": {"minimum": 2}, "maxContains": 2},
    {"contains": {"const": 1}, "minContains": 0},  # asserts nothing
    {"maxContains": 0},                              # no contains: ignored
    {"contains": {"const": 1}, "minContains": 3, "maxContains": 2, "type": "array"},  # no array
]
ARRAYS = [[], [1], [2], [1, 1], [1, 2], [2, 2], [1, 2, 1], [1, 1, 1], [3, 1, 2, 1], ["a", 1], [1, 1, 1, 1, 1, 2]]


@pytest.mark.parametrize("any_order", [False, True])
@pytest.mark.parametrize("schema", COUNTED, ids=lambda s: json.dumps(s, separators=(",", ":")))
def test_counted_contains_matches_jsonschema(schema, any_order):
    schema = {"type": "array", **schema} if "type" not in schema else schema
    validator = jsonschema.Draft202012Validator(schema)
    if not any(validator.is_valid(x) for x in ARRAYS + [1]):
        with pytest.raises(xg.GrammarError):
            xg.Grammar.from_json_schema(schema, any_order=any_order)
        return
    grammar = xg.Grammar.from_json_schema(schema, any_whitespace=False, any_order=any_order)
    for x in ARRAYS:
        assert _is_grammar_accept_string(grammar, json.dumps(x)) is validator.is_valid(x), x


@pytest.mark.parametrize("schema, keyword, reason", [
    ({"items": {"contains": {"const": 1}, "maxContains": 2, "maxItems": 10**18}}, "maxContains", "4096 states"),
    ({"contains": {"const": 1}, "minContains": 10**9}, "minContains", "4096 states"),
    ({"contains": {"const": 1}, "maxContains": 1, "prefixItems": [{}]}, "maxContains", "prefixItems"),
    ({"contains": {"minLength": 2}, "maxContains": 1, "allOf": [{"contains": {"const": 1}}]}, "maxContains",
     "another contains"),
])
def test_counted_contains_refusals_name_the_keyword(schema, keyword, reason):
    with pytest.raises(xg.UnsupportedSchemaError, match=f"'{keyword}' at .*{reason}"):
        xg.Grammar.from_json_schema(schema)
