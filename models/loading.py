"""Loading Hugging Face-layout checkpoints from a local directory, and the decoding-loop step.

A directory holds ``config.json``, the weights (``model.safetensors``, or shards
``model-0000x-of-0000y.safetensors`` listed by ``model.safetensors.index.json``; or a numpy
``model.npz`` with the same tensor names) and usually ``tokenizer.json``. Nothing is
downloaded: paths are local.

Example:
    >>> import xg2_jax as xg
    >>> from xg2_jax import models
    >>> lm = models.load_pretrained("path/to/Qwen3-0.6B", dtype="bfloat16")  # doctest: +SKIP
    >>> tok = models.load_tokenizer_info("path/to/Qwen3-0.6B",  # doctest: +SKIP
    ...                                  vocab_size=lm.config.vocab_size)
    >>> out = xg.constrained_generate(lm.step_fn, lm.params,  # doctest: +SKIP
    ...     lm.init_cache(batch_size=1, max_length=256), prompt, matchers, max_new_tokens=128)
"""

from __future__ import annotations

import dataclasses
import functools
import json
import warnings
from pathlib import Path
from typing import Any, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from xg2_jax._src.errors import (
    MissingTensorError,
    ModelError,
    ModelFileError,
    TensorShapeError,
    UnusedTensorWarning,
)
from xg2_jax._src.tokenizer import TokenizerInfo
from xg2_jax.models.config import Gpt2Config, ModelConfig, config_from_hf
from xg2_jax.models.gpt2 import Gpt2LMHeadModel, gpt2_tensor_plan
from xg2_jax.models.layers import KVCache
from xg2_jax.models.llama import LlamaForCausalLM, llama_tensor_plan
from xg2_jax.models.safetensors_io import NpzFile, SafetensorsFile

__all__ = ["CausalLM", "load_config", "load_pretrained", "load_tokenizer_info", "make_step_fn",
           "from_module", "model_class"]

PathLike = Union[str, Path]
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
NPZ_FILE = "model.npz"  # the shipped tiny model's format (numpy, compressed)


@functools.lru_cache(maxsize=32)
def make_step_fn(graphdef: Any):
    """The decoding-loop step of a split NNX model.

    One function per ``graphdef`` (cached), so the loops' jit cache hits across calls.

    Args:
        graphdef: from ``nnx.split(model)``.

    Returns:
        ``step_fn(params, cache, tokens int32 (B, T), num_tokens=None) -> (logits float32
        (B, V), cache)``: logits of the token after each row's last real token
        (``num_tokens`` (B,): real tokens per row of a right-padded chunk; default all).

    Example:
        >>> graphdef, params = nnx.split(model)  # doctest: +SKIP
        >>> logits, cache = make_step_fn(graphdef)(params, cache, prompt)  # doctest: +SKIP
    """

    def step_fn(params, cache: KVCache, tokens, num_tokens=None):
        model = nnx.merge(graphdef, params)
        return model(tokens, cache, num_tokens=num_tokens, last_only=True)

    return step_fn


@dataclasses.dataclass(frozen=True)
class CausalLM:
    """A split model ready for the decoding loops.

    Attributes:
        config: the model's config dataclass.
        graphdef: the NNX graph definition (static).
        params: the parameter state (a pytree of arrays).
        step_fn: ``step_fn(params, cache, tokens (B, T)) -> (logits (B, V), cache)``.
    """

    config: ModelConfig
    graphdef: Any
    params: Any
    step_fn: Any

    def module(self) -> nnx.Module:
        """The NNX module (merged from ``graphdef`` and ``params``)."""
        return nnx.merge(self.graphdef, self.params)

    def init_cache(self, *, batch_size: int, max_length: int) -> KVCache:
        """An empty :class:`~xg2_jax.models.layers.KVCache` (size it for the prompt plus
        every new token)."""
        return self.module().init_cache(batch_size=batch_size, max_length=max_length)

    def forward(self, tokens, cache: KVCache) -> tuple[jax.Array, KVCache]:
        """Logits of every position (B, T, V) and the new cache (not jitted; for tests)."""
        return self.module()(tokens, cache)


