"""Captures (xgrammar's `name[capture]` / `name[capture="n"]` rule attribute and
`GrammarMatcher.get_captures`): EBNF and Lark syntax, completion events, deduplication,
rollback, reset, fork, printing, serialization, the cache key, and token budgets beside them.

The oracle of the randomized test is Python's `re`: a grammar of captured groups whose spans
are fixed by delimiters, matched by an equivalent regex with named groups.
"""

import random
import re

import pytest

import xg2_jax as xg

EMPTY = xg.TokenizerInfo([])


def captures(text, grammar, *, form="lark", deduplicate=True):
    g = xg.Grammar.from_lark(grammar) if form == "lark" else xg.Grammar.from_ebnf(grammar)
    m = xg.GrammarMatcher(xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(g),
                          terminate_without_stop_token=True)
    assert m.accept_string(text)
    return m.get_captures(deduplicate=deduplicate)


@pytest.mark.parametrize("form, grammar", [
    ("lark", 'start: "a" v "b"\nv[capture]: /[0-9]+/'),
    ("ebnf", 'root ::= "a" v "b"\nv[capture] ::= [0-9]+'),
    ("ebnf", 'root ::= "a" w "b"\nw[capture="v"] ::= [0-9]+'),
])
def test_a_captured_span_and_its_raw_events(form, grammar):
    assert captures("a123b", grammar, form=form) == [("v", b"123")]
    assert captures("a123b", grammar, form=form, deduplicate=False) == [
        ("v", b"1"), ("v", b"12"), ("v", b"123")]


@pytest.mark.parametrize("grammar, text, expected", [
    ('start: outer\nouter[capture="o"]: "x" inner "!"\ninner[capture="i"]: /[a-z]+/', "xabc!",
     [("i", b"abc"), ("o", b"xabc!")]),
    ('start: (item ",")* item\nitem[capture]: /[0-9]+/', "1,22,333",
     [("item", b"1"), ("item", b"22"), ("item", b"333")]),
    # Right recursion: every level's completion is recorded, innermost first.
    ('start: lst\nlst[capture]: ITEM "," lst | ITEM\nITEM: /[0-9]+/', "1,2,3",
     [("lst", b"3"), ("lst", b"2,3"), ("lst", b"1,2,3")]),
    ('start[capture="all"]: "a" /[0-9]+/ "b"', "a12b", [("all", b"a12b")]),
    ('start: "a" v? "b"\nv[capture]: "x"', "ab", []),
])
def test_nested_repeated_and_recursive_captures(grammar, text, expected):
    assert captures(text, grammar) == expected


def test_tokens_rollback_reset_and_fork():
    tok = xg.TokenizerInfo(["a", "1", "2", "b", "<|t|>", "</s>"], stop_token_ids=[5], special_token_ids=[4])
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(
        xg.Grammar.from_lark('start: "a" v "b" w\nv[capture]: /[0-9]+/\nw[capture]: "a" <|t|> "b"',
                             tokenizer_info=tok))
    m = xg.GrammarMatcher(compiled)
    for t in [0, 1, 2, 3]:
        assert m.accept_token(t)
    assert m.get_captures() == [("v", b"12")]
    m.rollback(2)
    assert m.get_captures(deduplicate=False) == [("v", b"1")]
    fork = m.fork()
    assert m.accept_token(1) and m.accept_token(3)
    for t in [0, 4, 3]:
        assert m.accept_token(t)
    # A special token read by id is captured as its text.
    assert m.get_captures() == [("v", b"11"), ("w", b"a<|t|>b")]
    assert fork.get_captures() == [("v", b"1")]
    mask = xg.allocate_token_bitmask(1, tok.vocab_size)
    fork.fill_next_token_bitmask(mask)
    assert fork.get_captures(deduplicate=False) == [("v", b"1")]   # fills record nothing
    m.reset()
    assert m.get_captures() == []
    assert m.accept_string("a7b") and m.get_captures() == [("v", b"7")]


