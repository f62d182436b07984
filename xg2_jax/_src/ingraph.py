"""In-graph constrained decoding: the matcher step as an ``io_callback`` inside jitted loops.

For fully jitted decoding loops (``lax.while_loop`` / ``lax.scan``) the host matchers are
reached through :func:`jax.experimental.io_callback`. The host state lives in an
:class:`InGraphMatchers` session registered under an integer id; the jitted code passes that
id as an ordinary array, so one compiled loop serves every request of the same shapes.

Only numpy and the native matcher run inside the callback; it never raises through XLA:
failures come back as flags (per-row ``error``, and a scalar ``status``).

Example:
    >>> import xg2_jax as xg
    >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "ab"')
    >>> with InGraphMatchers([xg.GrammarMatcher(g)]) as session:
    ...     @jax.jit
    ...     def advance(sid, token):
    ...         return ingraph_matcher_step(sid, token, mask_width=session.mask_width)
    ...     out = advance(session.session_id, jnp.array([0], jnp.int32))
    >>> out.mask.tolist(), out.finished.tolist(), int(out.status)
    ([[2]], [False], 0)
"""

from __future__ import annotations

import itertools
import threading
from functools import lru_cache, partial
from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.host_loop import GenerateResult, HostRows, MatchersLike, mask_row_words, prepare
from xg2_jax._src.matcher import GrammarMatcher
from xg2_jax._src.sampling import SamplingConfig, sample_step

__all__ = ["InGraphMatchers", "InGraphStepOutput", "ingraph_generate", "ingraph_matcher_step",
           "STATUS_OK", "STATUS_UNKNOWN_SESSION", "STATUS_HOST_ERROR"]

STATUS_OK = 0
STATUS_UNKNOWN_SESSION = 1
STATUS_HOST_ERROR = 2

_SESSIONS: dict[int, "InGraphMatchers"] = {}
_SESSIONS_LOCK = threading.Lock()
_IDS = itertools.count(1)


class InGraphStepOutput(NamedTuple):
    """What :func:`ingraph_matcher_step` returns (all device arrays).

    Attributes:
        mask: int32 (B, W): the next packed mask of each row (finished rows: all ones).
        finished: bool (B,): the row has finished (stop token / terminated / error).
        error: bool (B,): the token given for this row was rejected (or the host failed).
        status: int32 scalar: ``STATUS_OK``, ``STATUS_UNKNOWN_SESSION`` or
            ``STATUS_HOST_ERROR`` (then every row is reported finished with an error).
    """

    mask: jax.Array
    finished: jax.Array
    error: jax.Array
    status: jax.Array


class InGraphMatchers:
    """Host matchers registered for use from jitted code (a context manager).

    Args:
        matchers: one :class:`~xg2_jax.GrammarMatcher` per row (``None``: unconstrained).
        stop_token_ids: end unconstrained rows.
        batch_matcher: reuse a :class:`~xg2_jax.BatchGrammarMatcher`.
        mask_width: words per mask row (default: from the matchers' vocabulary, or
            ``ceil(model_vocab / 32)``).
        model_vocab: logits width, used for the default width when no row is constrained.
    """

    def __init__(self, matchers: Sequence[Optional[GrammarMatcher]], *,
                 stop_token_ids: Sequence[int] = (),
                 batch_matcher: Optional[BatchGrammarMatcher] = None,
                 mask_width: Optional[int] = None, model_vocab: int = 32):
        self.rows = HostRows(matchers, stop_token_ids, batch_matcher)
        self.mask_width = int(mask_width or mask_row_words(self.rows.matchers, model_vocab))
        self.batch_size = len(self.rows.matchers)
        with _SESSIONS_LOCK:
            self._id = next(_IDS) % (2**31 - 1)
            _SESSIONS[self._id] = self

    @property
    def session_id(self) -> jax.Array:
        """The int32 scalar to pass to :func:`ingraph_matcher_step`."""
        return jnp.int32(self._id)

    def initial_mask(self) -> np.ndarray:
        """The mask before any generated token (host array (B, W))."""
        buf = np.empty((self.batch_size, self.mask_width), dtype=np.int32)
        self.rows.fill(buf)
        return buf

    def close(self) -> None:
        with _SESSIONS_LOCK:
            _SESSIONS.pop(self._id, None)

    def __enter__(self) -> "InGraphMatchers":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _host_step(self, tokens: np.ndarray):
        errors_before = self.rows.errors.copy()
        self.rows.accept(np.asarray(tokens).reshape(-1))
        mask = np.empty((self.batch_size, self.mask_width), dtype=np.int32)
        self.rows.fill(mask)
        return mask, self.rows.finished.copy(), self.rows.errors & ~errors_before


