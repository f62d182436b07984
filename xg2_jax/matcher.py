"""Matchers and host bitmask helpers under xgrammar's module name (``xgrammar.matcher``)."""

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.bitmask import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_dtype,
    get_bitmask_shape,
    reset_token_bitmask,
)
from xg2_jax._src.matcher import GrammarMatcher

__all__ = ["BatchGrammarMatcher", "GrammarMatcher", "allocate_token_bitmask",
           "apply_token_bitmask_inplace", "bitmask_dtype", "get_bitmask_shape",
           "reset_token_bitmask"]
