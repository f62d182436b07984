"""Languages built by automaton operations (a ByteDfa node): a JSON Schema `pattern` with
minLength/maxLength the pattern does not imply. Exactness is checked against Python `re` and
`len` (code points) on strings encoded every way JSON allows (raw, short escapes, \\u escapes,
surrogate pairs), end to end through a matcher on the Llama-3 vocabulary."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2_jax as xg
from xg2_jax import greedy_tokenize
from xg2_jax._src.errors import UnsupportedSchemaError
from xg2_jax._src.grammar import Grammar

VOCAB = Path("/work/shared/data/vocab/llama3.json.gz")
# Reproducible by default; XG2_FUZZ_EXAMPLES=N explores N fresh examples per case instead.
EXAMPLES = int(os.environ.get("XG2_FUZZ_EXAMPLES", "60"))
XG2_DERANDOMIZE = "XG2_FUZZ_EXAMPLES" not in os.environ

# Characters whose regex meaning agrees between Python `re` and ECMAScript for the patterns
# below (no \r or U+2028/2029, which `.` treats differently; no \d \w \s, which Python widens).
ALPHABET = ["a", "b", "c", "x", "y", "z", "<", ">", "*", "#", "%", "&", ":", "+", "?", "A", "0", "7", "-", "_", " ", ".", "\n", "\t", '"', "\\", "/", "é", "€", "😀", "\x01", "\x7f"]


@pytest.fixture(scope="module")
def compiler():
    if not VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return xg.GrammarCompiler(xg.TokenizerInfo.from_vocab_file(VOCAB), cache_enabled=False)


def accepts(compiler, compiled, text: str) -> bool:
    m = xg.GrammarMatcher(compiled)
    for t in greedy_tokenize(compiler.tokenizer_info, text.encode("utf-8")):
        if not m.accept_token(t):
            return False
    return m.accept_token(compiler.tokenizer_info.stop_token_ids[0])


def escaped(s: str, upper: bool) -> str:
    """Every character but printable ASCII as \\u escapes (a surrogate pair above U+FFFF).
    Printable ASCII stays raw: literal characters of a pattern are matched in that spelling
    only (JsonStringContentLiteral), a limitation of the pattern mapping, not of the counter."""
    out = []
    for ch in s:
        if " " <= ch <= "~" and ch not in '"\\':
            out.append(ch)
            continue
        h = ch.encode("utf-16-be").hex()
        h = h.upper() if upper else h
        out.extend("\\u" + h[i:i + 4] for i in range(0, len(h), 4))
    return '"' + "".join(out) + '"'


def encodings(s: str) -> list[str]:
    return [json.dumps(s), json.dumps(s, ensure_ascii=False), json.dumps(s, ensure_ascii=False).replace("/", "\\/"),
            escaped(s, False), escaped(s, True)]


CASES = [
    ("^a+b$", 0, 3),
    ("^a+b$", 3, -1),
    ("^[a-z]+(-[a-z]+)*$", 3, 8),
    ("ab", 0, 5),
    ("ab", 4, -1),
    ("^[^0-9]*$", 2, 4),
    ("^.{2,}$", 0, 3),
    ("é", 1, 3),
    ("^(a|😀|\\\\)*$", 2, 3),
    ('^[A-Za-z0-9 "/]*$', 1, 2),
    ("^(\\n|\\t|\\x01)+z?$", 2, 2),
    ("^[€-😀]+$", 0, 2),
    ("^(abc|a)*$", 4, 6),
    ("a.c", 0, 4),
    ("^$", 0, 0),
    ("^[a-c]{2,5}z*$", 3, 4),
    ("^[A-Za-z0-9_][^<>*#.%&:\\\\+?/]*$", 2, 6),
    ("^(x|yy)[^a]*$", 3, -1),
    ("^(x|yy)[^a]*$", 0, 4),
]


# Several patterns (allOf) intersect their automata.
MULTI_CASES = [
    (("^[a-c]+$", "b"), 0, -1),
    (("a", "b", "^[^z]*$"), 0, 5),
    (("^(ab)*$", "^a"), 2, 6),
    (("é|😀", "^[^\\n]{2,}$"), 0, -1),
]


def ecma(pattern: str) -> re.Pattern:
    # ECMAScript `$` (no multiline) matches only at the very end; Python's also before a final \n.
    return re.compile(pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern)


@pytest.mark.parametrize("pattern,min_len,max_len", CASES + MULTI_CASES)
def test_pattern_with_length_bounds_is_exact(compiler, pattern, min_len, max_len):
    check_pattern_language(compiler, pattern, min_len, max_len)


# Without bounds a pattern is mapped onto JSON string content node by node (no ByteDfa):
# its character classes' \u escapes are one hex-digit tree per class, checked here.
@pytest.mark.parametrize("pattern", list(dict.fromkeys(p for p, _, _ in CASES)))
def test_pattern_without_bounds_is_exact(compiler, pattern):
    check_pattern_language(compiler, pattern, 0, -1)


def check_pattern_language(compiler, pattern, min_len, max_len):
    patterns = pattern if isinstance(pattern, tuple) else (pattern,)
    schema = {"type": "string", "allOf": [{"pattern": p} for p in patterns]}
    if min_len:
        schema["minLength"] = min_len
    if max_len >= 0:
        schema["maxLength"] = max_len
    compiled = compiler.compile_grammar(Grammar.from_json_schema(schema), lazy=True)
    rxs = [ecma(p) for p in patterns]
    text = st.lists(st.sampled_from(ALPHABET), max_size=9).map("".join)
    matching = st.from_regex(rxs[0], alphabet=st.sampled_from(ALPHABET))

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=XG2_DERANDOMIZE)
    @given(st.one_of(text, matching))
    def run(s):
        want = all(rx.search(s) for rx in rxs) and min_len <= len(s) and (max_len < 0 or len(s) <= max_len)
        for enc in encodings(s):
            assert accepts(compiler, compiled, enc) == want, (s, enc, want)

    run()


def test_pattern_with_length_bounds_counts_escapes_and_pairs(compiler):
    # "\u00e9", "\n" and a surrogate pair are one character each.
    g = Grammar.from_json_schema({"type": "string", "pattern": "^[^a]*$", "minLength": 3, "maxLength": 3})
    c = compiler.compile_grammar(g, lazy=True)
    for text in ['"\\u00e9\\n\\ud83d\\ude00"', '"é\\n😀"', '"\\/\\\\\\""', '"\\u0062\\u0062\\u0062"']:
        assert accepts(compiler, c, text), text
    for text in ['"\\u00e9\\n"', '"\\u00e9\\n\\ud83d\\ude00b"', '"\\ud83d"', '"ab\\u0061"']:
        assert not accepts(compiler, c, text), text


def test_pattern_with_length_bounds_inside_objects(compiler):
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}[0-9]+$", "maxLength": 5}},
              "required": ["id"]}
    c = compiler.compile_grammar(Grammar.from_json_schema(schema, strict_mode=False), lazy=True)
    for v, ok in [({"id": "AB1"}, True), ({"id": "AB123"}, True), ({"id": "AB1234"}, False), ({"id": "A1"}, False)]:
        assert accepts(compiler, c, json.dumps(v)) == ok, v


@pytest.mark.parametrize("schema,valid,invalid", [
    ({"format": "date", "pattern": "^2024"}, ["2024-01-31"], ["2023-01-31", "2024-13-01", "2024"]),
    ({"format": "uuid", "pattern": "^0"}, ["0" * 8 + "-0000-0000-0000-" + "0" * 12], ["1" * 8 + "-0000-0000-0000-" + "0" * 12]),
    ({"format": "email", "maxLength": 7}, ["a@b.cd", "ab@c.de"], ["abc@d.ef", "a@"]),
    ({"format": "date-time", "minLength": 25}, ["2024-01-31T10:00:00+01:00"], ["2024-01-31T10:00:00Z"]),
])
def test_format_with_pattern_or_length_bounds(compiler, schema, valid, invalid):
    c = compiler.compile_grammar(Grammar.from_json_schema({"type": "string", **schema}), lazy=True)
    for v in valid:
        assert accepts(compiler, c, json.dumps(v)), v
    for v in invalid:
        assert not accepts(compiler, c, json.dumps(v)), v


def test_trailing_loop_is_a_counted_repetition(compiler):
    # "[^...]*" after a fixed prefix: the product stops at the loop, so a large bound costs
    # no more states than a small one (DESIGN section 7: maxLength 100000 within 2x of 10).
    pattern = "^[A-Za-z0-9_][^<>*#.%&:\\\\+?/]*$"
    sizes = []
    for bound in (10, 100000):
        text = str(Grammar.from_json_schema({"type": "string", "pattern": pattern, "maxLength": bound}))
        sizes.append(sum(int(n) for n in re.findall(r"states=(\d+)", text)))
    assert sizes[0] == sizes[1] < 100, sizes
    c = compiler.compile_grammar(Grammar.from_json_schema({"type": "string", "pattern": pattern, "maxLength": 5}), lazy=True)
    for text, ok in [('"a"', True), ('"abcde"', True), ('"abcdef"', False), ('"a\\u00e9\\n\\"x"', True), ('"a<"', False), ('"-a"', False)]:
        assert accepts(compiler, c, text) == ok, text


def test_too_large_pattern_automaton_is_reported_with_its_pointer():
    # (A product with the length counter that is too large is counted by the parser instead:
    # tests/test_json_char_budget.py.)
    schema = {"properties": {"s": {"type": "string", "pattern": "^[ab]*a[ab]{16}$", "minLength": 50}}}
    with pytest.raises(UnsupportedSchemaError, match=r"'pattern' at /properties/s.*exceeds"):
        Grammar.from_json_schema(schema)
    with pytest.warns(xg.UnsupportedSchemaWarning if hasattr(xg, "UnsupportedSchemaWarning") else Warning, match="pattern"):
        Grammar.from_json_schema(schema, on_unsupported="warn")


def test_byte_dfa_round_trips_through_ebnf():
    g = Grammar.from_json_schema({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 3, "maxLength": 8})
    text = str(g)
    assert "ByteDfa(states=" in text
    assert str(Grammar.from_ebnf(text)) == text
    small = 'root ::= ByteDfa(states=3, final=(2), edges=((0, 0x61, 0x61, 1), (1, 0x30, 0x39, 2), (2, 0x30, 0x39, 2)))\n'
    assert str(Grammar.from_ebnf(small)) == small


@pytest.mark.parametrize("bad,msg", [
    ("ByteDfa(states=0, final=(), edges=())", "at least one state"),
    ("ByteDfa(states=2, final=(2), edges=())", "exceeds 1"),
    ("ByteDfa(states=2, final=(1), edges=((0, 0x62, 0x63, 1), (0, 0x61, 0x61, 1)))", "sorted"),
    ("ByteDfa(states=2, final=(1), edges=((0, 0x61, 0x100, 1)))", "exceeds 255"),
    ("ByteDfa(states=2, final=(1), edges=((0, 0x61, 0x61, 2)))", "exceeds 1"),
    ("ByteDfa(states=2, final=(1) edges=())", "expected ','"),
])
def test_byte_dfa_syntax_errors(bad, msg):
    with pytest.raises(xg.GrammarError, match=msg):
        Grammar.from_ebnf("root ::= " + bad)


def test_byte_dfa_matches_exactly(compiler):
    g = Grammar.from_ebnf('root ::= "x" ByteDfa(states=3, final=(2), edges=((0, 0x61, 0x61, 1), (1, 0x30, 0x39, 2), (2, 0x30, 0x39, 2))) "y"')
    c = compiler.compile_grammar(g, lazy=True)
    for text, ok in [("xa1y", True), ("xa123y", True), ("xay", False), ("xa1", False), ("xb1y", False)]:
        assert accepts(compiler, c, text) == ok, text


# ---------------------------------------------------------------------------- patternProperties
KEY_ALPHABET = ["a", "b", "x", "y", "-", "_", "\t", '"', "\\", "/", "é", "😀"]
VALUES = [1, "s", True, None, 2.5]

PATTERN_PROPERTIES_CASES = [
    {"patternProperties": {"^x": {"type": "integer"}}},
    {"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
    {"patternProperties": {"^x": {"type": "integer"}, "y": {"type": "number"}}, "additionalProperties": {"type": "boolean"}},
    {"properties": {"xa": {"type": "number"}, "b": {"type": "null"}}, "patternProperties": {"^x": {"type": "integer"}},
     "additionalProperties": {"type": "string"}},
    {"properties": {"a": {}}, "required": ["a", "xb"], "patternProperties": {"^[ab]+$": {"type": "null"}, "^x": {"type": "integer"}}},
    {"patternProperties": {"é|😀": {"type": "string"}, '^[^"]*$': {"type": ["string", "integer"]}}, "additionalProperties": False},
    {"patternProperties": {"^x": {"type": "integer"}, "^xy": {"type": "number"}}, "additionalProperties": False},
    {"patternProperties": {"a{2}": False}, "additionalProperties": {"type": "integer"}},
]


@pytest.mark.parametrize("case", range(len(PATTERN_PROPERTIES_CASES)))
def test_pattern_properties_are_exact(compiler, case):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", **PATTERN_PROPERTIES_CASES[case]}
    validator = jsonschema.Draft202012Validator(schema)
    # any_order: declared properties in any order, as the generated dicts have them.
    compiled = compiler.compile_grammar(Grammar.from_json_schema(schema, strict_mode=False, any_order=True), lazy=True)
    key = st.lists(st.sampled_from(KEY_ALPHABET), max_size=4).map("".join)
    named = st.sampled_from(["xa", "xb", "b", "a", "xy", "aa", "é"])
    obj = st.dictionaries(st.one_of(key, named), st.sampled_from(VALUES), max_size=3)

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=XG2_DERANDOMIZE)
    @given(obj)
    def run(o):
        want = validator.is_valid(o)
        texts = [json.dumps(o), json.dumps(o, ensure_ascii=False)]
        # The same object with its keys written with \u escapes.
        texts.append("{" + ", ".join(escaped(k, True) + ": " + json.dumps(v) for k, v in o.items()) + "}")
        for text in texts:
            assert accepts(compiler, compiled, text) == want, (o, text, want)

    run()


def test_byte_dfa_survives_serialization(compiler):
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+b$", "maxLength": 3}},
              "patternProperties": {"^x": {"type": "integer"}}}
    cg = compiler.compile_grammar(Grammar.from_json_schema(schema, strict_mode=False))
    back = xg.CompiledGrammar.deserialize(cg.serialize(), compiler.tokenizer_info)
    for text, ok in [('{"s": "ab"}', True), ('{"s": "aaab"}', False), ('{"xy": 1}', True), ('{"xy": "1"}', False), ('{"y": "1"}', True)]:
        assert accepts(compiler, back, text) == ok, text


def test_any_order_survives_serialization(compiler):
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(20)},
              "required": ["p3", "p7"], "additionalProperties": False, "maxProperties": 4}
    cg = compiler.compile_grammar(Grammar.from_json_schema(schema, any_order=True))
    back = xg.CompiledGrammar.deserialize(cg.serialize(), compiler.tokenizer_info)
    for text, ok in [('{"p7": 1, "p3": 2}', True), ('{"p3": 1, "p0": 0, "p7": 2, "p19": 3}', True),
                     ('{"p3": 1}', False), ('{"p3": 1, "p7": 2, "p3": 3}', False),
                     ('{"p3": 1, "p0": 0, "p7": 2, "p19": 3, "p1": 4}', False)]:
        assert accepts(compiler, back, text) == ok, text
        assert accepts(compiler, cg, text) == ok, text
