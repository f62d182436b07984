"""Character budgets on JSON strings (`[json_chars=MIN..MAX]`): where a pattern's or format's
automaton times a length counter is too large (an email address of at most 254 characters),
the JSON Schema front end lets the parser count the decoded characters instead. The masks must
equal those of the product automaton wherever that one fits, and the lengths must be
JSON Schema's (an escape, a UTF-8 sequence or a surrogate pair is one character)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import masks_along
from hypothesis import given, settings
from hypothesis import strategies as st

import xg2_jax as xg


def string_content(pattern: str) -> str:
    """The printed JSON-content expression of a string schema with this pattern."""
    line = str(xg.Grammar.from_json_schema({"type": "string", "pattern": pattern})).splitlines()[1]
    head, tail = 'root_value ::= "\\"" ', ' "\\""'
    assert line.startswith(head) and line.endswith(tail), line
    return line[len(head):-len(tail)]


def budget_grammar(pattern: str, lo: int, hi: int | None) -> str:
    limit = f"{lo}..{'' if hi is None else hi}"
    return f'root ::= "\\"" s "\\""\ns[json_chars={limit}] ::= {string_content(pattern)}\n'


def product_schema(pattern: str, lo: int, hi: int | None) -> dict:
    schema = {"type": "string", "pattern": pattern, "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    return schema


CASES = [
    # (pattern, minLength, maxLength, JSON strings of allowed lengths)
    ("^[a-z\\n]*$", 2, 12, ['"ab"', '"abc\\ndef"', '"abcdefghi\\n\\nj"', '"\\u0061\\n"']),
    ("^[a-zé ]*$", 3, 10, ['"héllo wé"', '"é\\u00e9 "', '"\\u00e9\\u00E9\\u00e9"', '"abcdefghij"']),
    ("^.*$", 1, 5, ['"\\ud83d\\ude00ab"', '"😀😀"', '"a\\"b\\\\c"', '"\\ud83d\\ude00\\ud83d\\ude00xyz"']),
    ("^(?:\\S+\\s+)*\\S+$", 4, None, ['"one two"', '"a\\tb\\nc d"', '"four"']),
    ("^[a-z.]+@[a-z]+(?:\\.[a-z]+)*$", 0, 16, ['"a@b.c"', '"ab.cd@efg.hi.jk"']),
]


@pytest.mark.parametrize("vocab", ["gpt2", "llama3"])
@pytest.mark.parametrize("pattern,lo,hi,texts", CASES, ids=[f"c{i}" for i in range(len(CASES))])
def test_budget_masks_equal_the_product_automaton(vocab_path, vocab, pattern, lo, hi, texts):
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path(vocab))
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    product = compiler.compile_json_schema(product_schema(pattern, lo, hi), any_whitespace=False)
    assert "json_chars" not in str(product.grammar)  # small enough for the product
    budget = compiler.compile_grammar(budget_grammar(pattern, lo, hi))
    assert "json_chars" in str(budget.grammar)
    for text in texts:
        got, got_done = masks_along(budget, text.encode())
        want, want_done = masks_along(product, text.encode())
        assert got_done and want_done, text
        for step, (a, b) in enumerate(zip(got, want)):
            if not np.array_equal(a, b):
                diff = np.nonzero(xg.bitmask_to_bool(a, tok.vocab_size) != xg.bitmask_to_bool(b, tok.vocab_size))[0]
                examples = [(int(t), tok.decoded_vocab[t]) for t in diff[:5]]
                pytest.fail(f"{pattern!r} on {text!r}: masks differ at byte {step}: {examples}")


@pytest.mark.parametrize("pattern,lo,hi,texts", CASES, ids=[f"c{i}" for i in range(len(CASES))])
def test_budget_lengths_are_json_schema_lengths(pattern, lo, hi, texts):
    grammar = xg.Grammar.from_ebnf(budget_grammar(pattern, lo, hi))
    for text in texts:
        assert xg.testing._is_grammar_accept_string(grammar, text), text
    # One character past the maximum, and one short of the minimum, are refused.
    decoded = json.loads(texts[0])
    if hi is not None:
        longer = json.dumps(decoded + decoded[-1] * (hi - len(decoded) + 1), ensure_ascii=False)
        assert not xg.testing._is_grammar_accept_string(grammar, longer), longer
    if lo > 0:
        assert not xg.testing._is_grammar_accept_string(grammar, json.dumps(decoded[:lo - 1]))


REFUSED_BEFORE = [
    # JSONSchemaBench shapes that the product refused ("automaton product exceeds 20000 states").
    ({"type": "string", "format": "email", "maxLength": 254}, "a" * 60 + "@example.com", 254),
    ({"type": "string", "format": "email", "minLength": 3, "maxLength": 255}, "ab@c.io", 255),
    ({"type": "string", "pattern": "^(?:\\S+\\s+){0,29}\\S+$", "maxLength": 300}, "one two three", 300),
    ({"type": "string", "format": "uri", "maxLength": 2000}, "https://example.com/a?b=c#d", 2000),
    # A product of a few thousand states, counted too (Github_medium o63935's file name: its
    # product took 18 ms of a 20 ms first mask).
    ({"type": "string", "pattern": "^[\\w /-]+\\.[0-9a-zA-Z]+$", "minLength": 1, "maxLength": 1024}, "thumb.png", 1024),
]


@pytest.mark.parametrize("schema,valid,hi", REFUSED_BEFORE, ids=["email", "email-min", "words", "uri", "file-name"])
def test_long_bounded_formats_compile_and_count(schema, valid, hi):
    grammar = xg.Grammar.from_json_schema(schema)
    assert "json_chars=" in str(grammar)
    accepts = lambda s: xg.testing._is_grammar_accept_string(grammar, json.dumps(s))  # noqa: E731
    assert accepts(valid)
    # Grown to exactly the maximum (inside the part a format lets grow) and one past it.
    at = valid.index("@") if "@" in valid else len(valid) - 1
    pad = "x" * (hi - len(valid))
    assert accepts(valid[:at] + pad + valid[at:])
    assert not accepts(valid[:at] + pad + "x" + valid[at:])
    assert not accepts(valid + " ")  # the format still holds


def test_masks_follow_the_budget_near_the_maximum(vocab_path):
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path("llama3"))
    compiled = xg.GrammarCompiler(tok).compile_json_schema({"type": "string", "format": "email", "maxLength": 254})
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_string('"' + "a" * 240 + "@example.co")  # 251 characters
    mask = xg.allocate_token_bitmask(1, tok.vocab_size)
    matcher.fill_next_token_bitmask(mask)
    allowed = np.nonzero(xg.bitmask_to_bool(mask[0], tok.vocab_size))[0]
    assert len(allowed) > 0
    for t in allowed:  # every allowed token is accepted, and fits the 3 characters left
        assert matcher.fork().accept_token(int(t)), tok.decoded_vocab[t]
    for text in ["m", "mm", "mmm", 'm"']:
        ids = [t for t in range(tok.vocab_size) if tok.decoded_vocab[t] == text.encode()]
        assert all(mask_bit(mask, t) == matcher.fork().accept_token(t) for t in ids), text
    assert matcher.accept_string("uk")  # 253: one character left, then only the quote
    assert not matcher.fork().accept_string("ab")
    matcher.accept_string("m")
    assert matcher.find_jump_forward_string() == '"'


def mask_bit(mask, t: int) -> bool:
    return bool((int(mask[0][t >> 5]) >> (t & 31)) & 1)


def test_json_chars_prints_parses_and_serializes():
    text = 'root ::= "\\"" s "\\""\ns[json_chars=2..5] ::= [a-z]*\n'
    grammar = xg.Grammar.from_ebnf(text)
    assert "s[json_chars=2..5] ::=" in str(grammar)
    assert str(xg.Grammar.from_ebnf(str(grammar))) == str(grammar)
    assert "json_chars=3.. " not in str(xg.Grammar.from_ebnf(text.replace("2..5", "3..")))
    tok = xg.TokenizerInfo(["a", "b", '"', "ab", "</s>"], stop_token_ids=[4])
    compiled = xg.GrammarCompiler(tok).compile_grammar(grammar)
    again = xg.CompiledGrammar.deserialize(compiled.serialize(), tok)
    for compiled_grammar in (compiled, again):
        m = xg.GrammarMatcher(compiled_grammar)
        assert m.accept_string('"a') and not m.fork().accept_string('"')  # 1 of at least 2
        assert m.accept_string("bab") and not m.fork().accept_string("ab")  # 4, at most 5
        assert m.accept_string('a"')


@pytest.mark.parametrize("text, error", [
    ('root ::= "\\"" s "\\""\ns[json_chars=5..2] ::= [a-z]*', xg.GrammarSyntaxError),
    ('root ::= "\\"" s "\\""\ns[json_chars=5] ::= [a-z]*', xg.GrammarSyntaxError),
])
def test_json_chars_syntax_errors(text, error):
    with pytest.raises(error):
        xg.Grammar.from_ebnf(text)


@pytest.mark.parametrize("text", [
    'root ::= "\\"" s "\\""\ns[json_chars=0..5] ::= [a-z] s | ""',                      # a rule reference
    'root ::= "\\"" s "\\"" u\ns[json_chars=0..5] ::= [a-z]*\nu[max_tokens=2] ::= "x"',  # with a token budget
])
def test_json_chars_needs_a_plain_body(text):
    tok = xg.TokenizerInfo(["a", "b", '"', "x", "</s>"], stop_token_ids=[4])
    with pytest.raises(xg.GrammarError, match="json_chars"):
        xg.GrammarCompiler(tok).compile_grammar(text)


def test_budgets_are_part_of_the_cross_grammar_key(gpt2_tokenizer):
    # A caller's entry walks into the budgeted rule inside a token ("about" after "a"): two
    # grammars that differ only in the budget must not share it.
    tok = gpt2_tokenizer

    def first_mask(hi: int):
        text = f'root ::= "a" s "\\""\ns[json_chars=0..{hi}] ::= [a-z ]*\n'
        matcher = xg.GrammarMatcher(xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(text, lazy=False))
        mask = xg.allocate_token_bitmask(1, tok.vocab_size)
        matcher.fill_next_token_bitmask(mask)
        return mask[0].copy()

    xg.clear_cross_grammar_cache()
    wide = first_mask(8)
    narrow = first_mask(3)  # after the wide one, with the pool holding its entries
    xg.clear_cross_grammar_cache()
    assert np.array_equal(narrow, first_mask(3))
    assert not np.array_equal(narrow, wide)


# (schema of a string, JSON strings it allows): the parser-counted form (a word count over 120
# characters), the product form and two formats intersected with a pattern.
CACHED_CASES = [
    ({"pattern": "^(?:\\S+\\s+){0,19}\\S+$", "maxLength": 120, "minLength": 1}, ['"one two\\tthree"', '"x"']),
    ({"pattern": "^[a-z]+(?:-[a-z]+)*$", "minLength": 2, "maxLength": 12}, ['"ab"', '"abc-def"']),
    ({"format": "email", "pattern": "^[a-z@.]+$", "maxLength": 40}, ['"a@b.cd"']),
]


@pytest.mark.parametrize("string,texts", CACHED_CASES, ids=[f"c{i}" for i in range(len(CACHED_CASES))])
def test_pattern_automata_cached_across_schemas_give_the_same_masks(gpt2_tokenizer, string, texts):
    # A length-bounded pattern's automaton is kept process-wide by its words: a second schema
    # with the same pattern (under another key, with other bounds' siblings) reuses it, and
    # its masks equal those built with every cache off.
    tok = gpt2_tokenizer
    budget = xg.cross_grammar_cache_stats()["budget_bytes"]

    def masks(schema: dict) -> list:
        compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_json_schema(schema, any_whitespace=False)
        return [masks_along(compiled, f'{{"k": {t}}}'.encode()) for t in texts]

    first = {"type": "object", "properties": {"k": {"type": "string", **string}}, "required": ["k"]}
    # Other bounds: the automaton is kept by the pattern's words alone, the bounds are applied
    # to it in each compile.
    narrower = {**string, "maxLength": string["maxLength"] - 1}
    second = {"type": "object", "properties": {"k": {"type": "string", **narrower}, "n": {"type": "integer"}},
              "required": ["k"], "additionalProperties": False}
    try:
        xg.set_cross_grammar_cache_limit(0)
        uncached = [masks(first), masks(second)]
        xg.set_cross_grammar_cache_limit(budget)
        xg.clear_cross_grammar_cache()
        before = xg.cross_grammar_cache_stats()
        assert _same(masks(first), uncached[0])
        assert _same(masks(second), uncached[1])
        after = xg.cross_grammar_cache_stats()
        assert after["pattern_automaton_hits"] > before["pattern_automaton_hits"], after
        assert after["pattern_automaton_entries"] >= 1
    finally:
        xg.set_cross_grammar_cache_limit(budget)
        xg.clear_cross_grammar_cache()


def _same(a: list, b: list) -> bool:
    """Equal lists of masks_along results (mask rows compared as arrays)."""
    return len(a) == len(b) and all(
        done_a == done_b and len(ma) == len(mb) and all(np.array_equal(x, y) for x, y in zip(ma, mb))
        for (ma, done_a), (mb, done_b) in zip(a, b))


SMALL_VOCAB = ['"', "a", "b", "ab", "ba", "aab", "\\", "\\n", "n", "\\u00", "e9", "é", "aé", 'a"', '""', 'b"', "</s>"]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(lo=st.integers(0, 6), extra=st.integers(0, 6), unbounded=st.booleans(),
       chars=st.lists(st.sampled_from(["a", "b", "\\n", "é", "\\u00e9", "n"]), max_size=12))
def test_budget_equals_product_on_random_bounds(lo, extra, unbounded, chars):
    tok = xg.TokenizerInfo(SMALL_VOCAB, stop_token_ids=[len(SMALL_VOCAB) - 1])
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    pattern, hi = "^[abné\\n]*$", None if unbounded else lo + extra
    product = compiler.compile_json_schema(product_schema(pattern, lo, hi), any_whitespace=False)
    budget = compiler.compile_grammar(budget_grammar(pattern, lo, hi))
    m_product, m_budget = xg.GrammarMatcher(product), xg.GrammarMatcher(budget)
    a = xg.allocate_token_bitmask(1, tok.vocab_size)
    b = xg.allocate_token_bitmask(1, tok.vocab_size)
    for piece in ['"'] + chars + ['"']:
        for m, mask in ((m_product, a), (m_budget, b)):
            m.fill_next_token_bitmask(mask)
        assert np.array_equal(a, b), (lo, hi, chars, piece)
        ok = m_product.accept_string(piece)
        assert m_budget.accept_string(piece) == ok
        if not ok:
            break
    assert m_budget.is_completed() == m_product.is_completed()
