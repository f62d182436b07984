"""Applying packed token bitmasks to logits, and constrained sampling, in JAX.

A packed bitmask row is an int32 array of ``W`` words; token ``t`` is allowed iff bit
``t % 32`` of word ``t // 32`` is set (the layout :class:`xg2_jax.GrammarMatcher` fills).

Everything here is a pure function of arrays: jittable, and safe under ``vmap``, ``lax.scan``
and ``lax.while_loop``. The unpacking is one fused elementwise pass over the logits: every
word is shifted against the 32 bit positions (a ``(..., W, 32)`` broadcast flattened to the
columns, no gather), then ``jnp.where`` selects the logit or ``-inf``.

Rows with no allowed token: a row whose mask allows no column of the logits (for instance all
zero, which the matcher writes after termination) is **left unmasked** by
:func:`apply_token_bitmask`, exactly like a row with ``active=False``. Masking it would leave a
row of ``-inf`` and any softmax downstream would produce NaN; leaving it unchanged keeps every
downstream computation finite, and the caller learns about the row from
:func:`bitmask_has_allowed` (or, in :func:`masked_sample`, from ``fallback_token``, which is
what such rows sample).
"""

from __future__ import annotations

from functools import partial
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["apply_token_bitmask", "bitmask_has_allowed", "masked_sample", "unpack_bitmask"]


def _check_bitmask(bitmask: jax.Array) -> None:
    if bitmask.dtype != jnp.int32:
        raise TypeError(f"bitmask must be int32; got {bitmask.dtype}")
    if bitmask.ndim < 1:
        raise ValueError("bitmask must have at least one dimension (..., W)")


def unpack_bitmask(bitmask: jax.Array, vocab_size: int) -> jax.Array:
    """Unpacks a packed bitmask to booleans over ``vocab_size`` columns.

    Columns at or past ``32 * W`` are False (disallowed); bits past ``vocab_size`` are ignored.

    Args:
        bitmask: int32 ``(..., W)``.
        vocab_size: the number of columns to produce (static).

    Returns:
        bool ``(..., vocab_size)``.

    Example:
        >>> unpack_bitmask(jnp.array([5], jnp.int32), 4).tolist()
        [True, False, True, False]
    """
    _check_bitmask(bitmask)
    num_words = bitmask.shape[-1]
    if num_words == 0:
        return jnp.zeros(bitmask.shape[:-1] + (vocab_size,), dtype=bool)
    # Broadcast each word against the 32 bit positions and flatten (..., W, 32) to columns:
    # pure index arithmetic that fuses into the consumer's loop (a gather of word t >> 5 per
    # column does too, but XLA:CPU does not vectorize it: twice as slow at V = 151936).
    shifts = jax.lax.broadcasted_iota(jnp.int32, (1,) * (bitmask.ndim - 1) + (1, 32),
                                      bitmask.ndim)
    bits = (jnp.right_shift(bitmask[..., None], shifts) & 1) != 0
    allowed = bits.reshape(bitmask.shape[:-1] + (32 * num_words,))
    if vocab_size <= 32 * num_words:
        return allowed[..., :vocab_size]
    pad = [(0, 0)] * (bitmask.ndim - 1) + [(0, vocab_size - 32 * num_words)]
    return jnp.pad(allowed, pad)  # columns past the mask: disallowed


def _valid_bits_per_word(num_words: int, vocab_size: int) -> np.ndarray:
    """int32 (W,): the bits of each word that address a column below ``vocab_size``."""
    lo = np.arange(num_words, dtype=np.int64) * 32
    n = np.clip(vocab_size - lo, 0, 32)
    full = np.where(n >= 32, np.int64(0xFFFFFFFF), (np.int64(1) << n) - 1)
    return full.astype(np.uint32).view(np.int32)


def bitmask_has_allowed(bitmask: jax.Array, vocab_size: int) -> jax.Array:
    """Whether each mask row allows at least one of the first ``vocab_size`` columns.

    A reduction over the ``W`` words only (no pass over the vocabulary).

    Args:
        bitmask: int32 ``(..., W)``.
        vocab_size: the logits width (static).

    Returns:
        bool ``(...)``.

    Example:
        >>> bitmask_has_allowed(jnp.array([[0], [8]], jnp.int32), 3).tolist()
        [False, False]
        >>> bitmask_has_allowed(jnp.array([[0], [8]], jnp.int32), 4).tolist()
        [False, True]
    """
    _check_bitmask(bitmask)
    valid = jnp.asarray(_valid_bits_per_word(bitmask.shape[-1], vocab_size))
    return jnp.any((bitmask & valid) != 0, axis=-1)


