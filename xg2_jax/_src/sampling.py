"""Sampling settings and the jitted mask-and-sample step shared by the decoding loops."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp

from xg2_jax._src.masking import masked_sample

__all__ = ["SamplingConfig", "sample_step"]


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
