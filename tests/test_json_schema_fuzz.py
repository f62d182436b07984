"""JSON Schema against the `jsonschema` package on random schemas, each compiled (any order,
as the corpus runs it) and a set of random instances driven through a matcher on the Llama-3
vocabulary. A schema xg2-jax refuses (UnsupportedSchemaError naming the keyword, or a language
with no instance) is skipped: the refusal says so; a compiled one must judge every instance as
jsonschema does.

- Object keywords together: properties, required, additionalProperties, patternProperties,
  propertyNames (with combinators) and minProperties / maxProperties.
- Nested combinators and arrays: anyOf, oneOf, allOf, not, if/then/else, items, prefixItems,
  contains, over leaves of every type.
- Counted contains: minContains / maxContains beside items, minItems and maxItems, on longer
  arrays.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402

EXAMPLES = int(os.environ.get("XG2_FUZZ_EXAMPLES", "120"))  # XG2_FUZZ_EXAMPLES=N: N fresh examples
XG2_DERANDOMIZE = "XG2_FUZZ_EXAMPLES" not in os.environ

NAMES = ["a", "b", "ab", "x1", "é", "a/b"]
KEYS = NAMES + ["q", "zz", "bb"]
VALUE_SCHEMAS = [True, {"type": "integer"}, {"type": "string"}, {"type": "string", "maxLength": 1},
                 {"enum": [1, "a"]}, {"type": ["integer", "null"]}]
NAME_SCHEMAS = [{"maxLength": 1}, {"minLength": 2}, {"pattern": "^[a-z]+$"}, {"pattern": "b"},
                {"enum": ["a", "ab", "q"]}, {"const": "zz"}, {"not": {"const": "b"}},
                {"anyOf": [{"const": "a"}, {"maxLength": 1}]}, {"anyOf": [{"pattern": "^x"}, {"enum": ["bb", "q"]}]},
                {"oneOf": [{"pattern": "^a"}, {"maxLength": 1}]}, {"allOf": [{"maxLength": 2}, {"pattern": "^[ab]"}]}]
PATTERNS = ["^a", "b$", "^x"]
VALUES = [1, "a", "xy", None]


@st.composite
def object_schemas(draw):
    schema = {"type": "object"}
    declared = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
    if declared:
        schema["properties"] = {n: draw(st.sampled_from(VALUE_SCHEMAS)) for n in declared}
    required = draw(st.lists(st.sampled_from(NAMES + ["q"]), unique=True, max_size=2))
    if required:
        schema["required"] = required
    additional = draw(st.sampled_from(["absent", False, True, {"type": "integer"}, {"type": "string"}]))
    if additional != "absent":
        schema["additionalProperties"] = additional
    if draw(st.booleans()):
        patterns = draw(st.lists(st.sampled_from(PATTERNS), unique=True, min_size=1, max_size=2))
        schema["patternProperties"] = {p: draw(st.sampled_from(VALUE_SCHEMAS)) for p in patterns}
    if draw(st.booleans()):
        schema["propertyNames"] = draw(st.sampled_from(NAME_SCHEMAS))
    if draw(st.booleans()):
        schema["minProperties"] = draw(st.integers(0, 2))
    if draw(st.booleans()):
        schema["maxProperties"] = draw(st.integers(0, 3))
    return schema


instances = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)


@pytest.fixture(scope="module")
def runner():
    if not lib.VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return lib.Runner(any_order=True)


@settings(max_examples=EXAMPLES, derandomize=XG2_DERANDOMIZE, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(schema=object_schemas(), samples=st.lists(instances, min_size=8, max_size=16))
def test_objects_match_jsonschema(runner, schema, samples):
    _check_compiled(runner, schema, samples)


def _check_compiled(runner, schema, samples):
    """Every sample judged as jsonschema judges it, where the schema compiles."""
    import jsonschema

    status, cg = runner.compile(schema)
    assume(cg is not None)  # refused (named keyword) or no instance: not a silent widening
    validator = jsonschema.Draft202012Validator(schema)
    for x in samples:
        expect = "accepted" if validator.is_valid(x) else "rejected"
        assert runner.match(cg, x) == expect, (schema, x)


LEAVES = st.sampled_from([
    {"type": "integer"}, {"type": "string"}, {"type": "null"}, {"type": "boolean"}, {"type": "number", "minimum": 1},
    {"type": "integer", "maximum": 2}, {"type": "string", "maxLength": 1}, {"type": "string", "pattern": "^a"},
    {"const": 1}, {"enum": ["a", 1, None]}, {"multipleOf": 2}, {"minLength": 2}, True, False, {},
    {"type": "array"}, {"type": "object"}, {"minItems": 1}, {"maxItems": 1}, {"required": ["a"]},
])


def _nested(children):
    lists = st.lists(children, min_size=1, max_size=3)
    return st.one_of(
        st.builds(lambda xs: {"anyOf": xs}, lists),
        st.builds(lambda xs: {"oneOf": xs}, lists),
        st.builds(lambda xs: {"allOf": xs}, st.lists(children, min_size=1, max_size=2)),
        st.builds(lambda x: {"not": x}, children),
        st.builds(lambda a, b, c: {"if": a, "then": b, "else": c}, children, children, children),
        st.builds(lambda x: {"type": "array", "items": x}, children),
        st.builds(lambda xs, x: {"type": "array", "prefixItems": xs, "items": x}, st.lists(children, max_size=2),
                  children),
        st.builds(lambda x: {"type": "array", "contains": x}, children),
        st.builds(lambda x, lo, hi: {"contains": x, "minContains": lo, "maxContains": hi}, children,
                  st.integers(0, 2), st.integers(0, 3)),
        st.builds(lambda x, y: {"type": "object", "properties": {"a": x}, "additionalProperties": y}, children,
                  children),
        st.builds(lambda x, y: dict(x, **{"not": y}) if isinstance(x, dict) else {"not": y}, children, children),
    )


nested_schemas = st.recursive(LEAVES, _nested, max_leaves=5)
values = st.recursive(st.sampled_from([None, True, 0, 1, 2, 3, -1, 1.5, "a", "ab", "b", ""]),
                      lambda c: st.one_of(st.lists(c, max_size=3),
                                          st.dictionaries(st.sampled_from(["a", "b"]), c, max_size=2)),
                      max_leaves=5)


@settings(max_examples=EXAMPLES, derandomize=XG2_DERANDOMIZE, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(schema=nested_schemas, samples=st.lists(values, min_size=10, max_size=20))
def test_combinators_and_arrays_match_jsonschema(runner, schema, samples):
    _check_compiled(runner, schema, samples)


ITEM_SCHEMAS = [True, {"type": "integer"}, {"enum": [0, 1, "a"]}, {"not": {"type": "string"}}]
CONTAINS_SCHEMAS = [{"const": 1}, {"type": "integer"}, {"type": "integer", "minimum": 1}, {"enum": ["a", None]},
                    {"not": {"const": 0}}, {"anyOf": [{"const": 1}, {"type": "string"}]}, False, True]


@st.composite
def counted_contains_schemas(draw):
    schema = {"type": "array", "contains": draw(st.sampled_from(CONTAINS_SCHEMAS))}
    if draw(st.booleans()):
        schema["items"] = draw(st.sampled_from(ITEM_SCHEMAS))
    for key, bound in (("minContains", 4), ("maxContains", 4), ("minItems", 3), ("maxItems", 6)):
        if draw(st.booleans()):
            schema[key] = draw(st.integers(0, bound))
    return schema


@settings(max_examples=EXAMPLES, derandomize=XG2_DERANDOMIZE, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(schema=counted_contains_schemas(),
       samples=st.lists(st.lists(st.sampled_from([0, 1, 2, "a", None]), max_size=7), min_size=10, max_size=20))
def test_counted_contains_match_jsonschema(runner, schema, samples):
    _check_compiled(runner, schema, samples)
