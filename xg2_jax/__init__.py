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

from typing import TYPE_CHECKING

try:
    from xg2_jax import _core  # noqa: F401 - the native module; imported first to check it
except ImportError as _error:  # pragma: no cover - exercised by test_packaging in a subprocess
    import os as _os

    _here = _os.path.dirname(_os.path.abspath(__file__))
    raise ImportError(
        f"xg2_jax was imported from {_here}, which has no built native module (_core). "
        "This happens when Python runs from the repository root: the source folder xg2_jax/ "
        "shadows the installed package. Run from another folder, or install the package "
        "editable so the source tree carries the build: pip install --no-build-isolation "
        "-e . (see README.md, 'Developing')") from _error

from xg2_jax import builtin_structural_tag
from xg2_jax._src.batch import BatchGrammarMatcher, traverse_draft_tree
from xg2_jax._src.batch_job import RequestLineError
from xg2_jax._src.bitmask import (
    BITMASK_BACKEND,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    bitmask_dtype,
    bitmask_to_bool,
    get_bitmask_shape,
    reset_token_bitmask,
)
from xg2_jax._src.chat_template import ChatTemplate, ChatTemplateError, ModelTokenizer
from xg2_jax._src.compiler import (
    CompiledGrammar,
    GrammarCompiler,
    PrecomputeHandle,
    clear_cross_grammar_cache,
    cross_grammar_cache_stats,
    set_cross_grammar_cache_limit,
    set_limits,
)
from xg2_jax._src.errors import (
    CacheOverflowError,
    DeserializeFormatError,
    DeserializeVersionError,
    GrammarError,
    GrammarSyntaxError,
    InvalidArgumentError,
    InvalidJSONError,
    InvalidStructuralTagError,
    LimitExceededError,
    MatcherStateError,
    MissingTensorError,
    ModelError,
    ModelFileError,
    StructuralTagError,
    TensorShapeError,
    TokenizerError,
    UnsupportedModelError,
    UnsupportedSchemaError,
    UnsupportedSchemaWarning,
    UnusedTensorWarning,
    XG2Error,
)
from xg2_jax._src.grammar import Grammar
from xg2_jax._src.matcher import GrammarMatcher
from xg2_jax._src.model_formats import get_model_structural_tag, register_model_structural_tag
from xg2_jax._src.output_parser import OutputParseError, parse_structured_output
from xg2_jax._src.structural_tag import (
    AnyTextFormat,
    AnyTokensFormat,
    ConstStringFormat,
    DispatchFormat,
    ExcludeTokenFormat,
    GrammarFormat,
    JSONSchemaFormat,
    OptionalFormat,
    OrFormat,
    PlusFormat,
    RegexFormat,
    RepeatFormat,
    SequenceFormat,
    StarFormat,
    StructuralTag,
    TagFormat,
    TagsWithSeparatorFormat,
    TokenFormat,
    TokenTriggeredTagsFormat,
    TriggeredTagsFormat,
)
from xg2_jax._src.structural_tag_legacy import StructuralTagItem
from xg2_jax._src.tokenizer import TokenizerInfo, VocabType, greedy_tokenize
from xg2_jax._src.tool_params import normalize_tool_choice
from xg2_jax.config import (
    get_max_recursion_depth,
    get_serialization_version,
    max_recursion_depth,
    set_max_recursion_depth,
)

__version__ = "0.1.0"

if TYPE_CHECKING:  # the lazily loaded JAX side, spelled out for type checkers and IDEs
    from xg2_jax._src.continuous import BatchGenerator, Request, RequestOutput, generate_requests
    from xg2_jax._src.decode import constrained_generate
    from xg2_jax._src.host_loop import GenerateResult, HostMaskBuffers, put_masks
    from xg2_jax._src.ingraph import (
        InGraphMatchers,
        InGraphStepOutput,
        ingraph_generate,
        ingraph_matcher_step,
    )
    from xg2_jax._src.masking import (
        apply_token_bitmask,
        bitmask_has_allowed,
        masked_sample,
        unpack_bitmask,
    )
    from xg2_jax._src.sampling import SamplingConfig
    from xg2_jax._src.sharding import logits_sharding, make_global_masks, mask_sharding
    from xg2_jax._src.speculative import (
        DraftAcceptance,
        SpeculativeStepResult,
        accept_draft_tree,
        draft_tree_masks,
        speculative_step,
    )
    from xg2_jax._src.verify import (
        ChainVerifyResult,
        VerifyMasks,
        chain_verify_masks,
        tree_verify_masks,
        verify_chain,
    )

