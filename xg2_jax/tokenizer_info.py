"""Vocabularies under xgrammar's module name (``xgrammar.tokenizer_info``)."""

from xg2_jax._src.tokenizer import _BYTE_LEVEL_CHARSET, TokenizerInfo, VocabType  # noqa: F401

__all__ = ["TokenizerInfo", "VocabType"]
