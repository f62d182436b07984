"""Files shipped in the package: the default vocabulary and the default model."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["DEFAULT_MODEL", "DEFAULT_VOCAB", "default_model_path", "default_vocab_path"]

DEFAULT_VOCAB = "gpt2.json.gz"
DEFAULT_MODEL = "tiny_llama_json"


def default_vocab_path() -> Path:
    """Path of the vocabulary shipped in the package (GPT-2, byte-level BPE).

    Example:
        >>> default_vocab_path().name
        'gpt2.json.gz'
    """
    return Path(str(resources.files("xg2_jax") / "data" / DEFAULT_VOCAB))


def default_model_path() -> Path:
    """Directory of the tiny Llama-architecture model shipped in the package (``config.json``,
    ``model.npz``, ``tokenizer.json`` and ``tokenizer_config.json`` with its chat template; its
    vocabulary is :func:`default_vocab_path`).

    Example:
        >>> sorted(p.name for p in default_model_path().iterdir())
        ['config.json', 'model.npz', 'tokenizer.json', 'tokenizer_config.json']
    """
    return Path(str(resources.files("xg2_jax") / "data" / DEFAULT_MODEL))
