"""Building blocks shared by the decoder models: the KV cache, dense/norm layers, RoPE and
cached causal attention.

Weights are stored JAX style: a dense kernel is (in, out) (the loaders transpose Hugging Face's
(out, in) ``nn.Linear`` weights).

Example:
    >>> import jax.numpy as jnp
    >>> cache = init_kv_cache(num_layers=2, batch_size=1, max_length=8, num_kv_heads=2,
    ...                       head_dim=4)
    >>> cache.keys[0].shape, cache.length.tolist()
    ((1, 8, 2, 4), [0])
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
from flax import nnx

from xg2_jax.models.config import RopeScaling

__all__ = ["Dense", "KVCache", "LayerNorm", "RMSNorm", "advance_length", "apply_rope",
           "cached_attention", "check_chunk", "chunk_positions", "init_kv_cache", "last_real",
           "module_list", "rope_inv_freq"]

# flax >= 0.12 wants module lists wrapped; older versions take plain lists.
module_list = getattr(nnx, "List", list)


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class KVCache:
    """A fixed-length key/value cache (a pytree: pass it through ``jax.jit``).

    Attributes:
        keys: one (B, S, H_kv, D) array per layer.
        values: one (B, S, H_kv, D) array per layer.
        length: int32 (B,): positions already written per row (each row's next position).
            Rows advance independently, so a batch holds prompts of different lengths (fed
            right-padded with ``num_tokens``) and continuous batching refills one row while
            the others decode.
    """

    keys: tuple
    values: tuple
    length: jax.Array

    @property
    def max_length(self) -> int:
        return self.keys[0].shape[1]


def init_kv_cache(*, num_layers: int, batch_size: int, max_length: int, num_kv_heads: int,
                  head_dim: int, dtype=jnp.float32) -> KVCache:
    """An empty :class:`KVCache` (zeros, every row's ``length`` 0).

    Inside jit, writes past ``max_length`` are dropped (their logits would be wrong); the
    models raise :class:`~xg2_jax.CacheOverflowError` when called eagerly past the end and
    the decoding loops check the budget before they start: size the cache for the prompt
    plus every generated token.
    """
    shape = (batch_size, max_length, num_kv_heads, head_dim)
    zeros = tuple(jnp.zeros(shape, dtype) for _ in range(num_layers))
    return KVCache(keys=zeros, values=tuple(jnp.zeros(shape, dtype) for _ in range(num_layers)),
                   length=jnp.zeros((batch_size,), jnp.int32))


class Dense(nnx.Module):
    """``y = x @ kernel (+ bias)`` with a (in, out) kernel.

    Args:
        in_features, out_features: shapes.
        use_bias: add a bias.
        dtype: parameter and output dtype.
        rngs: initialiser randomness (the loaders overwrite the values).
    """

    def __init__(self, in_features: int, out_features: int, *, use_bias: bool = False,
                 dtype=jnp.float32, rngs: nnx.Rngs):
        scale = 1.0 / math.sqrt(in_features)
        self.kernel = nnx.Param(
            (jax.random.normal(rngs.params(), (in_features, out_features)) * scale).astype(dtype))
        self.bias = nnx.Param(jnp.zeros((out_features,), dtype)) if use_bias else None

    def __call__(self, x: jax.Array) -> jax.Array:
        y = x @ self.kernel[...]
        if self.bias is not None:
            y = y + self.bias[...]
        return y


class RMSNorm(nnx.Module):
    """Root-mean-square norm with a learned scale, computed in float32."""

    def __init__(self, dim: int, *, eps: float, dtype=jnp.float32):
        self.weight = nnx.Param(jnp.ones((dim,), dtype))
        self.eps = eps

    def __call__(self, x: jax.Array) -> jax.Array:
        x32 = x.astype(jnp.float32)
        y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        return (y * self.weight[...].astype(jnp.float32)).astype(x.dtype)


class LayerNorm(nnx.Module):
    """LayerNorm with scale and bias, computed in float32."""

    def __init__(self, dim: int, *, eps: float, dtype=jnp.float32):
        self.weight = nnx.Param(jnp.ones((dim,), dtype))
        self.bias = nnx.Param(jnp.zeros((dim,), dtype))
        self.eps = eps

    def __call__(self, x: jax.Array) -> jax.Array:
        x32 = x.astype(jnp.float32)
        mean = jnp.mean(x32, axis=-1, keepdims=True)
        var = jnp.mean(jnp.square(x32 - mean), axis=-1, keepdims=True)
        y = (x32 - mean) * jax.lax.rsqrt(var + self.eps)
        return (y * self.weight[...].astype(jnp.float32)
                + self.bias[...].astype(jnp.float32)).astype(x.dtype)


def rope_inv_freq(head_dim: int, *, theta: float, scaling: RopeScaling = RopeScaling()):
    """Inverse RoPE frequencies (head_dim // 2,), float32, with linear or llama3 scaling.

    Example:
        >>> rope_inv_freq(4, theta=10000.0).tolist()
        [1.0, 0.009999999776482582]
    """
    inv = 1.0 / (theta ** (jnp.arange(0, head_dim, 2, dtype=jnp.float32) / head_dim))
    if scaling.rope_type == "linear":
        return inv / scaling.factor
    if scaling.rope_type == "llama3":
        old = scaling.original_max_position_embeddings
        low_wavelen = old / scaling.low_freq_factor
        high_wavelen = old / scaling.high_freq_factor
        wavelen = 2 * math.pi / inv
        scaled = jnp.where(wavelen > low_wavelen, inv / scaling.factor, inv)
        smooth = (old / wavelen - scaling.low_freq_factor) / (
            scaling.high_freq_factor - scaling.low_freq_factor)
        smoothed = (1 - smooth) * scaled / scaling.factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return jnp.where(medium, smoothed, scaled)
    return inv


def apply_rope(x: jax.Array, positions: jax.Array, inv_freq: jax.Array) -> jax.Array:
    """Rotates (B, T, H, D) queries or keys by their positions (B, T), Hugging Face's
    half-split layout (``rotate_half``), in float32."""
    angles = positions.astype(jnp.float32)[..., None] * inv_freq  # (B, T, D/2)
    cos = jnp.cos(angles)[:, :, None, :]
    sin = jnp.sin(angles)[:, :, None, :]
    x32 = x.astype(jnp.float32)
    x1, x2 = jnp.split(x32, 2, axis=-1)
    rotated = jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return rotated.astype(x.dtype)


def chunk_positions(cache: KVCache, tokens: jax.Array) -> jax.Array:
    """The positions (B, T) of a chunk of ``tokens`` (B, T) fed after ``cache``: each row
    continues from its own length."""
    return cache.length[:, None] + jnp.arange(tokens.shape[1], dtype=jnp.int32)[None, :]


def advance_length(cache: KVCache, tokens: jax.Array, num_tokens) -> jax.Array:
    """Each row's length after the chunk: ``num_tokens`` (B,) real tokens per row (the rest
    of the chunk is right padding), all ``T`` when None."""
    if num_tokens is None:
        return cache.length + tokens.shape[1]
    return cache.length + jnp.asarray(num_tokens, jnp.int32)


def check_chunk(cache: KVCache, tokens, num_tokens, vocab_size: int) -> None:
    """Eager calls only (concrete values): token ids in the vocabulary, and the chunk fits in
    the cache. Under jit the values are tracers and the loops check on the host instead."""
    from xg2_jax._src.errors import CacheOverflowError, InvalidArgumentError

    if isinstance(tokens, jax.core.Tracer) or isinstance(cache.length, jax.core.Tracer):
        return
    ids = jnp.asarray(tokens)
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise InvalidArgumentError(f"token id {int(ids.max()) if int(ids.max()) >= vocab_size else int(ids.min())} "
                                   f"is outside the model's vocabulary [0, {vocab_size})")
    counts = ids.shape[1] if num_tokens is None else jnp.asarray(num_tokens)
    if isinstance(counts, jax.core.Tracer):
        return
    end = int(jnp.max(cache.length + counts))
    if end > cache.max_length:
        raise CacheOverflowError(f"feeding these tokens needs {end} cache positions; the cache "
                                 f"holds {cache.max_length}")


def cached_attention(q: jax.Array, k: jax.Array, v: jax.Array, cache_k: jax.Array,
                     cache_v: jax.Array, positions: jax.Array):
    """Writes this chunk's keys/values at their positions and attends causally over the cache.

    Args:
        q: (B, T, H, D) queries.
        k, v: (B, T, H_kv, D) this chunk's keys and values (``H % H_kv == 0``: grouped-query).
        cache_k, cache_v: (B, S, H_kv, D).
        positions: int32 (B, T): each query's position (rows start at their own length).

    Returns:
        ``(out (B, T, H * D), cache_k, cache_v)``. A query attends to the keys at positions
        up to its own: padding written after a row's real tokens sits at later positions,
        which that row's real queries never see, and is overwritten by the row's next tokens.
    """
    b, t, h, d = q.shape
    kv_heads = k.shape[2]
    rows = jnp.arange(b)[:, None]
    # Positions past the end are dropped, not clamped onto the last slot.
    cache_k = cache_k.at[rows, positions].set(k.astype(cache_k.dtype), mode="drop")
    cache_v = cache_v.at[rows, positions].set(v.astype(cache_v.dtype), mode="drop")
    qg = q.reshape(b, t, kv_heads, h // kv_heads, d)
    scores = jnp.einsum("btkgd,bskd->bkgts", qg, cache_k,
                        preferred_element_type=jnp.float32) / math.sqrt(d)
    key_pos = jnp.arange(cache_k.shape[1])
    allowed = key_pos[None, None, :] <= positions[:, :, None]  # (B, T, S)
    scores = jnp.where(allowed[:, None, None], scores, -1e30)
    probs = jax.nn.softmax(scores, axis=-1).astype(cache_v.dtype)
    out = jnp.einsum("bkgts,bskd->btkgd", probs, cache_v)
    return out.reshape(b, t, h * d).astype(q.dtype), cache_k, cache_v


def last_real(x: jax.Array, tokens: jax.Array, num_tokens) -> jax.Array:
    """Each row's hidden state (B, D) at its last real token of the chunk."""
    if num_tokens is None:
        return x[:, -1]
    idx = jnp.clip(jnp.asarray(num_tokens, jnp.int32) - 1, 0, tokens.shape[1] - 1)
    return jnp.take_along_axis(x, idx[:, None, None], axis=1)[:, 0]
