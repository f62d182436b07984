"""The structural-tag builders under xgrammar's module name (``xgrammar.structural_tag``)."""

from xg2_jax._src.structural_tag import *  # noqa: F401,F403 - the module's curated __all__
from xg2_jax._src.structural_tag import __all__  # noqa: F401
from xg2_jax._src.structural_tag_legacy import StructuralTagItem  # noqa: F401,E402 - deprecated form

__all__ = [*__all__, "StructuralTagItem"]