def _host_callback(session_id, tokens, *, batch: int, width: int):
    """Runs on the host; never raises (failures become flags)."""
    fail = (np.full((batch, width), -1, np.int32), np.ones(batch, bool), np.ones(batch, bool))
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(int(session_id))
    if session is None or session.batch_size != batch or session.mask_width != width:
        return fail + (np.int32(STATUS_UNKNOWN_SESSION),)
    try:
        mask, finished, error = session._host_step(tokens)
        return mask, finished, error, np.int32(STATUS_OK)
    except Exception:  # noqa: BLE001 - reported as a flag, never raised through XLA
        return fail + (np.int32(STATUS_HOST_ERROR),)


def ingraph_matcher_step(session_id: jax.Array, tokens: jax.Array, *,
                         mask_width: int) -> InGraphStepOutput:
    """Accepts ``tokens`` into the session's matchers and returns the next masks.

    Usable inside ``jit``, ``lax.while_loop`` and ``lax.scan`` (an ordered ``io_callback``;
    not under ``vmap``). Rows that already finished ignore their token.

    Args:
        session_id: int32 scalar from :attr:`InGraphMatchers.session_id`.
        tokens: int32 (B,) the tokens just sampled.
        mask_width: words per mask row (static; :attr:`InGraphMatchers.mask_width`).

    Returns:
        An :class:`InGraphStepOutput`.
    """
    tokens = jnp.asarray(tokens, jnp.int32)
    batch = tokens.shape[0]
    shapes = (jax.ShapeDtypeStruct((batch, mask_width), jnp.int32),
              jax.ShapeDtypeStruct((batch,), jnp.bool_),
              jax.ShapeDtypeStruct((batch,), jnp.bool_),
              jax.ShapeDtypeStruct((), jnp.int32))
    cb = partial(_host_callback, batch=batch, width=mask_width)
    out = io_callback(cb, shapes, jnp.asarray(session_id, jnp.int32), tokens, ordered=True)
    return InGraphStepOutput(*out)


def _last(logits: jax.Array) -> jax.Array:
    return logits[:, -1] if logits.ndim == 3 else logits


@lru_cache(maxsize=32)
def _build_loop(step_fn: Callable, max_new_tokens: int, mask_width: int, pad_token_id: int):
    """The jitted decoding loop for one model step and budget (the sampling config is a
    runtime pytree argument: its temperature is traced, its static fields are part of the
    jit cache key).

    The first token is sampled from the prefill logits before the loop; each iteration then
    feeds the last tokens to the model, samples and advances the matchers. So the loop
    condition alone decides whether the model runs again (no ``lax.cond``, no logits in the
    loop carry), and the final cache has not seen the last tokens, as in the host loop.
    """

    def run(params, cache, logits, mask, finished, key, session_id, sampling):
        batch = finished.shape[0]

        def sample_and_advance(t, logits, mask, finished, key, out, lengths, errors):
            active = ~finished
            tokens, key = sample_step(logits, mask, key, active, sampling=sampling,
                                      pad_token_id=pad_token_id)
            res = ingraph_matcher_step(session_id, tokens, mask_width=mask_width)
            took = active & ~res.error
            out = out.at[:, t].set(jnp.where(took, tokens, pad_token_id))
            return (t + 1, tokens, res.mask, res.finished, key, out, lengths + took,
                    errors | res.error, res.status)

        def cond(c):
            t, _, _, _, finished, _, _, _, _, status = c
            return (t < max_new_tokens) & ~jnp.all(finished) & (status == STATUS_OK)

        def body(c):
            t, tokens, cache, mask, finished, key, out, lengths, errors, _ = c
            logits, cache = step_fn(params, cache, tokens[:, None])
            t, tokens, *rest = sample_and_advance(t, _last(logits), mask, finished, key, out,
                                                  lengths, errors)
            return (t, tokens, cache, *rest)

        t, tokens, *rest = sample_and_advance(
            jnp.int32(0), _last(logits), mask, finished, key,
            jnp.full((batch, max_new_tokens), pad_token_id, jnp.int32),
            jnp.zeros((batch,), jnp.int32), jnp.zeros((batch,), bool))
        c = jax.lax.while_loop(cond, body, (t, tokens, cache, *rest))
        return c[6], c[7], c[4], c[8], c[2], c[9]

    return jax.jit(run)


