"""Counted repetition: a {n,m} run as a loop with a counter gives exactly the masks of the same
repetition unrolled into the automaton, at every step, near and far from the bounds."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import masks_along
from hypothesis import given, settings
from hypothesis import strategies as st

import xg2_jax as xg

LOWERED = 2  # max_unrolled_repeat that lowers every repetition in these grammars
UNROLLED = 10**9


def assert_same_masks(tok, grammar: str, texts: list[bytes]):
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    lowered = compiler.compile_grammar(grammar, max_unrolled_repeat=LOWERED)
    unrolled = compiler.compile_grammar(grammar, max_unrolled_repeat=UNROLLED)
    for text in texts:
        got, got_done = masks_along(lowered, text)
        want, want_done = masks_along(unrolled, text)
        assert got_done and want_done
        for step, (a, b) in enumerate(zip(got, want)):
            if not np.array_equal(a, b):
                diff = np.nonzero(xg.bitmask_to_bool(a, tok.vocab_size) != xg.bitmask_to_bool(b, tok.vocab_size))[0]
                examples = [(int(t), tok.decoded_vocab[t]) for t in diff[:5]]
                pytest.fail(f"{grammar!r} on {text[:30]!r}: masks differ at byte {step}: {examples}")


# Grammar x texts that reach both bounds, on real vocabularies whose long whitespace tokens
# exercise the re-check of long tokens near a bound.
CASES = [
    (r'root ::= "\"" [a-z ]{0,40} "\""', [b'"hello world"', b'"' + b'a' * 40 + b'"', b'""']),
    (r'root ::= "\"" [a-z ]{20,90} "\""', [b'"' + b' ' * 40 + b'"', b'"' + b'ab ' * 30 + b'"']),
    (r'root ::= [a-z ]{3,70} "!"', [b'abc!', b' ' * 69 + b'!']),
    (r'root ::= ("ab" | "c"){2,50} "."', [b'abcab.', b'cc.', b'ab' * 50 + b'.']),
    ('root ::= "[" (item ("," item){0,30})? "]"\nitem ::= [0-9]{1,20}', [b'[1,22,333]', b'[]']),
    (r'root ::= [a-z]{40,} "."', [b'a' * 45 + b'.']),
    # A minimum only (or a far maximum): long tokens the loop context accepts are kept as they
    # are; only those it refuses (a quote after 20 characters, say: the vocabulary's) are re-checked.
    (r'root ::= "\"" [^"\\]{45,} "\"" [,}]', [b'"' + b'-' * 20 + b' BEGIN ' + b'abc ' * 5 + b'x' * 20 + b'",']),
    (r'root ::= "\"" [^"\\]{30,300} "\"" ","', [b'"' + b' ' * 31 + b'",', b'"' + b'word ' * 12 + b'",']),
    # A JSON string's characters below the minimum, inside an object: the long tokens its
    # no-completion context refuses (line breaks, a closing quote and what follows) are
    # re-checked only where the loop's any-count context takes them.
    (r'root ::= "{\"a\": \"" ([^"\\\x00-\x1f] | "\\" ["\\/bfnrt]){40,} "\", \"b\": " ("null" | "\"" [a-z ]* "\"") "}"',
     [b'{"a": "' + b'x' * 12 + b'\\n  ' + b'word ' * 8 + b'", "b": null}',
      b'{"a": "' + b' ' * 45 + b'", "b": "two words"}']),
]


@pytest.mark.parametrize("vocab", ["gpt2", "llama3"])
@pytest.mark.parametrize("grammar,texts", CASES, ids=[f"g{i}" for i in range(len(CASES))])
def test_counted_equals_unrolled_real_vocab(vocab_path, vocab, grammar, texts):
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path(vocab))
    assert_same_masks(tok, grammar, texts)


SMALL_VOCAB = ["a", "b", "c", "ab", "ba", "abc", "aa", "bbb", "cab", "\"", "a\"", "c\"", "!", "</s>"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(lo=st.integers(0, 8), extra=st.integers(0, 8), unbounded=st.booleans(),
       body=st.sampled_from(['[ab]', '("a" | "bc")', '[abc] ("a"?)', '"ab"']),
       text=st.text(alphabet="abc", min_size=0, max_size=20))
def test_counted_equals_unrolled_small_vocab(lo, extra, unbounded, body, text):
    tok = xg.TokenizerInfo(SMALL_VOCAB, stop_token_ids=[len(SMALL_VOCAB) - 1])
    hi = "" if unbounded else str(lo + extra)
    grammar = f'root ::= {body}{{{lo},{hi}}} "!"'
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    lowered = compiler.compile_grammar(grammar, max_unrolled_repeat=0)
    unrolled = compiler.compile_grammar(grammar, max_unrolled_repeat=UNROLLED)
    m_low, m_unr = xg.GrammarMatcher(lowered), xg.GrammarMatcher(unrolled)
    a = xg.allocate_token_bitmask(1, tok.vocab_size)
    b = xg.allocate_token_bitmask(1, tok.vocab_size)
    for ch in text + "!":
        m_low.fill_next_token_bitmask(a)
        m_unr.fill_next_token_bitmask(b)
        assert np.array_equal(a, b), (grammar, text)
        ok_low, ok_unr = m_low.accept_string(ch), m_unr.accept_string(ch)
        assert ok_low == ok_unr, (grammar, text, ch)
        if not ok_low:
            break
    assert m_low.is_completed() == m_unr.is_completed()


def test_huge_bounds_compile_like_small_ones(gpt2_tokenizer):
    """Compile work does not grow with the bound: the same number of mask entries."""
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    medium = compiler.compile_grammar(r'root ::= "\"" [^"\\]{0,1000} "\""', lazy=False)
    huge = compiler.compile_grammar(r'root ::= "\"" [^"\\]{0,100000} "\""', lazy=False)
    items = compiler.compile_grammar(r'root ::= "[" ("1" ("," "1"){0,999999})? "]"')
    assert huge.mask_cache_stats()["num_entries"] == medium.mask_cache_stats()["num_entries"]
    matcher = xg.GrammarMatcher(items)
    assert matcher.accept_string("[" + ",".join(["1"] * 500) + "]")
    assert matcher.is_completed()
