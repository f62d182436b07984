"""GrammarMatcher: one grammar's parser state over a tokenizer's vocabulary."""

from __future__ import annotations

import operator
import sys
import warnings
from typing import Optional, Sequence, Union

import numpy as np

from xg2_jax import _core
from xg2_jax._src.bitmask import host_bitmask
from xg2_jax._src.compiler import CompiledGrammar
from xg2_jax._src.draft_tree import walk_draft_tree
from xg2_jax._src.errors import InvalidArgumentError, MatcherStateError

_INT32_MAX = 2**31 - 1


def warn_temperature_conflict(value: Optional[float]) -> None:
    """Writes xgrammar's warning line to stderr, as its native logger does (once per matcher).
    Not a Python warning: under ``-W error`` that would abort the decoding step, and this is
    a note on an ambiguous grammar, not an error."""
    print(f"[xg2_jax] WARNING: Multiple active grammar paths specify different temperatures. "
          f"Using the maximum temperature {value:.6g}.", file=sys.stderr)


class GrammarMatcher:
    """The per-request state: which tokens may come next, and which were accepted.

    Args:
        compiled_grammar: from :class:`GrammarCompiler`.
        override_stop_tokens: stop token ids to use instead of the tokenizer's.
        terminate_without_stop_token: terminate as soon as the output is complete and
            nothing more can follow, without waiting for a stop token.
        max_rollback_tokens: accepted for xgrammar compatibility and deprecated, as there:
            rollback is always unlimited (-1); another value warns.
        default_temperature: the sampling temperature :attr:`temperature` reports where the
            parse is inside no rule with a ``temperature=`` attribute (None: none there).
            Must be finite and >= 0.

    Example:
        >>> from xg2_jax import TokenizerInfo, GrammarCompiler, allocate_token_bitmask, bitmask_to_bool
        >>> tok = TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> m = GrammarMatcher(GrammarCompiler(tok).compile_grammar('root ::= "a" "b"'))
        >>> mask = allocate_token_bitmask(1, 3)
        >>> _ = m.fill_next_token_bitmask(mask)
        >>> bitmask_to_bool(mask[0], 3).tolist()
        [True, False, False]
        >>> m.accept_token(0), m.accept_token(1), m.accept_token(2), m.is_terminated()
        (True, True, True, True)
    """

    def __init__(self, compiled_grammar: CompiledGrammar, *,
                 override_stop_tokens: Optional[Union[int, Sequence[int]]] = None,
                 terminate_without_stop_token: bool = False, max_rollback_tokens: int = -1,
                 default_temperature: Optional[float] = None,
                 _handle: "Optional[_core.GrammarMatcher]" = None):
        if not isinstance(compiled_grammar, CompiledGrammar):
            raise InvalidArgumentError(
                f"compiled_grammar must be a CompiledGrammar (compile the grammar first), not "
                f"{type(compiled_grammar).__name__}")
        if max_rollback_tokens != -1:
            warnings.warn("max_rollback_tokens is deprecated: rollback is always unlimited",
                          DeprecationWarning, stacklevel=2)
        if default_temperature is not None:
            if isinstance(default_temperature, bool) or not isinstance(
                    default_temperature, (int, float, np.integer, np.floating)):
                raise InvalidArgumentError(f"default_temperature must be a number, not "
                                           f"{type(default_temperature).__name__}")
            default_temperature = float(default_temperature)
        self._compiled = compiled_grammar
        if _handle is not None:
            self._handle = _handle
            return
        if override_stop_tokens is None:
            stops: list[int] = []
        elif isinstance(override_stop_tokens, int):
            stops = [override_stop_tokens]
        else:
            stops = [operator.index(t) for t in override_stop_tokens]  # no float truncated
        vocab_size = compiled_grammar.tokenizer_info.vocab_size
        for stop in stops:
            if not 0 <= stop < vocab_size:
                raise InvalidArgumentError(f"stop token id {stop} is outside the vocabulary "
                                           f"[0, {vocab_size})")
        self._handle = _core.GrammarMatcher(compiled_grammar._handle, stops,
                                            terminate_without_stop_token, default_temperature)

    @property
    def temperature(self) -> Optional[float]:
        """The sampling temperature the grammar asks for at this point (xgrammar's rule
        attribute ``temperature=``): that of the innermost rule with one on the current parse;
        where paths of an ambiguous parse disagree, the largest (warned once per matcher);
        else ``default_temperature`` (None if not given).

        Example:
            >>> from xg2_jax import TokenizerInfo, GrammarCompiler
            >>> tok = TokenizerInfo(["a", "x", "z"])
            >>> g = 'root ::= "a" value "z"   value[temperature=0.6] ::= "x"+'
            >>> m = GrammarMatcher(GrammarCompiler(tok).compile_grammar(g), default_temperature=0.1)
            >>> round(m.temperature, 3), m.accept_token(0), round(m.temperature, 3)
            (0.1, True, 0.6)
        """
        value, conflict = self._handle.temperature()
        if conflict:
            warn_temperature_conflict(value)
        return value

    @property
    def compiled_grammar(self) -> CompiledGrammar:
        return self._compiled

    @property
    def stop_token_ids(self) -> list[int]:
        return list(self._handle.stop_token_ids)

    @property
    def max_rollback_tokens(self) -> int:
        """Always -1: rollback is unlimited (xgrammar's deprecated property)."""
        return -1

    def accept_token(self, token_id: int, *, debug_print: bool = False) -> bool:
        """Advances by one token.

        Args:
            token_id: the token.
            debug_print: accepted for xgrammar compatibility; ignored.

        Returns:
            True if accepted; False (state unchanged) if the token breaks the structure.
            After termination only a stop token is accepted, as a no-op (the terminated
            mask allows just the stop tokens); other tokens return False, as in xgrammar.

        Raises:
            InvalidArgumentError: ``token_id`` is outside the vocabulary.
        """
        token_id = operator.index(token_id)  # an integer (a float is a TypeError, not cut)
        if not 0 <= token_id <= _INT32_MAX:
            raise InvalidArgumentError(f"token id {token_id} is outside the vocabulary "
                                       f"[0, {self._compiled.tokenizer_info.vocab_size})")
        return self._handle.accept_token(token_id)

    def accept_prefix(self, token_ids: Sequence[int]) -> int:
        """Advances by the longest prefix of ``token_ids`` the grammar accepts, through a
        stop token at most, in one native call (a speculative step's drafts, say).

        Args:
            token_ids: the tokens, in order (a list, tuple or 1-D integer array).

        Returns:
            How many were accepted (0 if the matcher already terminated); each is one
            rollback step.

        Raises:
            InvalidArgumentError: an id is outside the vocabulary; nothing is accepted.
        """
        return self._call_with_ids(self._handle.accept_tokens, token_ids)

    def count_valid_prefix(self, token_ids: Sequence[int]) -> int:
        """How many tokens :meth:`accept_prefix` would accept; the state is unchanged.

        Args:
            token_ids: the tokens, in order.

        Returns:
            The length of the accepted prefix (draft validation for speculative decoding).

        Raises:
            InvalidArgumentError: an id is outside the vocabulary.
        """
        return self._call_with_ids(self._handle.count_valid_tokens, token_ids)

    def _call_with_ids(self, call, token_ids: Sequence[int]) -> int:
        try:
            return call(token_ids)
        except TypeError:
            # nanobind refuses ids that do not fit int32 (and non-integers) with a bare
            # TypeError: name the offending id instead.
            ids = [operator.index(t) for t in token_ids]
            for position, token_id in enumerate(ids):
                if not 0 <= token_id <= _INT32_MAX:
                    raise InvalidArgumentError(
                        f"token id {token_id} at position {position} is outside the "
                        f"vocabulary [0, {self._compiled.tokenizer_info.vocab_size})") from None
            return call(ids)

    def accept_string(self, text: Union[str, bytes], *, debug_print: bool = False) -> bool:
        """Advances by a string (one rollback step). Returns False, unchanged, if invalid.

        ``debug_print`` is accepted for xgrammar compatibility and ignored."""
        if isinstance(text, str):
            data = text.encode("utf-8")
        elif isinstance(text, (bytes, bytearray, memoryview)):
            data = bytes(text)
        else:
            raise TypeError(f"accept_string takes str or bytes, not {type(text).__name__}")
        return self._handle.accept_bytes(data)

    def fill_next_token_bitmask(self, bitmask, index: int = 0, *,
                                debug_print: bool = False) -> bool:
        """Writes the allowed next tokens into row ``index`` of ``bitmask``.

        Args:
            bitmask: int32 host buffer ``(batch, ceil(vocab_size / 32))`` (or one row): a
                numpy array, or any CPU buffer with DLPack or the buffer protocol (a torch
                CPU tensor); rows must be contiguous.
            index: the row to write.
            debug_print: accepted for xgrammar compatibility; ignored.

        Returns:
            True if some token is disallowed (the mask must be applied).

        Raises:
            MatcherStateError: a stop token was accepted (nothing can follow; as in xgrammar).
                ``reset()`` or ``rollback()`` makes the matcher fill again.
        """
        return self._handle.fill_next_token_bitmask(host_bitmask(bitmask), int(index))

    def is_terminated(self) -> bool:
        """True after a stop token was accepted; with ``terminate_without_stop_token``, as
        soon as the output is complete (as xgrammar; more tokens are still accepted while
        the grammar continues, until nothing can follow, and no stop token is ever allowed
        or accepted)."""
        return self._handle.is_terminated()

    def has_ended(self) -> bool:
        """True when nothing more is accepted: a stop token was accepted, or, with
        ``terminate_without_stop_token``, the output is complete and nothing can follow.
        Every token then returns False; after a stop token a fill raises
        ``MatcherStateError`` (as xgrammar), and with ``terminate_without_stop_token`` the
        mask allows nothing.
        """
        return self._handle.has_ended()

    def is_completed(self) -> bool:
        """True if the output so far is complete (a stop token would be accepted)."""
        return self._handle.is_completed()

    def reset(self) -> None:
        """Returns to the initial state."""
        self._handle.reset()

    def rollback(self, num_tokens: int = 1) -> None:
        """Undoes the last ``num_tokens`` accepted tokens (no fixed limit).

        Raises:
            MatcherStateError: more tokens than were accepted; the matcher is unchanged.
        """
        num_tokens = int(num_tokens)
        if num_tokens > _INT32_MAX:
            raise MatcherStateError(f"cannot roll back {num_tokens} steps: only "
                                    f"{self.num_accepted_tokens} accepted")
        if num_tokens < 0:
            raise InvalidArgumentError("rollback count must be >= 0")
        self._handle.rollback(num_tokens)

    def fork(self) -> "GrammarMatcher":
        """Returns an independent copy of this matcher in the same state."""
        return GrammarMatcher(self._compiled, _handle=self._handle.fork())

    def find_jump_forward_string(self) -> str:
        """The longest string that every valid continuation starts with ('' if none).

        Inside a multi-byte character (after a token that ended mid-character) no ``str``
        can express the forced bytes, so this returns ''; use
        :meth:`find_jump_forward_bytes` for the exact bytes.
        """
        data = self._handle.find_jump_forward_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return ""

    def find_jump_forward_bytes(self) -> bytes:
        """The forced continuation as bytes (may complete a partial character)."""
        return self._handle.find_jump_forward_bytes()

    def find_jump_forward_tokens(self) -> list[int]:
        """The forced continuation as token ids, for jump-forward decoding.

        Greedy longest matches of normal (not special, not stop) tokens over the forced
        bytes; the last one is left out when a longer normal token extends it (the model may
        still write that one). Bytes no token covers end the list. Accept each returned id
        with :meth:`accept_token`; the ids may differ from the model tokenizer's encoding.

        Returns:
            The ids (empty when nothing is forced, or the input can end or has terminated).
            The matcher is unchanged.

        Example:
            >>> from xg2_jax import TokenizerInfo, GrammarCompiler
            >>> tok = TokenizerInfo(["ab", "c", "x", "y"])
            >>> m = GrammarMatcher(GrammarCompiler(tok).compile_grammar('root ::= "abc" [xy]'))
            >>> m.find_jump_forward_tokens()
            [0, 1]
        """
        return list(self._handle.find_jump_forward_tokens())

    def get_captures(self, deduplicate: bool = True) -> list[tuple[str, bytes]]:
        """The spans matched by captured rules (``name[capture]`` / ``name[capture="n"]``
        in EBNF and Lark), as xgrammar's ``get_captures``.

        Every completion of a captured rule seen while accepting (tokens or strings) is an
        event; the parse explores its hypotheses side by side, so one occurrence of a rule
        may complete at several ends (``/[0-9]+/`` after every digit). Fills record nothing;
        :meth:`rollback` and :meth:`reset` forget the events of the steps they undo.

        Args:
            deduplicate: keep only the last (longest) completion of each occurrence (a rule
                at a start position); False returns every event.

        Returns:
            ``(name, bytes)`` pairs in completion order (an inner rule before the rule that
            contains it).

        Example:
            >>> from xg2_jax import Grammar, GrammarCompiler, TokenizerInfo
            >>> g = Grammar.from_lark('start: "a" v "b"\\nv[capture]: /[0-9]+/')
            >>> m = GrammarMatcher(GrammarCompiler(TokenizerInfo([])).compile_grammar(g))
            >>> m.accept_string("a12b")
            True
            >>> m.get_captures(), m.get_captures(deduplicate=False)
            ([('v', b'12')], [('v', b'1'), ('v', b'12')])
        """
        return [(name, span) for name, span in self._handle.get_captures(bool(deduplicate))]

    def traverse_draft_tree(self, retrieve_next_token, retrieve_next_sibling, draft_tokens,
                            token_bitmask, time_threshold: float = -1.0,
                            temperatures=None) -> bool:
        """xgrammar's spelling of :func:`xg2_jax.traverse_draft_tree` (first-child /
        next-sibling links): one mask row per draft-tree node; the matcher is unchanged.

        Rows of rejected nodes are all zero; :func:`xg2_jax.traverse_draft_tree` also
        returns which nodes are valid.

        Args:
            retrieve_next_token, retrieve_next_sibling, draft_tokens: integer arrays ``(N,)``.
            token_bitmask: int32 host buffer ``(rows >= N, ceil(vocab_size / 32))``.
            time_threshold: seconds the walk may take (checked after each accepted draft
                token, as xgrammar); once exceeded it stops and the rows it did not reach
                stay zero (the root's is always filled). ``<= 0``: no limit.
            temperatures: optional float32 host buffer ``(N,)``: filled with each node's
                :attr:`temperature` after its token, -1 where there is none and for nodes
                whose row is zero.

        Returns:
            True if the traversal completed, False if it stopped at ``time_threshold``.
        """
        _, completed = walk_draft_tree(
            self._handle, draft_tokens, token_bitmask, first_child=retrieve_next_token,
            next_sibling=retrieve_next_sibling, temperatures=temperatures,
            time_limit_s=time_threshold)
        return completed

    def _debug_print_internal_state(self) -> str:
        """The matcher's state as text (xgrammar's debugging call): accepted steps,
        termination, parser rows and the items of the last row. Equal for equal states;
        the format may change."""
        return self._handle.debug_state()

    @property
    def num_accepted_tokens(self) -> int:
        """Accepted steps in the rollback history."""
        return self._handle.num_accepted_steps
