"""Per-model structural-tag builders under xgrammar 0.2.9's names.

Each ``get_<model>_structural_tag(tools, tool_choice, reasoning, **options)`` is
:func:`xg2_jax.get_model_structural_tag` with ``model`` fixed; xgrammar's model key is in
:data:`XGRAMMAR_MODEL_KEYS`.

Example:
    >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    >>> tag = get_gemma_4_structural_tag(tools, reasoning="disabled")
    >>> tag.format.type, tag.marker_tokens[2]
    ('triggered_tags', '<|tool_call>')
"""

from __future__ import annotations

from typing import Callable

from xg2_jax._src.model_formats import get_model_structural_tag, normalize_tools
from xg2_jax._src.tool_params import tool_to_dict

# xgrammar's model key -> ours.
XGRAMMAR_MODEL_KEYS = {
    "llama": "llama3", "qwen_3": "qwen3", "qwen_3_5": "qwen3_coder", "qwen_3_coder": "qwen3_coder",
    "deepseek_r1": "deepseek_r1", "deepseek_v3_1": "deepseek_v3_1",
    "deepseek_v3_2": "deepseek_v3_2", "deepseek_v4": "deepseek_v4",
    "deepseek_v4_1": "deepseek_v4_1", "kimi": "kimi_k2", "kimi_k3": "kimi_k3", "glm_4_7": "glm4_7",
    "minimax": "minimax", "harmony": "harmony", "gemma_4": "gemma_4", "mimo": "mimo",
    "exaone": "exaone", "cohere": "cohere", "minimax_m3": "minimax_m3",
}


def _forced_choice(tools) -> dict:
    """xgrammar's prepared ``tool_choice="forced"``: a call to the one tool left."""
    only = normalize_tools(tools, builtin=True)
    if len(only) != 1:
        raise ValueError(f"Forced tool choice must resolve to exactly one tool, got {len(only)}.")
    if only[0].builtin_type is not None:
        return {"type": only[0].builtin_type}
    return {"type": "function", "function": {"name": only[0].name}}


def _builder(model: str, family: str, default_reasoning: str = "enabled") -> Callable:
    def build(tools=None, tool_choice="auto", reasoning=default_reasoning, *, builtin_tools=None,
              **options):
        # normalize_tool_choice's split form: the builtin tools join the list (a model
        # without a format for them leaves them out).
        tools = [*(tools or []), *(tool_to_dict(t) for t in builtin_tools or [])]
        if tool_choice == "forced":     # normalize_tool_choice's form of a named choice
            tool_choice = _forced_choice(tools)
        return get_model_structural_tag(model, tools, tool_choice, reasoning, **options)

    build.__name__ = build.__qualname__ = f"get_{model}_structural_tag"
    build.__doc__ = f"""The structural tag of one {family} assistant turn.

    Args:
        tools: OpenAI-style function tools.
        tool_choice: ``"auto"``, ``"required"``, ``"none"``, a named function, or
            ``"forced"`` (a call to the only tool, as :func:`normalize_tool_choice` returns).
        reasoning: ``"enabled"``, ``"disabled"`` or ``"auto"`` (or a bool); default
            ``"{default_reasoning}"``.
        builtin_tools: xgrammar's builtin (hosted) tools (``BuiltinToolParam`` or dicts);
            only formats with a wire format for them (harmony) let them be called.
        **options: the other keywords of :func:`xg2_jax.get_model_structural_tag`.

    Returns:
        ``get_model_structural_tag("{model}", tools, tool_choice, reasoning, **options)``.

    Example:
        >>> get_{model}_structural_tag([{{"name": "f"}}]).type
        'structural_tag'
    """
    return build


get_llama_structural_tag = _builder("llama", "Llama 3.1/3.2")
get_qwen_3_structural_tag = _builder("qwen_3", "Qwen3")
get_qwen_3_5_structural_tag = _builder("qwen_3_5", "Qwen3.5 / Qwen3-Coder")
get_qwen_3_coder_structural_tag = _builder("qwen_3_coder", "Qwen3-Coder")
get_deepseek_r1_structural_tag = _builder("deepseek_r1", "DeepSeek-R1")
get_deepseek_v3_1_structural_tag = _builder("deepseek_v3_1", "DeepSeek-V3.1")
get_deepseek_v3_2_structural_tag = _builder("deepseek_v3_2", "DeepSeek-V3.2")
get_deepseek_v4_structural_tag = _builder("deepseek_v4", "DeepSeek-V4")
get_deepseek_v4_1_structural_tag = _builder("deepseek_v4_1", "DeepSeek-V4.1")
get_kimi_structural_tag = _builder("kimi", "Kimi-K2")
get_kimi_k3_structural_tag = _builder("kimi_k3", "Kimi-K3")
get_glm_4_7_structural_tag = _builder("glm_4_7", "GLM-4.5/4.6/4.7")
get_minimax_structural_tag = _builder("minimax", "MiniMax-M2")
# xgrammar's M3 builder defaults to "auto" (the adaptive template), unlike get_model_structural_tag.
get_minimax_m3_structural_tag = _builder("minimax_m3", "MiniMax-M3", "auto")
get_harmony_structural_tag = _builder("harmony", "gpt-oss Harmony")
get_mistral_structural_tag = _builder("mistral", "Mistral")
get_gemma_4_structural_tag = _builder("gemma_4", "Gemma 4")
get_mimo_structural_tag = _builder("mimo", "MiMo-V2.6")
get_exaone_structural_tag = _builder("exaone", "EXAONE 4.0")
get_cohere_structural_tag = _builder("cohere", "Cohere Command (cmd5)")

__all__ = ["XGRAMMAR_MODEL_KEYS", *sorted(name for name in dir() if name.startswith("get_")
                                         and name.endswith("_structural_tag")
                                         and name != "get_model_structural_tag")]
