"""Built-in model formats under xgrammar's module name (``xgrammar.builtin_structural_tag``)."""

from xg2_jax._src.model_formats import get_model_structural_tag

__all__ = ["get_model_structural_tag"]
