"""`propertyNames` beside declared properties and combinators: the keys an object takes beyond
its declared ones are exactly those the schema allows (instances checked against the
`jsonschema` package, in any order and in the schema's order)."""

from __future__ import annotations

import functools
import json
import random
import sys
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import greedy_tokenize  # noqa: E402
from xg2_jax._src.errors import GrammarError  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402

SAMPLES = [{}, {"a": 1}, {"a": "x"}, {"b": 1}, {"b": "x"}, {"ab": 1}, {"ab": "x"}, {"abc": "x"}, {"x1": "x"},
           {"x1": 1}, {"a": 1, "b": "x"}, {"a": "x", "b": "x"}, {"a": 1, "ab": "y"}, {"c": True}, {"é": "x"},
           {"a/b": "x"}, {"a/b": 1}, {"q": None}, 1, "a", None]

CASES = {
    # A declared name that propertyNames also allows keeps its own schema (additionalProperties
    # applies to the other keys only).
    "max_length_beside_declared": {"type": "object", "properties": {"a": {"type": "integer"}},
                                   "propertyNames": {"maxLength": 2}, "additionalProperties": {"type": "string"}},
    "pattern_beside_declared": {"type": "object", "properties": {"ab": {"type": "integer"}},
                                "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": {"type": "string"}},
    "declared_outside_names": {"type": "object", "properties": {"x1": {"type": "integer"}},
                               "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": {"type": "string"}},
    "declared_with_slash": {"type": "object", "properties": {"a/b": {"type": "integer"}},
                            "propertyNames": {"maxLength": 3}, "additionalProperties": {"type": "string"}},
    "required_and_not_enum": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                              "propertyNames": {"not": {"enum": ["b", "c"]}}, "additionalProperties": {"type": "string"}},
    "enum_beside_declared": {"type": "object", "properties": {"a": {"type": "integer"}},
                             "propertyNames": {"enum": ["a", "b", "ab"]}, "additionalProperties": {"type": "string"}},
    "enum_with_length": {"type": "object", "propertyNames": {"enum": ["a", "ab", "abc"], "maxLength": 2}},
    # Combinators in propertyNames.
    "anyOf_consts": {"type": "object", "propertyNames": {"anyOf": [{"const": "a"}, {"const": "b"}]}},
    "oneOf_consts": {"type": "object", "propertyNames": {"oneOf": [{"const": "a"}, {"const": "b"}]}},
    "anyOf_mixed": {"type": "object", "propertyNames": {"anyOf": [{"pattern": "^x"}, {"maxLength": 1}]}},
    "anyOf_overlapping": {"type": "object", "propertyNames": {"anyOf": [{"pattern": "^a"}, {"maxLength": 1}]},
                          "additionalProperties": {"type": "string"}},
    "anyOf_beside_declared": {"type": "object", "properties": {"a": {"type": "integer"}},
                              "propertyNames": {"anyOf": [{"const": "a"}, {"maxLength": 2}]},
                              "additionalProperties": {"type": "string"}},
    "oneOf_overlapping": {"type": "object", "propertyNames": {"oneOf": [{"pattern": "^a"}, {"maxLength": 1}]}},
    "required_outside_names_optional": {"type": "object", "properties": {"x1": {}, "a": {"type": "integer"}},
                                        "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": False},
    "required_undeclared": {"type": "object", "required": ["ab"], "propertyNames": {"maxLength": 2}},
    "oneOf_enums": {"type": "object", "propertyNames": {"oneOf": [{"enum": ["a", "ab"]}, {"enum": ["b"]}]}},
    "anyOf_with_sibling": {"type": "object", "propertyNames": {"maxLength": 1, "anyOf": [{"const": "a"}, {"const": "ab"},
                                                                                        {"pattern": "^[bc]"}]}},
    "ref_anyOf": {"type": "object", "$defs": {"n": {"anyOf": [{"const": "a"}, {"const": "q"}]}},
                  "propertyNames": {"$ref": "#/$defs/n"}},
}


@pytest.fixture(scope="module", params=[True, False], ids=["any_order", "ordered"])
def runner(request):
    return lib.Runner(any_order=request.param)


@pytest.mark.parametrize("name", sorted(CASES))
def test_property_names_exact(runner, name):
    assert lib.check_against_jsonschema(runner, CASES[name], SAMPLES) > 0


def test_required_name_outside_property_names_has_no_instance():
    schema = {"type": "object", "properties": {"x1": {}}, "required": ["x1"], "propertyNames": {"pattern": "^[a-z]+$"}}
    with pytest.raises(GrammarError, match="required property \"x1\" is not a name propertyNames allows"):
        Grammar.from_json_schema(schema)


