"""The host side of the decoding loops: mask buffers and their transfer, per-row matcher
state, and the prefill that overlaps grammar compilation.

:func:`~xg2_jax.constrained_generate`, :func:`~xg2_jax.ingraph_generate` and
:func:`~xg2_jax.speculative_step` share these pieces. :func:`put_masks` is the one public way
to move a host mask buffer to the device(s) (with an optional sharding, e.g.
:func:`~xg2_jax.mask_sharding`).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.bitmask import get_bitmask_shape
from xg2_jax._src.matcher import GrammarMatcher

__all__ = ["GenerateResult", "HostMaskBuffers", "HostRows", "MatchersLike", "Prefill",
           "jit_step", "mask_argument", "mask_row_words", "prepare", "put_masks",
           "resolve_matchers", "token_step"]

MatchersLike = Union[Sequence[Optional[GrammarMatcher]], "concurrent.futures.Future",
                     Callable[[], Sequence[Optional[GrammarMatcher]]]]


@dataclasses.dataclass
class GenerateResult:
    """What :func:`constrained_generate` returns.

    Attributes:
        tokens: int32 (B, max_new_tokens): generated tokens (the stop token included),
            ``pad_token_id`` after a row finished.
        lengths: int32 (B,): tokens generated per row.
        finished: bool (B,): the row ended (stop token, grammar terminated, or error).
        errors: bool (B,): the matcher rejected a sampled token (should not happen; the row
            is then finished and that token is not recorded).
        cache: the model cache after the prompt and every generated token but the last
            step's (that token has not been fed to the model).
    """

    tokens: np.ndarray
    lengths: np.ndarray
    finished: np.ndarray
    errors: np.ndarray
    cache: Any = None


class HostMaskBuffers:
    """A ring of host mask buffers that are never overwritten while a device may read them.

    ``acquire`` returns the next buffer after blocking on the arrays registered with
    ``release`` for it (the transfer made from it and the computation that consumed it).

    Args:
        shape: (rows, words).
        count: number of buffers (2: double buffering).

    Example:
        >>> bufs = HostMaskBuffers((2, 4))
        >>> i, buf = bufs.acquire()
        >>> buf.fill(-1); dev = put_masks(buf); bufs.release(i, dev)
        >>> bufs.acquire()[0]
        1
    """

    def __init__(self, shape: tuple[int, int], count: int = 2):
        self._buffers = [np.full(shape, -1, dtype=np.int32) for _ in range(count)]
        self._readers: list[Any] = [None] * count
        self._next = 0

    def acquire(self) -> tuple[int, np.ndarray]:
        i = self._next
        self._next = (i + 1) % len(self._buffers)
        if self._readers[i] is not None:
            jax.block_until_ready(self._readers[i])
            self._readers[i] = None
        return i, self._buffers[i]

    def release(self, index: int, *readers: Any) -> None:
        self._readers[index] = readers


def put_masks(buf: np.ndarray, sharding: Any = None) -> jax.Array:
    """Starts the transfer of a host mask buffer to the device(s).

    On accelerators the copy is asynchronous and may read ``buf`` after this returns: use
    :class:`HostMaskBuffers` before writing it again. On CPU, ``jax.device_put`` may alias a
    suitably aligned numpy array (zero copy, even with ``may_alias=False`` in current jax), so
    the device array would follow later writes to ``buf``; there the rows are copied first
    (B * W int32: a few microseconds).
    """
    if sharding is None:
        platform = jax.devices()[0].platform
    else:
        platform = next(iter(sharding.device_set)).platform
    if platform == "cpu":
        buf = np.array(buf, copy=True)
    return jax.device_put(buf, sharding)


def resolve_matchers(matchers: MatchersLike, executor=None):
    """Starts resolving ``matchers`` and returns a zero-argument function that finishes it.

    A callable is submitted to ``executor`` (or a one-shot thread) so that grammar compilation
    overlaps whatever the caller dispatches next; a future is waited on; a sequence is
    returned as is.
    """
    if isinstance(matchers, concurrent.futures.Future):
        return matchers.result
    if callable(matchers):
        if executor is None:
            pool = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                         thread_name_prefix="xg2-compile")
            future = pool.submit(matchers)
            pool.shutdown(wait=False)
        else:
            future = executor.submit(matchers)
        return future.result
    return lambda: matchers


def mask_row_words(matchers: Sequence[Optional[GrammarMatcher]], model_vocab: int) -> int:
    """Words per mask row: for the widest vocabulary among ``matchers`` (``model_vocab``
    when every row is unconstrained)."""
    vocab = [m.compiled_grammar.tokenizer_info.vocab_size for m in matchers if m is not None]
    return get_bitmask_shape(1, max(vocab) if vocab else model_vocab)[1]


# One jitted wrapper per model step function: a fresh jax.jit per call would miss JAX's
# dispatch cache on every request (or every step).
jit_step = functools.lru_cache(maxsize=64)(jax.jit)


@functools.lru_cache(maxsize=64)
def token_step(step_fn: Callable) -> Callable:
    """``step_fn`` jitted for one token per row: ``(params, cache, tokens (B,))``.

    The ``(B,) -> (B, 1)`` reshape happens inside the jitted call, so feeding back the
    sampled tokens costs one dispatch (no eager ``tokens[:, None]`` op per step).

    Args:
        step_fn: ``step_fn(params, cache, tokens (B, T)) -> (logits, cache)``.

    Returns:
        The jitted ``(params, cache, tokens (B,)) -> (logits, cache)`` (cached per
        ``step_fn``).

    Example:
        >>> f = token_step(lambda p, c, t: (t * p, c))
        >>> f(2, None, jnp.array([1, 2]))[0].tolist()
        [[2], [4]]
    """
    return jax.jit(lambda params, cache, tokens: step_fn(params, cache, tokens[:, None]))


def mask_argument(buf: np.ndarray, sharding: Any) -> Any:
    """The mask argument of a jitted call: ``buf`` itself on the default device (the jit
    call transfers it, cheaper than a Python ``device_put``), else an explicit
    ``device_put`` into ``sharding``. Either may read ``buf`` asynchronously (or alias it, on
    CPU): only for buffers guarded by :class:`HostMaskBuffers` until the computation that
    reads them is done."""
    return buf if sharding is None else jax.device_put(buf, sharding)


class HostRows:
    """Host-side per-row state shared by the host-overlap and in-graph loops: each row's
    matcher, whether it is constrained, finished or failed, and the batched accept and fill."""

    def __init__(self, matchers: Sequence[Optional[GrammarMatcher]], stop_token_ids,
                 batch_matcher: Optional[BatchGrammarMatcher]):
        self.matchers = list(matchers)
        self.batch = batch_matcher or BatchGrammarMatcher()
        self.stops = np.array(sorted({int(t) for t in stop_token_ids}), dtype=np.int64)
        self.constrained = np.array([m is not None for m in self.matchers], dtype=bool)
        self.all_constrained = bool(self.constrained.all())
        self.finished = np.array([m is not None and m.is_terminated() for m in self.matchers],
                                 dtype=bool)
        self.errors = np.zeros(len(self.matchers), dtype=bool)

    def _live(self) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """(mask of constrained unfinished rows, their indices or None when that is all)."""
        live = self.constrained & ~self.finished
        if self.all_constrained and live.all():
            return live, None
        return live, np.flatnonzero(live)

    def accept(self, tokens: np.ndarray) -> np.ndarray:
        """Accepts ``tokens[i]`` for every unfinished row; returns which rows took a token."""
        took = ~self.finished
        _, idx = self._live()
        if idx is None:  # the common case: every row constrained and running
            idx = np.arange(len(self.matchers))
            ok = self.batch.batch_accept_token(self.matchers, tokens.tolist())
        elif idx.size:
            ok = self.batch.batch_accept_token([self.matchers[i] for i in idx],
                                               tokens[idx].tolist())
        else:
            ok = []
        if idx.size:
            ok = np.fromiter(ok, dtype=bool, count=idx.size)
            bad = idx[~ok]
            self.errors[bad] = self.finished[bad] = True
            took[bad] = False
            for i in idx[ok].tolist():
                if self.matchers[i].is_terminated():
                    self.finished[i] = True
        if not self.all_constrained:  # unconstrained rows end on a stop token
            self.finished |= took & ~self.constrained & np.isin(tokens, self.stops)
        return took

    def fill(self, buf: np.ndarray) -> None:
        """Writes the next mask of every unfinished row into ``buf`` (finished rows: -1)."""
        live, idx = self._live()
        if idx is None:
            self.batch.batch_fill_next_token_bitmask(self.matchers, buf)
            return
        buf[~live] = -1
        if idx.size:
            self.batch.batch_fill_next_token_bitmask([self.matchers[i] for i in idx], buf,
                                                     idx.tolist())

    def early_result(self, max_new_tokens: int, pad_token_id: int, cache: Any
                     ) -> GenerateResult:
        """The result when nothing is generated (no budget, or every row already done)."""
        batch = len(self.matchers)
        return GenerateResult(np.full((batch, max_new_tokens), pad_token_id, np.int32),
                              np.zeros(batch, np.int32), self.finished.copy(),
                              self.errors.copy(), cache)


@dataclasses.dataclass
class Prefill:
    """What :func:`prepare` hands to a decoding loop."""

    logits: jax.Array
    cache: Any
    key: jax.Array
    matchers: list


def prepare(step_fn: Callable, params: Any, cache: Any, prompt_tokens,
            matchers: MatchersLike, *, max_new_tokens: int,
            key: Optional[jax.Array]) -> Prefill:
    """The start shared by the decoding loops.

    Starts resolving ``matchers`` (grammar compilation on a thread), dispatches the prefill
    (so the two overlap), then waits for the matchers and checks the batch size.

    Args:
        step_fn: the model step (jitted here).
        params, cache: passed to ``step_fn``.
        prompt_tokens: int (B, T).
        matchers: see :func:`constrained_generate`.
        max_new_tokens: must be >= 0.
        key: PRNG key or None (``jax.random.key(0)``).

    Returns:
        A :class:`Prefill` with the prefill's logits and cache, the key and the matchers.

    Raises:
        ValueError: a negative budget, or as many matchers as prompt rows.
    """
    if max_new_tokens < 0:
        raise ValueError("max_new_tokens must be >= 0")
    get_matchers = resolve_matchers(matchers)
    prompt = jnp.asarray(prompt_tokens, jnp.int32)
    # Prefill, dispatched before we wait for the grammar compilation.
    logits, cache = jit_step(step_fn)(params, cache, prompt)
    resolved = list(get_matchers())
    if len(resolved) != prompt.shape[0]:
        raise ValueError(f"got {len(resolved)} matchers for a batch of {prompt.shape[0]}")
    return Prefill(logits, cache, jax.random.key(0) if key is None else key, resolved)
