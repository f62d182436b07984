"""xgrammar 0.2.9's ``builtin_structural_tag`` module: the per-model structural-tag builders
(``get_gemma_4_structural_tag``, ``get_qwen_3_structural_tag``, ...) and
:func:`get_model_structural_tag`.

Example:
    >>> from xg2_jax.builtin_structural_tag import get_deepseek_v4_1_structural_tag
    >>> get_deepseek_v4_1_structural_tag([{"name": "f"}]).format.type
    'sequence'
"""

from xg2_jax._src.model_formats import get_model_structural_tag, supported_models
from xg2_jax._src.model_formats_builders import *  # noqa: F403
from xg2_jax._src.model_formats_builders import __all__ as _BUILDERS

get_builtin_structural_tag = get_model_structural_tag   # xgrammar's deprecated alias

__all__ = ["get_builtin_structural_tag", "get_model_structural_tag", "supported_models", *_BUILDERS]
