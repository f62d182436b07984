"""
xg2-jax native core: grammars, tokenizer vocabularies, Earley matcher, token masks
"""

from collections.abc import Sequence

from numpy.typing import NDArray


class TokenizerInfo:
    """Decoded vocabulary, special/stop tokens and byte trie (native)."""

    def __init__(self, encoded_vocab: object, vocab_type: int, vocab_size: int, stop_token_ids: Sequence[int], special_token_ids: Sequence[int], add_prefix_space: bool) -> None:
        """
        encoded_vocab: sequence of str (or bytes); vocab_type: 0 raw, 1 byte_fallback, 2 byte_level; vocab_size 0 means len(encoded_vocab); empty stop_token_ids are detected from well-known names.
        """

    @property
    def vocab_type(self) -> int: ...

    @property
    def vocab_size(self) -> int: ...

    @property
    def num_tokens(self) -> int: ...

    @property
    def stop_token_ids(self) -> list[int]: ...

    @property
    def special_token_ids(self) -> list[int]: ...

    @property
    def add_prefix_space(self) -> bool: ...

    @property
    def fingerprint(self) -> int: ...

    def decoded_vocab(self) -> list:
        """
        The bytes of every token, indexed by id (special tokens: their text as UTF-8).
        """

    def token_bytes(self, id: int) -> bytes: ...

    def is_special(self, id: int) -> bool:
        """True for special, stop and padding ids (never text)."""

    def is_stop(self, id: int) -> bool: ...

    def trie_stats(self) -> dict: ...

class Grammar:
    @staticmethod
    def from_ebnf(text: str, root_rule_name: str = 'root') -> Grammar: ...

    @staticmethod
    def builtin_json_ebnf() -> str: ...

    def to_ebnf(self) -> str: ...

    @property
    def num_rules(self) -> int: ...

    @property
    def num_exprs(self) -> int: ...

class CompiledGrammar:
    @property
    def grammar(self) -> Grammar: ...

    @property
    def memory_size_bytes(self) -> int: ...

    @property
    def num_states(self) -> int: ...

    @property
    def num_scannable_states(self) -> int: ...

    def mask_cache_stats(self) -> dict: ...

    def precompute(self, num_threads: int = 1) -> None: ...

class GrammarCompiler:
    def __init__(self, tokenizer_info: TokenizerInfo, max_threads: int = 0, cache_enabled: bool = True) -> None: ...

    def compile(self, grammar: Grammar, precompute: bool = True) -> CompiledGrammar: ...

    def clear_cache(self) -> None: ...

    @property
    def cache_size(self) -> int: ...

    @property
    def max_threads(self) -> int: ...

class GrammarMatcher:
    def __init__(self, compiled_grammar: CompiledGrammar, stop_token_ids: Sequence[int] = [], terminate_without_stop_token: bool = False) -> None: ...

    def accept_token(self, token_id: int) -> bool: ...

    def accept_bytes(self, data: bytes) -> bool: ...

    def fill_next_token_bitmask(self, bitmask: NDArray, index: int = 0) -> bool: ...

    def is_terminated(self) -> bool: ...

    def is_completed(self) -> bool: ...

    def reset(self) -> None: ...

    def rollback(self, num_tokens: int = 1) -> None: ...

    def fork(self) -> GrammarMatcher: ...

    def find_jump_forward_bytes(self) -> bytes: ...

    def last_fill_stats(self) -> dict: ...

    @property
    def num_accepted_steps(self) -> int: ...

    @property
    def stop_token_ids(self) -> list[int]: ...

def grammar_from_regex(pattern: str, search_semantics: bool = False) -> Grammar:
    """
    A grammar whose root rule matches the strings of an ECMAScript regex (the whole string unless search_semantics, where unanchored ends match any text).
    """

def grammar_from_json_schema(schema_json: str, any_whitespace: bool = True, indent: int = -1, item_separator: str = '', key_separator: str = '', strict_mode: bool = True, max_whitespace_cnt: int = -1, any_order: bool = False, on_unsupported_warn: bool = False) -> tuple[Grammar, list[str]]:
    """
    Converts a JSON Schema (text) to a Grammar; returns (grammar, warnings). Empty separators select the defaults.
    """
