"""Vocabularies under xgrammar's module name (``xgrammar.tokenizer_info``)."""

from xg2_jax._src.tokenizer import TokenizerInfo, VocabType
from xg2_jax._src.vocab_metadata import BYTE_LEVEL_CHARSET as _BYTE_LEVEL_CHARSET  # noqa: F401

__all__ = ["TokenizerInfo", "VocabType"]
