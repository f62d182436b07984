"""Bitmask kernels under xgrammar's module names (``xgrammar.kernels``).

xg2-jax applies masks on the host with :func:`xg2_jax.apply_token_bitmask_inplace` (numpy
arrays, or torch CPU tensors) and on accelerators inside the jitted step
(:func:`xg2_jax.apply_token_bitmask`). Only the CPU kernel of xgrammar's set has a
counterpart here, :mod:`xg2_jax.kernels.apply_token_bitmask_inplace_cpu`; xgrammar's CUDA,
Triton, Metal and torch.compile kernels do not (xg2-jax does not depend on torch).
"""

from xg2_jax.kernels.apply_token_bitmask_inplace_cpu import apply_token_bitmask_inplace_cpu

__all__ = ["apply_token_bitmask_inplace_cpu"]
