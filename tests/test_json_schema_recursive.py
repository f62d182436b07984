"""Recursive schemas: every site of a lone ``{"$ref": ...}`` shares its target's rule, and a
large recursive grammar compiles lazily and eagerly to the same masks.

The shape is a JSON Schema meta-schema (ajv's json-schema-secure, JSONSchemaBench's
Github_medium o39217): a dozen keywords whose values are ``{"$ref": "#"}``, an ``anyOf`` of
refs, and schema dependencies that split the object into alternatives. Such a schema once
copied the whole root object into every referencing site and hashed its recursive rules in
time quadratic in their number.
"""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from helpers import mask_row

import xg2_jax as xg

KEYWORDS = ["additionalItems", "additionalProperties", "if", "then", "else", "not", "contains",
            "propertyNames"]
META = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "a meta-schema",
    "definitions": {"schemaArray": {"type": "array", "minItems": 1, "items": {"$ref": "#"}}},
    "dependencies": {
        "pattern": {"required": ["maxLength"]},
        "format": {"required": ["maxLength"]},
        "patternProperties": {"required": ["propertyNames"],
                              "properties": {"propertyNames": {"required": ["maxLength"]}}},
    },
    "properties": {
        **{k: {"$ref": "#"} for k in KEYWORDS},
        "items": {"anyOf": [{"$ref": "#"}, {"$ref": "#/definitions/schemaArray"}]},
        "properties": {"additionalProperties": {"$ref": "#"}},
        "allOf": {"$ref": "#/definitions/schemaArray"},
        "anyOf": {"$ref": "#/definitions/schemaArray"},
    },
}
VALID = [
    {},
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 50}},
     "additionalProperties": False},
    {"items": [{"not": {}}, {"pattern": "a", "maxLength": 3}], "allOf": [{"if": {"format": "x",
                                                                              "maxLength": 1}}]},
    {"patternProperties": {}, "propertyNames": {"maxLength": 9}},
    {"items": [], "not": 3},                            # "#" has no type: any value is a schema
]
INVALID = [
    {"pattern": "a"},                                   # a dependency: maxLength missing
    {"properties": {"x": {"format": "date"}}},          # the same, one level down
    {"allOf": []},                                      # schemaArray: minItems 1
    {"patternProperties": {}, "propertyNames": {}},     # nested dependency
    {"items": {"format": "x"}},                         # the same, in "items"
]
OPTIONS = dict(any_order=True, strict_mode=False)  # as JSONSchemaBench compiles it


@pytest.fixture(scope="module")
def grammar_text() -> str:
    return str(xg.Grammar.from_json_schema(META, **OPTIONS))


def test_lone_refs_share_the_target_rule(grammar_text):
    # The root object is written in two rules only: the root's, and the one of
    # /properties/patternProperties's dependency, which adds "required": ["maxLength"] to "#".
    # Every other site of {"$ref": "#"} refers to the root's rule instead of holding a copy.
    # In each, the name-only dependencies (pattern, format -> maxLength) are presence rules of
    # one any-order object, "pattern" and "format" declared as optional members taking any
    # value; only the schema dependency on patternProperties splits it in two.
    holders = {line.split(" ::=")[0]: line.count('"additionalItems"')
               for line in grammar_text.splitlines() if '"additionalItems"' in line}
    assert holders == {"root_value": 2, "propertyNames": 2}, holders


@pytest.mark.parametrize("instance", VALID + INVALID, ids=lambda v: json.dumps(v)[:40])
def test_meta_schema_instances_agree_with_jsonschema(gpt2_tokenizer, instance):
    valid = jsonschema.Draft7Validator(META).is_valid(instance)
    assert valid == (instance in VALID)
    compiled = xg.GrammarCompiler(gpt2_tokenizer).compile_json_schema(META, **OPTIONS)
    m = xg.GrammarMatcher(compiled)
    text = json.dumps(instance)
    assert (m.accept_string(text) and m.is_completed()) == valid, text


def test_lazy_and_eager_masks_agree(gpt2_tokenizer):
    eager = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False).compile_json_schema(
        META, **OPTIONS, lazy=False)
    lazy = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False).compile_json_schema(
        META, **OPTIONS, lazy=True)
    vocab = gpt2_tokenizer.vocab_size
    for instance in VALID:
        ids = xg.greedy_tokenize(gpt2_tokenizer, json.dumps(instance).encode())
        a, b = xg.GrammarMatcher(eager), xg.GrammarMatcher(lazy)
        for t in ids:
            assert np.array_equal(mask_row(a, vocab), mask_row(b, vocab)), (instance, t)
            assert a.accept_token(t) and b.accept_token(t)
        assert a.is_completed() and b.is_completed()


def test_large_recursive_grammars_share_no_wrong_masks():
    """More dependencies make the recursive component large enough to be hashed as a whole
    (one serialisation, members by place): grammars filled through the cross-grammar pool,
    after a similar grammar filled it, give the masks of a compile without the pool."""
    deps = {k: {"required": ["maxLength"]} for k in ("minLength", "const", "enum")}
    big = dict(META, dependencies={**META["dependencies"], **deps})
    variant = dict(big, properties={**big["properties"], "default": {"$ref": "#"}})
    texts = [json.dumps(v) for v in VALID] + ['{"enum": [1], "maxLength": 2, "items": {}}']
    # Single printable bytes and a few words: entries are cheap, hashing is what is tested.
    tok = xg.TokenizerInfo([bytes([c]) for c in range(32, 127)] + [b'": ', b'{"', b'"}', b"</s>"],
                           stop_token_ids=[98])
    before = xg.cross_grammar_cache_stats()["limit_bytes"]
    try:
        xg.clear_cross_grammar_cache()
        pooled = [xg.GrammarCompiler(tok, cache_enabled=False).compile_json_schema(
            s, **OPTIONS, lazy=True) for s in (big, variant)]
        pooled_masks = [[masks_along(c, t) for t in texts] for c in pooled]
        xg.set_cross_grammar_cache_limit(0)
        xg.clear_cross_grammar_cache()
        for schema, masks in zip((big, variant), pooled_masks):
            plain = xg.GrammarCompiler(tok, cache_enabled=False).compile_json_schema(
                schema, **OPTIONS, lazy=True)
            for text, got in zip(texts, masks):
                want = masks_along(plain, text)
                assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want))
    finally:
        xg.set_cross_grammar_cache_limit(before)


def masks_along(compiled, text):
    m = xg.GrammarMatcher(compiled)
    out = []
    for t in xg.greedy_tokenize(compiled.tokenizer_info, text.encode()):
        out.append(mask_row(m, compiled.tokenizer_info.vocab_size))
        assert m.accept_token(t), text
    return out
