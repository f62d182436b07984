"""Host-overlap constrained decoding: the device runs the model while the host fills masks.

Per step of :func:`constrained_generate`:

1. dispatch the model step on the tokens sampled last (:func:`token_step`: one jitted call,
   asynchronous: returns at once);
2. on the host, read those tokens, ``accept_token`` them into the matchers and fill the next
   packed masks with :class:`~xg2_jax.BatchGrammarMatcher` (native threads, GIL released)
   while the device computes (numpy and native code only: no JAX op, no device round trip);
3. the jitted mask-and-sample (:func:`sample_step`, :func:`~xg2_jax.masked_sample`) on the
   new logits, which transfers the masks: the host buffer goes to the jit call itself on the
   default device, or through an explicit ``device_put`` into ``mask_sharding``. Two host
   buffers alternate; a buffer is rewritten only after the computation that read it is done.

Grammar compilation may overlap with the prefill: pass ``matchers`` as a callable (run on a
worker thread started before the prefill is dispatched) or as a ``concurrent.futures.Future``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
from functools import partial
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.masking import masked_sample
from xg2_jax._src.matcher import GrammarMatcher, get_bitmask_shape

__all__ = ["GenerateResult", "HostMaskBuffers", "SamplingConfig", "constrained_generate",
           "put_masks", "resolve_matchers", "sample_step", "token_step"]

MatchersLike = Union[Sequence[Optional[GrammarMatcher]], "concurrent.futures.Future",
                     Callable[[], Sequence[Optional[GrammarMatcher]]]]


@partial(jax.tree_util.register_dataclass, data_fields=["temperature"],
         meta_fields=["top_k", "top_p", "greedy"])
@dataclasses.dataclass(frozen=True)
class SamplingConfig:
    """How tokens are drawn from the masked logits.

    A JAX pytree: ``temperature`` is its only leaf (a traced runtime value, so a new
    temperature does not recompile anything), while ``top_k``, ``top_p`` and ``greedy`` are
    static metadata (they change the computation, so a new value compiles a new one).

    Attributes:
        temperature: softmax temperature, a scalar or a per-row (B,) array (ignored when
            ``greedy``).
        top_k: keep the ``top_k`` best tokens (0: all).
        top_p: nucleus mass (1.0: all).
        greedy: take the argmax.

    Example:
        >>> SamplingConfig(greedy=True).greedy
        True
        >>> jax.tree_util.tree_leaves(SamplingConfig(temperature=0.7, top_k=50))
        [0.7]
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    greedy: bool = False


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


@partial(jax.jit, static_argnames=("pad_token_id",))
def sample_step(logits: jax.Array, bitmask: jax.Array, key: jax.Array, active: jax.Array, *,
                sampling: SamplingConfig, pad_token_id: int) -> tuple[jax.Array, jax.Array]:
    """One jitted mask-and-sample for the decoding loops.

    Args:
        logits: (B, V) or (B, T, V) (the last position is used).
        bitmask: int32 (B, W) (a host numpy array is transferred by the jit call).
        key: PRNG key; split here.
        active: bool (B,): inactive (finished) rows emit ``pad_token_id``.
        sampling: a :class:`SamplingConfig` pytree: its temperature is a runtime value
            (changing it does not retrace); top-k, top-p and greedy are static.
        pad_token_id: static.

    Returns:
        ``(tokens int32 (B,), next_key)``.

    Example:
        >>> tokens, key = sample_step(jnp.array([[0.0, 1.0]]), jnp.array([[1]], jnp.int32),
        ...                           jax.random.key(0), jnp.array([True]),
        ...                           sampling=SamplingConfig(greedy=True), pad_token_id=0)
        >>> tokens.tolist()
        [0]
    """
    if logits.ndim == 3:
        logits = logits[:, -1]
    key, sub = jax.random.split(key)
    tokens = masked_sample(logits, bitmask, sub, temperature=sampling.temperature,
                           top_k=sampling.top_k, top_p=sampling.top_p, greedy=sampling.greedy,
                           active=active, fallback_token=pad_token_id)
    return jnp.where(active, tokens, jnp.int32(pad_token_id)), key


def _mask_width(matchers: Sequence[Optional[GrammarMatcher]], model_vocab: int) -> int:
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


def _to_device(buf: np.ndarray, sharding: Any) -> Any:
    """The mask argument of a jitted call: ``buf`` itself on the default device (the jit
    call transfers it, cheaper than a Python ``device_put``), else an explicit
    ``device_put`` into ``sharding``. Either may read ``buf`` asynchronously (or alias it, on
    CPU): only for buffers guarded by :class:`HostMaskBuffers` until the computation that
    reads them is done."""
    return buf if sharding is None else jax.device_put(buf, sharding)


class _HostRows:
    """Host-side per-row state shared by the host-overlap and in-graph loops."""

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
class _Prefill:
    """What :func:`_prepare` hands to a decoding loop."""

    logits: jax.Array
    cache: Any
    key: jax.Array
    matchers: list


