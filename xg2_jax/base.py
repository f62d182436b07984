"""The native extension under xgrammar's module name (``xgrammar.base._core``).

``_core`` is xg2-jax's own nanobind module (:mod:`xg2_jax._core`), not xgrammar's: its
classes and call signatures are xg2-jax's (see ``xg2_jax/_core.pyi``), so code that drives
xgrammar's C++ objects directly does not carry over. It is exported so such code can import
and fail at the call that differs, not at the import.
"""

from xg2_jax import _core

__all__ = ["_core"]
