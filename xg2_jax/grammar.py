"""Grammars under xgrammar's module name (``xgrammar.grammar``)."""

from xg2_jax._src.grammar import Grammar

__all__ = ["Grammar"]
