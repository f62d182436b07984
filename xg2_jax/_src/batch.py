"""Batched matcher operations and speculative draft-tree masks.

:class:`BatchGrammarMatcher` fills (and advances) many matchers in one call on a persistent
native thread pool with the GIL released; :func:`traverse_draft_tree` computes one mask row per
node of a speculative-decoding draft tree.
"""

from __future__ import annotations

import functools
import os
from typing import Optional, Sequence, Union

import numpy as np

from xg2_jax import _core
from xg2_jax._src.bitmask import host_bitmask, host_buffer, index_array
from xg2_jax._src.draft_tree import walk_draft_tree
from xg2_jax._src.errors import InvalidArgumentError
from xg2_jax._src.matcher import GrammarMatcher, warn_temperature_conflict

__all__ = ["BatchGrammarMatcher", "traverse_draft_tree"]

_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def _handles(matchers: Sequence[GrammarMatcher]) -> list:
    handles = []
    for i, m in enumerate(matchers):
        if not isinstance(m, GrammarMatcher):
            raise InvalidArgumentError(
                f"matchers[{i}] is a {type(m).__name__}, not an xg2_jax.GrammarMatcher")
        handles.append(m._handle)
    return handles


def _int32_list(values: Sequence[int], name: str) -> list[int]:
    out = []
    for v in np.asarray(values).reshape(-1).tolist() if isinstance(values, np.ndarray) else values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidArgumentError(f"{name} must be integers; got {type(v).__name__}")
        v = int(v)
        if not _INT32_MIN <= v <= _INT32_MAX:
            raise InvalidArgumentError(f"{name} value {v} does not fit in int32")
        out.append(v)
    return out


class _OnInstanceOrClass:
    """A method that runs on the instance, or, called on the class (xgrammar's static
    spelling, ``BatchGrammarMatcher.batch_accept_token(matchers, tokens)``), on a shared
    default instance."""

    def __init__(self, method):
        functools.update_wrapper(self, method)
        self._method = method

    def __get__(self, obj, cls):
        return functools.partial(self._method, obj if obj is not None else cls._shared())