# The JAX side is imported on first use, so `import xg2_jax` stays fast (no jax import).
_JAX_EXPORTS = {
    "BatchGenerator": "continuous",
    "Request": "continuous",
    "RequestOutput": "continuous",
    "generate_requests": "continuous",
    "apply_token_bitmask": "masking",
    "bitmask_has_allowed": "masking",
    "masked_sample": "masking",
    "unpack_bitmask": "masking",
    "GenerateResult": "host_loop",
    "HostMaskBuffers": "host_loop",
    "SamplingConfig": "sampling",
    "constrained_generate": "decode",
    "put_masks": "host_loop",
    "InGraphMatchers": "ingraph",
    "InGraphStepOutput": "ingraph",
    "ingraph_generate": "ingraph",
    "ingraph_matcher_step": "ingraph",
    "DraftAcceptance": "speculative",
    "SpeculativeStepResult": "speculative",
    "accept_draft_tree": "speculative",
    "draft_tree_masks": "speculative",
    "speculative_step": "speculative",
    "ChainVerifyResult": "verify",
    "VerifyMasks": "verify",
    "chain_verify_masks": "verify",
    "tree_verify_masks": "verify",
    "verify_chain": "verify",
    "logits_sharding": "sharding",
    "make_global_masks": "sharding",
    "mask_sharding": "sharding",
}


# Submodules under xgrammar's names, loaded on first attribute access (xgr.testing, ...).
_SUBMODULES = {"builtin_structural_tag", "compiler", "config", "contrib", "exception", "grammar",
               "matcher", "structural_tag", "testing", "tokenizer_info"}


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"xg2_jax.{name}")
    if name == "hf":  # xgrammar exports its transformers processor module as xgr.hf
        return importlib.import_module("xg2_jax.contrib.hf")
    module = _JAX_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'xg2_jax' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"xg2_jax._src.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_JAX_EXPORTS))


__all__ = [
    "BatchGrammarMatcher",
    "CompiledGrammar",
    "Grammar",
    "GrammarCompiler",
    "PrecomputeHandle",
    "GrammarError",
    "StructuralTagError",
    "GrammarMatcher",
    "GrammarSyntaxError",
    "InvalidArgumentError",
    "LimitExceededError",
    "MatcherStateError",
    "MissingTensorError",
    "ModelError",
    "ModelFileError",
    "TensorShapeError",
    "TokenizerError",
    "UnsupportedModelError",
    "CacheOverflowError",
    "UnusedTensorWarning",
    "UnsupportedSchemaError",
    "UnsupportedSchemaWarning",
    "TokenizerInfo",
    "greedy_tokenize",
    "VocabType",
    "XG2Error",
    "allocate_token_bitmask",
    "BITMASK_BACKEND",
    "clear_cross_grammar_cache",
    "cross_grammar_cache_stats",
    "set_cross_grammar_cache_limit",
    "set_limits",
    "bitmask_to_bool",
    "get_bitmask_shape",
    "traverse_draft_tree",
    # structural tags (builders) and built-in model formats
    "AnyTextFormat",
    "AnyTokensFormat",
    "ConstStringFormat",
    "DispatchFormat",
    "ExcludeTokenFormat",
    "GrammarFormat",
    "JSONSchemaFormat",
    "OptionalFormat",
    "OrFormat",
    "PlusFormat",
    "RegexFormat",
    "RepeatFormat",
    "SequenceFormat",
    "StarFormat",
    "StructuralTag",
    "StructuralTagItem",
    "TagFormat",
    "TagsWithSeparatorFormat",
    "TokenFormat",
    "TokenTriggeredTagsFormat",
    "TriggeredTagsFormat",
    "builtin_structural_tag",
    "get_model_structural_tag",
    "normalize_tool_choice",
    "register_model_structural_tag",
    # prompts and parsed outputs of real models
    "ChatTemplate",
    "ChatTemplateError",
    "ModelTokenizer",
    "OutputParseError",
    "RequestLineError",
    "parse_structured_output",
    # xgrammar's names (docs/XGRAMMAR_COMPAT.md)
    "DeserializeFormatError",
    "DeserializeVersionError",
    "InvalidJSONError",
    "InvalidStructuralTagError",
    "apply_token_bitmask_inplace",
    "bitmask_dtype",
    "get_max_recursion_depth",
    "get_serialization_version",
    "max_recursion_depth",
    "reset_token_bitmask",
    "set_max_recursion_depth",
    *sorted(_JAX_EXPORTS),
]
