"""JSON Schema constructs of issue 22 compiled exactly: oneOf whose alternatives overlap and
close their keys (additionalProperties false), excluded from each other within those keys;
oneOf alternatives told apart by the types of their nested combinators; contains with
minItems/maxItems and two contains; `not multipleOf`.
Every instance's verdict is checked against the `jsonschema` package, and along every instance
the mask allows exactly the tokens the matcher accepts (test_json_schema_coverage.drive)."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402
from test_json_schema_coverage import drive, oracle  # noqa: E402

from xg2_jax._src.errors import UnsupportedSchemaError  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402

CLOSED_AB = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
             "additionalProperties": False}
CLOSED_AC = {"type": "object", "properties": {"a": {"type": "string"}, "c": {"type": "boolean"}},
             "additionalProperties": False}

# (schema, instance texts in the schema's property order).
CASES = {
    # {} and {"a": ...} match both alternatives, so neither is valid.
    "oneOf_closed_objects_shared_key": ({"oneOf": [CLOSED_AB, CLOSED_AC]},
                                        ['{}', '{"a": "x"}', '{"b": 1}', '{"c": true}', '{"a": "x", "b": 1}',
                                         '{"a": "x", "c": false}', '{"b": 1, "c": true}', '{"a": 1}', '{"d": 1}',
                                         '"s"']),
    # Through $ref, with a shared key whose value schemas overlap (integers are numbers) and a
    # requirement on one side.
    "oneOf_closed_refs_overlapping_values": (
        {"definitions": {
            "p": {"properties": {"x": {"type": "number"}, "unit": {"enum": ["cm", "in"]}},
                  "additionalProperties": False},
            "q": {"properties": {"x": {"type": "integer"}, "scale": {"type": "number"}},
                  "additionalProperties": False, "required": ["x"]}},
         "type": "object", "oneOf": [{"$ref": "#/definitions/p"}, {"$ref": "#/definitions/q"}]},
        ['{"x": 1}', '{"x": 1.5}', '{"x": 2, "scale": 1}', '{"unit": "cm"}', '{}', '{"x": 1, "unit": "cm"}',
         '{"x": 1, "unit": "mm"}', '{"scale": 2}']),
    # additionalProperties a schema, keys closed by the schema beside the oneOf: "a" is an
    # extra key of the first alternative there, so its value decides.
    "oneOf_typed_additional_closed_by_base": (
        {"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": False,
         "oneOf": [{"properties": {"b": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
                   {"properties": {"a": {"type": "string"}}, "additionalProperties": False}]},
        ['{}', '{"a": 1}', '{"a": "s"}', '{"b": "s"}', '{"b": 2}', '{"a": 1, "b": "s"}', '{"z": 3}', '[]']),
    # A discriminator-less union of three closed shapes, as in the corpus (colour definitions).
    "oneOf_three_closed_shapes": (
        {"oneOf": [{"type": "object", "properties": {"rgb": {"type": "string"}, "alpha": {"type": "number"}},
                    "additionalProperties": False},
                   {"type": "object", "properties": {"name": {"type": "string"}, "alpha": {"type": "number"}},
                    "additionalProperties": False},
                   {"type": "object", "properties": {"ref": {"type": "string"}}, "additionalProperties": False,
                    "required": ["ref"]}]},
        ['{"rgb": "f00"}', '{"name": "red", "alpha": 0.5}', '{"alpha": 1}', '{}', '{"ref": "x"}',
         '{"rgb": "f00", "name": "red"}', '{"ref": 1}']),
    # Disjoint by type through a nested oneOf: array/string/enum colours against objects.
    "oneOf_types_through_nested_combinators": (
        {"definitions": {"value": {"oneOf": [{"type": "array", "items": {"type": "number"}, "maxItems": 2},
                                             {"type": "string", "pattern": "^#"}, {"enum": ["red", "blue"]}]},
                         "selector": {"anyOf": [{"type": "object", "required": ["ref"]},
                                                {"type": "object", "required": ["ios"]}]}},
         "oneOf": [{"$ref": "#/definitions/value"}, {"$ref": "#/definitions/selector"}]},
        ['[1, 2]', '"#fff"', '"red"', '{"ref": 1}', '{"ios": "x"}', '{}', '"green"', '[1, 2, 3]', 'null']),
    # contains with item counts: some item matches, the count stays within the bounds.
    "contains_with_max_items": ({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 10},
                                 "minItems": 2, "maxItems": 3},
                                ['[10]', '[1, 10]', '[10, 1]', '[1, 2, 30]', '[1, 2]', '[1, 2, 3, 40]', '[10, 20, 30]',
                                 '[1.5, 10]', '[]']),
    "contains_with_min_items_unbounded": ({"type": "array", "contains": {"const": "x"}, "minItems": 3},
                                          ['["x", 1, 2]', '[1, 2, "x"]', '[1, "x", 2, 3]', '["x", "x"]', '[1, 2, 3]',
                                           '["x"]']),
    # Two contains (from allOf): one item may match both, or two items one each, in either order.
    "two_contains": ({"type": "array", "items": {"type": "integer"},
                      "allOf": [{"contains": {"minimum": 10}}, {"contains": {"multipleOf": 2}}]},
                     ['[12]', '[11, 2]', '[2, 11]', '[1, 11, 3, 4]', '[11]', '[2, 4]', '[]', '[1, 3]']),
    # An open alternative overlapping a closed one: excluding the closed one is "some key
    # outside its properties", a member the object must have, written among the extras in the
    # ordered layout.
    "oneOf_open_and_closed_overlap": ({"oneOf": [{"properties": {"a": {"type": "string"}}},
                                                 {"properties": {"a": {}}, "additionalProperties": False}]},
                                      ['{}', '{"a": "x"}', '{"a": 1}', '{"b": 1}', '{"a": "x", "b": 1}',
                                       '{"b": 1, "a": "x"}', '{"a": 1, "b": 2}', '3']),
    # not multipleOf: numbers no divisor divides, within the other bounds; non-numbers fail it.
    "not_multiple_of": ({"type": "number", "not": {"multipleOf": 0.5}, "maximum": 10},
                        ['1.25', '3', '0.1', '-7', '1.5', '2', '0', '1.50', '11', '"a"']),
    "not_multiple_of_integer_any_of": ({"anyOf": [{"type": "integer", "not": {"multipleOf": 3}}, {"type": "string"}]},
                                       ['1', '4', '-5', '"s"', '3', '0', '-9', 'null']),
}

# Still refused: a dependency with a schema has no exact negation, so the other alternative
# cannot exclude it.
UNSUPPORTED = {
    "oneOf_dependency_schema_overlap": ({"oneOf": [{"type": "object", "dependencies": {"x": {"not": {"required": ["e"]}}},
                                                    "minProperties": 1}, {"required": ["x"]}]},
                                        r"'oneOf' at \(root\): .*alternative 0 has no exact negation"),
    "contains_more_positions_than_listed": ({"type": "array", "contains": {"type": "string"}, "maxItems": 100},
                                            r"'contains' at /contains: .*maxItems above 64"),
}


@pytest.fixture(scope="module")
def runner():
    if not lib.VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return lib.Runner()


@pytest.mark.parametrize("any_order", [False, True])
@pytest.mark.parametrize("name", sorted(CASES))
def test_exact(runner, name, any_order):
    schema, texts = CASES[name]
    grammar = Grammar.from_json_schema(schema, strict_mode=False, any_order=any_order)
    cg = runner.compiler.compile_grammar(grammar, lazy=True)
    validator = oracle(schema)
    verdicts = [validator.is_valid(json.loads(t, parse_float=Decimal)) for t in texts]
    assert any(verdicts) and not all(verdicts), "each case needs instances on both sides"
    for text, expect in zip(texts, verdicts):
        assert drive(runner, cg, text) == expect, (text, expect)


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_still_refused_names_the_reason(name):
    schema, message = UNSUPPORTED[name]
    with pytest.raises(UnsupportedSchemaError, match="unsupported keyword " + message):
        Grammar.from_json_schema(schema, strict_mode=False)
