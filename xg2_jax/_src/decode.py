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

from typing import Any, Callable, Optional, Sequence

import jax
import numpy as np

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.host_loop import (
    GenerateResult,
    HostMaskBuffers,
    HostRows,
    MatchersLike,
    mask_argument,
    mask_row_words,
    prepare,
    token_step,
)
from xg2_jax._src.sampling import SamplingConfig, sample_step

__all__ = ["constrained_generate"]


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
        >>> from xg2_jax import testing as tm
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "ab"')
        >>> cfg = tm.RandomModelConfig(vocab_size=3, hidden=8)
        >>> out = constrained_generate(
        ...     tm.step, tm.init_params(jax.random.key(0), cfg), tm.init_cache(cfg, 1),
        ...     np.zeros((1, 1), np.int32), [xg.GrammarMatcher(g)], max_new_tokens=5,
        ...     sampling=SamplingConfig(greedy=True))
        >>> out.tokens[0, :out.lengths[0]].tolist()
        [0, 1, 2]
    """
    pre = prepare(step_fn, params, cache, prompt_tokens, matchers,
                  max_new_tokens=max_new_tokens, key=key)
    rows = HostRows(pre.matchers, stop_token_ids, batch_matcher)
    logits, cache, key = pre.logits, pre.cache, pre.key
    if max_new_tokens == 0 or rows.finished.all():
        return rows.early_result(max_new_tokens, pad_token_id, cache)
    batch = len(rows.matchers)
    buffers = HostMaskBuffers((batch, mask_row_words(rows.matchers, logits.shape[-1])))
    step = token_step(step_fn)
    out = np.full((batch, max_new_tokens), pad_token_id, dtype=np.int32)
    lengths = np.zeros(batch, dtype=np.int32)

    def sample(logits, key):
        i, buf = buffers.acquire()
        rows.fill(buf)
        tokens, key = sample_step(logits, mask_argument(buf, mask_sharding), key, ~rows.finished,
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