def apply_token_bitmask(logits: jax.Array, bitmask: jax.Array, *,
                        active: Optional[jax.Array] = None) -> jax.Array:
    """Sets the logits of disallowed tokens to ``-inf``.

    Pure and jittable; works under ``vmap``/``scan`` and with sharded inputs (it is
    elementwise along the vocabulary, so vocab-sharded logits stay sharded).

    Args:
        logits: float32/bfloat16 ``(..., V)``; ``V`` may exceed the tokenizer vocabulary
            (padded vocab) or ``32 * W``: columns at or past ``32 * W`` are disallowed.
        bitmask: int32 ``(..., W)``, broadcastable against ``logits.shape[:-1]``; bits past
            ``V`` are ignored.
        active: optional bool ``(...)``: rows with False pass through unchanged.

    Returns:
        Array like ``logits``. A row whose mask allows none of the ``V`` columns is returned
        unchanged (never a row of ``-inf``, so a softmax downstream never yields NaN); detect
        such rows with :func:`bitmask_has_allowed`.

    Example:
        >>> logits = jnp.zeros((1, 4))
        >>> apply_token_bitmask(logits, jnp.array([[0b0101]], jnp.int32)).tolist()
        [[0.0, -inf, 0.0, -inf]]
    """
    _check_bitmask(bitmask)
    try:  # shapes are static: checked once per trace, at no cost in the compiled step
        np.broadcast_shapes(tuple(bitmask.shape[:-1]), tuple(logits.shape[:-1]))
    except ValueError:
        raise ValueError(f"bitmask rows {tuple(bitmask.shape[:-1])} do not broadcast against the "
                         f"logits' rows {tuple(logits.shape[:-1])} (bitmask (..., W), logits "
                         "(..., V))") from None
    vocab_size = logits.shape[-1]
    allowed = unpack_bitmask(bitmask, vocab_size)
    keep_row = bitmask_has_allowed(bitmask, vocab_size)
    if active is not None:
        keep_row = keep_row & jnp.asarray(active, dtype=bool)
    # keep[..., t] is True for allowed tokens and for every token of a pass-through row.
    keep = allowed | ~keep_row[..., None]
    return jnp.where(keep, logits, jnp.asarray(-jnp.inf, dtype=logits.dtype))


def _top_k_filter(x: jax.Array, k: int) -> jax.Array:
    if k <= 0 or k >= x.shape[-1]:
        return x
    kth = jax.lax.top_k(x, k)[0][..., -1:]
    return jnp.where(x < kth, -jnp.inf, x)


def top_p_filter(x: jax.Array, p) -> jax.Array:
    """Nucleus filter; ``p`` is a static float, or an array of one mass per row (...)."""
    if isinstance(p, (int, float)):
        if p >= 1.0:
            return x
    else:
        p = jnp.asarray(p, jnp.float32)[..., None]
    sorted_desc = -jnp.sort(-x, axis=-1)
    probs = jax.nn.softmax(sorted_desc, axis=-1)
    cum_before = jnp.cumsum(probs, axis=-1) - probs
    # Keep the smallest prefix whose mass reaches p (the first token is always kept).
    keep_sorted = cum_before < p
    threshold = jnp.min(jnp.where(keep_sorted, sorted_desc, jnp.inf), axis=-1, keepdims=True)
    return jnp.where(x < threshold, -jnp.inf, x)


@partial(jax.jit, static_argnames=("top_k", "top_p", "greedy", "fallback_token"))
def masked_sample(logits: jax.Array, bitmask: jax.Array, key: jax.Array, *,
                  temperature=1.0, top_k: int = 0, top_p: float = 1.0, greedy: bool = False,
                  active: Optional[jax.Array] = None, fallback_token: int = 0) -> jax.Array:
    """Masks the logits and samples one token per row, in one jitted function.

    Args:
        logits: float ``(..., V)``.
        bitmask: int32 ``(..., W)`` (see :func:`apply_token_bitmask`).
        key: a PRNG key (unused when ``greedy``).
        temperature: scalar or per-row ``(...)`` array (traced: changing it does not
            recompile); ignored when ``greedy``.
        top_k: keep the ``top_k`` best tokens (0: all); static.
        top_p: nucleus mass in ``(0, 1]`` (1: all); static.
        greedy: take the argmax; static.
        active: optional bool ``(...)``: rows with False are sampled without the mask.
        fallback_token: the token returned by an active row whose mask allows nothing.

    Returns:
        int32 ``(...)`` token ids: always an allowed token for active rows with a non-empty
        mask; never the result of a NaN.

    Example:
        >>> logits = jnp.array([[3.0, 2.0, 1.0]])
        >>> mask = jnp.array([[0b110]], jnp.int32)
        >>> masked_sample(logits, mask, jax.random.key(0), greedy=True).tolist()
        [1]
    """
    vocab_size = logits.shape[-1]
    has_allowed = bitmask_has_allowed(bitmask, vocab_size)
    row_active = has_allowed if active is None else has_allowed | ~jnp.asarray(active, bool)
    x = apply_token_bitmask(logits, bitmask, active=active).astype(jnp.float32)
    if greedy:
        tokens = jnp.argmax(x, axis=-1)
    else:
        t = jnp.maximum(jnp.asarray(temperature, jnp.float32), jnp.float32(1e-6))
        if t.ndim:
            t = t[..., None]
        x = top_p_filter(_top_k_filter(x / t, top_k), top_p)
        # NaN logits from the model would make the choice undefined: map them to -inf.
        x = jnp.where(jnp.isnan(x), -jnp.inf, x)
        tokens = jax.random.categorical(key, x, axis=-1)
    tokens = tokens.astype(jnp.int32)
    return jnp.where(row_active, tokens, jnp.int32(fallback_token))
