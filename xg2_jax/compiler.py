"""The compiler under xgrammar's module name (``xgrammar.compiler``)."""

from xg2_jax._src.compiler import CompiledGrammar, GrammarCompiler

__all__ = ["CompiledGrammar", "GrammarCompiler"]
