"""xgrammar 0.2.9's ``builtin_structural_tag`` module: the per-model structural-tag builders
(``get_gemma_4_structural_tag``, ``get_qwen_3_structural_tag``, ...) and
:func:`get_model_structural_tag`.

Example:
    >>> from xg2_jax.builtin_structural_tag import get_deepseek_v4_1_structural_tag
    >>> get_deepseek_v4_1_structural_tag([{"name": "f"}]).format.type
    'sequence'
"""

from xg2_jax._src.model_formats import (  # noqa: F401 - the registries are xgrammar names
    _structural_tag_marker_tokens,
    _structural_tag_registry,
    get_model_structural_tag,
    register_model_structural_tag,
    supported_models,
)
from xg2_jax._src.model_formats_builders import *  # noqa: F403
from xg2_jax._src.model_formats_builders import __all__ as _BUILDERS
from xg2_jax._src.model_formats_markers import bind_marker_tokens
from xg2_jax._src.structural_tag import StructuralTag
from xg2_jax._src.tool_params import normalize_tool_choice

get_builtin_structural_tag = get_model_structural_tag   # xgrammar's deprecated alias


def _bind_marker_tokens(structural_tag: StructuralTag, markers: list[str]) -> StructuralTag:
    """``structural_tag`` with ``markers`` in tag begins/ends, triggers and constant strings
    matched as their special tokens (xgrammar's helper of the same name; compile the result
    with the model's tokenizer).

    Args:
        structural_tag: typically from :func:`get_model_structural_tag`.
        markers: marker strings that are single tokens of the target tokenizer.

    Returns:
        The rewritten structural tag, or ``structural_tag`` itself when no marker occurs in it.

    Raises:
        ValueError: a marker end over free text the binding cannot make token-level.
    """
    wanted = [m for m in dict.fromkeys(markers) if m]
    if not wanted:
        return structural_tag
    bound = bind_marker_tokens(structural_tag.format, wanted)
    return structural_tag if bound == structural_tag.format else StructuralTag(format=bound)


__all__ = ["get_builtin_structural_tag", "get_model_structural_tag", "normalize_tool_choice",
           "register_model_structural_tag", "supported_models", *_BUILDERS]
