"""The packed token bitmask on the host: shape, allocation, checks and unpacking.

Token ``t`` of row ``b`` is allowed iff bit ``t % 32`` of ``mask[b, t // 32]`` is 1.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from xg2_jax._src.errors import InvalidArgumentError

__all__ = ["BITMASK_BACKEND", "HOST_BITMASK_DTYPE", "allocate_host_bitmask", "allocate_token_bitmask",
           "apply_token_bitmask_inplace", "bitmask_dtype", "bitmask_to_bool", "get_bitmask_shape",
           "host_bitmask", "host_buffer", "index_array", "reset_token_bitmask"]

HOST_BITMASK_DTYPE = np.dtype(np.int32)
"""The dtype every host bitmask has, whatever kind of array holds it."""


def _bitmask_backend() -> str:
    """``XG2_JAX_BITMASK`` (``numpy`` by default, or ``torch``), checked."""
    backend = os.environ.get("XG2_JAX_BITMASK", "") or "numpy"
    if backend not in ("numpy", "torch"):
        raise InvalidArgumentError(f"XG2_JAX_BITMASK must be 'numpy' or 'torch'; got {backend!r}")
    if backend == "torch":
        try:
            import torch  # noqa: F401 - the caller asked for torch bitmasks
        except ImportError:
            raise InvalidArgumentError("XG2_JAX_BITMASK=torch needs torch installed") from None
    return backend


BITMASK_BACKEND = _bitmask_backend()
"""What :func:`allocate_token_bitmask` returns: ``"numpy"`` arrays (the default), or
``"torch"`` CPU tensors as xgrammar does, when the process starts with
``XG2_JAX_BITMASK=torch`` (torch callers: serving engines, HF transformers). Every call
that fills or applies a bitmask takes either kind."""

if BITMASK_BACKEND == "torch":
    import torch as _torch

    bitmask_dtype = _torch.int32
else:
    bitmask_dtype = HOST_BITMASK_DTYPE
"""The dtype of :func:`allocate_token_bitmask`'s bitmasks: ``numpy.int32``, or
``torch.int32`` with ``XG2_JAX_BITMASK=torch`` (xgrammar's)."""

_DLPACK_CPU = 1  # kDLCPU in DLPack's device-type enum


def host_bitmask(bitmask) -> np.ndarray:
    """A writable numpy view of a host buffer, without copying; InvalidArgumentError otherwise.

    Takes a numpy array, any object with DLPack on the CPU (a torch CPU tensor, for one) or
    one with the writable buffer protocol. dtype, shape and contiguity are checked where the
    buffer is used. A jax.Array is refused: it is immutable (writing through DLPack would
    change every array sharing its buffer), so fill a host buffer and ``device_put`` it.
    """
    return host_buffer(bitmask, "bitmask", "int32")


def host_buffer(buffer, what: str, dtype_name: str) -> np.ndarray:
    """:func:`host_bitmask` for any output buffer: ``what`` names it and ``dtype_name`` its
    dtype in messages (``temperatures``, ``float32`` for the temperature outputs)."""
    if isinstance(buffer, np.ndarray):
        if not buffer.flags.writeable:
            raise InvalidArgumentError(f"{what} is read-only; pass a writable {dtype_name} array")
        return buffer
    kind = f"{type(buffer).__module__}.{type(buffer).__name__}"
    if kind.startswith(("jax", "jaxlib")):
        raise InvalidArgumentError(
            f"{what} must be a writable {dtype_name} host buffer, not an immutable {kind}; fill a "
            "numpy buffer (allocate_token_bitmask for a bitmask) and device_put it")
    if hasattr(buffer, "__dlpack__"):
        device = buffer.__dlpack_device__() if hasattr(buffer, "__dlpack_device__") else None
        if device is not None and int(device[0]) != _DLPACK_CPU:
            raise InvalidArgumentError(
                f"{what} must be in CPU memory; got a {kind} on DLPack device {tuple(device)}")
        try:
            view = np.from_dlpack(buffer)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            raise InvalidArgumentError(f"cannot read the {kind} {what} through DLPack: "
                                       f"{exc}") from exc
    else:
        try:
            view = np.asarray(memoryview(buffer))
        except TypeError:
            raise InvalidArgumentError(
                f"{what} must be a host array of {dtype_name} (numpy, DLPack or buffer protocol), "
                f"not {kind}") from None
    if not view.flags.writeable:
        raise InvalidArgumentError(f"the {kind} {what} is read-only")
    return view


def reset_token_bitmask(bitmask) -> None:
    """Sets every bit of a host bitmask (every token allowed), in place.

    Args:
        bitmask: an int32 host buffer (numpy, DLPack or buffer protocol; a torch CPU tensor).

    Example:
        >>> mask = np.zeros((1, 2), dtype=np.int32)
        >>> reset_token_bitmask(mask); mask.tolist()
        [[-1, -1]]
    """
    view = host_bitmask(bitmask)
    if view.dtype != HOST_BITMASK_DTYPE:
        raise InvalidArgumentError(f"bitmask dtype must be int32; got {view.dtype}")
    view.fill(-1)


def get_bitmask_shape(batch_size: int, vocab_size: int) -> tuple[int, int]:
    """Shape of the packed bitmask for ``batch_size`` rows over ``vocab_size`` logits."""
    return (batch_size, (vocab_size + 31) // 32)


def allocate_token_bitmask(batch_size: int, vocab_size: int):
    """Allocates a packed token bitmask, every token allowed.

    Token ``t`` of row ``b`` is allowed iff bit ``t % 32`` of ``mask[b, t // 32]`` is 1.

    Args:
        batch_size: number of rows.
        vocab_size: the model's logits width.

    Returns:
        An int32 array of shape ``(batch_size, ceil(vocab_size / 32))``: numpy, or a torch
        CPU tensor (pinned where CUDA is available, as xgrammar's) when the process started
        with ``XG2_JAX_BITMASK=torch`` (see :data:`BITMASK_BACKEND`).

    Example:
        >>> allocate_token_bitmask(2, 100).shape
        (2, 4)
    """
    if BITMASK_BACKEND == "torch":
        return _torch.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=_torch.int32,
                           pin_memory=_torch.cuda.is_available())
    return allocate_host_bitmask(batch_size, vocab_size)


def allocate_host_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """:func:`allocate_token_bitmask` as a numpy array whatever the backend (for xg2-jax's
    own loops, which hand it to JAX).

    Example:
        >>> allocate_host_bitmask(1, 33).tolist()
        [[-1, -1]]
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


def apply_token_bitmask_inplace(logits, bitmask, *, vocab_size: int | None = None,
                                indices=None) -> None:
    """Sets the logits of disallowed tokens to ``-inf``, in place (xgrammar's host-side call).

    For JAX use :func:`xg2_jax.apply_token_bitmask` (functional, jittable). This one takes a
    numpy array, or a torch tensor when torch is installed (the bitmask is moved to the
    logits' device).

    Args:
        logits: float ``(batch, V)`` or ``(V,)``; numpy or torch.
        bitmask: int32 ``(batch, W)`` or ``(W,)``, same kind as ``logits``.
        vocab_size: the real vocabulary size when logits or bitmask are padded (default:
            ``min(V, 32 * W)``; a ``UserWarning`` when ``32 * W < V``, whose logits past the
            bitmask stay unmasked).
        indices: rows to mask (default: all rows, and then the batch sizes must match).

    Raises:
        InvalidArgumentError: mismatched shapes, a non-int32 bitmask or a non-float logits.

    Example:
        >>> logits = np.zeros((1, 3), dtype=np.float32)
        >>> apply_token_bitmask_inplace(logits, np.array([[5]], dtype=np.int32))
        >>> logits.tolist()
        [[0.0, -inf, 0.0]]
    """
    if type(logits).__module__.startswith("torch"):
        return _apply_torch(logits, bitmask, vocab_size, indices)
    if not isinstance(logits, np.ndarray):
        raise InvalidArgumentError("logits must be a numpy array or a torch tensor")
    if not isinstance(bitmask, np.ndarray):  # a torch bitmask with numpy logits, for one
        bitmask = host_bitmask(bitmask)
    if not np.issubdtype(logits.dtype, np.floating):
        raise InvalidArgumentError(f"logits must be a float array; got {logits.dtype}")
    rows_logits, rows_mask = _mask_rows(logits, bitmask, vocab_size, indices)
    width = rows_logits.shape[-1]
    for row, mrow in zip(*_row_pairs(rows_logits.shape[0], rows_mask.shape[0], indices)):
        allowed = bitmask_to_bool(rows_mask[mrow], width)
        rows_logits[row, :width][~allowed] = -np.inf


def _mask_rows(logits, bitmask, vocab_size, indices):
    """(logits, bitmask) as 2-D views cut to the masked vocabulary width, after checks."""
    if bitmask.dtype != HOST_BITMASK_DTYPE:
        raise InvalidArgumentError(f"bitmask dtype must be int32; got {bitmask.dtype}")
    logits2 = logits[None] if logits.ndim == 1 else logits  # views: written in place
    mask2 = bitmask[None] if bitmask.ndim == 1 else bitmask
    if logits2.ndim != 2 or mask2.ndim != 2:
        raise InvalidArgumentError("logits and bitmask must be 1-D or 2-D")
    width = _masked_width(logits2.shape[1], mask2.shape[1], vocab_size)
    if not 0 <= width <= min(logits2.shape[1], 32 * mask2.shape[1]):
        raise InvalidArgumentError(f"vocab_size {width} exceeds logits width {logits2.shape[1]}"
                                   f" or the bitmask's {32 * mask2.shape[1]} bits")
    if indices is None and logits2.shape[0] != mask2.shape[0]:
        raise InvalidArgumentError(f"logits have {logits2.shape[0]} rows but the bitmask "
                                   f"{mask2.shape[0]}; pass indices to mask some rows")
    return logits2[:, :width], mask2


def _masked_width(logits_width: int, mask_words: int, vocab_size) -> int:
    """The columns to mask: ``vocab_size``, or all the bitmask covers. A bitmask narrower than
    the logits without ``vocab_size`` leaves the tail unmasked (xgrammar's rule), which can let
    padded ids be sampled, so that warns."""
    if vocab_size is not None:
        return int(vocab_size)
    if 32 * mask_words < logits_width:
        warnings.warn(f"the bitmask covers {32 * mask_words} tokens but the logits have "
                      f"{logits_width}, so logits[..., {32 * mask_words}:] are left unmasked; "
                      "pass vocab_size to mask only the real vocabulary, or a wider bitmask",
                      UserWarning, stacklevel=4)
    return min(logits_width, 32 * mask_words)


def _row_pairs(num_logit_rows: int, num_mask_rows: int, indices):
    """(logit rows, mask rows) to mask: all rows, or ``indices`` into both."""
    if indices is None:
        return range(num_logit_rows), range(num_logit_rows)
    idx = [int(i) for i in indices]
    for i in idx:
        if not (0 <= i < num_logit_rows and i < num_mask_rows):
            raise InvalidArgumentError(f"index {i} is out of range for {num_logit_rows} logit "
                                       f"rows and {num_mask_rows} bitmask rows")
    return idx, idx


def _apply_torch(logits, bitmask, vocab_size, indices) -> None:
    import torch  # only when the caller passes torch tensors

    if bitmask.dtype != torch.int32:
        raise InvalidArgumentError(f"bitmask dtype must be torch.int32; got {bitmask.dtype}")
    if not logits.dtype.is_floating_point:
        raise InvalidArgumentError(f"logits must be a float tensor; got {logits.dtype}")
    logits2 = logits.unsqueeze(0) if logits.dim() == 1 else logits  # a view: written in place
    mask2 = (bitmask.unsqueeze(0) if bitmask.dim() == 1 else bitmask).to(logits.device)
    width = _masked_width(logits2.shape[1], mask2.shape[1], vocab_size)
    if not 0 <= width <= min(logits2.shape[1], 32 * mask2.shape[1]):
        raise InvalidArgumentError(f"vocab_size {width} exceeds the logits or bitmask width")
    if indices is None and logits2.shape[0] != mask2.shape[0]:
        raise InvalidArgumentError(f"logits have {logits2.shape[0]} rows but the bitmask "
                                   f"{mask2.shape[0]}; pass indices to mask some rows")
    rows, mrows = _row_pairs(logits2.shape[0], mask2.shape[0], indices)
    rows, mrows = list(rows), list(mrows)
    shifts = torch.arange(32, device=logits.device, dtype=torch.int32)
    bits = ((mask2[mrows].unsqueeze(-1) >> shifts) & 1).bool().flatten(1)[:, :width]
    sub = logits2[rows, :width]
    logits2[rows, :width] = sub.masked_fill(~bits, float("-inf"))