@pytest.mark.parametrize("text,ok", [
    ('{"a": 1}', True),
    ('{"a": "x"}', False),
    ('{"\\u0061": "x"}', False),  # the declared name in another spelling is still declared
    ('{"\\u0062": "x"}', True),
    ('{"a\\/b": "x"}', False),   # "a/b" is declared too, with its slash escaped
    ('{"a/b": 2}', True),
])
def test_declared_names_in_every_spelling(text, ok):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "a/b": {"type": "integer"}},
              "propertyNames": {"maxLength": 3}, "additionalProperties": {"type": "string"}}
    tok = xg.TokenizerInfo([chr(i) for i in range(128)] + ["</s>"], stop_token_ids=[128])
    cg = xg.GrammarCompiler(tok).compile_grammar(Grammar.from_json_schema(schema), lazy=True)
    m = xg.GrammarMatcher(cg)
    accepted = all(m.accept_token(t) for t in greedy_tokenize(tok, text)) and m.is_completed()
    assert accepted is ok


@pytest.mark.parametrize("text,ok", [
    ('{"a": 1}', True),
    ('{"abc": 1}', False),     # declared, but propertyNames refuses it
    ('{"qq": "x"}', True),
    ('{"a": "x"}', False),     # declared: its own schema
    ('{"bq": "x"}', False),    # a name propertyNames allows, holding the excluded "bq"
    ('{"qq": "bqz"}', False),
])
def test_declared_names_beside_excludes(text, ok):
    """With excluded substrings, the names propertyNames allows are still those of the schema
    (the excludes bound what is written), and free keys keep both filters."""
    from xg2_jax.testing import _is_grammar_accept_string

    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "abc": {"type": "integer"}},
              "propertyNames": {"maxLength": 2}, "additionalProperties": {"type": "string"}}
    tag = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema, "excludes": ["bq"]}}
    grammar = xg.Grammar.from_structural_tag(json.dumps(tag))
    assert _is_grammar_accept_string(grammar, text) is ok


UNDECLARED_SPELLINGS = [
    '{"a": 1}', '{"b": "x"}', '{"\\u0061": "x"}', '{"\\u0062": "x"}', '{"ab\\u0063": "x"}', '{"é": "x"}',
    '{"\\u00e9": "x"}', '{"\\u00E9": "x"}', '{"\\u00e8": "x"}', '{"\\u0001": "x"}', '{"\\u0002": "x"}',
    '{"\\ud83d\\ude00": "x"}', '{"\\ud83d\\ude01": "x"}', '{"\\n": "x"}', '{"\\/": "x"}', '{"\\"": "x"}',
    '{"\\u0022": "x"}']


@functools.lru_cache(maxsize=8)
def _grammar(schema_text: str, any_order: bool) -> Grammar:
    return Grammar.from_json_schema(schema_text, any_whitespace=False, any_order=any_order)


def _undeclared_schema(extra_names: int) -> dict:
    props = {name: {"type": "integer"} for name in ("a", "é", "\u0001", "😀", '"')}
    rng = random.Random(1)  # enough random names for the expression form (past 20,000 states)
    for _ in range(extra_names):
        props["".join(rng.choice("abcdefghijklmnopqrstuvwxyzé") for _ in range(12))] = {"type": "integer"}
    return {"type": "object", "properties": props, "additionalProperties": {"type": "string"}}


@pytest.mark.parametrize("extra_names", [0, 2500], ids=["automaton", "expression"])
@pytest.mark.parametrize("any_order", [False, True])
@pytest.mark.parametrize("text", UNDECLARED_SPELLINGS)
def test_undeclared_key_never_spells_a_declared_name(text, any_order, extra_names):
    """An undeclared key never decodes to a declared name, in any spelling (a \\u escape, either
    hex case, a surrogate pair, a short escape), in both forms of the exclusion; it is written
    without \\u escapes of U+0020..U+007F (a documented narrowing: each has a raw or short form)."""
    from xg2_jax.testing import _is_grammar_accept_string

    schema = _undeclared_schema(extra_names)
    grammar = _grammar(json.dumps(schema), any_order)
    instance = json.loads(text)
    printable_escape = any(f"\\u00{c:02x}" in text.lower() for c in range(0x20, 0x80))
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance) and not printable_escape
    assert _is_grammar_accept_string(grammar, text) is expected


def test_undeclared_key_in_the_expression_form_spells_names_exactly():
    """Past the automaton's state limit, a long declared name with a non-ASCII character is out
    in its \\u spelling too, and a name one character longer is in."""
    from xg2_jax.testing import _is_grammar_accept_string

    schema = _undeclared_schema(2500)
    grammar = _grammar(json.dumps(schema), False)
    assert "ByteDfa" not in [r for r in str(grammar).splitlines() if r.startswith("additional_property")][0]
    name = next(k for k in schema["properties"] if len(k) == 12 and "é" in k)
    for ensure_ascii in (False, True):
        assert not _is_grammar_accept_string(grammar, json.dumps({name: "x"}, ensure_ascii=ensure_ascii))
        assert _is_grammar_accept_string(grammar, json.dumps({name + "z": "x"}, ensure_ascii=ensure_ascii))
