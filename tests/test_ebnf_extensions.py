"""xgrammar's EBNF extensions: Regex(...), Substring(...), the [lazy] and [max_chars=N] rule
attributes, what is refused, Grammar.union / concat and GrammarCompiler.compile_regex; token
masks over a real vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import mask_row
from test_masks_real_vocab import accepted_by_matcher

import xg2_jax as xg
from xg2_jax import greedy_tokenize

TOK = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
COMPILER = xg.GrammarCompiler(TOK, max_threads=1)


def accepts(compiled: xg.CompiledGrammar, text: str) -> bool:
    m = xg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.is_completed()


def check_language(grammar, accepted, rejected) -> None:
    compiled = COMPILER.compile_grammar(grammar)
    for s in accepted:
        assert accepts(compiled, s), (str(grammar), s)
    for s in rejected:
        assert not accepts(compiled, s), (str(grammar), s)


CASES = [
    # Regex(): without flags `.` matches every code point (xgrammar); with flags Python's dot.
    ('root ::= Regex("[a-z]+") "!"', ["a!", "abc!"], ["!", "A!"]),
    ('root ::= Regex("a.b")', ["acb", "a\nb", "a\u00e9b"], ["ab"]),
    ('root ::= Regex("a.b", flags="")', ["acb", "a\rb"], ["a\nb"]),
    ('root ::= Regex("a.b", flags="s")', ["a\nb"], ["ab"]),
    ('root ::= Regex("ab[c-d]", flags="iu")', ["abc", "ABD", "aBc"], ["abe"]),
    ('root ::= Regex("x", json_string=false) | "y"', ["x", "y"], ["xy"]),
    # json_string=true: only matches without '"', '\\' or control characters (xgrammar).
    ('root ::= Regex("\\\\S+", json_string=true)', ["abc", "a.b!", "\u00e9"], ['a"b', "a\\b", "a b", ""]),
    ('root ::= Regex(".+", json_string=true)', ["ab", "\u4f60"], ["a\tb", "a\nb", "a\x01"]),
    # TagDispatch's loop_after_dispatch (xgrammar's name for loop).
    ('root ::= TagDispatch(("<a>", "x"), loop_after_dispatch=false, plain_end=true)', ["", "q", "<a>x"],
     ["<a>x<a>x", "<a>xq"]),
    ('root ::= TagDispatch(("<a>", "x"), loop_after_dispatch=true, plain_end=true)', ["<a>x<a>x", "<a>xq"],
     ["<a>"]),
    # Python spellings: a leading (?i) / (?s) group, (?P<name>...).
    ('root ::= Regex("(?i)ab[c-d]")', ["ABC", "abd"], ["abe"]),
    ('root ::= Regex("(?s)a.b", flags="")', ["a\nb"], ["ab"]),
    ('root ::= Regex("(?P<x>ab)+c")', ["abc", "ababc"], ["c"]),
    # Substring(): runs of consecutive whole chunks, the empty run included.
    ('root ::= Substring("abc", "de", "fg")', ["", "abc", "de", "abcde", "defg", "abcdefg"],
     ["ab", "cde", "abcfg", "deabc"]),
    ('root ::= Substring("a", "", "b", "a", "b")', ["", "ab", "ba", "abab"], ["aa", "abba"]),
    ("root ::= Substring()", [""], ["a"]),
    ('root ::= "x" Substring("ab", "cd") "y"', ["xy", "xabcdy", "xcdy"], ["xbcy"]),
    # [lazy]: the shortest match commits (strings with no proper prefix in the body).
    ('root ::= "<" r ">"\nr[lazy] ::= [a-z]+', ["<a>", "<b>"], ["<ab>", "<>"]),
    ('root ::= "<" r ">"\nr[lazy] ::= [a-z]*', ["<>"], ["<a>"]),
    ('root ::= "<" r ">"\nr[lazy] ::= "ab" | "abc"', ["<ab>"], ["<abc>"]),
    ('root ::= "<" r ">"\nr[lazy] ::= s s\ns ::= [a-z]', ["<ab>"], ["<a>", "<abc>"]),
    ('root ::= r "b"\nr[ lazy ] ::= [ab]+', ["ab", "bb"], ["aab", "b"]),
    # [max_chars=N]: at most N code points, counted across multi-byte characters.
    ('root ::= r ">"\nr[max_chars=2] ::= [^>]*', [">", "ab>", "\u4e2d\u6587>"], ["abc>", "\u4e2d\u6587a>"]),
    ('root ::= r ">"\nr[max_chars=0] ::= [^>]*', [">"], ["a>"]),
    ('root ::= r+\nr[max_chars=3, lazy] ::= "a" [a-z]* ";"', ["ab;", "a;a;", "a;ab;"], ["abc;", "a"]),
    # A bracket group not followed by ::= stays a character class.
    ('root ::= x [lazy]\nx ::= "a"', ["al", "az"], ["a"]),
    ('root ::= "a" ( ) "b"', ["ab"], []),
]


@pytest.mark.parametrize("ebnf, accepted, rejected", CASES)
def test_extension_languages(ebnf, accepted, rejected):
    check_language(ebnf, accepted, rejected)
    # The printed grammar (macros and attributes become automata) means the same.
    check_language(str(xg.Grammar.from_ebnf(ebnf)), accepted, rejected)


@pytest.mark.parametrize("ebnf, line, column, words", [
    ('root ::= r\nr[lazy] ::= "(" r ")" | "x"', 2, 1, "recursive"),
    ('root ::= r\nr[stop_capture="x"] ::= "a"', 2, 3, "stop_capture requires stop or suffix"),
    ('root ::= r\nr[bogus] ::= "a"', 2, 3, "'bogus' is not supported"),
    ('root ::= r\nr[max_tokens=x] ::= "a"', 2, 14, "expected a number after max_tokens="),
    ('root ::= r\nr[max_tokens=2147483648] ::= "a"', 2, 14, "at most 2147483647"),
    ('root ::= r\nr[max_tokens=1, max_tokens=2] ::= "a"', 2, 17, "twice"),
    ('root ::= r\nr[lazy, lazy] ::= "a"', 2, 9, "twice"),
    ('root ::= r\nr[max_chars=x] ::= "a"', 2, 13, "expected a number"),
    ('root ::= Token()', 1, 10, "needs at least one token id"),
    ('root ::= Token("<|tool_call|>")', 1, 16, "takes token ids"),
    ("root ::= Token(1 2)", 1, 18, "expected ',' or ')'"),
    ("root ::= Token(1,\n  -2)", 2, 3, "takes token ids"),
    ("root ::= ExcludeToken(99999999999)", 1, 23, "token id exceeds"),
    ("root ::= TokenTagDispatch((x, r))\nr ::= \"a\"", 1, 28, "takes token ids"),
    ("root ::= TokenTagDispatch((1, r), excludes=(1,))\nr ::= \"a\"", 1, 10, "also excluded"),
    ("root ::= TokenTagDispatch((1, nope))", 1, 31, "nope"),
    ("root ::= TokenTagDispatch(loop=true)", 1, 27, "unknown TokenTagDispatch argument"),
    ('root ::= ExcludeToken(1 2)', 1, 25, "expected ',' or ')'"),
    ('root ::= Regex("a", flags="m")', 1, 21, "flag 'm'"),
    ('root ::= Regex("a", bad=1)', 1, 21, "named argument bad"),
    ('root ::= Regex()', 1, 16, "exactly one string argument"),
    ('root ::= Regex("a", "b")', 1, 21, "exactly one string argument"),
    ('root ::= Regex(abc)', 1, 16, "must be a string literal"),
    ('root ::= Regex("a", json_string=1)', 1, 33, "json_string must be a boolean"),
    ('root ::= Substring("a", 1)', 1, 25, "must be strings"),
])
def test_extension_errors(ebnf, line, column, words):
    with pytest.raises(xg.GrammarSyntaxError) as info:
        xg.Grammar.from_ebnf(ebnf)
    assert (info.value.line, info.value.column) == (line, column), str(info.value)
    assert words in str(info.value)


def test_union_and_concat():
    a = xg.Grammar.from_ebnf('root ::= "a" x\nx ::= "b"*')
    digits = xg.Grammar.from_regex("[0-9]{2}")
    obj = xg.Grammar.from_json_schema({"type": "integer"})
    check_language(xg.Grammar.union(a, digits, obj), ["a", "abb", "12", "-7"], ["ab12", "1a"])
    check_language(xg.Grammar.concat(a, digits), ["a12", "abb00"], ["a", "12", "a1"])
    check_language(xg.Grammar.concat(a), ["abbb"], ["b"])
    # The same grammar twice: its rules are copied under distinct prefixes.
    check_language(xg.Grammar.concat(a, a), ["aa", "abab"], ["a"])
    with pytest.raises(xg.InvalidArgumentError):
        xg.Grammar.union()
    with pytest.raises(TypeError):
        xg.Grammar.concat(a, "root ::= x")


def test_compile_regex():
    compiled = COMPILER.compile_regex(r"(ab)+\d?")
    assert accepts(compiled, "abab1") and not accepts(compiled, "a")
    with pytest.raises(xg.GrammarSyntaxError):
        COMPILER.compile_regex("(a")


MASK_GRAMMAR = r"""
root ::= "say " word ("," " "? word)* "." note?
word[max_chars=6] ::= [a-zA-Z\u00e0-\u00ff]+
note ::= " (" Substring("see", " the", " notes", " below") ")" tail
tail[lazy] ::= Regex("[0-9]+")
"""

MASK_DOCS = ["say hello, w\u00f6rld,caf\u00e9.", "say a, bb. ( the notes)7", "say x. ()0"]


def test_masks_match_accept_token_on_gpt2(gpt2_tokenizer):
    tok = gpt2_tokenizer
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(MASK_GRAMMAR)
    v = tok.vocab_size
    for doc in MASK_DOCS:
        ids = greedy_tokenize(tok, doc.encode())
        m = xg.GrammarMatcher(compiled)
        for step, t in enumerate(ids):
            if step % 2 == 0:
                allowed = xg.bitmask_to_bool(mask_row(m, v), v)
                mismatch = np.nonzero(allowed != accepted_by_matcher(m, v))[0]
                assert mismatch.size == 0, (doc, step, mismatch[:5])
            assert m.accept_token(t), (doc, step)
        assert m.is_completed(), doc
    # The bounds hold: a seven-letter word and a second digit are refused.
    m = xg.GrammarMatcher(compiled)
    assert not m.accept_string("say abcdefg")
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string("say x. (see)7") and m.is_completed()
    assert not m.accept_string("7")
