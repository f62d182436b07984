"""What a serving engine's structured-output backend needs, without the engine.

:func:`compile_request` turns one request's structure (the request kinds vLLM sends: a JSON
Schema, any JSON object, a regex, an EBNF grammar, a choice list, a structural tag) into a
compiled grammar. An engine calls it twice with the same arguments: at admission, where an
error rejects the request alone (HTTP 400), and when the scheduler compiles the grammar,
so the two can never disagree. :class:`RequestGrammar` is the per-request matcher in the
contract of vLLM's ``StructuredOutputGrammar`` (accept, validate without advancing, roll
back, fill a bitmask row, terminated, reset).

Example:
    >>> import numpy as np, xg2_jax as xg
    >>> tok = xg.TokenizerInfo(["yes", "no", "</s>"], stop_token_ids=[2])
    >>> compiled = compile_request(xg.GrammarCompiler(tok), "choice", '["yes", "no"]')
    >>> g = RequestGrammar(compiled, stop_token_ids={2})
    >>> g.validate_tokens([1, 2, 0]), g.accept_tokens("req-0", [1, 2]), g.is_terminated()
    ([1, 2], True, True)
"""

from __future__ import annotations

import json
import logging
from typing import Any, Iterable, Optional, Sequence, Tuple

import numpy as np

from xg2_jax._src.compiler import CompiledGrammar, GrammarCompiler
from xg2_jax._src.errors import InvalidArgumentError
from xg2_jax._src.grammar import Grammar
from xg2_jax._src.matcher import GrammarMatcher

__all__ = ["REQUEST_KINDS", "RequestGrammar", "choice_grammar", "compile_request"]

logger = logging.getLogger(__name__)

REQUEST_KINDS = ("json", "json_object", "regex", "grammar", "choice", "structural_tag")


def _escape_literal(text: str) -> str:
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return "".join(escapes.get(ch) or (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 or ord(ch) == 0x7F
                                       else ch) for ch in text)


def choice_grammar(choices: Iterable[str]) -> str:
    """EBNF for exactly one of ``choices`` (vLLM's ``choice_as_grammar``: the same text).

    Example:
        >>> choice_grammar(["a", 'say "hi"'])
        'root ::= "a" | "say \\\\"hi\\\\""'
    """
    items = list(choices)
    if not items or not all(isinstance(c, str) for c in items):
        raise InvalidArgumentError("choice must be a non-empty list of strings")
    return "root ::= " + " | ".join(f'"{_escape_literal(c)}"' for c in items)


def _legacy_structural_tag(tag: dict) -> dict:
    """xgrammar's deprecated ``{"structures": [...], "triggers": [...]}`` form as the DSL."""
    try:
        tags = [{"type": "tag", "begin": s["begin"],
                 "content": {"type": "json_schema", "json_schema": s["schema"]},
                 "end": s["end"]} for s in tag["structures"]]
        triggers = list(tag["triggers"])
    except (KeyError, TypeError) as error:
        raise InvalidArgumentError(
            f"structural tag with 'structures' needs 'begin', 'schema' and 'end' in each "
            f"structure and a 'triggers' list: {error!r}") from error
    return {"type": "structural_tag",
            "format": {"type": "triggered_tags", "triggers": triggers, "tags": tags}}