def model_class(cfg: ModelConfig) -> type:
    """The NNX module class of a config."""
    return Gpt2LMHeadModel if isinstance(cfg, Gpt2Config) else LlamaForCausalLM


def from_module(model: nnx.Module) -> CausalLM:
    """Splits an NNX model built here into a :class:`CausalLM`."""
    graphdef, params = nnx.split(model)
    return CausalLM(model.config, graphdef, params, make_step_fn(graphdef))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"{path}: not valid JSON: {e}") from None


def _model_dir(path: PathLike) -> Path:
    p = Path(path)
    if not p.is_dir():
        raise ModelFileError(f"{p}: not a model directory (expected config.json and "
                             "*.safetensors in it)")
    return p


def load_config(path: PathLike, *, dtype: Optional[str] = None) -> ModelConfig:
    """Reads ``config.json`` of a model directory into a config dataclass.

    Raises:
        ModelFileError: no directory or no ``config.json``.
        UnsupportedModelError: see :func:`~xg2_jax.models.config.config_from_hf`.
    """
    cfg_path = _model_dir(path) / "config.json"
    hf = _read_json(cfg_path)
    if not isinstance(hf, dict):
        raise ModelError(f"{cfg_path}: expected a JSON object")
    return config_from_hf(hf, dtype=dtype, where=str(cfg_path))


def _open_checkpoint(directory: Path) -> dict[str, SafetensorsFile]:
    """Maps every tensor name to the file that holds it."""
    index_path = directory / INDEX_FILE
    if index_path.exists():
        index = _read_json(index_path)
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict):
            raise ModelError(f"{index_path}: no 'weight_map' object")
        files: dict[str, SafetensorsFile] = {}
        for fname in sorted(set(weight_map.values())):
            if not (directory / fname).exists():
                raise ModelFileError(f"{directory / fname}: shard listed in {INDEX_FILE} "
                                     "is missing")
            files[fname] = SafetensorsFile(directory / fname)
        return {name: files[fname] for name, fname in weight_map.items()}
    shards = [directory / SINGLE_FILE] if (directory / SINGLE_FILE).exists() else \
        sorted(directory.glob("*.safetensors"))
    if not shards and (directory / NPZ_FILE).exists():
        shards = [directory / NPZ_FILE]
    if not shards:
        raise ModelFileError(f"{directory}: no {SINGLE_FILE}, {INDEX_FILE} or *.safetensors "
                             "file")
    by_name = {}
    for shard in shards:
        f = NpzFile(shard) if shard.suffix == ".npz" else SafetensorsFile(shard)
        for name in f.keys():
            by_name[name] = f
    return by_name


def _set_path(tree: dict, path: tuple, value) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def _get_path(tree: dict, path: tuple):
    for key in path:
        tree = tree[key]
    return tree