class BatchGrammarMatcher:
    """Runs per-step matcher operations for a whole batch in parallel.

    The work runs on a process-wide pool of native threads created once (no threads are started
    per call) and with the GIL released, so several Python threads may use batch matchers at the
    same time. Within one call every matcher must be a distinct object.

    Args:
        max_threads: the most threads one call uses, the calling thread included (<= 0: all
            cores; ``"auto"``: half the cores, as xgrammar).

    Example:
        >>> import xg2_jax as xg
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
        >>> matchers = [xg.GrammarMatcher(compiled) for _ in range(3)]
        >>> batch = xg.BatchGrammarMatcher()
        >>> batch.batch_accept_token(matchers[:2], [0, 1])
        [True, False]
        >>> mask = xg.allocate_token_bitmask(3, tok.vocab_size)
        >>> batch.batch_fill_next_token_bitmask(matchers, mask)
        >>> [xg.bitmask_to_bool(row, 3).tolist() for row in mask]
        [[False, True, False], [True, False, False], [True, False, False]]
    """

    _default: Optional["BatchGrammarMatcher"] = None

    def __init__(self, max_threads: Union[int, str] = 0):
        if max_threads == "auto":
            max_threads = max(1, (os.cpu_count() or 2) // 2)
        if isinstance(max_threads, bool) or not isinstance(max_threads, int):
            raise InvalidArgumentError(f"max_threads must be an int or 'auto'; got "
                                       f"{max_threads!r}")
        self._handle = _core.BatchGrammarMatcher(max_threads)

    @classmethod
    def _shared(cls) -> "BatchGrammarMatcher":
        if cls._default is None:
            cls._default = cls()
        return cls._default

    @property
    def max_threads(self) -> int:
        """Threads one call uses at most (the caller included)."""
        return self._handle.max_threads

    def batch_fill_next_token_bitmask(self, matchers: Sequence[GrammarMatcher], bitmask,
                                      indices: Optional[Sequence[int]] = None,
                                      debug_print: bool = False) -> None:
        """Fills the next-token mask of every matcher in parallel.

        Args:
            matchers: distinct matchers.
            bitmask: int32 host buffer ``(rows, ceil(vocab_size / 32))`` (rows may exceed the
                number of matchers, for padding): numpy, or DLPack / buffer protocol (a torch
                CPU tensor).
            indices: row of each matcher (default: matcher ``i`` fills row ``i``); distinct.
            debug_print: accepted for xgrammar compatibility; ignored.

        Returns:
            None, as in xgrammar (apply every row).

        Raises:
            InvalidArgumentError: a matcher repeats, an index is out of range or repeats, or
                the bitmask has the wrong dtype, shape or device. Nothing is written then.
            MatcherStateError: a matcher has accepted a stop token (nothing can follow; as in
                xgrammar). Nothing is written then.
        """
        handles = _handles(matchers)
        idx = [] if indices is None else _int32_list(indices, "indices")
        if indices is not None and len(idx) != len(handles):
            raise InvalidArgumentError(
                f"got {len(handles)} matchers but {len(idx)} indices")
        bitmask = host_bitmask(bitmask)
        self._handle.fill_next_token_bitmask(handles, bitmask, idx)

    @_OnInstanceOrClass
    def batch_fill_temperature(self, matchers: Sequence[GrammarMatcher], temperatures,
                               indices: Optional[Sequence[int]] = None) -> None:
        """Writes every matcher's :attr:`GrammarMatcher.temperature` into a buffer, in place
        (xgrammar's ``batch_fill_temperature``; callable on the class, as there).

        Args:
            matchers: distinct matchers.
            temperatures: float32 host buffer ``(size,)`` (numpy, or DLPack / buffer protocol:
                a torch CPU tensor); -1 is written for a matcher with no temperature.
            indices: the entry of each matcher (default: matcher ``i`` writes entry ``i``);
                distinct, in range. Other entries are left alone.

        Raises:
            InvalidArgumentError: a matcher repeats, the indices size differs from the number
                of matchers, an index is out of bounds or repeats, or the buffer is not a
                contiguous 1-D float32 host array. Nothing is written then.
        """
        handles = _handles(matchers)
        idx = [] if indices is None else _int32_list(indices, "indices")
        if indices is not None and len(idx) != len(handles):
            raise InvalidArgumentError(f"indices size ({len(idx)}) differs from the number of "
                                       f"matchers ({len(handles)})")
        buffer = host_buffer(temperatures, "temperatures", "float32")
        conflicts = self._handle.fill_temperatures(handles, buffer, idx)
        for matcher, conflict in zip(matchers, conflicts):
            if conflict:
                warn_temperature_conflict(matcher.temperature)

    @_OnInstanceOrClass
    def batch_accept_token(self, matchers: Sequence[GrammarMatcher], tokens: Sequence[int],
                           debug_print: bool = False) -> list[bool]:
        """Accepts ``tokens[i]`` into ``matchers[i]``, in parallel.

        Callable on an instance or, as in xgrammar, on the class.

        Returns:
            Per matcher, whether the token was accepted (a rejected token leaves that matcher
            unchanged; a terminated matcher accepts nothing, as xgrammar).

        Raises:
            InvalidArgumentError: lengths differ, a matcher repeats, or a token id is outside
                the vocabulary. No matcher changes when this raises.
        """
        handles = _handles(matchers)
        toks = _int32_list(tokens, "tokens")
        return self._handle.accept_token(handles, toks)

    @_OnInstanceOrClass
    def batch_accept_string(self, matchers: Sequence[GrammarMatcher],
                            strings: Sequence[Union[str, bytes]],
                            debug_print: bool = False) -> list[bool]:
        """Accepts ``strings[i]`` (str as UTF-8, or bytes) into ``matchers[i]`` as one step
        each, in parallel. Callable on an instance or, as in xgrammar, on the class.

        Returns:
            Per matcher, whether the string was accepted (a rejected one leaves that matcher
            unchanged; a terminated matcher accepts nothing).

        Raises:
            InvalidArgumentError: lengths differ, a matcher repeats, or a string is neither
                str nor bytes. No matcher changes when this raises.

        Example:
            >>> import xg2_jax as xg
            >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
            >>> compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
            >>> ms = [xg.GrammarMatcher(compiled) for _ in range(2)]
            >>> xg.BatchGrammarMatcher.batch_accept_string(ms, ["ab", b"b"])
            [True, False]
        """
        handles = _handles(matchers)
        data = []
        for i, text in enumerate(strings):
            if isinstance(text, str):
                data.append(text.encode("utf-8"))
            elif isinstance(text, (bytes, bytearray, memoryview)):
                data.append(bytes(text))
            else:
                raise InvalidArgumentError(
                    f"strings[{i}] is a {type(text).__name__}, not str or bytes")
        return self._handle.accept_string(handles, data)

    @_OnInstanceOrClass
    def batch_rollback(self, matchers: Sequence[GrammarMatcher],
                       num_tokens: Union[int, Sequence[int]] = 1) -> None:
        """Rolls ``matchers[i]`` back by ``num_tokens[i]`` steps (an int: the same for
        all). Callable on an instance or, as in xgrammar, on the class.

        Raises:
            InvalidArgumentError: lengths differ, a matcher repeats, or a count is negative.
            MatcherStateError: a count exceeds that matcher's history. No matcher changes
                when this raises.
        """
        handles = _handles(matchers)
        if isinstance(num_tokens, (int, np.integer)) and not isinstance(num_tokens, bool):
            num_tokens = [int(num_tokens)] * len(handles)
        cnts = _int32_list(num_tokens, "num_tokens")
        self._handle.rollback(handles, cnts)

    def batch_traverse_draft_tree(self, matchers: Sequence[GrammarMatcher], draft_tokens,
                                  bitmask, *, parents=None, first_child=None,
                                  next_sibling=None,
                                  indices: Optional[Sequence[int]] = None) -> np.ndarray:
        """:func:`traverse_draft_tree` for a batch of matchers, in parallel.

        Args:
            matchers: ``B`` distinct matchers (left unchanged).
            draft_tokens: integer array ``(B, N)``: matcher ``b``'s tree tokens.
            bitmask: int32 array ``(B, N, W)`` or ``(B * N, W)`` (C-contiguous rows);
                matcher ``b``'s node ``i`` goes to row ``b * N + i``. With ``indices``:
                ``(R, N, W)`` or ``(rows, W)`` with ``rows >= R * N`` tree slots.
            parents / first_child, next_sibling: integer arrays ``(N,)`` (one tree shape for
                the whole batch) or ``(B, N)`` (a tree per matcher), as in
                :func:`traverse_draft_tree`.
            indices: optional distinct tree slots, one per matcher: matcher ``b``'s node
                ``i`` goes to row ``indices[b] * N + i`` (the other slots are not written),
                for a batch where only some rows are constrained. The native call writes
                ``B`` consecutive slots, so a consecutive run of indices is written in
                place and other index sets go through a scratch ``(B * N, W)`` buffer.

        Returns:
            Boolean array ``(B, N)``: whether each node's path is valid.

        Example:
            >>> import numpy as np, xg2_jax as xg
            >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
            >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
            >>> ms = [xg.GrammarMatcher(g), xg.GrammarMatcher(g)]
            >>> masks = np.zeros((2, 3, 1), dtype=np.int32)
            >>> xg.BatchGrammarMatcher().batch_traverse_draft_tree(
            ...     ms, np.array([[0, 0, 1], [0, 1, 1]]), masks, parents=np.array([-1, 0, 1])
            ... ).tolist()
            [[True, True, True], [True, False, False]]
        """
        handles = _handles(matchers)
        bitmask = host_bitmask(bitmask)
        tokens = np.asarray(draft_tokens)
        if tokens.ndim != 2:
            raise InvalidArgumentError(
                f"draft_tokens must have shape (B, N); got {tokens.shape}")
        n = tokens.shape[1]
        tokens = index_array(tokens.reshape(-1), "draft_tokens").reshape(tokens.shape)
        if bitmask.ndim == 3:
            if bitmask.shape[1] != n or (indices is None and bitmask.shape[0] != len(tokens)):
                raise InvalidArgumentError(
                    f"bitmask shape {bitmask.shape} does not match draft_tokens {tokens.shape}")
            if not bitmask.flags.c_contiguous:
                raise InvalidArgumentError("a 3-D bitmask must be C-contiguous")
            bitmask = bitmask.reshape(-1, bitmask.shape[2])
        slots = None if indices is None else self._tree_slots(indices, len(handles), n,
                                                              bitmask)
        given = [a is not None for a in (parents, first_child, next_sibling)]
        if given not in ([True, False, False], [False, True, True]):
            raise InvalidArgumentError(
                "give the draft trees either as parents=... or as first_child=... and "
                "next_sibling=...")

        def tree_array(a, name):
            arr = np.asarray(a)
            if arr.ndim not in (1, 2):
                raise InvalidArgumentError(f"{name} must have shape (N,) or (B, N)")
            flat = index_array(arr.reshape(-1), name)
            return flat.reshape(1, -1) if arr.ndim == 1 else flat.reshape(arr.shape)

        if parents is not None:
            trees = dict(parents=tree_array(parents, "parents"))
        else:
            trees = dict(first_child=tree_array(first_child, "first_child"),
                         next_sibling=tree_array(next_sibling, "next_sibling"))
        if slots is None or len(handles) == 0:
            target = bitmask
        elif slots[0] >= 0:  # consecutive slots: a view of the rows, written in place
            target = bitmask[slots[0] * n:(slots[0] + len(handles)) * n]
        else:
            target = np.empty((len(handles) * n, bitmask.shape[1]), dtype=np.int32)
        valid = self._handle.traverse_draft_tree(handles, tokens, target, **trees)
        if slots is not None and slots[0] < 0:
            whole = bitmask[:(bitmask.shape[0] // n) * n].reshape(-1, n, bitmask.shape[1])
            whole[slots[1]] = target.reshape(len(handles), n, -1)
        return np.asarray(valid, dtype=bool).reshape(len(handles), n)

    @staticmethod
    def _tree_slots(indices, count: int, n: int, bitmask) -> tuple[int, np.ndarray]:
        """Checks ``indices`` (distinct slots of ``n`` rows in ``bitmask``); returns
        ``(first slot, indices)`` for a consecutive run, else ``(-1, indices)``."""
        idx = index_array(indices, "indices")
        if idx.size != count:
            raise InvalidArgumentError(f"got {count} matchers but {idx.size} indices")
        if bitmask.ndim != 2 or bitmask.dtype != np.int32 or not bitmask.flags.c_contiguous:
            raise InvalidArgumentError(
                "with indices, bitmask must be a C-contiguous int32 array (R, N, W) or "
                f"(rows, W); got {bitmask.dtype} {bitmask.shape}")
        slots = bitmask.shape[0] // n if n else 0
        if idx.size and (idx.min() < 0 or idx.max() >= slots):
            raise InvalidArgumentError(
                f"indices must be in [0, {slots}) (bitmask rows // N); got {idx.tolist()}")
        if np.unique(idx).size != idx.size:
            raise InvalidArgumentError("indices must be distinct")
        consecutive = idx.size == 0 or bool((np.diff(idx) == 1).all())
        return (int(idx[0]) if idx.size else 0) if consecutive else -1, idx


def traverse_draft_tree(matcher: GrammarMatcher, draft_tokens, bitmask: np.ndarray, *,
                        parents=None, first_child=None, next_sibling=None) -> np.ndarray:
    """Writes the token mask of every node of a speculative-decoding draft tree.

    The tree has ``N`` nodes; node 0 is the root and stands for the matcher's current state
    (its token, ``draft_tokens[0]``, is the last token already accepted and is not accepted
    again). This is xgrammar's ``traverse_draft_tree`` layout. Give the tree either as
    ``parents`` (``parents[0] == -1``, ``0 <= parents[i] < i``) or as ``first_child`` /
    ``next_sibling`` links (``-1``: none; sglang's ``retrieve_next_token`` /
    ``retrieve_next_sibling``).

    Row ``i`` of ``bitmask`` receives the mask of the tokens allowed after node ``i``'s token,
    i.e. after accepting the tokens on the path from the root (exclusive) to node ``i``; row 0
    is the mask at the current state. Rows of nodes whose path is invalid (a token on it is
    rejected or outside the vocabulary, or the path continues after a stop token), rows of
    nodes that terminate the matcher (a stop token) and rows of nodes unreachable from the root
    are all zero. The matcher itself is left unchanged. Each node costs one accept and one fill
    (depth-first walk with rollback).

    Args:
        matcher: the matcher at the root's position.
        draft_tokens: integer array ``(N,)``.
        bitmask: int32 array ``(rows, ceil(vocab_size / 32))`` with ``rows >= N``.
        parents: integer array ``(N,)``, or None.
        first_child: integer array ``(N,)``, or None (with ``next_sibling``).
        next_sibling: integer array ``(N,)``, or None (with ``first_child``).

    Returns:
        Boolean array ``(N,)``: whether each node's path is valid (every token on it accepted).

    Raises:
        InvalidArgumentError: malformed tree arrays (sizes, ranges, cycles), or a bitmask of
            the wrong dtype or shape.

    Example:
        >>> import numpy as np, xg2_jax as xg
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"'))
        >>> mask = xg.allocate_token_bitmask(4, 3)
        >>> # root -> "a" -> "b";  root -> "b" (invalid)
        >>> valid = xg.traverse_draft_tree(m, np.array([0, 0, 1, 1]), mask,
        ...                                parents=np.array([-1, 0, 1, 0]))
        >>> valid.tolist()
        [True, True, True, False]
        >>> [xg.bitmask_to_bool(row, 3).tolist() for row in mask]
        [[True, False, False], [False, True, False], [False, False, True], [False, False, False]]
    """
    if not isinstance(matcher, GrammarMatcher):
        raise InvalidArgumentError(
            f"matcher is a {type(matcher).__name__}, not an xg2_jax.GrammarMatcher")
    valid, _ = walk_draft_tree(matcher._handle, draft_tokens, bitmask, parents=parents,
                               first_child=first_child, next_sibling=next_sibling)
    return valid
