"""The packed token bitmask on the host: shape, allocation, checks and unpacking.

Token ``t`` of row ``b`` is allowed iff bit ``t % 32`` of ``mask[b, t // 32]`` is 1.
"""

from __future__ import annotations

import numpy as np

from xg2_jax._src.errors import InvalidArgumentError

__all__ = ["allocate_token_bitmask", "bitmask_to_bool", "check_host_bitmask", "get_bitmask_shape",
           "index_array"]


def check_host_bitmask(bitmask) -> None:
    """Raises InvalidArgumentError unless ``bitmask`` is a writable numpy array (host memory).

    Masks are filled on the host; a jax.Array is immutable (writing through DLPack would
    change every array sharing its buffer), so fill a numpy buffer and ``device_put`` it.
    """
    if not isinstance(bitmask, np.ndarray):
        raise InvalidArgumentError(
            f"bitmask must be a writable numpy int32 array on the CPU host, not "
            f"{type(bitmask).__module__}.{type(bitmask).__name__}; fill a numpy buffer "
            f"(allocate_token_bitmask) and device_put it")
    if not bitmask.flags.writeable:
        raise InvalidArgumentError("bitmask is read-only; pass a writable numpy int32 array")


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """Shape of the packed bitmask for ``batch_size`` rows over ``vocab_size`` logits."""
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """Allocates a packed token bitmask, every token allowed.

    Token ``t`` of row ``b`` is allowed iff bit ``t % 32`` of ``mask[b, t // 32]`` is 1.

    Args:
        batch_size: number of rows.
        vocab_size: the model's logits width.

    Returns:
        ``np.ndarray`` of dtype int32 and shape ``(batch_size, ceil(vocab_size / 32))``.

    Example:
        >>> allocate_token_bitmask(2, 100).shape
        (2, 4)
    """
    return np.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=np.int32)


def bitmask_to_bool(bitmask_row: np.ndarray, vocab_size: int) -> np.ndarray:
    """Unpacks one bitmask row to a boolean array of length ``vocab_size``.

    Example:
        >>> row = np.array([5], dtype=np.int32)
        >>> bitmask_to_bool(row, 3).tolist()
        [True, False, True]
    """
    bits = np.unpackbits(np.ascontiguousarray(bitmask_row).view(np.uint8), bitorder="little")
    return bits[:vocab_size].astype(bool)


def index_array(values, name: str) -> np.ndarray:
    """``values`` as a contiguous 1-D int64 array; InvalidArgumentError (naming ``name``) for
    another rank, a non-integer dtype or values beyond int64."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidArgumentError(f"{name} must be a 1-D array; got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InvalidArgumentError(f"{name} must have an integer dtype; got {arr.dtype}")
    if arr.size and arr.dtype == np.uint64 and int(arr.max()) > np.iinfo(np.int64).max:
        raise InvalidArgumentError(f"{name} has values that do not fit in int64")
    return np.ascontiguousarray(arr, dtype=np.int64)