def ingraph_generate(step_fn: Callable, params: Any, cache: Any, prompt_tokens,
                     matchers: MatchersLike, *, max_new_tokens: int,
                     sampling: SamplingConfig = SamplingConfig(),
                     key: Optional[jax.Array] = None, pad_token_id: int = 0,
                     stop_token_ids: Sequence[int] = (),
                     batch_matcher: Optional[BatchGrammarMatcher] = None) -> GenerateResult:
    """:func:`~xg2_jax.constrained_generate` as one jitted ``lax.while_loop``.

    Same arguments and result; the matchers are advanced by :func:`ingraph_matcher_step`.
    With the same key it yields the same tokens as the host-overlap loop. The loop is
    compiled once per ``(step_fn, shapes, max_new_tokens, pad_token_id)`` and static
    sampling fields (top-k, top-p, greedy); the temperature is a runtime value.

    Raises:
        RuntimeError: the host callback failed (``status`` not OK).

    Returns:
        A :class:`~xg2_jax.GenerateResult`.

    Example:
        >>> import xg2_jax as xg
        >>> from xg2_jax import testing as tm
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+ "b"')
        >>> cfg = tm.RandomModelConfig(vocab_size=3, hidden=8)
        >>> model = (tm.step, tm.init_params(jax.random.key(0), cfg), tm.init_cache(cfg, 2),
        ...          np.zeros((2, 1), np.int32))
        >>> kw = dict(max_new_tokens=6, sampling=SamplingConfig(temperature=0.5))
        >>> a = ingraph_generate(*model, [xg.GrammarMatcher(g) for _ in range(2)], **kw)
        >>> b = xg.constrained_generate(*model, [xg.GrammarMatcher(g) for _ in range(2)], **kw)
        >>> bool((a.tokens == b.tokens).all()), int(a.lengths.max()) > 1  # as the host loop
        (True, True)
    """
    pre = prepare(step_fn, params, cache, prompt_tokens, matchers,
                   max_new_tokens=max_new_tokens, key=key)
    with InGraphMatchers(pre.matchers, stop_token_ids=stop_token_ids,
                         batch_matcher=batch_matcher,
                         model_vocab=pre.logits.shape[-1]) as session:
        rows = session.rows
        if max_new_tokens == 0 or rows.finished.all():
            return rows.early_result(max_new_tokens, pad_token_id, pre.cache)
        run = _build_loop(step_fn, int(max_new_tokens), session.mask_width, int(pad_token_id))
        out, lengths, finished, errors, cache, status = run(
            params, pre.cache, pre.logits, session.initial_mask(), rows.finished.copy(),
            pre.key, np.int32(session._id), sampling)
        status = int(status)
    if status != STATUS_OK:
        raise RuntimeError(f"in-graph matcher step failed (status {status})")
    return GenerateResult(np.asarray(out), np.asarray(lengths), np.asarray(finished),
                          np.asarray(errors), cache)
