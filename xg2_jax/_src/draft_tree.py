"""The native draft-tree walk behind :func:`xg2_jax.traverse_draft_tree` and
``GrammarMatcher.traverse_draft_tree`` (argument checks and the call, on a matcher handle)."""

from __future__ import annotations

import numpy as np

from xg2_jax import _core
from xg2_jax._src.bitmask import host_bitmask, host_buffer, index_array
from xg2_jax._src.errors import InvalidArgumentError

__all__ = ["walk_draft_tree"]


def walk_draft_tree(handle, draft_tokens, bitmask: np.ndarray, *, parents=None, first_child=None,
                    next_sibling=None, temperatures=None,
                    time_limit_s: float = 0.0) -> tuple[np.ndarray, bool]:
    """Fills one mask row per draft-tree node from the native matcher ``handle`` (see
    :func:`xg2_jax.traverse_draft_tree` for the layout) and returns each node's validity,
    and whether the walk completed. ``temperatures`` (a float32 host buffer of N entries, or
    None) gets each node's temperature (-1: none, or a zero row). With ``time_limit_s > 0``
    the walk stops once that many seconds have passed after a node's token was accepted;
    the rows it did not reach stay zero (the root's is always filled).

    Raises:
        InvalidArgumentError: malformed tree arrays (link arrays of two dtypes included),
            both or neither tree forms, or a bitmask that is not a writable numpy array.
    """
    tokens = index_array(draft_tokens, "draft_tokens")
    bitmask = host_bitmask(bitmask)
    given = [a is not None for a in (parents, first_child, next_sibling)]
    if given not in ([True, False, False], [False, True, True]):
        raise InvalidArgumentError(
            "give the draft tree either as parents=... or as first_child=... and next_sibling=...")
    if temperatures is not None:
        temperatures = host_buffer(temperatures, "temperatures", "float32")
    limit = float(time_limit_s) if time_limit_s and time_limit_s > 0 else 0.0
    if parents is not None:
        valid, completed = _core.traverse_draft_tree(
            handle, tokens, bitmask, parents=index_array(parents, "parents"),
            temperatures=temperatures, time_limit_s=limit)
    else:
        _check_same_dtype(first_child, next_sibling)
        valid, completed = _core.traverse_draft_tree(
            handle, tokens, bitmask, first_child=index_array(first_child, "first_child"),
            next_sibling=index_array(next_sibling, "next_sibling"), temperatures=temperatures,
            time_limit_s=limit)
    return np.asarray(valid, dtype=bool), bool(completed)


def _check_same_dtype(first_child, next_sibling) -> None:
    """The two link arrays of one tree share one integer width (int32 or int64): a tree
    built from two widths is a caller's mix-up (xgrammar takes int64 links only)."""
    a, b = np.asarray(first_child), np.asarray(next_sibling)
    if a.size and b.size and a.dtype != b.dtype:
        raise InvalidArgumentError(
            f"first_child and next_sibling must have the same dtype; got {a.dtype} and "
            f"{b.dtype}")
