"""Llama-family decoder in Flax NNX: Llama 2/3, Qwen2 (q/k/v bias), Qwen3 (per-head q/k
RMSNorm), with grouped-query attention, SwiGLU, RoPE (default, linear, llama3 scaling) and
tied or untied embeddings.

Example:
    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from xg2_jax.models.config import LlamaConfig
    >>> cfg = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32,
    ...                   num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
    ...                   head_dim=4)
    >>> model = LlamaForCausalLM(cfg, rngs=nnx.Rngs(0))
    >>> cache = model.init_cache(batch_size=1, max_length=8)
    >>> logits, cache = model(jnp.array([[1, 2, 3]]), cache)
    >>> logits.shape, cache.length.tolist()
    ((1, 3, 50), [3])
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from xg2_jax.models.config import LlamaConfig
from xg2_jax.models.layers import (
    Dense,
    KVCache,
    RMSNorm,
    advance_length,
    apply_rope,
    cached_attention,
    check_chunk,
    chunk_positions,
    init_kv_cache,
    last_real,
    module_list,
    rope_inv_freq,
)

__all__ = ["LlamaForCausalLM", "llama_tensor_plan"]


class LlamaAttention(nnx.Module):
    def __init__(self, cfg: LlamaConfig, *, dtype, rngs: nnx.Rngs):
        d, h, kv, hd = cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = h, kv, hd
        self.q_proj = Dense(d, h * hd, use_bias=cfg.qkv_bias, dtype=dtype, rngs=rngs)
        self.k_proj = Dense(d, kv * hd, use_bias=cfg.qkv_bias, dtype=dtype, rngs=rngs)
        self.v_proj = Dense(d, kv * hd, use_bias=cfg.qkv_bias, dtype=dtype, rngs=rngs)
        self.o_proj = Dense(h * hd, d, use_bias=cfg.o_bias, dtype=dtype, rngs=rngs)
        if cfg.qk_norm:
            self.q_norm = RMSNorm(hd, eps=cfg.rms_norm_eps, dtype=dtype)
            self.k_norm = RMSNorm(hd, eps=cfg.rms_norm_eps, dtype=dtype)
        else:
            self.q_norm = self.k_norm = None

    def __call__(self, x, positions, inv_freq, cache_k, cache_v):
        b, t, _ = x.shape
        q = self.q_proj(x).reshape(b, t, self.num_heads, self.head_dim)
        k = self.k_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
        v = self.v_proj(x).reshape(b, t, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = apply_rope(q, positions, inv_freq)
        k = apply_rope(k, positions, inv_freq)
        out, cache_k, cache_v = cached_attention(q, k, v, cache_k, cache_v, positions)
        return self.o_proj(out), cache_k, cache_v


class LlamaMLP(nnx.Module):
    def __init__(self, cfg: LlamaConfig, *, dtype, rngs: nnx.Rngs):
        d, f, bias = cfg.hidden_size, cfg.intermediate_size, cfg.mlp_bias
        self.gate_proj = Dense(d, f, use_bias=bias, dtype=dtype, rngs=rngs)
        self.up_proj = Dense(d, f, use_bias=bias, dtype=dtype, rngs=rngs)
        self.down_proj = Dense(f, d, use_bias=bias, dtype=dtype, rngs=rngs)

    def __call__(self, x):
        return self.down_proj(jax.nn.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nnx.Module):
    def __init__(self, cfg: LlamaConfig, *, dtype, rngs: nnx.Rngs):
        self.input_layernorm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps, dtype=dtype)
        self.self_attn = LlamaAttention(cfg, dtype=dtype, rngs=rngs)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps, dtype=dtype)
        self.mlp = LlamaMLP(cfg, dtype=dtype, rngs=rngs)

    def __call__(self, x, positions, inv_freq, cache_k, cache_v):
        attn, cache_k, cache_v = self.self_attn(self.input_layernorm(x), positions, inv_freq,
                                                cache_k, cache_v)
        x = x + attn
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, cache_k, cache_v


class LlamaForCausalLM(nnx.Module):
    """A Llama-family causal LM with a :class:`~xg2_jax.models.layers.KVCache`.

    Args:
        cfg: a :class:`~xg2_jax.models.config.LlamaConfig`.
        rngs: initialiser randomness (random weights; use the loaders for real ones).

    Call ``model(tokens (B, T) int32, cache, *, num_tokens=None, last_only=False)``: feeds
    each row's tokens at positions ``cache.length[b] ..`` and returns ``(logits float32
    (B, T, V) or (B, V), cache)``. ``num_tokens`` (B,) counts each row's real tokens (the
    rest is right padding, not counted in the row's new length); ``last_only`` returns the
    logits after each row's last real token.
    """

    def __init__(self, cfg: LlamaConfig, *, rngs: nnx.Rngs):
        self.config = cfg
        dtype = jnp.dtype(cfg.dtype)
        self.embed_tokens = nnx.Param(
            (jax.random.normal(rngs.params(), (cfg.vocab_size, cfg.hidden_size)) * 0.02).astype(dtype))
        self.layers = module_list([LlamaDecoderLayer(cfg, dtype=dtype, rngs=rngs)
                                   for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps, dtype=dtype)
        self.lm_head = (None if cfg.tie_word_embeddings else
                        Dense(cfg.hidden_size, cfg.vocab_size, dtype=dtype, rngs=rngs))

    def init_cache(self, *, batch_size: int, max_length: int) -> KVCache:
        """An empty cache for ``batch_size`` rows of up to ``max_length`` tokens."""
        cfg = self.config
        return init_kv_cache(num_layers=cfg.num_hidden_layers, batch_size=batch_size,
                             max_length=max_length, num_kv_heads=cfg.num_key_value_heads,
                             head_dim=cfg.head_dim, dtype=jnp.dtype(cfg.dtype))

    def hidden_states(self, tokens: jax.Array, cache: KVCache, *, num_tokens=None
                      ) -> tuple[jax.Array, KVCache]:
        """The final-normed hidden states (B, T, D) of ``tokens`` and the new cache."""
        cfg = self.config
        tokens = jnp.asarray(tokens, jnp.int32)
        check_chunk(cache, tokens, num_tokens, cfg.vocab_size)
        positions = chunk_positions(cache, tokens)
        inv_freq = rope_inv_freq(cfg.head_dim, theta=cfg.rope_theta, scaling=cfg.rope_scaling)
        x = jnp.take(self.embed_tokens[...], tokens, axis=0)
        keys, values = [], []
        for layer, ck, cv in zip(self.layers, cache.keys, cache.values):
            x, ck, cv = layer(x, positions, inv_freq, ck, cv)
            keys.append(ck)
            values.append(cv)
        new_cache = KVCache(keys=tuple(keys), values=tuple(values),
                            length=advance_length(cache, tokens, num_tokens))
        return self.norm(x), new_cache

    def __call__(self, tokens: jax.Array, cache: KVCache, *, num_tokens=None,
                 last_only: bool = False):
        x, new_cache = self.hidden_states(tokens, cache, num_tokens=num_tokens)
        if last_only:
            x = last_real(x, tokens, num_tokens)
        if self.lm_head is None:
            logits = jnp.einsum("...d,vd->...v", x, self.embed_tokens[...],
                                preferred_element_type=jnp.float32)
        else:
            logits = self.lm_head(x).astype(jnp.float32)
        return logits, new_cache


def llama_tensor_plan(cfg: LlamaConfig) -> list[tuple[str, tuple, bool]]:
    """Where each Hugging Face tensor goes: ``(hf_name, param_path, transpose)``.

    ``param_path`` is the key path in ``nnx.to_pure_dict`` of the model's state;
    ``transpose`` is set for ``nn.Linear`` weights (HF (out, in) -> kernel (in, out)).

    Example:
        >>> from xg2_jax.models.config import LlamaConfig
        >>> cfg = LlamaConfig(vocab_size=8, hidden_size=4, intermediate_size=8,
        ...                   num_hidden_layers=1, num_attention_heads=1,
        ...                   num_key_value_heads=1, head_dim=4, tie_word_embeddings=True)
        >>> llama_tensor_plan(cfg)[1]
        ('model.layers.0.input_layernorm.weight', ('layers', 0, 'input_layernorm', 'weight'), False)
    """
    plan = [("model.embed_tokens.weight", ("embed_tokens",), False)]

    def linear(hf: str, path: tuple, bias: bool):
        plan.append((f"{hf}.weight", path + ("kernel",), True))
        if bias:
            plan.append((f"{hf}.bias", path + ("bias",), False))

    for i in range(cfg.num_hidden_layers):
        hf, p = f"model.layers.{i}", ("layers", i)
        plan.append((f"{hf}.input_layernorm.weight", p + ("input_layernorm", "weight"), False))
        for name in ("q_proj", "k_proj", "v_proj"):
            linear(f"{hf}.self_attn.{name}", p + ("self_attn", name), cfg.qkv_bias)
        linear(f"{hf}.self_attn.o_proj", p + ("self_attn", "o_proj"), cfg.o_bias)
        if cfg.qk_norm:
            for name in ("q_norm", "k_norm"):
                plan.append((f"{hf}.self_attn.{name}.weight", p + ("self_attn", name, "weight"),
                             False))
        plan.append((f"{hf}.post_attention_layernorm.weight",
                     p + ("post_attention_layernorm", "weight"), False))
        for name in ("gate_proj", "up_proj", "down_proj"):
            linear(f"{hf}.mlp.{name}", p + ("mlp", name), cfg.mlp_bias)
    plan.append(("model.norm.weight", ("norm", "weight"), False))
    if not cfg.tie_word_embeddings:
        plan.append(("lm_head.weight", ("lm_head", "kernel"), True))
    return plan
