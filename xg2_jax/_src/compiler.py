"""GrammarCompiler and CompiledGrammar: grammars compiled against one tokenizer."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from xg2_jax import _core
from xg2_jax._src.grammar import Grammar
from xg2_jax._src.tokenizer import TokenizerInfo


class CompiledGrammar:
    """A grammar compiled for one vocabulary: its automaton and adaptive token-mask cache.

    Create it with :class:`GrammarCompiler`; share it between any number of matchers and
    threads.
    """

    def __init__(self, handle: "_core.CompiledGrammar", tokenizer_info: TokenizerInfo):
        self._handle = handle
        self._tokenizer_info = tokenizer_info

    @property
    def grammar(self) -> Grammar:
        """The source grammar."""
        return Grammar(self._handle.grammar)

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        """The vocabulary the masks are computed for."""
        return self._tokenizer_info

    @property
    def memory_size_bytes(self) -> int:
        """Approximate heap size of the automaton and the built mask entries."""
        return self._handle.memory_size_bytes

    @property
    def num_states(self) -> int:
        """Number of automaton states over all rules."""
        return self._handle.num_states

    @property
    def num_scannable_states(self) -> int:
        """Number of states that consume bytes (one mask-cache entry each)."""
        return self._handle.num_scannable_states

    def mask_cache_stats(self) -> dict:
        """Entries built, their memory, and how many use each storage form."""
        return self._handle.mask_cache_stats()

    def precompute(self, *, num_threads: int = 1) -> None:
        """Builds every mask-cache entry now (a lazily compiled grammar builds them on use)."""
        self._handle.precompute(num_threads)


class GrammarCompiler:
    """Compiles grammars for one tokenizer, caching results by grammar text.

    Args:
        tokenizer_info: the vocabulary.
        max_threads: threads used to build mask caches (0: all cores).
        cache_enabled: keep compiled grammars and return them for an identical grammar.

    Example:
        >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> compiler = GrammarCompiler(tok)
        >>> compiled = compiler.compile_grammar('root ::= "a"+')
        >>> compiled.num_scannable_states > 0
        True
    """

    def __init__(self, tokenizer_info: TokenizerInfo, *, max_threads: int = 0,
                 cache_enabled: bool = True):
        self._tokenizer_info = tokenizer_info
        self._handle = _core.GrammarCompiler(tokenizer_info._handle, max_threads, cache_enabled)

    @property
    def tokenizer_info(self) -> TokenizerInfo:
        return self._tokenizer_info

    def compile_grammar(self, grammar: Union[str, Grammar], *, root_rule_name: str = "root",
                        lazy: bool = False) -> CompiledGrammar:
        """Compiles an EBNF grammar.

        Args:
            grammar: EBNF text or a :class:`Grammar`.
            root_rule_name: root rule when ``grammar`` is text.
            lazy: return before the token masks are built; each is built on first use.

        Returns:
            The compiled grammar.
        """
        if isinstance(grammar, str):
            grammar = Grammar.from_ebnf(grammar, root_rule_name=root_rule_name)
        handle = self._handle.compile(grammar._handle, not lazy)
        return CompiledGrammar(handle, self._tokenizer_info)

    def compile_json_schema(self, schema: Any, *, any_whitespace: bool = True,
                            indent: Optional[int] = None,
                            separators: Optional[Tuple[str, str]] = None,
                            strict_mode: bool = True,
                            max_whitespace_cnt: Optional[int] = None,
                            any_order: bool = False, on_unsupported: str = "raise",
                            lazy: bool = False) -> CompiledGrammar:
        """Compiles a JSON Schema; the options are those of :meth:`Grammar.from_json_schema`."""
        grammar = Grammar.from_json_schema(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            strict_mode=strict_mode, max_whitespace_cnt=max_whitespace_cnt, any_order=any_order,
            on_unsupported=on_unsupported)
        return self.compile_grammar(grammar, lazy=lazy)

    def compile_builtin_json_grammar(self, *, lazy: bool = False) -> CompiledGrammar:
        """Compiles the builtin grammar of any JSON value."""
        return self.compile_grammar(Grammar.builtin_json_grammar(), lazy=lazy)

    def clear_cache(self) -> None:
        """Drops the cached compiled grammars."""
        self._handle.clear_cache()
