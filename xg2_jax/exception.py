"""xgrammar's exception names (``xgrammar.exception``), as xg2-jax's typed errors.

Every xg2-jax input error is also a ``RuntimeError`` (what xgrammar raises), so handlers
written for xgrammar keep working. ``InvalidStructuralTagError`` is
:class:`xg2_jax.StructuralTagError`.
"""

from xg2_jax._src.errors import (
    DeserializeFormatError,
    DeserializeVersionError,
    InvalidJSONError,
    InvalidStructuralTagError,
)

__all__ = ["DeserializeFormatError", "DeserializeVersionError", "InvalidJSONError",
           "InvalidStructuralTagError"]
