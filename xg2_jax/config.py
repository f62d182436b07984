"""Process-wide settings under xgrammar's names (``xgrammar.config``).

xgrammar's "max recursion depth" is xg2-jax's front-end nesting limit (see
:func:`xg2_jax.set_limits`): the deepest nesting of EBNF expressions, regex groups and JSON
documents a front end accepts (a tenth of it for Lark groups and a fortieth, at least 16, for
JSON Schema subschemas, whose levels take more stack). The Earley parser itself does not recurse, so
matching never hits it. The default is xgrammar's, 10000, which is also the most: every
front end then stays within an 8 MiB thread stack.

Example:
    >>> from xg2_jax import config
    >>> with config.max_recursion_depth(50):
    ...     config.get_max_recursion_depth()
    50
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from xg2_jax import _core
from xg2_jax._src.errors import InvalidArgumentError
from xg2_jax._src.serialization_json import SERIALIZATION_VERSION

__all__ = ["get_max_recursion_depth", "get_serialization_version", "max_recursion_depth",
           "set_max_recursion_depth"]

MAX_RECURSION_DEPTH_LIMIT = 10_000
"""The largest depth :func:`set_max_recursion_depth` accepts (xgrammar: 1,000,000; deeper
limits would let an input overflow a native thread's stack)."""



def get_max_recursion_depth() -> int:
    """The front ends' nesting limit (process-wide).

    Returns:
        The current depth limit.
    """
    return int(_core.max_nesting_depth())


def set_max_recursion_depth(max_recursion_depth: int) -> None:
    """Sets the front ends' nesting limit (process-wide, thread-safe).

    Args:
        max_recursion_depth: in ``[1, 1_000_000]``.

    Raises:
        InvalidArgumentError: outside that range (also a ``RuntimeError``, as xgrammar's).
    """
    if isinstance(max_recursion_depth, bool) or not isinstance(max_recursion_depth, int):
        raise InvalidArgumentError(
            f"max_recursion_depth must be an int; got {type(max_recursion_depth).__name__}")
    if not 1 <= max_recursion_depth <= MAX_RECURSION_DEPTH_LIMIT:
        raise InvalidArgumentError(f"max_recursion_depth must be in [1, "
                                   f"{MAX_RECURSION_DEPTH_LIMIT}]; got {max_recursion_depth}")
    _core.set_max_nesting_depth(max_recursion_depth)


@contextlib.contextmanager
def max_recursion_depth(temp_depth: int) -> Iterator[None]:
    """Sets the nesting limit for the duration of a ``with`` block, then restores it.

    Args:
        temp_depth: the limit inside the block (as :func:`set_max_recursion_depth`).
    """
    previous = get_max_recursion_depth()
    set_max_recursion_depth(temp_depth)
    try:
        yield
    finally:
        set_max_recursion_depth(previous)


def get_serialization_version() -> str:
    """The version string ``serialize_json`` writes and ``deserialize_json`` requires.

    Example:
        >>> get_serialization_version()
        'xg2-jax-json-1'
    """
    return SERIALIZATION_VERSION
