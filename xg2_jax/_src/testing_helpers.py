"""xgrammar's pure-Python test helpers (``xgrammar.testing``), written over xg2-jax's API.

They take numpy arrays or torch CPU tensors (torch is imported only when the caller passes
torch tensors). The EBNF converters print xg2-jax's own (normalized) grammar, so their text
differs from xgrammar's while the language is the same. The helpers of xgrammar's C++
testing internals that have no meaning over xg2-jax's grammar (grammar functors, rule FSMs,
range-regex generators) raise ``NotImplementedError`` when called; ``_get_allow_empty_rule_ids``
(the nullable rules of the compiled automaton) and ``_is_rule_fsm_accept_string`` (a rule's
language, by rooting the grammar at it) are real.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union

import numpy as np

from xg2_jax import _core
from xg2_jax._src.bitmask import HOST_BITMASK_DTYPE, host_bitmask
from xg2_jax._src.compiler import GrammarCompiler
from xg2_jax._src.errors import InvalidArgumentError
from xg2_jax._src.grammar import Grammar, _schema_to_text
from xg2_jax._src.matcher import GrammarMatcher
from xg2_jax._src.tokenizer import TokenizerInfo

__all__ = ["GrammarFunctor", "_ebnf_to_grammar_no_normalization", "_generate_float_regex",
           "_generate_range_regex", "_get_allow_empty_rule_ids", "_print_grammar_fsms", "_json_schema_to_ebnf", "_regex_to_ebnf",
           "_get_masked_tokens_from_bitmask", "_get_matcher_from_grammar",
           "_get_matcher_from_grammar_and_tokenizer_info", "_is_grammar_accept_string",
           "_is_single_token_bitmask", "_is_rule_fsm_accept_string", "_print_grammar_fsms",
           "_traverse_draft_tree", "GrammarFunctor", "bitmask_to_bool_mask",
           "bool_mask_to_bitmask"]


def _json_schema_to_ebnf(schema: Any, *, any_whitespace: bool = True,
                         indent: Optional[int] = None, separators=None,
                         max_whitespace_cnt: Optional[int] = None, strict_mode: bool = True,
                         json_format: str = "json", any_order: bool = False) -> str:
    """The EBNF text of a JSON Schema's grammar (xg2-jax's printing).

    Args:
        schema: JSON text, a dict, a bool or a pydantic model class.
        any_whitespace, indent, separators, strict_mode: JSON layout options (``"json"``
            only; the argument styles fix their own layout).
        max_whitespace_cnt: longest whitespace run (None: unbounded).
        json_format: ``"json"`` or one of the structural-tag argument styles (``"qwen_xml"``,
            ``"gemma"``, ``"cohere_xml"``, ...): the grammar of a ``json_schema`` format
            with that ``style``.
        any_order: object properties in any order.

    Returns:
        The grammar's EBNF text (it parses back with ``Grammar.from_ebnf``).

    Raises:
        InvalidArgumentError: an argument style with a JSON layout option other than its
            default (a structural tag's ``json_schema`` format has no such field).
        StructuralTagError: a schema the style cannot express.
    """
    if json_format == "json":
        return str(Grammar.from_json_schema(
            schema, any_whitespace=any_whitespace, indent=indent, separators=separators,
            max_whitespace_cnt=max_whitespace_cnt, strict_mode=strict_mode,
            any_order=any_order))
    layout = {"any_whitespace": (any_whitespace, True), "indent": (indent, None),
              "separators": (separators, None), "strict_mode": (strict_mode, True)}
    changed = [name for name, (value, default) in layout.items() if value != default]
    if changed:
        raise InvalidArgumentError(
            f"json_format {json_format!r}: {', '.join(changed)} cannot be set (the argument "
            "style fixes its layout and writes only the fixed object property names of its schema)")
    options = {"style": json_format, "any_order": any_order,
               "max_whitespace_cnt": max_whitespace_cnt}
    # The schema is embedded as JSON text, so a pydantic class or JSON string needs no
    # second parse here.
    fields = json.dumps(options)[1:-1]
    envelope = ('{"type": "structural_tag", "format": {"type": "json_schema", '
                f'{fields}, "json_schema": {_schema_to_text(schema)}}}}}')
    return str(Grammar.from_structural_tag(envelope))


def _regex_to_ebnf(regex: str, with_rule_name: bool = True) -> str:
    """The EBNF text of a regex's grammar; without ``with_rule_name``, only the root rule's
    body (the grammar must then be a single rule).

    Example:
        >>> _regex_to_ebnf("a+b", with_rule_name=False)
        '"a"+ "b"'
    """
    text = str(Grammar.from_regex(regex))
    if with_rule_name:
        return text
    lines = text.strip().splitlines()
    if len(lines) != 1:
        raise InvalidArgumentError("the regex's grammar has several rules; print it with "
                                   "with_rule_name=True")
    return lines[0].split("::=", 1)[1].strip()


def _ebnf_to_grammar_no_normalization(ebnf_string: str, root_rule_name: str = "root") -> Grammar:
    """The grammar of EBNF text (xg2-jax always normalizes; the language is the same)."""
    return Grammar.from_ebnf(ebnf_string, root_rule_name=root_rule_name)


def _get_matcher_from_grammar_and_tokenizer_info(
        grammar: Union[Grammar, str], tokenizer_info: Optional[TokenizerInfo] = None,
        **kwargs) -> GrammarMatcher:
    """A matcher of ``grammar`` (EBNF text or :class:`Grammar`) over ``tokenizer_info``
    (default: an empty vocabulary), compiled without the compiler cache; ``kwargs`` go to
    :class:`GrammarMatcher`."""
    if tokenizer_info is None:
        tokenizer_info = TokenizerInfo([])
    compiled = GrammarCompiler(tokenizer_info, cache_enabled=False).compile_grammar(grammar)
    return GrammarMatcher(compiled, **kwargs)


def _get_matcher_from_grammar(grammar: Union[Grammar, str], **kwargs) -> GrammarMatcher:
    """A string-only matcher (empty vocabulary) that terminates without a stop token."""
    return _get_matcher_from_grammar_and_tokenizer_info(
        grammar, None, terminate_without_stop_token=True, **kwargs)


def _is_grammar_accept_string(grammar: Union[Grammar, str], input_str: Union[str, bytes], *,
                              debug_print: bool = False, print_time: bool = False,
                              require_termination: bool = True) -> bool:
    """Whether ``grammar`` accepts ``input_str`` in full (``require_termination``) or as a
    prefix.

    Example:
        >>> _is_grammar_accept_string('root ::= "a"+', "aa")
        True
    """
    matcher = _get_matcher_from_grammar(grammar)
    if not matcher.accept_string(input_str):
        return False
    return matcher.is_terminated() if require_termination else True


def _is_rule_fsm_accept_string(grammar: Grammar, rule_id: int, input_str: str) -> bool:
    """Whether rule ``rule_id`` of ``grammar`` accepts all of ``input_str``.

    xg2-jax builds a rule's automaton when the grammar compiles, so the rule is matched by a
    matcher of the same grammar rooted at that rule.

    Args:
        grammar: the grammar.
        rule_id: the rule's index in the printed grammar (0 is the root rule).
        input_str: the text to match.

    Returns:
        True when the rule's language holds ``input_str``.

    Raises:
        InvalidArgumentError: ``rule_id`` is not a rule of ``grammar``.
    """
    text = str(grammar)
    # `name ::=` or `name[attributes] ::=`
    names = [line.split("::=", 1)[0].split("[", 1)[0].strip() for line in text.splitlines()
             if "::=" in line]
    if not 0 <= rule_id < len(names):
        raise InvalidArgumentError(f"rule id {rule_id} is out of range: the grammar has "
                                   f"{len(names)} rules")
    rooted = Grammar.from_ebnf(text, root_rule_name=names[rule_id])
    return _is_grammar_accept_string(rooted, input_str)


def _bitmask_row(bitmask, vocab_size: int, index: int) -> np.ndarray:
    view = host_bitmask(bitmask)
    if view.dtype != HOST_BITMASK_DTYPE:
        raise InvalidArgumentError(f"bitmask dtype must be int32; got {view.dtype}")
    rows = view.reshape(1, -1) if view.ndim == 1 else view
    if not 0 <= index < rows.shape[0]:
        raise InvalidArgumentError(f"index {index} is out of range for {rows.shape[0]} rows")
    if vocab_size > 32 * rows.shape[1]:
        raise InvalidArgumentError(f"vocab_size {vocab_size} exceeds the bitmask's "
                                   f"{32 * rows.shape[1]} bits")
    bits = np.unpackbits(np.ascontiguousarray(rows[index]).view(np.uint8), bitorder="little")
    return bits[:vocab_size].astype(bool)


def _get_masked_tokens_from_bitmask(bitmask, vocab_size: int, index: int = 0) -> list[int]:
    """The ids of the tokens row ``index`` of ``bitmask`` rejects.

    Example:
        >>> _get_masked_tokens_from_bitmask(np.array([[5]], dtype=np.int32), 4)
        [1, 3]
    """
    return np.flatnonzero(~_bitmask_row(bitmask, vocab_size, index)).tolist()


def _is_single_token_bitmask(bitmask, vocab_size: int, index: int = 0) -> tuple[bool, int]:
    """``(True, id)`` if row ``index`` allows exactly one token, else ``(False, -1)``."""
    allowed = np.flatnonzero(_bitmask_row(bitmask, vocab_size, index))
    return (True, int(allowed[0])) if allowed.size == 1 else (False, -1)


def _is_torch(value) -> bool:
    return type(value).__module__.startswith("torch")


def bool_mask_to_bitmask(bool_mask):
    """Packs a boolean mask ``(batch, V)`` (True: allowed) into an int32 bitmask; the bits
    past ``V`` are set. Returns the kind it was given (numpy, or torch).

    Example:
        >>> bool_mask_to_bitmask(np.array([[True, False, True]])).tolist()
        [[-3]]
    """
    mask = np.asarray(bool_mask.cpu() if _is_torch(bool_mask) else bool_mask, dtype=bool)
    if mask.ndim != 2:
        raise InvalidArgumentError(f"bool_mask must have shape (batch, V); got {mask.shape}")
    pad = (-mask.shape[1]) % 32
    padded = np.pad(mask, ((0, 0), (0, pad)), constant_values=True)
    packed = np.packbits(padded, axis=1, bitorder="little").view(np.int32)
    if _is_torch(bool_mask):
        import torch

        return torch.from_numpy(packed.copy())
    return packed


def bitmask_to_bool_mask(bit_mask, vocab_size: Optional[int] = None):
    """Unpacks an int32 bitmask ``(batch, W)`` to booleans ``(batch, vocab_size or 32 W)``.
    Returns the kind it was given (numpy, or torch)."""
    view = host_bitmask(bit_mask) if not _is_torch(bit_mask) else np.asarray(bit_mask.cpu())
    if view.dtype != HOST_BITMASK_DTYPE or view.ndim != 2:
        raise InvalidArgumentError("bit_mask must be an int32 array of shape (batch, W)")
    width = 32 * view.shape[1] if vocab_size is None else int(vocab_size)
    if width > 32 * view.shape[1]:
        raise InvalidArgumentError(f"vocab_size {width} exceeds the bitmask's "
                                   f"{32 * view.shape[1]} bits")
    bits = np.unpackbits(np.ascontiguousarray(view).view(np.uint8), axis=1, bitorder="little")
    out = bits[:, :width].astype(bool)
    if _is_torch(bit_mask):
        import torch

        return torch.from_numpy(out)
    return out


def _traverse_draft_tree(retrieve_next_token, retrieve_next_sibling, draft_tokens,
                         matcher: GrammarMatcher, allocate_token_bitmask,
                         time_threshold: float = -1.0) -> bool:
    """xgrammar's older argument order of :meth:`GrammarMatcher.traverse_draft_tree`."""
    return matcher.traverse_draft_tree(retrieve_next_token, retrieve_next_sibling, draft_tokens,
                                       allocate_token_bitmask, time_threshold)


def _get_allow_empty_rule_ids(compiled_grammar) -> list[int]:
    """The ids of the rules of ``compiled_grammar.grammar`` that match the empty string.

    Ids number the rules as ``str(compiled_grammar.grammar)`` prints them (xg2-jax's
    normalized grammar, where small rules may be inlined), so they can differ from
    xgrammar's numbering of the same text.

    Args:
        compiled_grammar: a :class:`CompiledGrammar`.

    Returns:
        The nullable rule ids, ascending; the root's (0) is in it exactly when the language
        has the empty string.

    Raises:
        InvalidArgumentError: ``compiled_grammar`` is not a compiled grammar.

    Example:
        >>> compiler = GrammarCompiler(TokenizerInfo([]))
        >>> _get_allow_empty_rule_ids(compiler.compile_grammar('root ::= "a"*'))
        [0]
    """
    handle = getattr(compiled_grammar, "_handle", None)
    if not isinstance(handle, _core.CompiledGrammar):
        raise InvalidArgumentError("compiled_grammar must be a CompiledGrammar; got "
                                   f"{type(compiled_grammar).__name__}")
    return list(handle.grammar.nullable_rule_ids)


def _no_counterpart(name: str, reason: str):
    """A stand-in for one of xgrammar's C++ testing internals: calling it says why it is
    missing (``NotImplementedError``), so code importing the name still loads."""

    def unavailable(*args, **kwargs):
        raise NotImplementedError(f"xgrammar.testing.{name} has no counterpart in xg2-jax: "
                                  f"{reason}")

    unavailable.__name__ = name.rsplit(".", 1)[-1]
    unavailable.__doc__ = f"Not available in xg2-jax ({reason}); raises NotImplementedError."
    return unavailable


_NORMALIZED = ("an xg2-jax Grammar is normalized (rules inlined, deduplicated, dead rules "
               "dropped) when it is built, and its passes are not exposed one by one")


class GrammarFunctor:
    """xgrammar's grammar passes, one by one (its C++ testing bindings).

    xg2-jax runs its normalization as one step of building a :class:`Grammar`, so no pass
    can be applied on its own here: each method raises ``NotImplementedError``.
    """

    structure_normalizer = staticmethod(_no_counterpart("GrammarFunctor.structure_normalizer", _NORMALIZED))
    rule_inliner = staticmethod(_no_counterpart("GrammarFunctor.rule_inliner", _NORMALIZED))
    byte_string_fuser = staticmethod(_no_counterpart("GrammarFunctor.byte_string_fuser", _NORMALIZED))
    dead_code_eliminator = staticmethod(_no_counterpart("GrammarFunctor.dead_code_eliminator",
                                                        _NORMALIZED))
    lookahead_assertion_analyzer = staticmethod(_no_counterpart(
        "GrammarFunctor.lookahead_assertion_analyzer", _NORMALIZED))
    grammar_optimizer = staticmethod(_no_counterpart("GrammarFunctor.grammar_optimizer", _NORMALIZED))
    fsm_builder = staticmethod(_no_counterpart("GrammarFunctor.fsm_builder", _NORMALIZED))
    repetition_normalizer = staticmethod(_no_counterpart("GrammarFunctor.repetition_normalizer",
                                                         _NORMALIZED))


_generate_range_regex = _no_counterpart(
    "_generate_range_regex", "xg2-jax bounds JSON Schema integers with number automata, not "
    "with regex text, so there is no range regex to print")
_generate_float_regex = _no_counterpart(
    "_generate_float_regex", "xg2-jax bounds JSON Schema numbers with number automata, not "
    "with regex text, so there is no float-range regex to print")
_print_grammar_fsms = _no_counterpart(
    "_print_grammar_fsms", "xg2-jax compiles a grammar into one automaton over all rules, "
    "not per-rule FSMs in xgrammar's printed form")
