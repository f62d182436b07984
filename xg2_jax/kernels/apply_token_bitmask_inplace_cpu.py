"""The host kernel that sets disallowed logits to ``-inf`` in place (xgrammar's
``xgrammar.kernels.apply_token_bitmask_inplace_cpu``)."""

from __future__ import annotations

from xg2_jax._src.bitmask import apply_token_bitmask_inplace
from xg2_jax._src.errors import InvalidArgumentError

__all__ = ["apply_token_bitmask_inplace_cpu"]


def apply_token_bitmask_inplace_cpu(logits, bitmask, vocab_size: int | None = None,
                                    indices=None) -> None:
    """Masks ``logits`` in place with ``bitmask`` on the host.

    The same as :func:`xg2_jax.apply_token_bitmask_inplace`, restricted to host memory as
    xgrammar's CPU kernel is: a torch tensor on another device is refused, not moved.

    Args:
        logits: float ``(batch, V)`` or ``(V,)``; a numpy array or a torch CPU tensor
            (float32, float16 or bfloat16).
        bitmask: int32 ``(batch, W)`` or ``(W,)``, the same kind as ``logits``.
        vocab_size: the real vocabulary size when logits or bitmask are padded (default:
            ``min(V, 32 * W)``).
        indices: rows to mask (default: all rows).

    Raises:
        InvalidArgumentError: a tensor off the CPU, mismatched shapes, a non-int32 bitmask.

    Example:
        >>> import numpy as np
        >>> logits = np.ones(4, dtype=np.float32)
        >>> apply_token_bitmask_inplace_cpu(logits, np.array([0b1001], dtype=np.int32))
        >>> logits.tolist()
        [1.0, -inf, -inf, 1.0]
    """
    for name, value in (("logits", logits), ("bitmask", bitmask)):
        device = getattr(value, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise InvalidArgumentError(f"{name} must be on the CPU; got a tensor on {device}")
    apply_token_bitmask_inplace(logits, bitmask, vocab_size=vocab_size, indices=indices)
