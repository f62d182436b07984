"""Flax NNX decoder models for the decoding loops, and local Hugging Face checkpoint loaders.

Families: Llama/Qwen2/Qwen3/Mistral (:class:`LlamaForCausalLM`) and GPT-2
(:class:`Gpt2LMHeadModel`). Each takes ``(tokens (B, T), KVCache)`` and returns
``(logits, KVCache)``; :func:`load_pretrained` returns a :class:`CausalLM` whose ``step_fn`` is
what :func:`xg2_jax.constrained_generate` takes. :func:`default_model_path` is the tiny
Llama-architecture model shipped in the package (GPT-2 vocabulary).

Example:
    >>> from xg2_jax import models
    >>> lm = models.load_pretrained(models.default_model_path())
    >>> lm.config.model_type, lm.config.vocab_size
    ('llama', 50257)
"""

from xg2_jax._src.package_data import default_model_path
from xg2_jax.models.config import Gpt2Config, LlamaConfig, ModelConfig, RopeScaling, config_from_hf
from xg2_jax.models.gpt2 import Gpt2LMHeadModel
from xg2_jax.models.layers import KVCache, init_kv_cache
from xg2_jax.models.llama import LlamaForCausalLM
from xg2_jax.models.loading import (
                                   CausalLM,
                                   from_module,
                                   load_config,
                                   load_pretrained,
                                   load_tokenizer_info,
                                   make_step_fn,
)

__all__ = ["CausalLM", "Gpt2Config", "Gpt2LMHeadModel", "KVCache", "LlamaConfig",
           "LlamaForCausalLM", "ModelConfig", "RopeScaling", "config_from_hf",
           "default_model_path", "from_module", "init_kv_cache", "load_config",
           "load_pretrained", "load_tokenizer_info", "make_step_fn"]
