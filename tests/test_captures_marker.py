"""Captures of suffix=/stop= rules (xgrammar's Lark attributes, with stop_capture).

A rule `r[suffix=M]: BODY` or `r[stop=M]: BODY` matches BODY up to the first place a marker
M ends. Its own capture holds the body, `stop_capture="n"` the marker, and with stop= the
captures of the rules around it leave the marker out too. The oracle below writes that
meaning out with Python's `re` over random inputs.
"""

import random
import re

import pytest

import xg2_jax as xg

BODIES = {"lower": ("/[a-z]*/", "[a-z]*"), "ab": ("/[ab]+/", "[ab]+"), "a-then-b": ("/a*b?/", "a*b?")}
MARKERS = {
    "bang": ('"!"', "!"),
    "bangs": ("/!!+/", "!!+"),
    "b-or-ba": ("/b?a/", "b?a"),
    "nullable": ("/x?/", "x?"),
    "emoji": ('"\U0001F4A5"', "\U0001F4A5"),
}
ALPHABET = ["a", "b", "c", "x", "!", "\U0001F4A5"]


def _captures(grammar, text, *, deduplicate=True):
    compiled = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False).compile_grammar(grammar)
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    if not (matcher.accept_string(text) and matcher.is_terminated()):
        return None
    return matcher.get_captures(deduplicate=deduplicate)


def _expected(attribute, body, marker, text):
    """The captures of `start[capture="outer"]: r "z"` on text (None: not in the language)."""
    if not text.endswith("z"):
        return None
    word = text[:-1]
    whole = re.compile(f"(?:{body})(?:{marker})", re.S)
    # r is lazy: its text is the shortest string of BODY M, and "z" must follow it.
    if not whole.fullmatch(word) or any(whole.fullmatch(word[:i]) for i in range(len(word))):
        return None
    split = next(k for k in range(len(word) + 1)
                 if re.fullmatch(body, word[:k]) and re.fullmatch(marker, word[k:], re.S))
    inner, mark = word[:split], word[split:]
    outer = inner + "z" if attribute == "stop" else text
    return [("marker", mark.encode()), ("inner", inner.encode()), ("outer", outer.encode())]


@pytest.mark.parametrize("attribute", ["suffix", "stop"])
@pytest.mark.parametrize("body", sorted(BODIES))
@pytest.mark.parametrize("marker", sorted(MARKERS))
def test_captures_match_the_split_written_in_python(attribute, body, marker):
    lark_body, re_body = BODIES[body]
    lark_marker, re_marker = MARKERS[marker]
    grammar = xg.Grammar.from_lark(
        f'start[capture="outer"]: r "z"\n'
        f'r[capture="inner", {attribute}={lark_marker}, stop_capture="marker"]: {lark_body}\n')
    rng = random.Random(f"{attribute}-{body}-{marker}")
    members = 0
    for _ in range(150):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 4)))
        # Half the inputs end with a marker string and "z", so that many are members.
        if rng.random() < 0.5:
            text += rng.choice(["!", "!!", "a", "ba", "x", "", "\U0001F4A5"]) + "z"
        expected = _expected(attribute, re_body, re_marker, text)
        members += expected is not None
        assert _captures(grammar, text) == expected, text
    assert members > 0


def test_a_marker_is_hidden_only_along_its_own_derivation():
    # b's stop marker belongs to the `a` branch, which fails on the missing "q": the `c`
    # branch over the same text keeps the "!".
    grammar = xg.Grammar.from_lark(
        'start: a | c\na[capture="a"]: b "q"\nb[stop="!"]: "x"\nc[capture="c"]: "x!"\n')
    for deduplicate in (True, False):
        assert _captures(grammar, "x!", deduplicate=deduplicate) == [("c", b"x!")]
    # Every completion is recorded, c's too (its branch dies after it); a's hides the marker.
    assert _captures(grammar, "x!q") == [("c", b"x!"), ("a", b"xq")]


@pytest.mark.parametrize("attribute, outer, middle", [
    ("suffix", b"a!b!z", b"a!b!"),
    ("stop", b"abz", b"ab"),
])
def test_stop_hides_markers_at_every_level_and_suffix_at_none(attribute, outer, middle):
    grammar = xg.Grammar.from_lark(
        f'start[capture="outer"]: pair "z"\npair[capture="middle"]: item item\n'
        f'item[{attribute}="!"]: /[ab]*/\n')
    assert _captures(grammar, "a!b!z") == [("middle", middle), ("outer", outer)]