def _prepare(step_fn: Callable, params: Any, cache: Any, prompt_tokens,
             matchers: MatchersLike, *, max_new_tokens: int,
             key: Optional[jax.Array]) -> _Prefill:
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
        A :class:`_Prefill` with the prefill's logits and cache, the key and the matchers.

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
    return _Prefill(logits, cache, jax.random.key(0) if key is None else key, resolved)


def constrained_generate(step_fn: Callable, params: Any, cache: Any, prompt_tokens,
                         matchers: MatchersLike, *, max_new_tokens: int,
                         sampling: SamplingConfig = SamplingConfig(),
                         key: Optional[jax.Array] = None, pad_token_id: int = 0,
                         stop_token_ids: Sequence[int] = (),
                         batch_matcher: Optional[BatchGrammarMatcher] = None,
                         mask_sharding: Any = None) -> GenerateResult:
    """Generates up to ``max_new_tokens`` per row, constrained by each row's matcher.

    The host fills the next masks while the device runs the model step (see the module
    docstring). Rows finish on a stop token (their matcher terminates), and then emit
    ``pad_token_id`` and are masked inactive; the loop ends when every row finished.

    Per step the host dispatches two jitted calls (the model step on the sampled tokens, and
    the mask-and-sample) and does only numpy and native matcher work in between: no eager
    JAX op and no Python ``device_put`` on the default device.

    Args:
        step_fn: ``step_fn(params, cache, tokens int32 (B, T)) -> (logits, cache)`` with
            logits (B, V) or (B, T, V); jitted here (any JAX-traceable model step).
        params: model parameters (passed through).
        cache: the model cache before the prompt.
        prompt_tokens: int (B, T) prompt.
        matchers: one :class:`~xg2_jax.GrammarMatcher` per row (``None``: unconstrained
            row), or a callable/future producing them (compiled while the prefill runs).
        max_new_tokens: step budget (keyword-only, like every option).
        sampling: a :class:`SamplingConfig` (its temperature is a runtime value).
        key: PRNG key (default ``jax.random.key(0)``).
        pad_token_id: emitted by finished rows.
        stop_token_ids: ends unconstrained rows (constrained rows end when their matcher
            terminates).
        batch_matcher: reuse a :class:`~xg2_jax.BatchGrammarMatcher`.
        mask_sharding: a ``jax.sharding.Sharding`` for the (B, W) masks (e.g. from
            :func:`~xg2_jax.mask_sharding`), transferred with an explicit ``device_put``;
            default: the default device, the host buffer being handed to the jitted call
            (an implicit transfer: under ``jax.transfer_guard("disallow")`` pass a
            sharding).

    Returns:
        A :class:`GenerateResult` (host numpy arrays).

    Example:
        >>> import xg2_jax as xg
        >>> from xg2_jax._src import tiny_model as tm
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "ab"')
        >>> cfg = tm.TinyConfig(vocab_size=3, hidden=8)
        >>> out = constrained_generate(
        ...     tm.step, tm.init_params(jax.random.key(0), cfg), tm.init_cache(cfg, 1),
        ...     np.zeros((1, 1), np.int32), [xg.GrammarMatcher(g)], max_new_tokens=5,
        ...     sampling=SamplingConfig(greedy=True))
        >>> out.tokens[0, :out.lengths[0]].tolist()
        [0, 1, 2]
    """
    pre = _prepare(step_fn, params, cache, prompt_tokens, matchers,
                   max_new_tokens=max_new_tokens, key=key)
    rows = _HostRows(pre.matchers, stop_token_ids, batch_matcher)
    logits, cache, key = pre.logits, pre.cache, pre.key
    if max_new_tokens == 0 or rows.finished.all():
        return rows.early_result(max_new_tokens, pad_token_id, cache)
    batch = len(rows.matchers)
    buffers = HostMaskBuffers((batch, _mask_width(rows.matchers, logits.shape[-1])))
    step = token_step(step_fn)
    out = np.full((batch, max_new_tokens), pad_token_id, dtype=np.int32)
    lengths = np.zeros(batch, dtype=np.int32)

    def sample(logits, key):
        i, buf = buffers.acquire()
        rows.fill(buf)
        tokens, key = sample_step(logits, _to_device(buf, mask_sharding), key, ~rows.finished,
                                  sampling=sampling, pad_token_id=pad_token_id)
        # The buffer is rewritten two steps later, after the call that read it is done.
        buffers.release(i, tokens)
        return tokens, key

    tokens, key = sample(logits, key)
    for t in range(max_new_tokens):
        last = t == max_new_tokens - 1
        if not last:
            # Dispatch the next forward pass first: the device runs it while the host
            # accepts the token and fills the next masks.
            logits, next_cache = step(params, cache, tokens)
        host_tokens = np.asarray(tokens)
        took = rows.accept(host_tokens)
        out[took, t] = host_tokens[took]
        lengths += took
        if last or rows.finished.all():
            break
        cache = next_cache
        tokens, key = sample(logits, key)
    return GenerateResult(out, lengths, rows.finished.copy(), rows.errors.copy(), cache)
