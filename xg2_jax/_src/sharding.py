"""Placing token masks on multi-device and multi-host meshes.

Masks are sharded along the batch axis (each device holds its rows' packed words); logits may
additionally be sharded along the vocabulary. :func:`~xg2_jax.apply_token_bitmask` is
elementwise along the vocabulary (each column reads one word of its row's mask), so under
``jit`` it runs on sharded inputs without gathering the logits.

Example:
    >>> import numpy as np
    >>> from jax.sharding import Mesh, PartitionSpec
    >>> mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
    >>> from xg2_jax import put_masks
    >>> masks = put_masks(np.full((4, 2), -1, np.int32), mask_sharding(mesh))
    >>> masks.sharding.spec == PartitionSpec("data", None)
    True
"""

from __future__ import annotations

from typing import Optional

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

__all__ = ["logits_sharding", "make_global_masks", "mask_sharding"]


def mask_sharding(mesh: Mesh, *, batch_axis: Optional[str] = "data",
                  ndim: int = 2) -> NamedSharding:
    """Batch-sharded, word-replicated sharding for (B, W) (or (B, N, W)) masks.

    Args:
        mesh: the device mesh.
        batch_axis: mesh axis (or None: replicated) for the batch dimension.
        ndim: rank of the mask array (2, or 3 for draft-tree mask stacks).

    Returns:
        A :class:`jax.sharding.NamedSharding`.
    """
    return NamedSharding(mesh, PartitionSpec(batch_axis, *([None] * (ndim - 1))))


def logits_sharding(mesh: Mesh, *, batch_axis: Optional[str] = "data",
                    vocab_axis: Optional[str] = None, ndim: int = 2) -> NamedSharding:
    """Sharding for (B, V) (or (B, N, V)) logits: batch and, optionally, vocabulary axes."""
    return NamedSharding(mesh, PartitionSpec(batch_axis, *([None] * (ndim - 2)), vocab_axis))


def make_global_masks(local_bitmask: np.ndarray, mesh: Mesh, *,
                      batch_axis: Optional[str] = "data",
                      global_batch: Optional[int] = None) -> jax.Array:
    """Assembles the global mask array from each process's host-local rows (multi-host).

    Every process fills the rows of the requests it serves (its addressable shard of the
    batch axis, in process order) and calls this with the same arguments shape-wise;
    :func:`jax.make_array_from_process_local_data` builds the global array without any
    cross-host copy. On one host it is a plain batch-sharded transfer.

    Args:
        local_bitmask: int32 (B_local, W) or (B_local, N, W): this process's rows.
        mesh: the global mesh.
        batch_axis: mesh axis for the batch dimension.
        global_batch: the global B (default: ``B_local * process_count``).

    Returns:
        A global ``jax.Array`` of shape (global_batch, ...) with :func:`mask_sharding`.
    """
    local = np.asarray(local_bitmask, dtype=np.int32)
    total = global_batch if global_batch is not None else local.shape[0] * jax.process_count()
    sharding = mask_sharding(mesh, batch_axis=batch_axis, ndim=local.ndim)
    return jax.make_array_from_process_local_data(sharding, local,
                                                  (total,) + local.shape[1:])
