"""Differential tests: the engine's matcher against the pure-Python reference recognizer
(tests/reference_recognizer.py) on small random grammars.

Grammars are generated as ASTs, rendered to EBNF for the engine and interpreted directly by the
reference. Properties checked:
  * byte by byte (and character by character), accept_string succeeds exactly on viable prefixes,
    and is_completed() agrees with the reference;
  * token by token on a small vocabulary (with multi-byte and split-UTF-8 tokens, a stop token,
    a special token and padding ids), every mask bit equals reference viability of prefix+token,
    accept_token agrees with the mask, and eager, lazy and re-printed grammars give identical masks;
  * grammars whose root derives no string are rejected with GrammarError.
"""

from __future__ import annotations

import random
from typing import Optional

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_recognizer import (
    Alt,
    AnyOrd,
    ByteState,
    Cls,
    GrammarAst,
    Lit,
    Recognizer,
    Ref,
    Rep,
    Seq,
    render_grammar,
    sample_sentence,
)

import xg2_jax as xg

SETTINGS = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Characters of literals and class endpoints. Multi-byte ones exercise the UTF-8 automata.
ALPHABET = "ab{}"
EXTRA_CHARS = "\u00e9\u20ac\U0001F600"  # é (2 bytes), € (3 bytes), 😀 (4 bytes)
# Class endpoints, including UTF-8 length boundaries.
CLASS_POINTS = sorted(
    {ord(c) for c in ALPHABET + EXTRA_CHARS + "c|"}
    | {0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF}
)
RANDOM_TEXT_CHARS = ALPHABET + EXTRA_CHARS + "c|\u00ff\u0800"

RULE_NAMES = ["root", "r1", "r2", "r3"]


# ------------------------------------------------------------------------------ strategies


def random_class(rng: random.Random) -> Cls:
    if rng.random() < 0.1:
        return Cls((), True)  # "."
    ranges = []
    for _ in range(rng.randint(1, 3)):
        a = rng.choice(CLASS_POINTS)
        b = rng.choice(CLASS_POINTS) if rng.random() < 0.5 else a
        ranges.append((min(a, b), max(a, b)))
    return Cls(tuple(ranges), rng.random() < 0.25)


def random_literal(rng: random.Random) -> Lit:
    if rng.random() < 0.08:
        return Lit("")
    chars = ALPHABET * 4 + EXTRA_CHARS
    return Lit("".join(rng.choice(chars) for _ in range(rng.randint(1, 3))))


def random_repeat(rng: random.Random, item, max_count: int = 2) -> Rep:
    kind = rng.choice(["*", "+", "?", "{n}", "{n,}", "{n,m}", "{n,m}"])
    n = rng.randint(0, max_count)
    return {
        "*": Rep(item, 0, None),
        "+": Rep(item, 1, None),
        "?": Rep(item, 0, 1),
        "{n}": Rep(item, n, n),
        "{n,}": Rep(item, n, None),
        "{n,m}": Rep(item, n, n + rng.randint(1, max_count)),
    }[kind]


def random_expr(rng: random.Random, names: list[str], depth: int, ref_p: float = 0.25,
                max_count: int = 2):
    r = rng.random()
    if depth == 0 or r < 0.15:
        leaf = rng.random()
        if leaf < 0.75 - ref_p:
            return random_literal(rng)
        if leaf < 1 - ref_p:
            return random_class(rng)
        return Ref(rng.choice(names))
    kids = lambda: tuple(  # noqa: E731
        random_expr(rng, names, depth - 1, ref_p, max_count) for _ in range(rng.randint(2, 3)))
    if r < 0.5:
        return Seq(kids())
    if r < 0.75:
        return Alt(kids())
    return random_repeat(rng, random_expr(rng, names, depth - 1, ref_p, max_count), max_count)


def random_grammar(rng: random.Random, depth: int = 3, num_rules: tuple = (2, 4),
                   ref_p: float = 0.25, max_count: int = 2) -> GrammarAst:
    """A random grammar of 2-4 rules (root first) over the test alphabet; repetition bounds
    {n}, {n,}, {n,m} have n <= max_count and m - n <= max_count."""
    names = RULE_NAMES[: rng.randint(*num_rules)]
    return GrammarAst(tuple((name, random_expr(rng, names, depth, ref_p, max_count))
                            for name in names))