@pytest.mark.parametrize("text, plain, sample", [
    ('root ::= "a" v "b"\nv[capture="num"] ::= [0-9]+', 'root ::= "a" v "b"\nv ::= [0-9]+', "a12b"),
    ('root ::= "<" r ">"\nr[max_tokens=3, capture="r", temperature=0.5] ::= [a-z]*',
     'root ::= "<" r ">"\nr[max_tokens=3, temperature=0.5] ::= [a-z]*', "<ab>"),
])
def test_printing_serialization_and_cache_key(text, plain, sample):
    g = xg.Grammar.from_ebnf(text)
    name = re.search(r'capture="(\w+)"', text).group(1)
    assert f'capture="{name}"' in str(g)
    assert str(xg.Grammar.from_ebnf(str(g))) == str(g)
    assert str(xg.Grammar.deserialize_json(g.serialize_json())) == str(g)
    compiler = xg.GrammarCompiler(EMPTY)
    captured, uncaptured = compiler.compile_grammar(g), compiler.compile_grammar(plain)
    assert uncaptured is not captured
    restored = xg.CompiledGrammar.deserialize_json(captured.serialize_json(), EMPTY)
    for compiled, expect in ((captured, True), (restored, True), (uncaptured, False)):
        m = xg.GrammarMatcher(compiled)
        assert m.accept_string(sample)
        assert bool(m.get_captures()) == expect


@pytest.mark.parametrize("form, grammar, line, column, words", [
    ("lark", 'start[capture=""]: "a"', 1, 15, "capture name must not be empty"),
    ("lark", 'start[capture="a b"]: "a"', 1, 15, "must only contain letters, digits"),
    ("lark", 'start[capture, capture]: "a"', 1, 16, "capture attribute is specified more than once"),
    ("lark", 'start: v "!"\nv[capture, stop_capture="m"]: /x*/', 2, 12, "stop_capture requires stop or suffix"),
    ("ebnf", 'root ::= v\nv[capture=""] ::= "a"', 2, 11, "capture name must not be empty"),
    ("ebnf", 'root ::= v\nv[capture=x] ::= "a"', 2, 11, "expected a quoted name"),
    ("ebnf", 'root ::= v\nv[capture, capture] ::= "a"', 2, 12, "twice"),
])
def test_errors_are_located(form, grammar, line, column, words):
    parse = xg.Grammar.from_lark if form == "lark" else xg.Grammar.from_ebnf
    with pytest.raises(xg.GrammarSyntaxError) as info:
        parse(grammar)
    assert (info.value.line, info.value.column) == (line, column)
    assert words in str(info.value)


def test_captures_beside_a_token_budget():
    tok = xg.TokenizerInfo(["ab ", "cd", " ", "</t>", "1", "<t>", "x"])
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(
        xg.Grammar.from_lark('start: r "<t>"\nr[max_tokens=3, capture]: TEXT\nTEXT: /(\\n|.)*/', tokenizer_info=tok))
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert all(m.accept_token(t) for t in [0, 1, 2])
    mask = xg.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(mask)
    assert [t for t in range(tok.vocab_size) if (int(mask[0, 0]) >> t) & 1] == [5]
    assert m.accept_token(5) and m.is_terminated()
    assert m.get_captures() == [("r", b"ab cd ")]


def test_random_captures_against_python_re():
    # item := key "=" value ";" with both captured; re finds the same spans.
    grammar = 'start: item+\nitem: key "=" value ";"\nkey[capture]: /[a-z]+/\nvalue[capture="val"]: /[0-9a-z]*/'
    compiled = xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(xg.Grammar.from_lark(grammar))
    rng = random.Random(7)
    letters, alnum = "abcxyz", "0123abc"
    for _ in range(200):
        text = "".join(
            "".join(rng.choice(letters) for _ in range(rng.randint(1, 4))) + "="
            + "".join(rng.choice(alnum) for _ in range(rng.randint(0, 4))) + ";"
            for _ in range(rng.randint(1, 4)))
        m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        cut = rng.randint(0, len(text))            # in two steps, to cross a step boundary
        assert m.accept_string(text[:cut]) and m.accept_string(text[cut:])
        expected = []
        for found in re.finditer(r"([a-z]+)=([0-9a-z]*);", text):
            expected += [("key", found.group(1).encode()), ("val", found.group(2).encode())]
        assert m.get_captures() == expected, text