def compile_request(compiler: GrammarCompiler, kind: str, spec: Any, *,
                    grammar_syntax: str = "ebnf", any_whitespace: bool = True,
                    separators: Optional[Tuple[str, str]] = None) -> CompiledGrammar:
    """Compiles one request's structure; the single code path of admission and compile.

    Args:
        compiler: the engine's compiler (its cache makes the second call of a request cheap).
        kind: one of :data:`REQUEST_KINDS`.
        spec: the structure: JSON Schema text or dict (``json``), ignored (``json_object``),
            pattern (``regex``), grammar text (``grammar``), JSON list text or list
            (``choice``), structural tag JSON text or dict (``structural_tag``, the DSL or
            xgrammar's deprecated ``structures``/``triggers`` form).
        grammar_syntax: ``"ebnf"`` or ``"lark"`` for ``grammar`` requests (Lark needs a
            ``Grammar.from_lark`` front end).
        any_whitespace: JSON kinds: allow any whitespace between tokens.
        separators: JSON kinds: item and key separators (with ``any_whitespace``, the least
            whitespace around them).

    Returns:
        The compiled grammar.

    Raises:
        XG2Error: a typed error (GrammarSyntaxError, UnsupportedSchemaError,
            StructuralTagError, LimitExceededError, InvalidArgumentError, ...) naming what is
            wrong; the compiler stays usable.

    Example:
        >>> import xg2_jax as xg
        >>> c = xg.GrammarCompiler(xg.TokenizerInfo(["a", "</s>"], stop_token_ids=[1]))
        >>> compile_request(c, "regex", "a+").num_states > 0
        True
    """
    json_options = dict(any_whitespace=any_whitespace, separators=separators)
    if kind == "json":
        schema = json.loads(spec) if isinstance(spec, str) else spec
        return compiler.compile_json_schema(schema, **json_options)
    if kind == "json_object":
        return compiler.compile_json_schema({"type": "object"}, **json_options)
    if kind == "regex":
        return compiler.compile_grammar(Grammar.from_regex(spec))
    if kind == "grammar":
        if grammar_syntax == "lark":
            from_lark = getattr(Grammar, "from_lark", None)
            if from_lark is None:
                raise InvalidArgumentError(
                    "Lark grammars are not supported by this xg2-jax build; send EBNF "
                    "(rules written 'name ::= ...')")
            return compiler.compile_grammar(from_lark(spec))
        if grammar_syntax != "ebnf":
            raise InvalidArgumentError(f"unknown grammar syntax {grammar_syntax!r}")
        return compiler.compile_grammar(spec)
    if kind == "choice":
        choices = json.loads(spec) if isinstance(spec, str) else spec
        return compiler.compile_grammar(choice_grammar(choices))
    if kind == "structural_tag":
        tag = json.loads(spec) if isinstance(spec, str) else spec
        if isinstance(tag, dict) and "structures" in tag:
            tag = _legacy_structural_tag(tag)
        return compiler.compile_structural_tag(tag)
    raise InvalidArgumentError(f"unknown request kind {kind!r}; expected one of {REQUEST_KINDS}")


class RequestGrammar:
    """One request's matcher, in vLLM's ``StructuredOutputGrammar`` contract.

    Args:
        compiled: from :func:`compile_request`.
        stop_token_ids: the request's stop tokens (EOS and user stop ids); they are masked
            until the grammar can end. Default: the tokenizer's.
    """

    def __init__(self, compiled: CompiledGrammar, *, stop_token_ids: Optional[Iterable[int]] = None):
        stops = sorted(set(stop_token_ids)) if stop_token_ids else None
        self.matcher = GrammarMatcher(compiled, override_stop_tokens=stops)
        self.num_processed_tokens = 0
        self._terminated = False

    def accept_tokens(self, request_id: str, tokens: Sequence[int]) -> bool:
        """Advances by ``tokens`` (one native call); False at the first rejected one (tokens
        after the grammar terminated are ignored)."""
        if self._terminated:
            return True
        accepted = self.matcher.accept_prefix(tokens)
        self.num_processed_tokens += accepted
        self._terminated = self.matcher.is_terminated()
        if accepted < len(tokens) and not self._terminated:
            logger.error("xg2_jax: request %s: token %s rejected by the grammar",
                         request_id, tokens[accepted])
            return False
        return True

    def validate_tokens(self, tokens: Sequence[int]) -> list[int]:
        """The longest prefix of ``tokens`` the grammar accepts (through a stop token at
        most), found in one native call; the state is left unchanged."""
        if self._terminated:
            return []
        return list(tokens[:self.matcher.count_valid_prefix(tokens)])

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last ``num_tokens`` accepted tokens."""
        self.matcher.rollback(num_tokens)
        self.num_processed_tokens -= num_tokens
        self._terminated = self.matcher.is_terminated()

    def fill_bitmask(self, bitmask: np.ndarray, index: int) -> None:
        """Writes the allowed next tokens into row ``index`` of a host int32 bitmask."""
        self.matcher.fill_next_token_bitmask(bitmask, index)

    def is_terminated(self) -> bool:
        return self._terminated

    def reset(self) -> None:
        self.matcher.reset()
        self.num_processed_tokens = 0
        self._terminated = False