def test_rollback_and_fork_keep_the_split():
    tok = xg.TokenizerInfo(["a!!", "b", "!!", "z", "a", "</s>"], stop_token_ids=[5])
    grammar = xg.Grammar.from_lark(
        'start[capture="outer"]: r "z"\n'
        'r[capture="inner", stop=/!!+/, stop_capture="marker"]: /[ab]*/\n')
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar))
    assert matcher.accept_token(0)  # "a!!": the marker ends inside the token
    fork = matcher.fork()
    matcher.rollback(1)
    assert matcher.get_captures() == []
    assert matcher.accept_token(1) and matcher.accept_token(2) and matcher.accept_token(3)
    assert matcher.get_captures() == [("marker", b"!!"), ("inner", b"b"), ("outer", b"bz")]
    assert fork.accept_token(3)
    assert fork.get_captures() == [("marker", b"!!"), ("inner", b"a"), ("outer", b"az")]


@pytest.mark.parametrize("attribute", ["suffix", "stop"])
def test_split_survives_printing_serialization_and_the_cache(attribute):
    grammar = xg.Grammar.from_lark(
        f'start[capture="outer"]: r "z"\n'
        f'r[capture="inner", {attribute}=END, stop_capture="marker"]: /[a-z]*/\nEND: /!!+/\n')
    printed = str(grammar)
    assert str(xg.Grammar.from_ebnf(printed)) == printed
    outer = b"xy!!z" if attribute == "suffix" else b"xyz"
    expected = [("marker", b"!!"), ("inner", b"xy"), ("outer", outer)]
    compiler = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=True)
    for candidate in (grammar, xg.Grammar.from_ebnf(printed),
                      xg.Grammar.deserialize_json(grammar.serialize_json())):
        for _ in range(2):  # the second compile is a cache hit
            matcher = xg.GrammarMatcher(compiler.compile_grammar(candidate),
                                        terminate_without_stop_token=True)
            assert matcher.accept_string("xy!!z")
            assert matcher.get_captures() == expected
    # The split is part of the grammar's identity: without it captures differ.
    plain = xg.Grammar.from_lark(f'start[capture="outer"]: r "z"\nr[{attribute}=END]: /[a-z]*/\n'
                                 f'END: /!!+/\n')
    assert _captures(plain, "xy!!z") == [("outer", outer)]


@pytest.mark.parametrize("source, phrase", [
    ('start: head\nhead[stop_capture="m"]: /a/\n', "stop_capture requires stop or suffix"),
    ('start: head\nhead[stop="x", stop_capture="bad name"]: /a/\n', "capture name must only contain"),
    ('start: head\nhead[stop="x", stop_capture=M]: /a/\n', "expected string literal after stop_capture="),
    ('start: head\nhead[stop="x", stop_capture="a", stop_capture="b"]: /a/\n',
     "stop_capture attribute is specified more than once"),
])
def test_lark_stop_capture_errors(source, phrase):
    with pytest.raises(xg.GrammarSyntaxError, match=re.escape(phrase)) as info:
        xg.Grammar.from_lark(source)
    assert "line 2" in str(info.value)


@pytest.mark.parametrize("source, phrase", [
    ('root ::= r\nr[stop_capture="m"] ::= "a"\n', "stop_capture requires stop or suffix"),
    ('root ::= r\nr[stop=("a" "b")] ::= "ab"\n', "expected ',' between the body and the marker"),
    ('root ::= r\nr[stop="a"] ::= "ab"\n', "expected '(' after stop="),
    ('root ::= r\nr[stop=("a", "b"), suffix=("a", "b")] ::= "ab"\n', "is given twice"),
])
def test_ebnf_split_errors(source, phrase):
    with pytest.raises(xg.GrammarSyntaxError, match=re.escape(phrase)):
        xg.Grammar.from_ebnf(source)


def test_ebnf_split_written_by_hand():
    grammar = xg.Grammar.from_ebnf(
        'root ::= r "z"\n'
        'r[capture="inner", stop=([a-z]*, "!"), stop_capture="mark"] ::= [a-z]* "!"\n')
    assert _captures(grammar, "ab!z") == [("mark", b"!"), ("inner", b"ab")]
