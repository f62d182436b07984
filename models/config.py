"""Model configurations, built from a Hugging Face ``config.json`` dictionary.

Example:
    >>> cfg = config_from_hf({"model_type": "llama", "vocab_size": 100, "hidden_size": 32,
    ...                       "intermediate_size": 64, "num_hidden_layers": 2,
    ...                       "num_attention_heads": 4, "num_key_value_heads": 2})
    >>> type(cfg).__name__, cfg.head_dim, cfg.tie_word_embeddings
    ('LlamaConfig', 8, False)
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Union

from xg2_jax._src.errors import UnsupportedModelError

__all__ = ["Gpt2Config", "LlamaConfig", "ModelConfig", "RopeScaling", "config_from_hf",
           "LLAMA_MODEL_TYPES", "GPT2_MODEL_TYPES"]

LLAMA_MODEL_TYPES = ("llama", "qwen2", "qwen3", "mistral")
GPT2_MODEL_TYPES = ("gpt2",)
_DTYPES = ("float32", "bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class RopeScaling:
    """Rotary-embedding frequency scaling.

    Attributes:
        rope_type: ``"default"``, ``"linear"`` or ``"llama3"``.
        factor: frequency divisor (linear, llama3).
        low_freq_factor, high_freq_factor, original_max_position_embeddings: llama3 only.
    """

    rope_type: str = "default"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """A Llama-family decoder (Llama 2/3, Mistral without sliding window, Qwen2, Qwen3).

    Attributes:
        vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
            num_key_value_heads, head_dim: shapes (``head_dim`` defaults to
            ``hidden_size // num_attention_heads``).
        rms_norm_eps: RMSNorm epsilon.
        rope_theta: RoPE base.
        rope_scaling: a :class:`RopeScaling`.
        max_position_embeddings: longest supported sequence.
        tie_word_embeddings: the output head reuses the input embedding.
        qkv_bias: q/k/v projections have biases (Qwen2; Llama's ``attention_bias``).
        o_bias: the output projection has a bias (Llama's ``attention_bias``).
        mlp_bias: the MLP projections have biases.
        qk_norm: per-head RMSNorm on queries and keys before RoPE (Qwen3).
        model_type: the ``model_type`` it was read from.
        dtype: parameter and activation dtype (``"float32"`` or ``"bfloat16"``); norms,
            softmax and logits are computed in float32.
        eos_token_ids: stop tokens named by the config (may be empty).
    """

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = RopeScaling()
    max_position_embeddings: int = 2048
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    model_type: str = "llama"
    dtype: str = "float32"
    eos_token_ids: tuple = ()


@dataclasses.dataclass(frozen=True)
class Gpt2Config:
    """A GPT-2 decoder (learned positions, LayerNorm, GELU, fused ``c_attn``).

    Attributes:
        vocab_size, n_embd, n_layer, n_head, n_inner: shapes (``n_inner`` defaults to
            ``4 * n_embd``).
        n_positions: learned position table size (the longest sequence).
        layer_norm_epsilon: LayerNorm epsilon.
        activation_function: ``"gelu_new"`` (tanh approximation) or ``"gelu"`` (exact).
        tie_word_embeddings: the output head reuses ``wte`` (GPT-2's default); otherwise the
            checkpoint's ``lm_head.weight`` is the head.
        dtype, eos_token_ids, model_type: as in :class:`LlamaConfig`.
    """

    vocab_size: int
    n_embd: int
    n_layer: int
    n_head: int
    n_inner: int
    n_positions: int = 1024
    layer_norm_epsilon: float = 1e-5
    activation_function: str = "gelu_new"
    tie_word_embeddings: bool = True
    model_type: str = "gpt2"
    dtype: str = "float32"
    eos_token_ids: tuple = ()

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    @property
    def num_hidden_layers(self) -> int:
        return self.n_layer

    @property
    def num_key_value_heads(self) -> int:
        return self.n_head

    @property
    def max_position_embeddings(self) -> int:
        return self.n_positions


ModelConfig = Union[LlamaConfig, Gpt2Config]


def _require(hf: dict, key: str, where: str) -> Any:
    if key not in hf:
        raise UnsupportedModelError(f"{where}: config.json lacks {key!r}")
    return hf[key]


def _eos_ids(hf: dict) -> tuple:
    eos = hf.get("eos_token_id")
    if isinstance(eos, int):
        return (eos,)
    if isinstance(eos, (list, tuple)):
        return tuple(int(e) for e in eos)
    return ()


def _rope(hf: dict, where: str) -> tuple[float, RopeScaling]:
    # transformers >= 5 writes `rope_parameters` (theta included); older configs `rope_scaling`.
    params = hf.get("rope_parameters") or {}
    theta = float(params.get("rope_theta", hf.get("rope_theta", 10000.0)))
    scaling = hf.get("rope_scaling") or params
    kind = scaling.get("rope_type", scaling.get("type", "default")) if scaling else "default"
    if kind == "default":
        return theta, RopeScaling()
    if kind == "linear":
        return theta, RopeScaling("linear", factor=float(scaling["factor"]))
    if kind == "llama3":
        return theta, RopeScaling(
            "llama3", factor=float(scaling["factor"]),
            low_freq_factor=float(scaling.get("low_freq_factor", 1.0)),
            high_freq_factor=float(scaling.get("high_freq_factor", 4.0)),
            original_max_position_embeddings=int(
                scaling.get("original_max_position_embeddings", 8192)))
    raise UnsupportedModelError(f"{where}: rope scaling type {kind!r} is not supported "
                                "(supported: default, linear, llama3)")


def config_from_hf(hf: dict, *, dtype: Optional[str] = None,
                   where: str = "config.json") -> ModelConfig:
    """Builds a :class:`LlamaConfig` or :class:`Gpt2Config` from a ``config.json`` dict.

    Args:
        hf: the parsed ``config.json``.
        dtype: ``"float32"``, ``"bfloat16"`` or ``"float16"``; default: float32.
        where: names the source in error messages.

    Returns:
        The config dataclass of the model family named by ``model_type``.

    Raises:
        UnsupportedModelError: an unknown ``model_type``, a missing shape field, or an
            option the models do not implement (rope scaling kind, sliding window).

    Example:
        >>> config_from_hf({"model_type": "gpt2", "vocab_size": 50, "n_embd": 16,
        ...                 "n_layer": 1, "n_head": 2}).n_inner
        64
    """
    dtype = dtype or "float32"
    if dtype not in _DTYPES:
        raise UnsupportedModelError(f"dtype {dtype!r} is not one of {', '.join(_DTYPES)}")
    model_type = hf.get("model_type")
    if model_type in GPT2_MODEL_TYPES:
        n_embd = int(_require(hf, "n_embd", where))
        act = hf.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu", "gelu_pytorch_tanh"):
            raise UnsupportedModelError(f"{where}: activation_function {act!r} is not supported")
        # Options of transformers' GPT2Attention the model does not implement.
        if hf.get("scale_attn_by_inverse_layer_idx", False):
            raise UnsupportedModelError(f"{where}: scale_attn_by_inverse_layer_idx is not "
                                        "supported")
        if not hf.get("scale_attn_weights", True):
            raise UnsupportedModelError(f"{where}: scale_attn_weights false (unscaled "
                                        "attention) is not supported")
        if hf.get("reorder_and_upcast_attn", False):
            raise UnsupportedModelError(f"{where}: reorder_and_upcast_attn is not supported")
        return Gpt2Config(
            vocab_size=int(_require(hf, "vocab_size", where)), n_embd=n_embd,
            n_layer=int(_require(hf, "n_layer", where)), n_head=int(_require(hf, "n_head", where)),
            n_inner=int(hf.get("n_inner") or 4 * n_embd),
            n_positions=int(hf.get("n_positions", 1024)),
            layer_norm_epsilon=float(hf.get("layer_norm_epsilon", 1e-5)),
            activation_function=act,
            tie_word_embeddings=bool(hf.get("tie_word_embeddings", True)),
            dtype=dtype, eos_token_ids=_eos_ids(hf))
    if model_type in LLAMA_MODEL_TYPES:
        if hf.get("use_sliding_window") or (model_type == "mistral" and hf.get("sliding_window")):
            raise UnsupportedModelError(f"{where}: sliding-window attention is not supported")
        act = hf.get("hidden_act", "silu")
        if act not in ("silu", "swish"):
            raise UnsupportedModelError(f"{where}: hidden_act {act!r} is not supported (the "
                                        "Llama-family MLP is SwiGLU: silu)")
        heads = int(_require(hf, "num_attention_heads", where))
        hidden = int(_require(hf, "hidden_size", where))
        theta, scaling = _rope(hf, where)
        attention_bias = bool(hf.get("attention_bias", False))
        return LlamaConfig(
            vocab_size=int(_require(hf, "vocab_size", where)), hidden_size=hidden,
            intermediate_size=int(_require(hf, "intermediate_size", where)),
            num_hidden_layers=int(_require(hf, "num_hidden_layers", where)),
            num_attention_heads=heads,
            num_key_value_heads=int(hf.get("num_key_value_heads") or heads),
            head_dim=int(hf.get("head_dim") or hidden // heads),
            rms_norm_eps=float(hf.get("rms_norm_eps", 1e-6)),
            rope_theta=theta, rope_scaling=scaling,
            max_position_embeddings=int(hf.get("max_position_embeddings", 2048)),
            tie_word_embeddings=bool(hf.get("tie_word_embeddings", False)),
            qkv_bias=attention_bias or model_type == "qwen2",
            o_bias=attention_bias,
            mlp_bias=bool(hf.get("mlp_bias", False)),
            qk_norm=model_type == "qwen3",
            model_type=model_type, dtype=dtype, eos_token_ids=_eos_ids(hf))
    supported = ", ".join(LLAMA_MODEL_TYPES + GPT2_MODEL_TYPES)
    raise UnsupportedModelError(f"{where}: model_type {model_type!r} is not supported "
                                f"(supported: {supported})")
