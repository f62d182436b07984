"""Vocabularies under xgrammar's module name (``xgrammar.tokenizer_info``)."""

from xg2_jax._src.tokenizer import TokenizerInfo, VocabType

__all__ = ["TokenizerInfo", "VocabType"]