def load_pretrained(path: PathLike, *, dtype: Optional[str] = None) -> CausalLM:
    """Loads a Llama/Qwen2/Qwen3/Mistral or GPT-2 checkpoint from a local directory.

    Args:
        path: directory with ``config.json`` and safetensors weights (single file or shards
            with ``model.safetensors.index.json``).
        dtype: ``"float32"`` (default), ``"bfloat16"`` or ``"float16"``; weights are cast.

    Returns:
        A :class:`CausalLM`.

    Raises:
        ModelFileError: the directory, ``config.json`` or a weight file is missing.
        UnsupportedModelError: the ``model_type`` or an option is not implemented.
        MissingTensorError: tensors the model needs are absent (named, ``.names`` lists
            them all).
        TensorShapeError: a tensor's shape differs from the config's (named, with the
            expected and the actual shape).

    Example:
        >>> lm = load_pretrained("checkpoints/gpt2")  # doctest: +SKIP
        >>> logits, cache = lm.step_fn(lm.params, lm.init_cache(batch_size=1, max_length=16),
        ...                            jnp.array([[464, 3290]]))  # doctest: +SKIP
    """
    directory = _model_dir(path)
    cfg = load_config(directory, dtype=dtype)
    is_gpt2 = isinstance(cfg, Gpt2Config)
    plan = gpt2_tensor_plan(cfg) if is_gpt2 else llama_tensor_plan(cfg)
    tensors = _open_checkpoint(directory)

    def resolve(name: str) -> Optional[str]:
        if name in tensors:
            return name
        if is_gpt2 and f"transformer.{name}" in tensors:
            return f"transformer.{name}"
        return None

    missing = [name for name, _, _ in plan if resolve(name) is None]
    if missing:
        shown = ", ".join(missing[:8]) + (f", ... ({len(missing)} in all)"
                                          if len(missing) > 8 else "")
        raise MissingTensorError(f"{directory}: checkpoint lacks tensor(s) {shown}", missing)

    cls = model_class(cfg)
    abstract = nnx.eval_shape(lambda: cls(cfg, rngs=nnx.Rngs(0)))
    graphdef, state = nnx.split(abstract)
    expected = nnx.to_pure_dict(state)
    values = jax.tree.map(lambda leaf: None, expected)
    target = jnp.dtype(cfg.dtype)
    for name, param_path, transpose in plan:
        key = resolve(name)
        want = tuple(_get_path(expected, param_path).shape)
        got = tensors[key].shape(key)
        if transpose:
            got = got[::-1]
        if got != want:
            hf_want = want[::-1] if transpose else want
            raise TensorShapeError(f"{directory}: tensor {key!r} has shape "
                                   f"{list(tensors[key].shape(key))}, expected {list(hf_want)}")
        array = np.asarray(tensors[key].get(key))
        if transpose:
            array = array.T
        _set_path(values, param_path, jnp.asarray(array.astype(target)))
    nnx.replace_by_pure_dict(state, values)
    _warn_unused(directory, tensors, {resolve(name) for name, _, _ in plan}, resolve(plan[0][0]))
    return CausalLM(cfg, graphdef, state, make_step_fn(graphdef))


# Buffers transformers saves that hold no weights (causal-mask constants, RoPE frequencies).
_NOT_WEIGHTS = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq")


def _warn_unused(directory: Path, tensors: dict, used: set, embed_name: str) -> None:
    """Warns about checkpoint tensors the model does not read; a saved copy of a tied head
    (equal to the embedding) is not warned about."""
    unused = sorted(n for n in tensors if n not in used and not n.endswith(_NOT_WEIGHTS))
    for head in ("lm_head.weight",):
        if head in unused:
            if np.array_equal(tensors[head].get(head), tensors[embed_name].get(embed_name)):
                unused.remove(head)
    if unused:
        shown = ", ".join(unused[:8]) + (f", ... ({len(unused)} in all)" if len(unused) > 8
                                         else "")
        hint = (" (config.json says tie_word_embeddings but the checkpoint has a separate "
                "lm_head.weight)" if "lm_head.weight" in unused else "")
        warnings.warn(f"{directory}: the model does not use tensor(s) {shown}{hint}",
                      UnusedTensorWarning, stacklevel=3)


def load_tokenizer_info(path: PathLike, *, vocab_size: Optional[int] = None) -> TokenizerInfo:
    """The :class:`~xg2_jax.TokenizerInfo` of a model directory's ``tokenizer.json``.

    Stop tokens come from ``generation_config.json``'s ``eos_token_id``, else
    ``config.json``'s, else are detected from well-known names.

    Args:
        path: the model directory.
        vocab_size: the model's logits width (``config.vocab_size``) when larger than the
            tokenizer's vocabulary.

    Raises:
        ModelFileError: no ``tokenizer.json``.
        TokenizerError: a malformed ``tokenizer.json``.
    """
    directory = _model_dir(path)
    tok_path = directory / "tokenizer.json"
    if not tok_path.exists():
        raise ModelFileError(f"{tok_path}: no such file (the model directory needs a "
                             "Hugging Face tokenizer.json)")
    stops = None
    for name in ("generation_config.json", "config.json"):
        if (directory / name).exists():
            eos = _read_json(directory / name)
            eos = eos.get("eos_token_id") if isinstance(eos, dict) else None
            if isinstance(eos, int) or (isinstance(eos, list) and eos):
                stops = eos
                break
    return TokenizerInfo.from_huggingface(str(tok_path), vocab_size=vocab_size,
                                          stop_token_ids=stops)
