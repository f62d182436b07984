"""Shared pieces of the xg2-jax fuzz harnesses.

Every harness module defines ``one_input(data: bytes) -> None``: it feeds ``data`` to one front
end of the engine and returns normally when the engine behaved (accepted the input, or rejected
it with a subclass of ``xg2_jax.XG2Error``). Anything else escapes as an exception: a Python
exception that is not an ``XG2Error`` (``RecursionError``, ``TypeError``, ``MemoryError``, ...),
an ``InvariantViolation`` (the engine returned something it must not), or a ``SlowInput``
(the input took longer than the per-input time limit). A crash kills the process, a hang is
caught by the caller (libFuzzer's ``-timeout`` or the subprocess timeout of the replay tests).

Only ``main()`` needs atheris; the harness functions are plain Python so that pytest can
replay inputs without it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parent
REPO_ROOT = FUZZ_DIR.parent
try:  # an installed or PYTHONPATH xg2_jax (e.g. a sanitizer build) wins over the checkout
    import xg2_jax  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402

import xg2_jax as xg  # noqa: E402

# Seconds one input may take before it counts as a hang (soft check, after the call returns;
# a real hang is caught by libFuzzer's -timeout or the replay's subprocess timeout).
TIME_LIMIT_S = float(os.environ.get("XG2_FUZZ_TIME_LIMIT", "10"))
# XG2_FUZZ_TOLERATE_KNOWN=1: inputs that hit one of the already reported bugs (see
# KNOWN_BUG_PATTERNS) are ignored, so a long run can get past them and find new ones.
TOLERATE_KNOWN = os.environ.get("XG2_FUZZ_TOLERATE_KNOWN", "") not in ("", "0")

# (exception class name, substring of the message) of reported, still open bugs.
KNOWN_BUG_PATTERNS = [
    ("RuntimeError", "conversion error"),         # JSON syntax error at a non-ASCII character
    ("RecursionError", ""),                       # deep JSON in tokenizer.json / dict schemas
    ("TypeError", "object is not iterable"),      # tokenizer.json: Sequence with non-list parts
    ("AttributeError", "has no attribute 'get'"),  # tokenizer.json: non-object decoder parts
    ("MemoryError", ""),                          # tokenizer.json: a huge token id
    ("SlowInput", "from_tokenizer_json"),         # tokenizer.json: a huge token id (slow path)
    ("SlowInput", "compile"),                     # nested huge repetition bounds
    ("SlowInput", "from_ebnf"),                   # nested huge repetition bounds
]


class InvariantViolation(AssertionError):
    """The engine answered something its documentation rules out."""


class SlowInput(AssertionError):
    """One input ran longer than TIME_LIMIT_S."""


def is_known_bug(exc: BaseException) -> bool:
    name, msg = type(exc).__name__, str(exc)
    return any(name == n and s in msg for n, s in KNOWN_BUG_PATTERNS)


@contextlib.contextmanager
def time_limit(what: str, limit: float | None = None):
    """Raises SlowInput if the block took longer than ``limit`` seconds."""
    limit = TIME_LIMIT_S if limit is None else limit
    t0 = time.perf_counter()
    yield
    dt = time.perf_counter() - t0
    if dt > limit:
        raise SlowInput(f"{what} took {dt:.1f} s (limit {limit:.1f} s)")


def expect_typed(fn, *args, **kwargs):
    """Calls fn; returns (True, result), or (False, exc) for an XG2Error. Other exceptions
    propagate (they are the bugs a harness looks for)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return True, fn(*args, **kwargs)
        except xg.XG2Error as e:
            return False, e


def guarded(one_input, tolerate: bool | None = None):
    """Wraps a harness for fuzzing runs: with ``tolerate`` (default: XG2_FUZZ_TOLERATE_KNOWN),
    inputs that hit a reported bug (KNOWN_BUG_PATTERNS) are ignored."""
    tolerate = TOLERATE_KNOWN if tolerate is None else tolerate

    def run(data: bytes) -> None:
        try:
            one_input(data)
        except Exception as e:  # noqa: BLE001 - re-raised unless it is a reported bug
            if tolerate and is_known_bug(e):
                return
            raise

    return run


