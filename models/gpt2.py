"""GPT-2 in Flax NNX: learned positions, pre-LayerNorm blocks, GELU MLP, fused ``c_attn``
projection, output head tied to the token embedding (or a separate ``lm_head`` when the
config says ``tie_word_embeddings: false``).

Hugging Face stores GPT-2's projections as ``Conv1D`` weights, already (in, out): they load
without a transpose.

Example:
    >>> import jax.numpy as jnp
    >>> from flax import nnx
    >>> from xg2_jax.models.config import Gpt2Config
    >>> cfg = Gpt2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_inner=64,
    ...                  n_positions=32)
    >>> model = Gpt2LMHeadModel(cfg, rngs=nnx.Rngs(0))
    >>> logits, cache = model(jnp.array([[1, 2]]), model.init_cache(batch_size=1, max_length=8))
    >>> logits.shape
    (1, 2, 50)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from xg2_jax.models.config import Gpt2Config
from xg2_jax.models.layers import (
    Dense,
    KVCache,
    LayerNorm,
    advance_length,
    cached_attention,
    check_chunk,
    chunk_positions,
    init_kv_cache,
    last_real,
    module_list,
)

__all__ = ["Gpt2LMHeadModel", "gpt2_tensor_plan"]


class Gpt2Block(nnx.Module):
    def __init__(self, cfg: Gpt2Config, *, dtype, rngs: nnx.Rngs):
        d = cfg.n_embd
        self.num_heads, self.head_dim = cfg.n_head, cfg.head_dim
        self.exact_gelu = cfg.activation_function == "gelu"
        self.ln_1 = LayerNorm(d, eps=cfg.layer_norm_epsilon, dtype=dtype)
        self.c_attn = Dense(d, 3 * d, use_bias=True, dtype=dtype, rngs=rngs)
        self.attn_proj = Dense(d, d, use_bias=True, dtype=dtype, rngs=rngs)
        self.ln_2 = LayerNorm(d, eps=cfg.layer_norm_epsilon, dtype=dtype)
        self.c_fc = Dense(d, cfg.n_inner, use_bias=True, dtype=dtype, rngs=rngs)
        self.mlp_proj = Dense(cfg.n_inner, d, use_bias=True, dtype=dtype, rngs=rngs)

    def __call__(self, x, cache_k, cache_v, positions):
        b, t, _ = x.shape
        q, k, v = jnp.split(self.c_attn(self.ln_1(x)), 3, axis=-1)
        shape = (b, t, self.num_heads, self.head_dim)
        out, cache_k, cache_v = cached_attention(q.reshape(shape), k.reshape(shape),
                                                 v.reshape(shape), cache_k, cache_v,
                                                 positions)
        x = x + self.attn_proj(out)
        h = jax.nn.gelu(self.c_fc(self.ln_2(x)), approximate=not self.exact_gelu)
        return x + self.mlp_proj(h), cache_k, cache_v


class Gpt2LMHeadModel(nnx.Module):
    """GPT-2 with a :class:`~xg2_jax.models.layers.KVCache` (same call convention as
    :class:`~xg2_jax.models.llama.LlamaForCausalLM`).

    The cache may not be longer than ``cfg.n_positions`` (the learned position table).
    """

    def __init__(self, cfg: Gpt2Config, *, rngs: nnx.Rngs):
        self.config = cfg
        dtype = jnp.dtype(cfg.dtype)
        normal = jax.random.normal
        self.wte = nnx.Param((normal(rngs.params(), (cfg.vocab_size, cfg.n_embd)) * 0.02).astype(dtype))
        self.wpe = nnx.Param((normal(rngs.params(), (cfg.n_positions, cfg.n_embd)) * 0.01).astype(dtype))
        self.h = module_list([Gpt2Block(cfg, dtype=dtype, rngs=rngs) for _ in range(cfg.n_layer)])
        self.ln_f = LayerNorm(cfg.n_embd, eps=cfg.layer_norm_epsilon, dtype=dtype)
        self.lm_head = (None if cfg.tie_word_embeddings else
                        Dense(cfg.n_embd, cfg.vocab_size, dtype=dtype, rngs=rngs))

    def init_cache(self, *, batch_size: int, max_length: int) -> KVCache:
        """An empty cache for ``batch_size`` rows of up to ``max_length`` tokens.

        Raises:
            ValueError: ``max_length`` exceeds ``n_positions``.
        """
        cfg = self.config
        if max_length > cfg.n_positions:
            raise ValueError(f"max_length {max_length} exceeds GPT-2's n_positions "
                             f"{cfg.n_positions}")
        return init_kv_cache(num_layers=cfg.n_layer, batch_size=batch_size,
                             max_length=max_length, num_kv_heads=cfg.n_head,
                             head_dim=cfg.head_dim, dtype=jnp.dtype(cfg.dtype))

    def __call__(self, tokens: jax.Array, cache: KVCache, *, num_tokens=None,
                 last_only: bool = False):
        tokens = jnp.asarray(tokens, jnp.int32)
        check_chunk(cache, tokens, num_tokens, self.config.vocab_size)
        positions = chunk_positions(cache, tokens)
        # Padding past the table (never a real position: the cache is no longer) is clipped.
        x = (jnp.take(self.wte[...], tokens, axis=0)
             + jnp.take(self.wpe[...], positions, axis=0, mode="clip"))
        keys, values = [], []
        for block, ck, cv in zip(self.h, cache.keys, cache.values):
            x, ck, cv = block(x, ck, cv, positions)
            keys.append(ck)
            values.append(cv)
        if last_only:
            x = last_real(x, tokens, num_tokens)
        x = self.ln_f(x)
        if self.lm_head is None:
            logits = jnp.einsum("...d,vd->...v", x, self.wte[...],
                                preferred_element_type=jnp.float32)
        else:
            logits = self.lm_head(x).astype(jnp.float32)
        return logits, KVCache(keys=tuple(keys), values=tuple(values),
                               length=advance_length(cache, tokens, num_tokens))


def gpt2_tensor_plan(cfg: Gpt2Config) -> list[tuple[str, tuple, bool]]:
    """Where each Hugging Face tensor goes: ``(hf_name, param_path, transpose)`` (names
    without the ``transformer.`` prefix; the loader accepts both)."""
    plan = [("wte.weight", ("wte",), False), ("wpe.weight", ("wpe",), False)]
    for i in range(cfg.n_layer):
        hf, p = f"h.{i}", ("h", i)
        for hf_sub, sub in (("ln_1", "ln_1"), ("ln_2", "ln_2")):
            plan += [(f"{hf}.{hf_sub}.weight", p + (sub, "weight"), False),
                     (f"{hf}.{hf_sub}.bias", p + (sub, "bias"), False)]
        for hf_sub, sub in (("attn.c_attn", "c_attn"), ("attn.c_proj", "attn_proj"),
                            ("mlp.c_fc", "c_fc"), ("mlp.c_proj", "mlp_proj")):
            plan += [(f"{hf}.{hf_sub}.weight", p + (sub, "kernel"), False),
                     (f"{hf}.{hf_sub}.bias", p + (sub, "bias"), False)]
    plan += [("ln_f.weight", ("ln_f", "weight"), False), ("ln_f.bias", ("ln_f", "bias"), False)]
    if not cfg.tie_word_embeddings:  # a top-level name in transformers' GPT2LMHeadModel
        plan.append(("lm_head.weight", ("lm_head", "kernel"), True))
    return plan
