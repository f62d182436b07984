"""The cross-grammar pool: grammars that share structure reuse mask cores, and the masks are
exactly those of a compile without the pool; the pool stays within its memory limit."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import xg2_jax as xg
from xg2_jax import greedy_tokenize

STRING = r'string ::= "\"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt])* "\""'
# The string rule is referenced from more than three sites, so it stays a rule of its own
# (rules with few sites are inlined into their callers, which then differ between grammars).
GRAMMARS = [
    'root ::= "{" string ":" string ("," string ":" string)* "}"\n' + STRING,
    'root ::= "[" string ("," string)* "]" | "(" string string string ")"\n' + STRING,
    'root ::= "key=" string ";" | "k2=" string | "k3=" string | "k4=" string | "n=" [0-9]+\n' + STRING,
]
TEXTS = [b'{"a b":"c\\"d"}', b'["x","y z","\\n"]', b'key="value with spaces";']


@pytest.fixture
def pool_limit():
    """Restores the pool's limit and contents after the test."""
    before = xg.cross_grammar_cache_stats()["limit_bytes"]
    yield
    xg.set_cross_grammar_cache_limit(before)


def masks_along(compiled, data):
    matcher = xg.GrammarMatcher(compiled)
    mask = xg.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    out = []
    for i in range(len(data) + 1):
        matcher.fill_next_token_bitmask(mask)
        out.append(mask[0].copy())
        if i < len(data) and not matcher.accept_string(data[i:i + 1]):
            break
    return out


def test_shared_structure_hits_and_same_masks(gpt2_tokenizer, pool_limit):
    tok = gpt2_tokenizer
    xg.clear_cross_grammar_cache()
    pooled = xg.GrammarCompiler(tok, cache_enabled=False)
    first = pooled.compile_grammar(GRAMMARS[0], lazy=False)
    misses_after_first = xg.cross_grammar_cache_stats()["misses"]
    hits_before = xg.cross_grammar_cache_stats()["hits"]
    others = [pooled.compile_grammar(g, lazy=False) for g in GRAMMARS[1:]]
    stats = xg.cross_grammar_cache_stats()
    assert stats["hits"] > hits_before, "the shared string rule should be reused"
    assert stats["misses"] > misses_after_first
    # Without the pool: identical masks.
    xg.set_cross_grammar_cache_limit(0)
    xg.clear_cross_grammar_cache()
    plain = xg.GrammarCompiler(tok, cache_enabled=False)
    for grammar, compiled in zip(GRAMMARS, [first] + others):
        reference = plain.compile_grammar(grammar, lazy=False)
        for text in TEXTS:
            for a, b in zip(masks_along(compiled, text), masks_along(reference, text)):
                assert np.array_equal(a, b), (grammar, text)


def test_second_schema_compiles_from_the_pool(gpt2_tokenizer, pool_limit):
    xg.clear_cross_grammar_cache()
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    base = {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["name", "tags"]}
    compiler.compile_json_schema(base, lazy=False)
    entries = xg.cross_grammar_cache_stats()["entries"]
    hits = xg.cross_grammar_cache_stats()["hits"]
    variant = dict(base, properties=dict(base["properties"], note={"type": "string"}))
    compiled = compiler.compile_json_schema(variant, lazy=False)
    stats = xg.cross_grammar_cache_stats()
    assert stats["hits"] > hits
    assert stats["entries"] >= entries
    doc = json.dumps({"name": "x", "tags": ["a", "b"], "note": "n"}).encode()
    matcher = xg.GrammarMatcher(compiled)
    for tid in greedy_tokenize(gpt2_tokenizer, doc):
        assert matcher.accept_token(tid)
    assert matcher.is_completed()


def test_pool_respects_its_limit(gpt2_tokenizer, pool_limit):
    xg.clear_cross_grammar_cache()
    xg.set_cross_grammar_cache_limit(200_000)
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    for n in range(12):
        compiler.compile_grammar(f'root ::= "k{n}=" [a-z{n % 10}]+ ("," [0-9]{{1,{n + 2}}})*', lazy=False)
        assert xg.cross_grammar_cache_stats()["bytes"] <= 200_000
    assert xg.cross_grammar_cache_stats()["evictions"] > 0