class Bytes:
    """A tiny deterministic consumer of fuzz bytes (no atheris needed)."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def u8(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def u16(self) -> int:
        return self.u8() | (self.u8() << 8)

    def u32(self) -> int:
        return self.u16() | (self.u16() << 16)

    def take(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def rest(self) -> bytes:
        return self.take(self.remaining())


# ------------------------------------------------------------------ a small shared vocabulary
_TOKENIZER = None
_COMPILER = None

MULTI_BYTE_TOKENS = [
    "ab", "ba", "aa", "abc", "true", "false", "null", "{\"", "\":", "\",", "\", \"", "[1",
    "12", "0.", "e+", "-1", "  ", "\n  ", "\"a", "a\"", "é", "€", "日本", "😀", "\\n", "\\u",
    "name", "\"name\": ", "xyz", "<", ">", "</", "::=", "aaaa", "bbbb",
]


def small_tokenizer() -> "xg.TokenizerInfo":
    """A byte-fallback vocabulary: all 256 bytes as <0xNN>, printable ASCII, a few multi-byte
    tokens (including partial UTF-8 through the byte tokens), one special and one stop token."""
    global _TOKENIZER
    if _TOKENIZER is None:
        tokens = [f"<0x{b:02X}>" for b in range(256)]
        tokens += [chr(c) for c in range(0x21, 0x7F)] + ["▁"]
        tokens += MULTI_BYTE_TOKENS
        tokens += ["<s>", "</s>"]
        _TOKENIZER = xg.TokenizerInfo(tokens, xg.VocabType.BYTE_FALLBACK,
                                      vocab_size=len(tokens) + 5,  # padding ids
                                      stop_token_ids=[len(tokens) - 1],
                                      special_token_ids=[len(tokens) - 2])
    return _TOKENIZER


def small_compiler() -> "xg.GrammarCompiler":
    global _COMPILER
    if _COMPILER is None:
        _COMPILER = xg.GrammarCompiler(small_tokenizer(), max_threads=1, cache_enabled=False)
    return _COMPILER


def mask_of(matcher: "xg.GrammarMatcher", vocab_size: int) -> np.ndarray:
    """The allowed tokens; none after a stop token, where a fill raises (as xgrammar's)."""
    bm = xg.allocate_token_bitmask(1, vocab_size)
    try:
        matcher.fill_next_token_bitmask(bm)
    except xg.MatcherStateError:
        if not matcher.has_ended():
            raise InvariantViolation("a fill raised MatcherStateError before the end") from None
        return np.zeros(vocab_size, dtype=bool)
    return xg.bitmask_to_bool(bm[0], vocab_size)


def check_mask_agrees(matcher: "xg.GrammarMatcher", vocab_size: int) -> np.ndarray:
    """Asserts that accept_token agrees with the mask for every token id; returns the mask.

    The matcher itself is unchanged (every probe runs on a fork)."""
    allowed = mask_of(matcher, vocab_size)
    before = matcher.num_accepted_tokens
    for t in range(vocab_size):
        f = matcher.fork()
        ok = f.accept_token(t)
        if ok != bool(allowed[t]):
            raise InvariantViolation(
                f"token {t} ({small_or_none(matcher, t)!r}): mask says "
                f"{'allowed' if allowed[t] else 'forbidden'}, accept_token returned {ok}")
        if not ok and f.num_accepted_tokens != before:
            raise InvariantViolation(f"rejected token {t} changed the history length")
    if matcher.num_accepted_tokens != before:
        raise InvariantViolation("probing forks changed the original matcher")
    return allowed


def small_or_none(matcher, t):
    try:
        return matcher.compiled_grammar.tokenizer_info.token_bytes(t)
    except Exception:  # noqa: BLE001
        return None


def exercise_compiled(compiled: "xg.CompiledGrammar", choices: Bytes, steps: int = 6) -> None:
    """Walks a matcher along allowed tokens picked by ``choices``, checking at every step that
    the mask and accept_token agree, that rollback restores the previous mask, and that a
    forbidden token leaves the state unchanged."""
    vocab_size = compiled.tokenizer_info.vocab_size
    m = xg.GrammarMatcher(compiled)
    history = []
    for _ in range(steps):
        if m.is_terminated():
            break
        allowed = check_mask_agrees(m, vocab_size)
        history.append(allowed)
        ids = np.flatnonzero(allowed)
        if len(ids) == 0:
            break
        t = int(ids[choices.u16() % len(ids)])
        if not m.accept_token(t):
            raise InvariantViolation(f"allowed token {t} was rejected")
        m.find_jump_forward_bytes()
    # roll everything back step by step: each mask must be the one seen before
    while history:
        if m.num_accepted_tokens != len(history):
            if m.num_accepted_tokens != len(history) - 1:
                raise InvariantViolation(
                    f"history length {m.num_accepted_tokens}, expected {len(history)}")
            # the last step had no accepted token (ended or terminated before accepting)
            history.pop()
            continue
        m.rollback(1)
        again = mask_of(m, vocab_size)
        want = history.pop()
        if not np.array_equal(again, want):
            diff = np.flatnonzero(again != want)[:8].tolist()
            raise InvariantViolation(f"rollback did not restore the mask (tokens {diff} differ)")


def roundtrip_ebnf(grammar: "xg.Grammar") -> "xg.Grammar":
    """The printer's output must parse back, to a grammar that prints the same."""
    text = grammar.to_ebnf()
    try:
        again = xg.Grammar.from_ebnf(text)
    except xg.XG2Error as e:
        raise InvariantViolation(f"printed grammar does not parse: {e}\n{text[:2000]}") from e
    if again.to_ebnf() != text:
        raise InvariantViolation(f"print/parse/print is not stable:\n{text[:1000]}\n---\n"
                                 f"{again.to_ebnf()[:1000]}")
    return again


def compile_and_exercise(grammar: "xg.Grammar", choices: Bytes) -> None:
    with time_limit("compile"):
        ok, compiled = expect_typed(small_compiler().compile_grammar, grammar)
    if ok:
        with time_limit("matcher walk"):
            exercise_compiled(compiled, choices)


def parse_and_exercise(b: Bytes, what: str, parse, **kwargs):
    """The body of the text harnesses: two bytes of b steer the matcher walk, the rest is text
    (UTF-8, invalid sequences replaced) for parse(text, **kwargs), timed as what. A grammar that
    parses goes through the printer round trip, then is compiled and walked.

    Returns (ok, the round-tripped grammar or the typed error, text)."""
    steer = Bytes(b.take(2))
    text = b.rest().decode("utf-8", errors="replace")
    with time_limit(what):
        ok, grammar = expect_typed(parse, text, **kwargs)
    if ok:
        grammar = roundtrip_ebnf(grammar)
        compile_and_exercise(grammar, steer)
    return ok, grammar, text


def atheris_main(one_input, argv=None) -> None:
    """Runs a harness under atheris (libFuzzer flags in argv, e.g. -max_total_time=60)."""
    import atheris  # only the fuzzing entry point needs it

    # atheris.instrument_all() never returns in this environment (jax/numpy loaded), so
    # instrument only the Python code under test: xg2_jax and the harnesses. The native core
    # is not coverage-instrumented (mutations are guided by the Python-side coverage).
    _instrument_modules(atheris)
    atheris.Setup(list(sys.argv if argv is None else argv), guarded(one_input))
    atheris.Fuzz()


def _instrument_modules(atheris) -> None:
    import inspect
    import types

    names = [n for n in list(sys.modules)
             if n == "__main__" or n.startswith("xg2_jax") or n == "common"
             or n.startswith("fuzz_")]
    seen = set()
    for n in names:
        mod = sys.modules.get(n)
        if mod is None or n == "xg2_jax._core":
            continue
        for obj in list(vars(mod).values()):
            funcs = []
            if isinstance(obj, types.FunctionType):
                funcs = [obj]
            elif inspect.isclass(obj):
                funcs = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)]
                funcs += [v.__func__ for v in vars(obj).values()
                          if isinstance(v, (classmethod, staticmethod))
                          and isinstance(v.__func__, types.FunctionType)]
            for f in funcs:
                if id(f) in seen or getattr(f, "__module__", "") not in names:
                    continue
                seen.add(id(f))
                try:
                    atheris.instrument_func(f)
                except Exception:  # noqa: BLE001 - best effort
                    pass
