"""A dict schema reaches the core as it is (no json.dumps and re-parse): the grammar, the
warnings and the errors are the text path's, for corpus schemas and for the values where
json.dumps has rules of its own (non-str keys, NaN, lone surrogates, tuples, big ints, deep
nesting)."""

from __future__ import annotations

import collections
import json
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402

from xg2_jax import _core  # noqa: E402
from xg2_jax._src.errors import XG2Error  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402


def outcome(schema, **options):
    """(ebnf, warning texts) or (error type, message) of Grammar.from_json_schema."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            g = Grammar.from_json_schema(schema, **options)
        except (XG2Error, ValueError, TypeError) as e:
            return type(e).__name__, str(e)
    return g.to_ebnf(), [str(w.message) for w in caught]


def as_text(schema):
    return json.dumps(schema)


CORPUS = [e["data"]["schema"] for e in lib.jsb_sample(lib.jsb_categories(), per_category=3)]


@pytest.mark.parametrize("index", range(len(CORPUS)))
@pytest.mark.parametrize("strict_mode", [False, True])
def test_corpus_dict_matches_text(index, strict_mode):
    schema = CORPUS[index]
    options = dict(strict_mode=strict_mode, on_unsupported="warn")
    assert outcome(schema, **options) == outcome(as_text(schema), **options)


EDGE = {
    "numbers": {"type": "object", "properties": {
        "a": {"type": "number", "minimum": 1.5, "maximum": 1e10, "multipleOf": 0.25},
        "b": {"type": "integer", "minimum": -(10 ** 30), "maximum": 10 ** 30},
        "c": {"const": -0.0}, "d": {"enum": [1, 2.0, 1e-7, 123456789012345678901234567890]}}},
    "nested_tuples": {"enum": [(1, (2, [3, {"k": (4,)}])), [None, True, False]]},
    "unicode": {"properties": {"\u00e9t\u00e9": {"const": "\u65e5\u672c\U0001f600"}}, "required": ["\u00e9t\u00e9"]},
    "control_chars": {"const": "tab\there\nnew\x01line\"quote\\back"},
    "ordered_dict": collections.OrderedDict([("type", "object"), ("required", ["b", "a"]),
                                             ("properties", {"b": {"type": "string"}, "a": {}})]),
    "int_key": {"properties": {1: {"type": "string"}}},
    "nan": {"enum": [float("nan")]},
    "infinity": {"maximum": float("inf")},
    "lone_surrogate": {"const": "\ud800"},
    "set_value": {"enum": {1, 2}},
    "unsupported_keyword": {"type": "string", "contentSchema": {"type": "number"}},
    "true": True,
    "false": False,
}


@pytest.mark.parametrize("name", sorted(EDGE))
def test_edge_values_match_text(name):
    schema = EDGE[name]
    try:
        text = as_text(schema)
    except (TypeError, ValueError) as e:  # json.dumps refuses it: so must the dict path
        assert outcome(schema)[0] == type(e).__name__
        return
    for options in (dict(), dict(on_unsupported="warn"), dict(any_whitespace=False, indent=2)):
        assert outcome(schema, **options) == outcome(text, **options)


def test_core_takes_dicts_and_declines_what_needs_json_dumps():
    grammar, warns = _core.grammar_from_json_schema({"type": "integer"})
    assert warns == [] and "[1-9]" in grammar.to_ebnf()
    for needs_dumps in ({1: {}}, {"enum": [float("nan")]}, {"const": "\ud800"}, {"enum": {1}}):
        assert _core.grammar_from_json_schema(needs_dumps) is None


def test_deep_nesting_raises_like_text():
    deep = {}
    node = deep
    for _ in range(5000):
        node["items"] = {}
        node = node["items"]
    kind = outcome(deep)[0]
    assert kind == "LimitExceededError"