def random_any_order(rng: random.Random, names: list[str], depth: int) -> AnyOrd:
    """An AnyOrd of 1-4 members (each starts with a non-empty literal, so none is nullable)."""
    def member():
        head = Lit("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 2))))
        return head if rng.random() < 0.4 else Seq((head, random_expr(rng, names, depth, 0.1)))
    kinds = [rng.choice("roop") for _ in range(rng.randint(1, 4))]
    lo = rng.choice([0, 0, 1, 2])
    hi = rng.choice([None, None, lo + rng.randint(0, 3)])
    sep = rng.choice([Lit(","), Lit(""), random_literal(rng)])
    required = tuple(member() for k in kinds if k == "r")
    optional = tuple(member() for k in kinds if k == "o")
    repeated = tuple(member() for k in kinds if k == "p")
    once = len(required) + len(optional)
    depends = ()
    if hi is None and once >= 2 and rng.random() < 0.5:  # presence rules (dependentRequired)
        def alternative():
            return tuple(sorted(rng.sample(range(once), rng.randint(1, 2))))
        depends = tuple((rng.randrange(once), tuple(alternative() for _ in range(rng.randint(1, 2))))
                        for _ in range(rng.randint(1, 2)))
    return AnyOrd(sep, required, optional, repeated, lo, hi, depends)


def random_any_order_grammar(rng: random.Random) -> GrammarAst:
    """A root of the form pre AnyOrd post, with other random rules the members may use."""
    names = RULE_NAMES[: rng.randint(1, 3)]
    root = Seq((random_literal(rng), random_any_order(rng, names, 1), random_literal(rng)))
    return GrammarAst((("root", root),) + tuple((n, random_expr(rng, names, 2)) for n in names[1:]))


def random_right_recursive_grammar(rng: random.Random) -> GrammarAst:
    """Rules whose alternatives mostly end in a reference (tail calls, the parser's Leo
    chains), mixed with plain alternatives so chains break at ambiguous rows."""
    names = RULE_NAMES[: rng.randint(2, 4)]

    def alternative():
        if rng.random() < 0.6:
            return Seq((random_expr(rng, names, 1, ref_p=0.1), Ref(rng.choice(names))))
        return random_expr(rng, names, 1, ref_p=0.1)
    return GrammarAst(tuple((name, Alt(tuple(alternative() for _ in range(rng.randint(2, 3)))))
                            for name in names))


# Hypothesis draws the seed of a hand-tuned generator: hypothesis' own structural strategies
# shrink better but, derandomized, mostly produce trivial grammars. (`st.randoms` seeds are
# reproducible under derandomize=True and repeat less than small integers.)
grammars = st.randoms(use_true_random=True).map(random_grammar)
# Larger repetition bounds, for the counted-loop form of {n,m}.
wide_repeat_grammars = st.randoms(use_true_random=True).map(
    lambda rng: random_grammar(rng, max_count=6))
any_order_grammars = st.randoms(use_true_random=True).map(random_any_order_grammar)
right_recursive_grammars = st.randoms(use_true_random=True).map(random_right_recursive_grammar)


# ------------------------------------------------------------------------------- helpers

_COMPILERS: dict = {}


# Repetitions with a bound above this run as counted loops instead of being unrolled.
COUNTED = 1


def compile_text(tok: xg.TokenizerInfo, text: str, lazy: bool = False,
                 max_unrolled_repeat: int = 32) -> xg.CompiledGrammar:
    key = id(tok)
    if key not in _COMPILERS:
        _COMPILERS[key] = xg.GrammarCompiler(tok, max_threads=1, cache_enabled=False)
    return _COMPILERS[key].compile_grammar(text, lazy=lazy,
                                           max_unrolled_repeat=max_unrolled_repeat)


def build_or_skip(g: GrammarAst, tok: xg.TokenizerInfo):
    """Reference + compiled grammar; None when the grammar derives nothing (after checking the
    engine rejects it the same way)."""
    rec = Recognizer(g)
    text = render_grammar(g)
    if rec.empty_language:
        with pytest.raises(xg.GrammarError):
            compile_text(tok, text)
        return None
    return rec, text, compile_text(tok, text)


def strings_for(rec: Recognizer, rng: random.Random) -> list[bytes]:
    """Inputs to feed: sentences, mutated sentences (near the language's boundary), random text
    and byte strings that are not valid UTF-8."""
    sentences = [sample_sentence(rec, rng) for _ in range(4)]
    out = [s.encode() for s in sentences]
    for s in sentences:
        chars = list(s)
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(3)
            pos = rng.randint(0, len(chars))
            if op == 0:
                chars.insert(pos, rng.choice(RANDOM_TEXT_CHARS))
            elif chars and pos < len(chars):
                if op == 1:
                    del chars[pos]
                else:
                    chars[pos] = rng.choice(RANDOM_TEXT_CHARS)
        out.append("".join(chars).encode())
    out.append("".join(rng.choice(RANDOM_TEXT_CHARS) for _ in range(rng.randint(0, 8))).encode())
    # A stray byte inside a sentence: a lone lead or continuation byte, an overlong lead, a
    # surrogate or beyond-U+10FFFF prefix, or a byte that never occurs in UTF-8.
    raw = bytearray(rng.choice(out[:4]))
    raw.insert(rng.randint(0, len(raw)), rng.choice([0x80, 0xBF, 0xC0, 0xC1, 0xC3, 0xE2, 0xED,
                                                      0xF0, 0xF4, 0xF5, 0xFF]))
    out.append(bytes(raw))
    return out


# ---------------------------------------------------------------------- vocabularies (small)

SHORT_TOKENS: list[bytes] = (
    [c.encode() for c in ALPHABET + "c|"]
    + [(a + b).encode() for a in ALPHABET for b in ALPHABET]
    + [s.encode() for s in ["aaa", "{a}", "ab}", "}}}", "{{", "a{b", "bab"]]
    + [c.encode() for c in EXTRA_CHARS]
    + ["a\u00e9".encode(), "\u00e9b".encode(), "\u20ac}".encode()]
    # Tokens that split UTF-8 sequences: lead bytes, continuation bytes, partial sequences,
    # overlong / surrogate / beyond-U+10FFFF prefixes, a byte that never occurs in UTF-8.
    + [b"\xc3", b"\xa9", b"\xe2", b"\xe2\x82", b"\x82\xac", b"\xac", b"\xf0\x9f", b"\x98\x80",
       b"\x80", b"a\xc3", b"\xff", b"\xc0", b"\xe0\x80", b"\xed\xa0", b"\xf4\x90", b"\xf4\x8f"]
)


def _long_tokens() -> list[bytes]:
    """Single characters plus longer tokens, which often span several rules (the mask cache's
    'uncertain' tokens)."""
    rng = random.Random(1234)
    out = {c.encode() for c in ALPHABET + EXTRA_CHARS}
    while len(out) < 48:
        n = rng.randint(3, 7)
        out.add("".join(rng.choice(ALPHABET * 3 + EXTRA_CHARS) for _ in range(n)).encode())
    return sorted(out)


LONG_TOKENS = _long_tokens()


class SmallVocab:
    """A raw vocabulary: the given tokens, then a stop token, a special token and padding."""

    NUM_PADDING = 5

    def __init__(self, tokens: list[bytes]):
        self.tokens = tokens
        self.stop_id = len(tokens)
        self.special_id = self.stop_id + 1
        self.vocab_size = self.special_id + 1 + self.NUM_PADDING
        self.tok = xg.TokenizerInfo(
            tokens + ["</s>", "<pad>"],
            stop_token_ids=[self.stop_id],
            special_token_ids=[self.special_id],
            vocab_size=self.vocab_size,
        )
        assert self.tok.decoded_vocab[: len(tokens)] == tokens
        assert self.tok.vocab_size == self.vocab_size
        assert self.tok.stop_token_ids == [self.stop_id]

    def mask(self, m: xg.GrammarMatcher) -> np.ndarray:
        bm = xg.allocate_token_bitmask(1, self.vocab_size)
        m.fill_next_token_bitmask(bm)
        return bm[0].copy()


@pytest.fixture(scope="module")
def short_vocab() -> SmallVocab:
    return SmallVocab(SHORT_TOKENS)


@pytest.fixture(scope="module")
def long_vocab() -> SmallVocab:
    return SmallVocab(LONG_TOKENS)


# --------------------------------------------------------------------------------- tests


def check_bytes_and_chars(tok: xg.TokenizerInfo, g: GrammarAst, rng: random.Random) -> None:
    built = build_or_skip(g, tok)
    if built is None:
        return
    rec, text, compiled = built
    init = rec.initial()
    # Repetitions unrolled (the default for small bounds) and run as counted loops.
    for m in (xg.GrammarMatcher(compiled),
              xg.GrammarMatcher(compile_text(tok, text, max_unrolled_repeat=COUNTED))):
        check_strings_on(m, rec, text, init, strings_for(rec, random.Random(rng.random())))


def check_strings_on(m: xg.GrammarMatcher, rec: Recognizer, text: str, init,
                     inputs: list[bytes]) -> None:
    assert m.is_completed() == init.complete
    rng = random.Random(len(inputs))
    for s in inputs:
        # Whole string at once: one step, accepted iff the whole string is a viable prefix.
        m.reset()
        whole = ByteState(init).feed_bytes(s)
        assert m.accept_string(s) == (whole is not None), (text, s)
        if whole is not None:
            assert m.num_accepted_tokens == 1
            assert m.is_completed() == whole.complete, (text, s)
        else:
            assert m.num_accepted_tokens == 0
            assert m.is_completed() == init.complete

        # Character by character (as str where the input is text) or byte by byte. A rejected
        # unit is skipped by both sides, so the rest of the input still tests something.
        m.reset()
        try:
            chars = s.decode()
        except UnicodeDecodeError:
            chars = None
        if chars is None or rng.random() < 0.5:
            units: list = [s[i:i + 1] for i in range(len(s))]
        else:
            units = list(chars)
        state = ByteState(init)
        accepted = []
        for u in units:
            raw = u if isinstance(u, bytes) else u.encode()
            nxt = state.feed_bytes(raw)
            ok = m.accept_string(u)
            assert ok == (nxt is not None), (text, s, accepted, u)
            if ok:
                state = nxt
                accepted.append(u)
            assert m.is_completed() == state.complete, (text, s, accepted)
            assert not m.is_terminated()
        assert m.num_accepted_tokens == len(accepted)


def check_token_masks(v: SmallVocab, g: GrammarAst, rng: random.Random, steps: int = 16) -> None:
    built = build_or_skip(g, v.tok)
    if built is None:
        return
    rec, text, compiled = built
    # The same grammar compiled lazily, and printed by the engine and parsed again.
    printed = str(xg.Grammar.from_ebnf(text))
    assert str(xg.Grammar.from_ebnf(printed)) == printed
    matchers = [
        xg.GrammarMatcher(compiled),
        xg.GrammarMatcher(compile_text(v.tok, text, lazy=True)),
        xg.GrammarMatcher(compile_text(v.tok, printed)),
        xg.GrammarMatcher(compile_text(v.tok, text, lazy=True, max_unrolled_repeat=COUNTED)),
    ]
    m = matchers[0]
    # Terminates by itself once the output is complete and nothing can follow.
    auto: Optional[xg.GrammarMatcher] = xg.GrammarMatcher(compiled,
                                                          terminate_without_stop_token=True)
    tokens, stop_id, special_id, vocab_size = v.tokens, v.stop_id, v.special_id, v.vocab_size
    # Half of the paths follow a sampled sentence (tokenized greedily) where possible; the rest
    # pick random allowed tokens.
    target = sample_sentence(rec, rng).encode() if rng.random() < 0.5 else None
    state = ByteState(rec.initial())
    history: list[int] = []
    for _ in range(steps):
        bits = v.mask(m)
        for other in matchers[1:]:
            assert np.array_equal(v.mask(other), bits), (text, history)
        allowed = xg.bitmask_to_bool(bits, vocab_size)
        # Every token against the reference.
        for t, tb in enumerate(tokens):
            expected = state.feed_bytes(tb) is not None
            assert allowed[t] == expected, (text, history, tb)
        assert allowed[stop_id] == state.complete == m.is_completed(), (text, history)
        assert not allowed[special_id]
        assert not allowed[special_id + 1:].any()
        # accept_token agrees with the mask for every id (including stop, special, padding).
        for t in range(vocab_size):
            ok = m.accept_token(t)
            assert ok == allowed[t], (text, history, t)
            if ok:
                assert m.is_terminated() == (t == stop_id)
                m.rollback(1)
        assert not m.is_terminated()
        assert m.num_accepted_tokens == len(history)

        choices = [t for t in range(vocab_size) if allowed[t]]
        if not choices:
            break
        nxt = None
        if target is not None:
            done = b"".join(tokens[t] for t in history)
            rest = target[len(done):] if target.startswith(done) else b""
            fits = [t for t in choices if t < len(tokens) and rest.startswith(tokens[t])]
            if fits:
                nxt = max(fits, key=lambda t: len(tokens[t]))
            elif not rest and state.complete:
                nxt = stop_id
        if nxt is None:
            nxt = rng.choice(choices)
        for mm in matchers:
            assert mm.accept_token(nxt)
        if auto is not None:
            # xgrammar's semantics: the mask without the stop token, which is never accepted;
            # terminated once complete; nothing more once it ends.
            expected_auto = allowed.copy()
            expected_auto[stop_id] = False
            assert np.array_equal(xg.bitmask_to_bool(v.mask(auto), vocab_size), expected_auto)
            assert auto.accept_token(nxt) is (nxt != stop_id)
            if nxt == stop_id:
                auto = None
            else:
                after = state.feed_bytes(tokens[nxt])
                can_end = after.complete and not after.pending
                ends = can_end and not after.parse.can_continue()
                assert auto.is_terminated() == can_end, (text, history, nxt)
                if ends:
                    assert not xg.bitmask_to_bool(v.mask(auto), vocab_size).any()
                    assert auto.accept_token(nxt) is False
                    auto = None
        if nxt == stop_id:
            for mm in matchers:
                assert mm.is_terminated()
                # After the stop token a fill raises and nothing is accepted (as xgrammar).
                with pytest.raises(xg.MatcherStateError):
                    v.mask(mm)
                assert mm.accept_token(0) is False
                assert mm.accept_token(stop_id) is False and mm.is_terminated()
            break
        history.append(nxt)
        state = state.feed_bytes(tokens[nxt])
        assert state is not None


@settings(max_examples=150, **SETTINGS)
@given(g=grammars, rng=st.randoms(use_true_random=True))
def test_bytes_and_chars_match_reference(short_vocab, g, rng):
    check_bytes_and_chars(short_vocab.tok, g, rng)


@settings(max_examples=150, **SETTINGS)
@given(g=grammars, rng=st.randoms(use_true_random=True))
def test_token_masks_match_reference(short_vocab, g, rng):
    check_token_masks(short_vocab, g, rng)


@settings(max_examples=100, **SETTINGS)
@given(g=grammars, rng=st.randoms(use_true_random=True))
def test_long_token_masks_match_reference(long_vocab, g, rng):
    check_token_masks(long_vocab, g, rng)


@settings(max_examples=100, **SETTINGS)
@given(g=wide_repeat_grammars, rng=st.randoms(use_true_random=True))
def test_counted_repeats_match_reference(short_vocab, g, rng):
    """Bounds up to {6,12}: unrolled and counted-loop forms against the reference."""
    check_bytes_and_chars(short_vocab.tok, g, rng)
    check_token_masks(short_vocab, g, rng, steps=12)


@settings(max_examples=120, **SETTINGS)
@given(g=any_order_grammars, rng=st.randoms(use_true_random=True))
def test_any_order_matches_reference(short_vocab, long_vocab, g, rng):
    """AnyOrder nodes (members tracked as a set in the parser state) against their plain 2^n
    rule expansion in the reference."""
    check_bytes_and_chars(short_vocab.tok, g, rng)
    check_token_masks(short_vocab, g, rng, steps=12)
    check_token_masks(long_vocab, g, rng, steps=12)


# --------------------------------------------------------------------------- right recursion

NOT_QUOTE = Cls(((ord('"'), ord('"')),), True)
# (grammar, head, a unit to repeat, tail): head + unit * n + tail is a sentence. Right-recursive
# rules, whose completions chain through every row they span unless the parser goes to the
# chain's top at once (Leo's optimisation).
RIGHT_RECURSIVE = {
    "string-body": (GrammarAst((("root", Ref("r1")),
                                ("r1", Alt((Lit(""), Seq((NOT_QUOTE, Ref("r1")))))))), "", "ab", ""),
    "mutual": (GrammarAst((
        ("root", Seq((Ref("r1"), Lit("}")))),
        ("r1", Alt((Seq((Lit("a"), Ref("r2"))), Lit("b")))),
        ("r2", Alt((Seq((Lit("{"), Ref("r1"))), Seq((Lit("b"), Ref("r1"))))))),
    ), "", "a{", "b}"),
    "inside-repeat": (GrammarAst((("root", Rep(Seq((Lit("{"), Ref("r1"), Lit("}"))), 0, None)),
                                 ("r1", Alt((Lit(""), Seq((Cls(((ord("a"), ord("b")),)), Ref("r1")))))))),
                      "{", "ab", "}{a}"),
    "ambiguous": (GrammarAst((("root", Ref("r1")),
                              ("r1", Alt((Lit(""), Seq((Lit("a"), Ref("r1"))), Seq((Lit("a"), Ref("r2")))))),
                              ("r2", Alt((Seq((Lit("b"), Ref("r1"))), Lit("b")))))), "", "ab", "a"),
}


@pytest.mark.parametrize("name", sorted(RIGHT_RECURSIVE))
def test_right_recursive_grammars_match_reference(short_vocab, long_vocab, name):
    g = RIGHT_RECURSIVE[name][0]
    for seed in range(6):
        check_bytes_and_chars(short_vocab.tok, g, random.Random(seed))
        check_token_masks(short_vocab, g, random.Random(seed), steps=24)
        check_token_masks(long_vocab, g, random.Random(seed), steps=24)


@settings(max_examples=100, **SETTINGS)
@given(g=right_recursive_grammars, rng=st.randoms(use_true_random=True))
def test_random_right_recursion_matches_reference(short_vocab, g, rng):
    check_bytes_and_chars(short_vocab.tok, g, rng)
    check_token_masks(short_vocab, g, rng)


@pytest.mark.parametrize("lazy", [True, False])
@pytest.mark.parametrize("name", sorted(RIGHT_RECURSIVE))
def test_right_recursion_keeps_rows_bounded(short_vocab, name, lazy):
    """The parser's last row does not grow with the input (it held one item per character:
    2,000 characters took seconds), and rolling back across the chains keeps it right."""
    g, head, unit, tail = RIGHT_RECURSIVE[name]
    compiled = compile_text(short_vocab.tok, render_grammar(g), lazy=lazy)

    def row_items(m: xg.GrammarMatcher) -> int:
        return m._handle.last_fill_stats()["row_items"]

    sizes = []
    for n in (50, 2000):
        m = xg.GrammarMatcher(compiled)
        assert m.accept_string(head + unit * n)
        sizes.append(row_items(m))
        assert m.accept_string(tail) if tail else True
        assert m.accept_token(short_vocab.stop_id) and m.is_terminated()
    assert sizes[0] == sizes[1] and sizes[1] < 16, sizes
    # Tokens through the chains, rolled back: the rows (and the memo of chain tops) rebuilt.
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string(head + unit * 100)
    ids = [short_vocab.tokens.index(c.encode()) for c in unit * 3]
    for t in ids:
        assert m.accept_token(t)
    m.rollback(len(ids))
    assert row_items(m) == sizes[0]
    for t in ids:
        assert m.accept_token(t)
    assert row_items(m) == sizes[0]
    assert (m.accept_string(tail) if tail else True) and m.accept_token(short_vocab.stop_id)
