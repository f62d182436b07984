"""Test utilities: a random recurrent decoder in plain JAX, for tests, benchmarks and examples.

Not to be confused with the trained tiny Llama shipped in ``xg2_jax/data`` (see
:func:`xg2_jax.models.default_model_path`): this model has random weights. Embedding, one tanh recurrent layer (its hidden state is the "KV cache"), one residual MLP,
and an output head over the full vocabulary. It is not a language model: it exists so the
decoding loops can be exercised end to end on CPU with a real vocabulary width.

Example:
    >>> import jax, jax.numpy as jnp
    >>> cfg = RandomModelConfig(vocab_size=100, hidden=16)
    >>> params = init_params(jax.random.key(0), cfg)
    >>> cache = init_cache(cfg, batch_size=2)
    >>> logits, cache = step(params, cache, jnp.zeros((2, 3), jnp.int32))
    >>> logits.shape
    (2, 100)
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from xg2_jax._src.testing_helpers import (  # noqa: F401 - xgrammar.testing's helpers
    GrammarFunctor,
    _ebnf_to_grammar_no_normalization,
    _generate_float_regex,
    _generate_range_regex,
    _get_allow_empty_rule_ids,
    _get_masked_tokens_from_bitmask,
    _get_matcher_from_grammar,
    _get_matcher_from_grammar_and_tokenizer_info,
    _is_grammar_accept_string,
    _is_rule_fsm_accept_string,
    _is_single_token_bitmask,
    _json_schema_to_ebnf,
    _print_grammar_fsms,
    _regex_to_ebnf,
    _traverse_draft_tree,
    bitmask_to_bool_mask,
    bool_mask_to_bitmask,
)

__all__ = ["RandomModelConfig", "bitmask_to_bool_mask", "bool_mask_to_bitmask", "init_cache",
           "init_params", "step", "verify_tree"]


@dataclasses.dataclass(frozen=True)
class RandomModelConfig:
    """Shape of the random model.

    Attributes:
        vocab_size: logits width (may exceed the tokenizer's vocabulary).
        hidden: state width.
        mlp: MLP width.
        logit_scale: multiplies the output head (larger: peakier distributions).
    """

    vocab_size: int
    hidden: int = 64
    mlp: int = 128
    logit_scale: float = 4.0


def init_params(key: jax.Array, cfg: RandomModelConfig) -> dict:
    """Random parameters (a pytree of float32 arrays)."""
    k = jax.random.split(key, 6)
    d, f, v = cfg.hidden, cfg.mlp, cfg.vocab_size
    n = jax.random.normal
    return {
        "embed": n(k[0], (v, d), jnp.float32),
        "w_x": n(k[1], (d, d), jnp.float32) / jnp.sqrt(d),
        "w_h": n(k[2], (d, d), jnp.float32) / jnp.sqrt(d),
        "w_1": n(k[3], (d, f), jnp.float32) / jnp.sqrt(d),
        "w_2": n(k[4], (f, d), jnp.float32) / jnp.sqrt(f),
        "head": n(k[5], (d, v), jnp.float32) * (cfg.logit_scale / jnp.sqrt(d)),
    }


def init_cache(cfg: RandomModelConfig, batch_size: int) -> dict:
    """The empty recurrent state for ``batch_size`` rows."""
    return {"h": jnp.zeros((batch_size, cfg.hidden), jnp.float32)}


def _cell(params: dict, h: jax.Array, tokens: jax.Array) -> jax.Array:
    x = jnp.take(params["embed"], tokens, axis=0)
    return jnp.tanh(x @ params["w_x"] + h @ params["w_h"])


def _head(params: dict, h: jax.Array) -> jax.Array:
    y = h + jax.nn.gelu(h @ params["w_1"]) @ params["w_2"]
    return y @ params["head"]


@jax.jit
def step(params: dict, cache: dict, tokens: jax.Array) -> tuple[jax.Array, dict]:
    """Feeds ``tokens`` (B, T) and returns the next-token logits (B, V) and the new cache."""
    tokens = jnp.asarray(tokens, jnp.int32)
    if tokens.ndim == 1:
        tokens = tokens[:, None]
    h = jax.lax.scan(lambda h, t: (_cell(params, h, t), None), cache["h"], tokens.T)[0]
    return _head(params, h), {"h": h}


@jax.jit
def verify_tree(params: dict, cache: dict, tree_tokens: jax.Array,
                parents: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Scores a draft tree in one call (the target model's verify pass).

    Node 0 is the root: the last accepted token, not yet fed to the model (``cache`` is the
    state before it). Node ``i`` follows its parent ``parents[i] < i``.

    Args:
        params: model parameters.
        cache: the state before the root token.
        tree_tokens: int32 (B, N).
        parents: int32 (N,) or (B, N), ``parents[..., 0] == -1``.

    Returns:
        ``(logits, states)``: logits (B, N, V) of the token after each node, and the state
        after each node (B, N, D); ``{"h": states[:, i]}`` is the cache after node ``i``.
    """
    tree_tokens = jnp.asarray(tree_tokens, jnp.int32)
    b, n = tree_tokens.shape
    parents = jnp.broadcast_to(jnp.asarray(parents, jnp.int32), (b, n))
    h0 = cache["h"]
    states = jnp.zeros((b, n) + h0.shape[1:], h0.dtype)
    logits = jnp.zeros((b, n, params["head"].shape[1]), jnp.float32)

    # One node per iteration, with the same (B, D) shapes as `step`, so a tree node's logits
    # equal, bit for bit, those of feeding its path one token at a time.
    def body(i, carry):
        states, logits = carry
        p = parents[:, i]
        prev = jnp.take_along_axis(states, jnp.maximum(p, 0)[:, None, None], axis=1)[:, 0]
        prev = jnp.where((p < 0)[:, None], h0, prev)
        h = _cell(params, prev, tree_tokens[:, i])
        return states.at[:, i].set(h), logits.at[:, i].set(_head(params, h))

    return jax.lax.fori_loop(0, n, body, (states, logits))[::-1]
