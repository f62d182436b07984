"""GrammarMatcher API: rollback, fork, reset, termination, stop tokens, jump-forward strings,
bitmask argument checking and error types."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import mask_row, tokenize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xg2_jax as xg

# ------------------------------------------------------------------------------ helpers


def allowed(m: xg.GrammarMatcher, vocab_size: int) -> list[int]:
    return np.flatnonzero(xg.bitmask_to_bool(mask_row(m, vocab_size), vocab_size)).tolist()


# A small raw vocabulary for the API tests: id 0 "a", ..., stop "</s>" and a special "<s>".
SMALL = ["a", "b", "c", "h", "e", "l", "o", " ", "hello", "hello ", "he", "llo", "x", "ab", "yes",
         "no", "y", "es", "\u00e9", "\u00e9l", "<s>", "</s>", b"\xc3", b"\xa9"]
SMALL_STOP = SMALL.index("</s>")
SMALL_SPECIAL = SMALL.index("<s>")


@pytest.fixture(scope="module")
def small_tok() -> xg.TokenizerInfo:
    return xg.TokenizerInfo(SMALL, stop_token_ids=[SMALL_STOP], special_token_ids=[SMALL_SPECIAL])


def small_matcher(tok: xg.TokenizerInfo, ebnf: str, **kw) -> xg.GrammarMatcher:
    return xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar(ebnf), **kw)


def sid(s) -> int:
    return SMALL.index(s)


# --------------------------------------------------------------- rollback / fork (property)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: (st.lists(inner, max_size=4)
                   | st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def gpt2_json(gpt2_tokenizer):
    return gpt2_tokenizer, xg.GrammarCompiler(gpt2_tokenizer).compile_builtin_json_grammar()


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(value=json_values, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 2]),
       data=st.data())
def test_rollback_and_fork_equal_replay(gpt2_json, value, ensure_ascii, indent, data):
    tok, compiled = gpt2_json
    v = tok.vocab_size
    # The builtin JSON grammar takes an object or an array (xgrammar's language).
    value = value if isinstance(value, (list, dict)) else [value]
    doc = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    ids = tokenize(tok, doc)
    n = len(ids)

    # Masks of a matcher that accepted ids[:i], for every i, by replaying from scratch.
    replay = []
    m = xg.GrammarMatcher(compiled)
    for i in range(n + 1):
        fresh = xg.GrammarMatcher(compiled)
        for t in ids[:i]:
            assert fresh.accept_token(t)
        replay.append((mask_row(fresh, v), fresh.is_completed()))
    # Incrementally, with forks taken along the way.
    forks = {}
    for i, t in enumerate(ids):
        assert np.array_equal(mask_row(m, v), replay[i][0])
        if i % 3 == 0:
            forks[i] = m.fork()
        assert m.accept_token(t), (doc, i)
    assert m.is_completed()
    assert m.num_accepted_tokens == n

    # Forks are independent: unchanged by the original's progress, and they progress alone.
    for i, f in forks.items():
        assert f.num_accepted_tokens == i
        assert np.array_equal(mask_row(f, v), replay[i][0])
        for j in range(i, n):
            assert f.accept_token(ids[j])
        assert np.array_equal(mask_row(f, v), replay[n][0])
    assert np.array_equal(mask_row(m, v), replay[n][0])

    # Rollbacks by random amounts, then re-accepting, give the replayed masks.
    for _ in range(4):
        k = data.draw(st.integers(0, m.num_accepted_tokens), label="rollback")
        pos = m.num_accepted_tokens - k
        m.rollback(k)
        assert m.num_accepted_tokens == pos
        assert np.array_equal(mask_row(m, v), replay[pos][0]), (doc, pos)
        assert m.is_completed() == replay[pos][1]
        redo = data.draw(st.integers(0, n - pos), label="redo")
        for t in ids[pos:pos + redo]:
            assert m.accept_token(t)
        assert np.array_equal(mask_row(m, v), replay[pos + redo][0])

    # Through termination and back.
    m.rollback(m.num_accepted_tokens)
    for t in ids:
        assert m.accept_token(t)
    stop = tok.stop_token_ids[0]
    assert m.accept_token(stop) and m.is_terminated()
    m.rollback(1)
    assert not m.is_terminated()
    assert np.array_equal(mask_row(m, v), replay[n][0])


def test_kept_completion_walks_follow_rollback_and_fork(gpt2_tokenizer):
    """A string's completion walk is kept while the string goes on (s is recursive, so it stays
    a rule the parser completes). After a rollback past the string's start, the same rule at
    the same row has another caller ("!" follows it after "a", "?" after "b"): the masks are
    those of a fresh matcher, as are a fork's. (Without the rollback's forgetting, "b" gets
    "a"'s continuation.)"""
    tok = gpt2_tokenizer
    grammar = 'root ::= "a" s "!" | "b" s "?"\ns ::= "\\"" [ a-z]* "\\"" | "(" s ")"'
    compiled = xg.GrammarCompiler(tok).compile_grammar(grammar)
    v = tok.vocab_size

    def fresh_mask(text):
        f = xg.GrammarMatcher(compiled)
        assert f.accept_string(text)
        return mask_row(f, v)

    def allows(mask, text):
        t = [i for i in range(tok.num_tokens) if bytes(tok.decoded_vocab[i]) == text.encode()][0]
        return bool((mask[t // 32] >> (t % 32)) & 1)

    m = xg.GrammarMatcher(compiled)
    for text in ('a"xy', 'b"xy', 'a"xy'):
        assert m.accept_string(text[:2])  # the string's start: the same row each time
        for i in range(2, len(text)):
            assert np.array_equal(mask_row(m, v), fresh_mask(text[:i])), text[:i]
            assert m.accept_string(text[i])
        mask = mask_row(m, v)
        assert np.array_equal(mask, fresh_mask(text))
        assert allows(mask, '"!') == (text[0] == "a") and allows(mask, '"?') == (text[0] == "b")
        fork = m.fork()
        assert fork.accept_string("z") and np.array_equal(mask_row(fork, v), fresh_mask(text + "z"))
        m.rollback(m.num_accepted_tokens)


# ------------------------------------------------------------------------- rollback errors


def test_rollback_past_history(small_tok):
    v = small_tok.vocab_size
    m = small_matcher(small_tok, 'root ::= "ab"* "c"')
    assert m.accept_token(sid("ab"))
    assert m.accept_token(sid("a"))
    before = mask_row(m, v)
    for n in (3, 100):
        with pytest.raises(xg.MatcherStateError):
            m.rollback(n)
        assert m.num_accepted_tokens == 2
        assert np.array_equal(mask_row(m, v), before)
    with pytest.raises(xg.InvalidArgumentError):
        m.rollback(-1)
    assert m.num_accepted_tokens == 2
    # Still works.
    assert m.accept_token(sid("b"))
    assert m.accept_token(sid("c"))
    assert m.is_completed()
    m.rollback(0)
    assert m.num_accepted_tokens == 4
    m.rollback(4)
    assert m.num_accepted_tokens == 0
    with pytest.raises(xg.MatcherStateError):
        m.rollback(1)
    assert allowed(m, v) == sorted([sid("a"), sid("c"), sid("ab")])


def test_rejected_token_is_not_a_step(small_tok):
    m = small_matcher(small_tok, 'root ::= "ab" "c"')
    assert not m.accept_token(sid("b"))
    assert m.num_accepted_tokens == 0
    assert not m.accept_string("ac")
    assert m.num_accepted_tokens == 0
    assert m.accept_string("ab")  # one step
    assert m.num_accepted_tokens == 1
    assert not m.accept_token(SMALL_STOP)  # not complete: the stop token is refused
    assert not m.is_terminated()
    assert m.accept_token(sid("c"))
    m.rollback(2)
    assert m.num_accepted_tokens == 0
    assert allowed(m, small_tok.vocab_size) == [sid("a"), sid("ab")]


def test_accept_string_bytes_and_partial_characters(small_tok):
    m = small_matcher(small_tok, 'root ::= "h\u00e9" [lo]+')
    assert m.accept_string(b"h\xc3")  # ends inside "é"
    assert not m.is_completed()
    assert allowed(m, small_tok.vocab_size) == [sid(b"\xa9")]
    assert not m.accept_string(b"\xa8")
    assert m.accept_string(b"\xa9l")
    assert m.is_completed()
    assert not m.accept_string("\u00e9")
    m.rollback(2)
    assert m.accept_string("h\u00e9lo")


# --------------------------------------------------------------------------- termination


def test_accept_after_termination(small_tok):
    v = small_tok.vocab_size
    m = small_matcher(small_tok, 'root ::= "a" "b"?')
    assert m.accept_token(sid("a"))
    before = mask_row(m, v)
    assert xg.bitmask_to_bool(before, v)[SMALL_STOP]
    assert m.accept_token(SMALL_STOP)
    assert m.is_terminated()
    assert m.num_accepted_tokens == 2
    # Refused, and a fill raises, as xgrammar; nothing changes.
    for call in (lambda: m.accept_token(sid("b")), lambda: m.accept_token(SMALL_STOP),
                 lambda: m.accept_string("b")):
        assert call() is False
        assert m.is_terminated() and m.num_accepted_tokens == 2
        with pytest.raises(xg.MatcherStateError, match="terminated after accepting the stop"):
            mask_row(m, v)
    assert m.find_jump_forward_string() == ""
    m.rollback(1)
    assert not m.is_terminated()
    assert np.array_equal(mask_row(m, v), before)
    assert m.accept_token(sid("b"))
    assert m.is_completed()
    assert allowed(m, v) == [SMALL_STOP]
    assert m.accept_token(SMALL_STOP)


def test_stop_token_as_grammar_input():
    """As xgrammar: a stop token is also allowed where reading it as grammar input completes
    the grammar (by id, or as text when it is a text token, i.e. an override_stop_tokens one),
    and then terminates; a tokenizer's stop token is never read as its text."""
    tok = xg.TokenizerInfo(["</s>", "<|return|>", "ok", "STOP"], stop_token_ids=[0])
    compiler = xg.GrammarCompiler(tok)
    v = tok.vocab_size
    text_stop = compiler.compile_grammar('root ::= "ok" "<|return|>"')
    m = xg.GrammarMatcher(text_stop, override_stop_tokens=[1])
    assert allowed(m, v) == [2] and not m.accept_token(1)
    assert m.accept_token(2)
    assert allowed(m, v) == [1]
    assert m.accept_token(1) and m.is_terminated() and m.is_completed()
    with pytest.raises(xg.MatcherStateError):
        mask_row(m, v)
    m.rollback(1)
    assert not m.is_terminated() and m.accept_token(1) and m.is_terminated()
    # Not where reading it leaves the grammar incomplete.
    longer = compiler.compile_grammar('root ::= "ok" "<|return|>" "ok"')
    m = xg.GrammarMatcher(longer, override_stop_tokens=[1])
    assert m.accept_token(2) and allowed(m, v) == [] and not m.accept_token(1)
    assert m.accept_string("<|return|>") and allowed(m, v) == [2]
    # By id, also with terminate_without_stop_token.
    by_id = compiler.compile_grammar('root ::= "ok" Token(0)')
    for auto in (False, True):
        m = xg.GrammarMatcher(by_id, terminate_without_stop_token=auto)
        assert m.accept_token(2) and allowed(m, v) == [0]
        assert m.accept_token(0) and m.is_terminated()
        with pytest.raises(xg.MatcherStateError):
            mask_row(m, v)
    # A tokenizer's stop token is special: its text "STOP" is never grammar text.
    tok = xg.TokenizerInfo(["</s>", "STOP", "ok"], stop_token_ids=[1])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "ok" "STOP"'))
    assert m.accept_token(2) and allowed(m, 3) == [] and not m.accept_token(1)
    assert m.accept_string("STOP") and allowed(m, 3) == [1]


def test_terminate_without_stop_token(small_tok):
    v = small_tok.vocab_size
    m = small_matcher(small_tok, 'root ::= "yes" | "no" | "y" "a"*',
                      terminate_without_stop_token=True)
    assert m.accept_token(sid("y"))
    # xgrammar's semantics: terminated once complete, though "a" may still follow
    assert m.is_completed() and m.is_terminated()
    assert allowed(m, v) == [sid("a"), sid("e"), sid("es")]  # never a stop token, as xgrammar
    assert m.accept_token(SMALL_STOP) is False
    assert m.accept_token(sid("es"))
    assert m.is_terminated()  # complete, and nothing can follow
    assert allowed(m, v) == []  # a fill does not raise (no stop token was accepted)
    assert m.accept_token(sid("a")) is False and m.accept_token(SMALL_STOP) is False
    m.rollback(1)
    assert m.is_terminated()
    assert m.accept_token(sid("a"))
    assert m.is_terminated()
    m.reset()
    assert not m.is_terminated()
    assert m.accept_string("no")
    assert m.is_terminated()
    assert m.accept_string("x") is False
    # Without the flag the matcher waits for the stop token.
    m2 = small_matcher(small_tok, 'root ::= "yes" | "no"')
    assert m2.accept_token(sid("no"))
    assert m2.is_completed() and not m2.is_terminated()
    assert allowed(m2, v) == [SMALL_STOP]


def test_reset(small_tok):
    v = small_tok.vocab_size
    m = small_matcher(small_tok, 'root ::= "hello" " " [a-z]+')
    initial = mask_row(m, v)
    assert m.accept_token(sid("hello "))
    assert m.accept_token(sid("x"))
    assert m.accept_token(SMALL_STOP)
    assert m.is_terminated()
    m.reset()
    assert not m.is_terminated() and not m.is_completed()
    assert m.num_accepted_tokens == 0
    assert np.array_equal(mask_row(m, v), initial)
    with pytest.raises(xg.MatcherStateError):
        m.rollback(1)
    assert m.accept_string("hello ab")


# --------------------------------------------------------------------------- stop tokens


def test_override_stop_tokens(small_tok):
    v = small_tok.vocab_size
    g = 'root ::= "a"+'
    m = small_matcher(small_tok, g, override_stop_tokens=sid("x"))
    assert m.stop_token_ids == [sid("x")]
    assert m.accept_token(sid("a"))
    assert allowed(m, v) == [sid("a"), sid("x")]  # the tokenizer's "</s>" no longer stops
    assert not m.accept_token(SMALL_STOP)
    assert m.accept_token(sid("x")) and m.is_terminated()
    m = small_matcher(small_tok, g, override_stop_tokens=[sid("x"), sid("o")])
    assert sorted(m.stop_token_ids) == sorted([sid("x"), sid("o")])
    assert not m.accept_token(sid("o"))  # not complete yet
    assert m.accept_token(sid("a"))
    assert allowed(m, v) == sorted([sid("a"), sid("x"), sid("o")])
    assert m.accept_token(sid("o")) and m.is_terminated()
    assert small_matcher(small_tok, g).stop_token_ids == [SMALL_STOP]
    for bad in (v, -1):
        with pytest.raises(xg.InvalidArgumentError):
            small_matcher(small_tok, g, override_stop_tokens=[bad])


def test_special_tokens_never_allowed(small_tok):
    # The special token's text "<s>" is valid grammar text, yet the token is never allowed.
    v = small_tok.vocab_size
    m = small_matcher(small_tok, "root ::= [^\\n]*")
    bits = xg.bitmask_to_bool(mask_row(m, v), v)
    assert not bits[SMALL_SPECIAL]
    assert bits[SMALL_STOP]
    # Every other token is text the grammar allows, except a lone UTF-8 continuation byte.
    others = [t for t in range(len(SMALL)) if t not in (SMALL_SPECIAL, SMALL_STOP, sid(b"\xa9"))]
    assert all(bits[t] for t in others)
    assert not bits[sid(b"\xa9")]
    assert not m.accept_token(SMALL_SPECIAL)
    assert m.accept_string("<s>")  # as text it is fine


def test_token_id_out_of_range(small_tok):
    v = small_tok.vocab_size
    m = small_matcher(small_tok, 'root ::= "a"*')
    for bad in (v, v + 1, -1, -(2**31)):
        with pytest.raises(xg.InvalidArgumentError):
            m.accept_token(bad)
    assert m.num_accepted_tokens == 0
    assert m.accept_token(np.int64(sid("a")))
    m.accept_token(SMALL_STOP)
    with pytest.raises(xg.InvalidArgumentError):  # range is checked even after termination
        m.accept_token(v)


def test_padding_ids(small_tok):
    tok = xg.TokenizerInfo(SMALL, stop_token_ids=[SMALL_STOP], special_token_ids=[SMALL_SPECIAL],
                           vocab_size=len(SMALL) + 70)
    m = small_matcher(tok, "root ::= [^\\n]*")
    bits = xg.bitmask_to_bool(mask_row(m, tok.vocab_size), tok.vocab_size)
    assert not bits[len(SMALL):].any()
    assert bits[: len(SMALL)].sum() == len(SMALL) - 2  # not "<s>", not a lone b"\xa9"
    for t in (len(SMALL), tok.vocab_size - 1):
        assert not m.accept_token(t)
    with pytest.raises(xg.InvalidArgumentError):
        m.accept_token(tok.vocab_size)


def test_token_id_beyond_int32(small_tok):
    m = small_matcher(small_tok, 'root ::= "a"*')
    for bad in (2**31, 2**40, -(2**31) - 1, -(2**63)):
        with pytest.raises(xg.InvalidArgumentError):
            m.accept_token(bad)
    assert m.num_accepted_tokens == 0
    assert m.accept_token(sid("a"))


def token_loop_prefix(m: xg.GrammarMatcher, ids: list[int]) -> int:
    """The reference for accept_prefix: accept_token one at a time."""
    count = 0
    for t in ids:
        if m.is_terminated() or not m.accept_token(t):
            break
        count += 1
    return count


PREFIX_CASES = [["a", "b", "a"], ["a", "x", "a"], ["a", "</s>", "a"], [], ["x"],
                ["ab", "a", "b", "</s>"], ["b"]]


@pytest.mark.parametrize("tokens", PREFIX_CASES)
@pytest.mark.parametrize("ids_type", [list, tuple, np.array])
def test_accept_prefix_equals_token_loop(small_tok, tokens, ids_type):
    ebnf = 'root ::= ("a" "b"?)+'
    ids = [sid(t) for t in tokens]
    ours, ref = small_matcher(small_tok, ebnf), small_matcher(small_tok, ebnf)
    assert ours.accept_prefix(ids_type(ids)) == token_loop_prefix(ref, ids)
    assert ours._debug_print_internal_state() == ref._debug_print_internal_state()
    assert ours.num_accepted_tokens == ref.num_accepted_tokens
    assert ours.is_terminated() == ref.is_terminated()


@pytest.mark.parametrize("tokens", PREFIX_CASES)
def test_count_valid_prefix_leaves_state(small_tok, tokens):
    m = small_matcher(small_tok, 'root ::= ("a" "b"?)+')
    assert m.accept_token(sid("a"))
    before = m._debug_print_internal_state()
    ids = [sid(t) for t in tokens]
    ref = m.fork()
    assert m.count_valid_prefix(ids) == token_loop_prefix(ref, ids)
    assert m._debug_print_internal_state() == before and m.num_accepted_tokens == 1


def test_prefix_after_termination(small_tok):
    m = small_matcher(small_tok, 'root ::= "a"')
    assert m.accept_prefix([sid("a"), SMALL_STOP]) == 2 and m.is_terminated()
    assert m.accept_prefix([SMALL_STOP]) == 0 and m.count_valid_prefix([sid("a")]) == 0
    m.rollback(1)
    assert m.count_valid_prefix([SMALL_STOP, sid("a")]) == 1


@pytest.mark.parametrize("bad", [-1, len(SMALL), 2**31, 2**40, -(2**63)])
@pytest.mark.parametrize("call", ["accept_prefix", "count_valid_prefix"])
def test_prefix_bad_ids_accept_nothing(small_tok, bad, call):
    m = small_matcher(small_tok, 'root ::= "a"*')
    with pytest.raises(xg.InvalidArgumentError, match="position 1"):
        getattr(m, call)([sid("a"), bad, sid("a")])
    assert m.num_accepted_tokens == 0
    assert m.accept_prefix([sid("a")]) == 1  # still usable


def test_rollback_beyond_int32(small_tok):
    m = small_matcher(small_tok, 'root ::= "a"*')
    assert m.accept_token(sid("a"))
    for bad in (2**31, 2**40):
        with pytest.raises(xg.MatcherStateError):
            m.rollback(bad)
    with pytest.raises(xg.InvalidArgumentError):
        m.rollback(-(2**40))
    assert m.num_accepted_tokens == 1
    m.rollback(1)
    assert m.num_accepted_tokens == 0


# ---------------------------------------------------------------------------- bitmasks


def test_bitmask_helpers():
    assert xg.get_bitmask_shape(3, 64) == (3, 2)
    assert xg.get_bitmask_shape(1, 65) == (1, 3)
    bm = xg.allocate_token_bitmask(2, 33)
    assert bm.dtype == np.int32 and bm.shape == (2, 2)
    assert (bm == -1).all()
    row = np.array([1 | (1 << 31), 1], dtype=np.uint32).view(np.int32)
    assert np.flatnonzero(xg.bitmask_to_bool(row, 33)).tolist() == [0, 31, 32]
    assert np.flatnonzero(xg.bitmask_to_bool(row, 32)).tolist() == [0, 31]


def test_fill_bitmask_rows_and_return_value(small_tok):
    v = small_tok.vocab_size
    m = small_matcher(small_tok, 'root ::= "a" "b"')
    bm = xg.allocate_token_bitmask(3, v)
    assert m.fill_next_token_bitmask(bm, 1) is True
    assert (bm[0] == -1).all() and (bm[2] == -1).all()  # other rows untouched
    assert np.flatnonzero(xg.bitmask_to_bool(bm[1], v)).tolist() == [sid("a"), sid("ab")]
    # A single row (1-D), and a row wider than needed (extra words are zeroed).
    row = np.full(bm.shape[1], -1, dtype=np.int32)
    m.fill_next_token_bitmask(row)
    assert np.array_equal(row, bm[1])
    wide = np.full((1, bm.shape[1] + 3), -1, dtype=np.int32)
    m.fill_next_token_bitmask(wide)
    assert np.array_equal(wide[0, : bm.shape[1]], bm[1])
    assert (wide[0, bm.shape[1]:] == 0).all()
    # Everything allowed: no stop, no special tokens, grammar accepts any continuation.
    tok = xg.TokenizerInfo(["a", "b"])
    assert tok.stop_token_ids == [] and tok.special_token_ids == []
    m2 = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar("root ::= [ab]*"))
    bm2 = xg.allocate_token_bitmask(1, 2)
    assert m2.fill_next_token_bitmask(bm2) is False
    assert xg.bitmask_to_bool(bm2[0], 2).tolist() == [True, True]


@pytest.mark.parametrize(
    "make, index",
    [
        (lambda w: np.zeros((2, w), dtype=np.int64), 0),
        (lambda w: np.zeros((2, w), dtype=np.uint32), 0),
        (lambda w: np.zeros((2, w), dtype=np.float32), 0),
        (lambda w: np.zeros((2, w), dtype=np.int16), 0),
        (lambda w: np.zeros((2, w - 1), dtype=np.int32), 0),  # too few words
        (lambda w: np.zeros((2, 2, w), dtype=np.int32), 0),  # 3-D
        (lambda w: np.zeros((), dtype=np.int32), 0),  # 0-D
        (lambda w: np.zeros((2, 2 * w), dtype=np.int32)[:, ::2], 0),  # non-contiguous row
        (lambda w: np.zeros((2, w), dtype=np.int32), 2),  # index out of range
        (lambda w: np.zeros((2, w), dtype=np.int32), -1),
        (lambda w: np.zeros(w, dtype=np.int32), 1),  # 1-D has one row
    ],
)
def test_bad_bitmask_arguments(make, index):
    tok = xg.TokenizerInfo([f"t{i}" for i in range(40)] + ["</s>"], stop_token_ids=[40])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "t1"+'))
    words = xg.get_bitmask_shape(1, tok.vocab_size)[1]
    assert words == 2
    bm = make(words)
    snapshot = bm.copy()
    with pytest.raises(xg.InvalidArgumentError):
        m.fill_next_token_bitmask(bm, index)
    assert np.array_equal(bm, snapshot)
    good = xg.allocate_token_bitmask(1, tok.vocab_size)
    m.fill_next_token_bitmask(good)
    assert np.flatnonzero(xg.bitmask_to_bool(good[0], tok.vocab_size)).tolist() == [1]


# -------------------------------------------------------------------- jump-forward strings


@pytest.mark.parametrize(
    "ebnf, prefix, expected",
    [
        ('root ::= "hello" " " [a-z]+', "", "hello "),
        ('root ::= "hello" " " [a-z]+', "hel", "lo "),
        ('root ::= "hello" " " [a-z]+', "hello w", ""),
        ('root ::= "abc" | "abd"', "", "ab"),
        ('root ::= "abc" | "abd"', "abd", ""),
        ('root ::= "x"{3} [0-9]', "x", "xx"),
        ('root ::= "{" ws "\\"key\\"" ws ":" [0-9]\nws ::= ""', "", '{"key":'),
        ('root ::= ("a" | "") "b"', "", ""),
        ('root ::= "caf\u00e9 " [0-9]', "", "caf\u00e9 "),
        ('root ::= "\u00e9" | "\u00e8"', "", ""),  # common first byte, not a whole character
        ('root ::= "a" item\nitem ::= "[" [0-9] "]"', "a", "["),
        ('root ::= "a"*', "", ""),
    ],
)
def test_find_jump_forward_string(small_tok, ebnf, prefix, expected):
    m = small_matcher(small_tok, ebnf)
    assert m.accept_string(prefix)
    n, before = m.num_accepted_tokens, mask_row(m, small_tok.vocab_size)
    assert m.find_jump_forward_string() == expected
    # Pure query: no state change.
    assert m.num_accepted_tokens == n
    assert np.array_equal(mask_row(m, small_tok.vocab_size), before)
    if expected:
        assert m.accept_string(expected)


def test_find_jump_forward_string_json(gpt2_json):
    tok, compiled = gpt2_json
    m = xg.GrammarMatcher(compiled)
    assert m.find_jump_forward_string() == ""
    assert m.accept_string('{"a": t')
    assert m.find_jump_forward_string() == "rue"
    assert m.accept_string('rue, "b": nu')
    assert m.find_jump_forward_string() == "ll"


def test_find_jump_forward_string_inside_character(small_tok):
    m = small_matcher(small_tok, 'root ::= "h\u00e9llo" [0-9]')
    assert m.accept_token(sid("h"))
    assert m.accept_token(sid(b"\xc3"))  # first byte of "é"
    # No str can start with the forced continuation byte: '' (the bytes API has it all).
    assert m.find_jump_forward_string() == ""
    assert m.find_jump_forward_bytes() == b"\xa9llo"
    assert m.num_accepted_tokens == 2
    assert m.accept_string(b"\xa9llo")
    assert m.find_jump_forward_string() == "" and m.find_jump_forward_bytes() == b""
    m.rollback(1)
    assert m.accept_token(sid(b"\xa9"))
    assert m.find_jump_forward_string() == "llo"


def test_concurrent_use_of_one_matcher_raises_and_leaves_it_usable(llama3_tokenizer):
    """Two threads on one matcher: each call either runs alone or raises MatcherStateError
    ("in use by another thread"); never a crash or a corrupted state."""
    import threading

    compiled = xg.GrammarCompiler(llama3_tokenizer).compile_builtin_json_grammar()
    m = xg.GrammarMatcher(compiled)
    ids = tokenize(llama3_tokenizer, '{"a": [1, 2, 3], "b": "text"}')
    errors, busy = [], []

    def filler():
        bm = xg.allocate_token_bitmask(1, llama3_tokenizer.vocab_size)
        for _ in range(3000):
            try:
                m.fill_next_token_bitmask(bm)
            except xg.MatcherStateError as e:
                busy.append(str(e))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

    def retry(call):
        while True:
            try:
                return call()
            except xg.MatcherStateError as e:
                busy.append(str(e))
            except Exception as e:  # noqa: BLE001
                errors.append(e)
                return None

    def walker():
        for _ in range(60):
            for t in ids:
                if retry(lambda: m.accept_token(t)):
                    retry(lambda: m.rollback(1))

    threads = [threading.Thread(target=filler), threading.Thread(target=walker)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all("in use by another thread" in b for b in busy)
    # Usable afterwards, in a consistent state.
    m.reset()
    for t in ids:
        assert m.accept_token(t)
    assert m.is_completed()