def test_concurrent_compiles_match_serial(gpt2_tokenizer, pool_limit):
    schemas = [{"type": "object", "properties": {f"f{i}": {"type": "string"}, "n": {"type": "integer"}},
                "required": [f"f{i}", "n"]} for i in range(8)]
    docs = [json.dumps({f"f{i}": "v a l", "n": -12}).encode() for i in range(8)]
    xg.clear_cross_grammar_cache()
    serial = [xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False).compile_json_schema(s, lazy=False) for s in schemas]
    want = [masks_along(c, d) for c, d in zip(serial, docs)]
    xg.clear_cross_grammar_cache()
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    results = [None] * 8

    def work(i):
        results[i] = masks_along(compiler.compile_json_schema(schemas[i], lazy=False), docs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, exp in zip(results, want):
        assert len(got) == len(exp)
        for a, b in zip(got, exp):
            assert np.array_equal(a, b)


# Rules of one shape whose references point at different rules: a cached automaton keys its
# rule edges by reference slot, so it must be relabelled per grammar.
# Recursive rules, so that inlining keeps the references (automata are built only for the
# rules the root still reaches): `pair` has one shape in both grammars, its slots swapped.
SLOT_GRAMMARS = [
    'root ::= pair | "!" other\npair ::= "<" digits "|" letters ">" | "(" pair ")"\n'
    'digits ::= [0-9] digits?\nletters ::= [a-z] letters?\nother ::= [A-Z]+ digits',
    'root ::= pair | "!" other\npair ::= "<" letters "|" digits ">" | "(" pair ")"\n'
    'digits ::= [0-9] digits?\nletters ::= [a-z] letters?\nother ::= [A-Z]+ letters',
]
SLOT_TEXTS = [b"<12|ab>", b"<ab|12>", b"!AB12", b"!ABab"]


def test_cached_rule_automata_relabel_references(gpt2_tokenizer):
    cold = []
    for g in SLOT_GRAMMARS:
        xg.clear_cross_grammar_cache()
        cold.append(xg.GrammarCompiler(gpt2_tokenizer).compile_grammar(g, lazy=False))
    xg.clear_cross_grammar_cache()
    warm = [xg.GrammarCompiler(gpt2_tokenizer).compile_grammar(g, lazy=False) for g in SLOT_GRAMMARS]
    assert xg.cross_grammar_cache_stats()["automaton_hits"] > 0
    for c, w in zip(cold, warm):
        for text in SLOT_TEXTS:
            a, b = masks_along(c, text), masks_along(w, text)
            assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b)), text
            mc, mw = xg.GrammarMatcher(c), xg.GrammarMatcher(w)
            assert mc.accept_string(text.decode()) == mw.accept_string(text.decode())
            assert mc.is_completed() == mw.is_completed()


# One tool's rules under different follow contexts: inside different tool sets (same follow
# language: pruned suffixes reused) and inside an array or an object member (different follow
# language: must not be reused). Strings end in tokens such as '",' or '"}' whose remainder is
# checked against what follows the rule.
TOOL = {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["q"], "additionalProperties": False}
OTHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
         "additionalProperties": False}
# A free-form value: the any-JSON rules are recursive, so the follow closure of the strings
# inside it is cyclic (fingerprinted by serialising the follow graph).
FREE = {"type": "object", "properties": {"meta": {}, "tag": {"type": "string"}}, "required": ["meta"],
        "additionalProperties": False}
# A recursive node in two places: '}' follows a node only inside the object, so a token such
# as '"}}' ending a string of the node is pruned in the array and kept in the object.
NODE_DEFS = {"node": {"type": "object", "properties": {
    "v": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["v"], "additionalProperties": False}}


def tool_call(name, params):
    return {"type": "object", "properties": {"name": {"const": name}, "arguments": params},
            "required": ["name", "arguments"], "additionalProperties": False}


FOLLOW_SCHEMAS = [
    {"anyOf": [tool_call("search", TOOL), tool_call("weather", OTHER)]},
    {"anyOf": [tool_call("weather", OTHER), tool_call("search", TOOL), tool_call("w2", OTHER)]},
    {"type": "array", "items": TOOL},
    {"type": "object", "properties": {"x": TOOL, "y": {"type": "string"}}, "required": ["x"],
     "additionalProperties": False},
    {"anyOf": [tool_call("free", FREE), tool_call("search", TOOL)]},
    {"anyOf": [tool_call("weather", OTHER), tool_call("free", FREE)]},
    {"type": "array", "items": FREE},
    {"$defs": NODE_DEFS, "type": "array", "items": {"$ref": "#/$defs/node"}},
    {"$defs": NODE_DEFS, "type": "object", "properties": {"t": {"$ref": "#/$defs/node"}}, "required": ["t"],
     "additionalProperties": False},
]
FOLLOW_DOCS = [
    [{"name": "search", "arguments": {"q": "a \"b\"", "n": 3}}, {"name": "weather", "arguments": {"city": "Oslo"}}],
    [{"name": "search", "arguments": {"q": "x,y}", "n": -1}}, {"name": "w2", "arguments": {"city": "\"Q\""}}],
    [[{"q": "a", "n": 1}, {"q": "b\"],"}], []],
    [{"x": {"q": "}\","}, "y": "z"}, {"x": {"q": "", "n": 0}}],
    [{"name": "free", "arguments": {"meta": {"a": ["b\"]", {"c": "d}"}]}, "tag": "t"}}],
    [{"name": "free", "arguments": {"meta": ["x\",", 1, {"y": "}"}]}}],
    [[{"meta": {"k": "v\"}"}, "tag": "],"}, {"meta": "s"}]],
    [[{"v": "a", "kids": [{"v": "b}"}]}, {"v": "c"}]],
    [{"t": {"v": "a", "kids": [{"v": "b", "kids": []}]}}, {"t": {"v": "x"}}],
]


def test_pruned_suffixes_reused_only_under_the_same_follow(gpt2_tokenizer, pool_limit):
    xg.clear_cross_grammar_cache()
    pooled = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    compiled = []
    for schema in FOLLOW_SCHEMAS:
        compiled.append(pooled.compile_json_schema(schema, lazy=False))
        if len(compiled) == 2:
            assert xg.cross_grammar_cache_stats()["suffix_hits"] > 0, "the tool's pruned suffixes should be reused"
    xg.set_cross_grammar_cache_limit(0)
    xg.clear_cross_grammar_cache()
    plain = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    for schema, got, docs in zip(FOLLOW_SCHEMAS, compiled, FOLLOW_DOCS):
        want = plain.compile_json_schema(schema, lazy=False)
        for doc in docs:
            text = json.dumps(doc).encode()
            a, b = masks_along(got, text), masks_along(want, text)
            assert len(a) == len(b) == len(text) + 1, text
            assert all(np.array_equal(x, y) for x, y in zip(a, b)), text
