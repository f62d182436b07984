"""xg2-jax: constrained decoding for JAX.

A C++ Earley engine computes, at every decoding step, the packed bitmask of tokens that keep
the output inside a grammar; JAX applies it to the logits.

Example:
    >>> import xg2_jax as xg
    >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    >>> matcher = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+'))
    >>> matcher.accept_string("aa"), matcher.is_completed()
    (True, True)
"""

from xg2_jax._src.batch import BatchGrammarMatcher, traverse_draft_tree
from xg2_jax._src.compiler import CompiledGrammar, GrammarCompiler, PrecomputeHandle
from xg2_jax._src.errors import (
    GrammarError,
    GrammarSyntaxError,
    InvalidArgumentError,
    LimitExceededError,
    MatcherStateError,
    TokenizerError,
    XG2Error,
)
from xg2_jax._src.grammar import Grammar
from xg2_jax._src.matcher import (
    GrammarMatcher,
    allocate_token_bitmask,
    bitmask_to_bool,
    get_bitmask_shape,
)
from xg2_jax._src.tokenizer import TokenizerInfo, VocabType

__version__ = "0.1.0"

__all__ = [
    "BatchGrammarMatcher",
    "CompiledGrammar",
    "Grammar",
    "GrammarCompiler",
    "PrecomputeHandle",
    "GrammarError",
    "GrammarMatcher",
    "GrammarSyntaxError",
    "InvalidArgumentError",
    "LimitExceededError",
    "MatcherStateError",
    "TokenizerError",
    "TokenizerInfo",
    "VocabType",
    "XG2Error",
    "allocate_token_bitmask",
    "bitmask_to_bool",
    "get_bitmask_shape",
    "traverse_draft_tree",
]
