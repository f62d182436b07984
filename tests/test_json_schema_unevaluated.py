"""unevaluatedProperties / unevaluatedItems (JSON Schema 2020-12): read as additionalProperties
of a schema that declares every merged property and pattern, and as items past the merged
prefix, where that is exact (the keyword sits in the schema being lowered, with `$ref` targets
and `allOf` members merged in, and no branch whose annotations would count). Instances are
judged as the `jsonschema` package judges them, in both property layouts; the shapes that
need branch annotations are refused, naming the keyword."""

from __future__ import annotations

import json

import jsonschema
import pytest
from json_schema_corpus_lib import schema_ordered

import xg2_jax as xg
from xg2_jax._src.errors import UnsupportedSchemaError

VOCAB = [bytes([c]) for c in range(32, 127)] + [b"</s>"]
TOK = xg.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
COMPILER = xg.GrammarCompiler(TOK, cache_enabled=False)
INT, STR, BOOL = {"type": "integer"}, {"type": "string"}, {"type": "boolean"}

OBJECTS = [{}, {"a": 1}, {"b": 2}, {"a": 1, "b": 2}, {"c": 3}, {"c": "s"}, {"a": 1, "c": "s"}, {"x1": 4},
           {"x1": "s"}, {"a": "s"}, {"b": 1, "x1": 2, "c": 3}, {"a": 1, "b": 2, "c": "t"}]
ARRAYS = [[], [1], [1, "s"], [1, "s", True], [1, "s", 2], [1, 2], ["s"], [1, True, False], [True]]

CASES = {
    "false_at_root": ({"type": "object", "properties": {"a": INT, "b": INT}, "unevaluatedProperties": False},
                      OBJECTS),
    "schema_at_root": ({"type": "object", "properties": {"a": INT}, "unevaluatedProperties": STR}, OBJECTS),
    "alone": ({"unevaluatedProperties": STR}, OBJECTS),
    # Properties of allOf members and $ref targets are evaluated, unlike additionalProperties.
    "all_of_members": ({"type": "object", "allOf": [{"properties": {"a": INT}}, {"properties": {"b": INT}}],
                        "unevaluatedProperties": False}, OBJECTS),
    "ref_target": ({"$defs": {"base": {"properties": {"a": INT}}}, "type": "object", "$ref": "#/$defs/base",
                    "properties": {"b": INT}, "unevaluatedProperties": STR}, OBJECTS),
    "pattern_evaluates": ({"type": "object", "properties": {"a": INT}, "patternProperties": {"^x": INT},
                           "unevaluatedProperties": False}, OBJECTS),
    # additionalProperties in any merged schema evaluates every name: the keyword has no effect.
    "additional_in_member": ({"type": "object", "allOf": [{"properties": {"a": INT}, "additionalProperties": INT}],
                              "unevaluatedProperties": False}, OBJECTS),
    "required": ({"type": "object", "properties": {"a": INT}, "required": ["a"], "unevaluatedProperties": INT},
                 OBJECTS),
    # A $ref standing alone hands its scope to the target.
    "through_lone_ref": ({"$defs": {"m": {"type": "object", "allOf": [{"properties": {"a": INT}}],
                                          "properties": {"b": INT}, "unevaluatedProperties": False}},
                          "$ref": "#/$defs/m"}, OBJECTS),
    "property_through_ref": ({"$defs": {"m": {"properties": {"a": INT}, "unevaluatedProperties": STR}},
                              "type": "object", "properties": {"o": {"$ref": "#/$defs/m"}}},
                             [{"o": o} for o in OBJECTS]),
    "nested": ({"type": "object", "properties": {"o": {"properties": {"a": INT}, "unevaluatedProperties": False}}},
               [{"o": o} for o in OBJECTS]),
    "enum_members": ({"properties": {"a": INT}, "unevaluatedProperties": False,
                      "enum": [{"a": 1}, {"b": 2}, {"a": 1, "c": "s"}, 5]}, OBJECTS + [5]),
    "prefix_false": ({"type": "array", "prefixItems": [INT, STR], "unevaluatedItems": False}, ARRAYS),
    "prefix_schema": ({"type": "array", "prefixItems": [INT], "unevaluatedItems": BOOL}, ARRAYS),
    "items_alone": ({"type": "array", "unevaluatedItems": INT}, ARRAYS),
    "all_of_prefix": ({"type": "array", "allOf": [{"prefixItems": [INT, STR]}], "unevaluatedItems": BOOL}, ARRAYS),
    "items_evaluates": ({"type": "array", "prefixItems": [INT], "items": STR, "unevaluatedItems": False}, ARRAYS),
    "items_in_member": ({"type": "array", "allOf": [{"items": INT}], "unevaluatedItems": False}, ARRAYS),
}


def accepts(compiled, text: str) -> bool:
    m = xg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.accept_token(TOK.stop_token_ids[0])


@pytest.mark.parametrize("any_order", [False, True], ids=["ordered", "any_order"])
@pytest.mark.parametrize("case", list(CASES))
def test_unevaluated_matches_jsonschema(case, any_order):
    schema, instances = CASES[case]
    validator = jsonschema.Draft202012Validator(schema)
    compiled = COMPILER.compile_json_schema(schema, any_whitespace=False, strict_mode=False, any_order=any_order)
    for instance in instances:
        written = instance if any_order else schema_ordered(schema, instance)
        expected = validator.is_valid(instance)
        assert accepts(compiled, json.dumps(written)) == expected, (case, instance)


def test_unevaluated_properties_keeps_strict_mode_open():
    """A schema with unevaluatedProperties states what undeclared names take, as
    additionalProperties does, so strict_mode does not close it."""
    schema = {"type": "object", "properties": {"a": INT}, "unevaluatedProperties": STR}
    compiled = COMPILER.compile_json_schema(schema, any_whitespace=False, strict_mode=True)
    assert accepts(compiled, '{"a": 1, "z": "s"}')
    assert not accepts(compiled, '{"a": 1, "z": 2}')


REFUSED = {
    "beside_any_of": {"type": "object", "anyOf": [{"properties": {"a": INT}}, {"properties": {"b": INT}}],
                      "unevaluatedProperties": False},
    "beside_if": {"type": "object", "if": {"properties": {"a": {"const": 1}}}, "then": {"properties": {"b": INT}},
                  "unevaluatedProperties": False},
    "in_member": {"type": "object", "allOf": [{"properties": {"a": INT}, "unevaluatedProperties": False}],
                  "properties": {"b": INT}},
    "in_ref_target_with_siblings": {"$defs": {"m": {"properties": {"a": INT}, "unevaluatedProperties": False}},
                                    "type": "object", "$ref": "#/$defs/m", "properties": {"b": INT}},
    "beside_negated_members": {"type": "object", "properties": {"a": INT}, "not": {"properties": {"b": STR}},
                               "unevaluatedProperties": False},
    "items_beside_contains": {"type": "array", "contains": INT, "unevaluatedItems": False},
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_unevaluated_refused_where_branch_annotations_count(case):
    with pytest.raises(UnsupportedSchemaError, match=r"unevaluated(Properties|Items)"):
        xg.Grammar.from_json_schema(REFUSED[case])


def test_unevaluated_true_asserts_nothing_and_bad_values_are_located():
    xg.Grammar.from_json_schema({"anyOf": [{"type": "object"}], "unevaluatedProperties": True})
    with pytest.raises(xg.GrammarError, match="unevaluatedItems must be a boolean or an object"):
        xg.Grammar.from_json_schema({"type": "array", "unevaluatedItems": "no"})
