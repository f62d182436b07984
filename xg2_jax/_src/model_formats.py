"""Built-in structural tags for the reasoning and tool-call output of common model families.

:func:`get_model_structural_tag` turns an OpenAI-style ``tools`` list and ``tool_choice`` into
the :class:`StructuralTag` that constrains one assistant turn of the given
model family: an optional or required reasoning block, then free text in which tool calls are
written in the model's own wire format, with every call's arguments checked against that
tool's JSON Schema.

Each family is described by a ``ToolCallSyntax`` in :mod:`xg2_jax._src.model_formats_text`
(or, for the special-token formats of Mistral and gpt-oss Harmony, by its own builder in
:mod:`xg2_jax._src.model_formats_special`). The wire formats are written from the models'
published chat templates and documentation; each entry cites its source. The per-model
builders with xgrammar's names (``get_gemma_4_structural_tag``, ...) live in
:mod:`xg2_jax._src.model_formats_builders`.

Example:
    >>> import xg2_jax as xg
    >>> tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    ...     "type": "object", "properties": {"city": {"type": "string"}}}}}]
    >>> tag = xg.get_model_structural_tag("qwen3", tools, reasoning=False)
    >>> tag.format.type
    'triggered_tags'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from xg2_jax._src.structural_tag import StructuralTag
from xg2_jax._src.tool_params import tool_to_dict

__all__ = ["FunctionTool", "get_model_structural_tag", "normalize_tools",
           "register_model_structural_tag", "resolve_tool_choice", "supported_models"]

# True / "enabled" / "required", "auto" / "optional", False / "disabled" / "none"
ReasoningMode = Union[bool, str]



# --------------------------------------------------------------------------------------------
# Tools and tool_choice (OpenAI Chat Completions shapes)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionTool:
    """One callable tool: the name the model writes and the JSON Schema of its arguments.
    ``builtin_type`` is a builtin (hosted) tool's provider type (``web_search_preview``, ...;
    None for a function tool)."""

    name: str
    parameters: Union[dict, bool]
    builtin_type: Optional[str] = field(default=None, repr=False)


def normalize_tools(tools: Any, *, builtin: bool = False) -> list[FunctionTool]:
    """Reads an OpenAI-style tools list.

    Args:
        tools: ``None`` or a list of ``{"type": "function", "function": {"name": ...,
            "description": ..., "parameters": {...}}}`` (dicts or ``FunctionToolParam``
            objects); the bare inner ``{"name": ..., "parameters": ...}`` form is accepted too. Missing or None ``parameters``, or ``"strict": False``, leave the arguments unconstrained (the ``True`` schema, as in xgrammar).

    Returns:
        The tools, in order.

    Raises:
        ValueError: a tool that is not a function tool, has no name, or repeats a name.

    Example:
        >>> normalize_tools([{"type": "function", "function": {"name": "f"}}])
        [FunctionTool(name='f', parameters=True)]
    """
    if tools is None:
        return []
    if isinstance(tools, (str, bytes, dict)) or not hasattr(tools, "__iter__"):
        raise ValueError(f"tools must be a list of tool objects, got {type(tools).__name__}")
    out: list[FunctionTool] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        tool = tool_to_dict(tool)
        if not isinstance(tool, dict):
            raise ValueError(f"tools[{i}] must be a dict, got {type(tool).__name__}")
        if tool.get("type", "function") != "function":     # a builtin (hosted) tool
            if not builtin:
                raise ValueError(f"tools[{i}]: unsupported tool type {tool.get('type')!r} "
                                 "(only 'function' tools)")
            out.append(_builtin_tool(tool, i, seen))
            continue
        if "function" in tool:
            function = tool["function"]
        else:
            function = tool
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                or not function["name"]:
            raise ValueError(f"tools[{i}].function.name: a function tool needs a non-empty "
                             "name (str)")
        name = function["name"]
        if name in seen:
            raise ValueError(f"tools[{i}]: duplicate tool name {name!r}")
        seen.add(name)
        parameters = function.get("parameters")
        # Unconstrained arguments (the True schema), as xgrammar: no parameters, or a
        # function marked strict=False.
        if parameters is None or function.get("strict") is False:
            parameters = True
        if not isinstance(parameters, (dict, bool)):
            raise ValueError(f"tools[{i}].function.parameters ({name!r}): must be a JSON Schema "
                             "object")
        out.append(FunctionTool(name, parameters))
    return out


def _builtin_tool(tool: dict, i: int, seen: set) -> FunctionTool:
    """A builtin (hosted) tool ``{"type": T, "name": ..., "parameters": {...}}`` (xgrammar's
    BuiltinToolParam): the model writes ``name`` (default ``T``)."""
    from xg2_jax._src.tool_params import BuiltinToolParam

    try:
        param = BuiltinToolParam(**tool)
    except (TypeError, ValueError) as e:
        raise ValueError(f"tools[{i}]: {e}") from None
    if param.name in seen:
        raise ValueError(f"tools[{i}]: duplicate tool name {param.name!r}")
    seen.add(param.name)
    parameters = True if param.parameters is None else param.parameters
    if not isinstance(parameters, (dict, bool)):
        raise ValueError(f"tools[{i}].parameters ({param.name!r}): must be a JSON Schema object")
    return FunctionTool(param.name, parameters, builtin_type=param.type)


def resolve_tool_choice(tools: list[FunctionTool], tool_choice: Any) -> tuple[list[FunctionTool],
                                                                               str]:
    """Applies ``tool_choice`` to the tools.

    Args:
        tools: the normalized tools.
        tool_choice: ``"auto"``, ``"required"``, ``"none"``,
            ``{"type": "function", "function": {"name": NAME}}`` or OpenAI's
            ``{"type": "allowed_tools", "allowed_tools": {"mode": ..., "tools": [...]}}``.

    Returns:
        ``(callable tools, mode)`` where mode is ``"auto"``, ``"required"`` or ``"none"``; a
        named function gives ``([that tool], "required")``.

    Raises:
        ValueError: an unknown choice, a named tool that is not in ``tools``, or
            ``"required"`` with no tools.
    """
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "allowed_tools":
        return _allowed_tools(tools, tool_choice)
    if isinstance(tool_choice, dict) and isinstance(tool_choice.get("type"), str) \
            and tool_choice["type"] != "function":
        # A builtin tool's type (xgrammar's BuiltinToolChoiceParam): a call to that tool.
        matched = [t for t in tools if t.builtin_type == tool_choice["type"]]
        if len(matched) != 1:
            raise ValueError("Builtin tool choice must match exactly one builtin tool, "
                             f"got {len(matched)} matches.")
        return matched, "required"
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        if tool_choice.get("type") != "function" or not isinstance(function, dict) \
                or not isinstance(function.get("name"), str):
            raise ValueError("tool_choice must be 'auto', 'required', 'none', "
                             "{'type': 'function', 'function': {'name': ...}} or "
                             f"{{'type': 'allowed_tools', ...}}, got {tool_choice!r}")
        return _named(tools, function["name"]), "required"
    if tool_choice not in ("auto", "required", "none"):
        raise ValueError(f"unknown tool_choice {tool_choice!r}; expected 'auto', 'required', "
                         "'none' or a {'type': 'function', ...} object")
    if tool_choice == "required" and not tools:
        raise ValueError("tool_choice='required' needs at least one tool")
    if tool_choice == "none":
        return [], "none"
    return tools, tool_choice


def _named(tools: list[FunctionTool], name: str) -> list[FunctionTool]:
    chosen = [t for t in tools if t.name == name]
    if not chosen:
        known = ", ".join(t.name for t in tools) or "none"
        raise ValueError(f"tool_choice names unknown tool {name!r} (tools: {known})")
    return chosen


def _allowed_tools(tools: list[FunctionTool], tool_choice: dict) -> tuple[list[FunctionTool], str]:
    """OpenAI's ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required",
    "tools": [{"type": "function", "function": {"name": ...}}, ...]}}``."""
    allowed = tool_choice.get("allowed_tools")
    refs = allowed.get("tools") if isinstance(allowed, dict) else None
    mode = allowed.get("mode", "auto") if isinstance(allowed, dict) else None
    if mode not in ("auto", "required") or not isinstance(refs, list):
        raise ValueError("tool_choice 'allowed_tools' needs {'mode': 'auto' | 'required', "
                         f"'tools': [...]}}, got {tool_choice!r}")
    names, types = set(), set()
    for ref in refs:
        function = ref.get("function") if isinstance(ref, dict) else None
        if isinstance(ref, dict) and isinstance(ref.get("type"), str) and ref["type"] != "function":
            if not any(t.builtin_type == ref["type"] for t in tools):
                raise ValueError(f"Allowed builtin tools are not found in the tools list: "
                                 f"{ref['type']!r}.")
            types.add(ref["type"])
            continue
        if not isinstance(ref, dict) or not isinstance(function, dict) \
                or not isinstance(function.get("name"), str):
            raise ValueError(f"allowed_tools: a tool reference is {{'type': 'function', "
                             f"'function': {{'name': ...}}}} or {{'type': BUILTIN_TYPE}}, got {ref!r}")
        _named([t for t in tools if t.builtin_type is None], function["name"])
        names.add(function["name"])
    chosen = [t for t in tools
              if (t.builtin_type is None and t.name in names) or t.builtin_type in types]
    if mode == "required" and not chosen:
        raise ValueError("tool_choice 'allowed_tools' with mode 'required' needs at least one tool")
    return chosen, mode if chosen else "none"


def reasoning_mode(reasoning: ReasoningMode) -> str:
    """The reasoning mode: ``"required"`` (``True``, ``"enabled"``, ``"required"``),
    ``"optional"`` (``"auto"``, ``"optional"``) or ``"none"`` (``False``, ``"disabled"``,
    ``"none"``); anything else raises ValueError."""
    if reasoning is True or reasoning in ("enabled", "required"):
        return "required"
    if reasoning is False or reasoning in ("disabled", "none"):
        return "none"
    if reasoning in ("auto", "optional"):
        return "optional"
    raise ValueError(f"reasoning must be a bool or one of 'enabled', 'disabled', 'auto' "
                     f"('required', 'optional', 'none' also work), got {reasoning!r}")


# --------------------------------------------------------------------------------------------
# Model names
# --------------------------------------------------------------------------------------------
_ALIASES = {
    "llama": "llama3", "llama3_1": "llama3", "llama3_2": "llama3", "llama_3": "llama3",
    "llama_3_1": "llama3", "llama_3_2": "llama3",
    "qwen_3": "qwen3", "qwen2_5": "qwen3", "qwen3_5": "qwen3_coder", "qwen_3_5": "qwen3_coder",
    "qwen_3_coder": "qwen3_coder",
    "deepseek_v3_1_terminus": "deepseek_v3_1", "deepseek_v31": "deepseek_v3_1",
    "deepseek_v32": "deepseek_v3_2", "deepseek_v41": "deepseek_v4_1", "kimi3": "kimi_k3",
    "gpt_oss": "harmony", "kimi": "kimi_k2", "kimi_k2_thinking": "kimi_k2",
    "glm4_5": "glm4", "glm4_6": "glm4", "glm_4": "glm4", "glm_4_5": "glm4",
    "glm_4_6": "glm4", "glm_4_7": "glm4_7",
    "minimax_m2": "minimax",
    "gemma4": "gemma_4", "mimo_v2_6": "mimo", "exaone4": "exaone", "exaone_4": "exaone",
}
_SPECIAL_MODELS = ("harmony", "kimi_k3", "mistral")
_BUILTIN_TOOL_MODELS = ("harmony",)     # formats that write builtin (hosted) tool calls


def supported_models() -> list[str]:
    """The canonical model names :func:`get_model_structural_tag` accepts (aliases aside)."""
    from xg2_jax._src.model_formats_text import TEXT_SYNTAXES

    return sorted([*TEXT_SYNTAXES, *_SPECIAL_MODELS])


def canonical_model_name(model: str) -> str:
    """Lower-cases ``model``, maps ``-``/``.`` to ``_`` and resolves aliases.

    Raises:
        ValueError: the model is not known.
    """
    if not isinstance(model, str):
        raise ValueError(f"model must be a str, got {type(model).__name__}")
    key = model.strip().lower().replace("-", "_").replace(".", "_")
    key = _ALIASES.get(key, key)
    if key not in supported_models():
        raise ValueError(f"Unknown format type (model) {model!r}; known: "
                         f"{', '.join(supported_models())}")
    return key


# --------------------------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------------------------
def _turn_format(key: str, tools: list[FunctionTool], mode: str, think: str, parallel: bool,
                 reasoning_prefilled: bool | None, exclude_special_tokens: bool):
    from xg2_jax._src import model_formats_special
    from xg2_jax._src.model_formats_text import TEXT_SYNTAXES, text_syntax_format

    if key in TEXT_SYNTAXES:
        return text_syntax_format(TEXT_SYNTAXES[key], tools, mode, think, parallel,
                                  reasoning_prefilled, exclude_special_tokens)
    if key == "kimi_k3":
        return model_formats_special.kimi_k3_format(
            tools, mode, think, parallel, exclude_special_tokens=exclude_special_tokens)
    if key == "harmony":
        return model_formats_special.harmony_format(
            tools, mode, think, parallel, exclude_special_tokens=exclude_special_tokens)
    return model_formats_special.mistral_format(tools, mode, think, parallel)


def _marker_tokens(key: str, token_markers: bool | None) -> tuple[str, ...]:
    """The markers to bind as tokens (empty: none)."""
    from xg2_jax._src.model_formats_text import TEXT_SYNTAXES

    syntax = TEXT_SYNTAXES.get(key)
    markers = syntax.marker_tokens if syntax else None
    if token_markers is None:
        return markers if markers and syntax.token_markers_default else ()
    if not isinstance(token_markers, bool):
        raise ValueError(f"token_markers must be a bool or None, got {token_markers!r}")
    if token_markers and not markers:
        known = sorted(k for k, s in TEXT_SYNTAXES.items() if s.marker_tokens)
        raise ValueError(f"token_markers is not supported for model {key!r} (supported: "
                         f"{', '.join(known)})")
    return markers if token_markers else ()


# Model formats added with register_model_structural_tag: name -> builder, and name -> the
# marker strings token_markers=True binds as tokens (only names that declare them).
_structural_tag_registry: dict[str, Callable[..., StructuralTag]] = {}
_structural_tag_marker_tokens: dict[str, list[str]] = {}


def register_model_structural_tag(name: str, *, marker_tokens: list[str] | None = None):
    """A decorator that adds a model format under ``name`` to :func:`get_model_structural_tag`.

    The builder is called as ``builder(tools, tool_choice, reasoning, any_order=...,
    exclude_special_tokens=..., max_whitespace_cnt=..., parallel_tool_calls=...)`` with the
    caller's arguments (the per-model ``get_*_structural_tag`` functions have this form) and
    returns a :class:`StructuralTag`. Registering a name again replaces it.

    Args:
        name: the model name as passed to :func:`get_model_structural_tag` (exact).
        marker_tokens: marker strings that are single tokens of the model's tokenizer; they
            make ``token_markers=True`` available for the name (``None``: not available).

    Returns:
        The decorator; it returns the builder unchanged.

    Example:
        >>> from xg2_jax.builtin_structural_tag import get_qwen_3_structural_tag
        >>> _ = register_model_structural_tag("my_qwen")(get_qwen_3_structural_tag)
        >>> get_model_structural_tag("my_qwen", []).type
        'structural_tag'
        >>> del _structural_tag_registry["my_qwen"]
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty str, got {name!r}")

    def register(builder: Callable[..., StructuralTag]) -> Callable[..., StructuralTag]:
        _structural_tag_registry[name] = builder
        if marker_tokens is None:
            _structural_tag_marker_tokens.pop(name, None)
        else:
            _structural_tag_marker_tokens[name] = [str(m) for m in marker_tokens]
        return builder

    return register


def _registered_structural_tag(model: str, tools, tool_choice, reasoning, token_markers,
                               **options) -> StructuralTag:
    from xg2_jax._src.model_formats_markers import bind_marker_tokens

    if token_markers is not None and not isinstance(token_markers, bool):
        raise ValueError(f"token_markers must be a bool or None, got {token_markers!r}")
    markers = _structural_tag_marker_tokens.get(model)
    if token_markers and markers is None:
        raise ValueError(f"token_markers is not supported for model {model!r} (registered "
                         "without marker_tokens)")
    tag = _structural_tag_registry[model](tools, tool_choice, reasoning, **options)
    if not isinstance(tag, StructuralTag):
        raise ValueError(f"the builder registered for {model!r} returned "
                         f"{type(tag).__name__}, not a StructuralTag")
    if token_markers and markers:
        tag = StructuralTag(format=bind_marker_tokens(tag.format, markers))
    return tag


def get_model_structural_tag(
    model: str,
    tools: list[dict] | None = None,
    tool_choice: Union[str, dict, None] = "auto",
    reasoning: ReasoningMode = "enabled",
    force_reasoning: bool = False,
    any_order: bool = False,
    exclude_special_tokens: bool = True,
    max_whitespace_cnt: int | None = None,
    parallel_tool_calls: bool = True,
    token_markers: bool | None = None,
    *,
    reasoning_prefilled: bool | None = None,
) -> StructuralTag:
    """The structural tag for one assistant turn of ``model`` with these tools.

    The arguments are xgrammar 0.2.9's (same names, order and defaults, but
    ``token_markers``, see below).

    Args:
        model: the model format: ``llama3`` (``llama``; Llama 3.1/3.2), ``qwen3``
            (``qwen_3``), ``qwen3_coder`` (``qwen_3_5``, ``qwen_3_coder``), ``deepseek_r1``,
            ``deepseek_v3_1``, ``deepseek_v3_2``, ``deepseek_v4``, ``deepseek_v4_1``,
            ``harmony`` (``gpt-oss``), ``mistral``, ``kimi_k2`` (``kimi``), ``glm4``
            (GLM-4.5/4.6), ``glm4_7`` (``glm_4_7``; GLM-4.7, whose prompt opens the think block), ``minimax`` (MiniMax-M2), ``minimax_m3``, ``gemma_4``, ``kimi_k3``,
            ``mimo`` (MiMo-V2.6), ``exaone`` (EXAONE 4.0), ``cohere`` (Command, cmd5). Case, ``-`` and ``.`` do not matter.
            A name added with :func:`register_model_structural_tag` calls its builder.
        tools: OpenAI-style ``[{"type": "function", "function": {"name", "description",
            "parameters"}}]``, and builtin (hosted) tools ``{"type": T, "name": NAME,
            "parameters": {...}}`` (xgrammar's BuiltinToolParam; NAME defaults to T), which
            only ``harmony`` can call (``to=NAME code``); the other formats leave them out.
        tool_choice: ``"auto"`` (text and any number of calls; ``None`` too), ``"required"``
            (at least one call), ``"none"`` (text only; the tool-call marker is forbidden),
            ``{"type": "function", "function": {"name": NAME}}`` (exactly one call, to NAME),
            ``{"type": T}`` (one call to the builtin tool of type T), or
            ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required",
            "tools": [function references]}}`` (those tools only, in that mode).
        reasoning: for models that think: ``"enabled"``/``True`` (the turn starts with a
            reasoning block), ``"auto"`` (the block may be left out), ``"disabled"``/``False``
            (no block; the think markers are forbidden). Ignored by llama3 and mistral.
        force_reasoning: deprecated in xgrammar 0.2.9 and without effect there; accepted and
            ignored.
        any_order: tool arguments' properties may come in any order.
        exclude_special_tokens: keep the model's markers (think tags, call markers) out of
            free text, reasoning and (gemma_4) argument strings (``False``: allow them as text).
        max_whitespace_cnt: at most this many consecutive whitespace characters in tool
            arguments (None: no limit).
        parallel_tool_calls: ``False`` allows at most one call (stop after the first).
        token_markers: match the model's control markers as their special tokens instead of
            as text (compile with the model's tokenizer). ``None``: the model's default. For
            ``gemma_4`` (every Gemma 4 marker is a special token of its tokenizer) the tag
            keeps its markers as text and lists them in ``marker_tokens``: a compile with a
            tokenizer that has them as special tokens binds them, while
            ``Grammar.from_structural_tag`` without one reads them as text (as xgrammar).
            False for the others. Supported for qwen3, qwen3_coder, glm4, glm4_7 and gemma_4.
        reasoning_prefilled: the prompt already ends with the opening think tag, so the
            output starts inside the reasoning; ``None`` uses the model's chat-template default
            (True for deepseek_r1/v3.1/v3.2/v4/v4.1, glm4_7, minimax_m3, exaone and cohere with
            reasoning on;
            False otherwise: with ``reasoning="auto"`` the model opens the block itself).

    Returns:
        The :class:`StructuralTag`, ready for ``GrammarCompiler.compile_structural_tag``
        (``to_dict()`` gives the JSON envelope).

    Raises:
        ValueError: unknown model, malformed tools, an unknown tool in ``tool_choice``, a bad
            reasoning mode, or ``token_markers`` for a model that does not declare markers.

    Example:
        >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
        >>> get_model_structural_tag("llama3.1", tools).format.triggers
        ('{"name": ',)
    """
    del force_reasoning
    from xg2_jax._src.model_formats_markers import bind_marker_tokens, with_json_options

    if isinstance(model, str) and model in _structural_tag_registry:
        return _registered_structural_tag(
            model, tools, tool_choice, reasoning, token_markers, any_order=any_order,
            exclude_special_tokens=exclude_special_tokens, max_whitespace_cnt=max_whitespace_cnt,
            parallel_tool_calls=parallel_tool_calls,
            **({} if reasoning_prefilled is None else {"reasoning_prefilled": reasoning_prefilled}))
    key = canonical_model_name(model)
    markers = _marker_tokens(key, token_markers)
    callable_tools, mode = resolve_tool_choice(normalize_tools(tools, builtin=True), tool_choice)
    if key not in _BUILTIN_TOOL_MODELS:
        # Only Harmony has a wire format for builtin (hosted) tools; the others cannot call
        # them, so they are left out, as xgrammar does.
        callable_tools = [t for t in callable_tools if t.builtin_type is None]
        if mode == "required" and not callable_tools:
            raise ValueError(f"no function tool to call: model {key!r} has no format for builtin "
                             "(hosted) tools (only harmony)")
    think = reasoning_mode(reasoning)
    if not isinstance(parallel_tool_calls, bool):
        raise ValueError(f"parallel_tool_calls must be a bool, got {parallel_tool_calls!r}")
    if isinstance(tool_choice, dict) and tool_choice.get("type") != "allowed_tools":
        # A named function or builtin tool is one call to it (xgrammar's "forced").
        parallel_tool_calls = False
    fmt = _turn_format(key, callable_tools, mode, think, parallel_tool_calls,
                       reasoning_prefilled, bool(exclude_special_tokens))
    fmt = with_json_options(fmt, any_order=bool(any_order), max_whitespace_cnt=max_whitespace_cnt,
                            keep_excludes=bool(exclude_special_tokens))
    if markers and token_markers is None:
        # The model's default: bound when compiled with a tokenizer that has them as special
        # tokens, text otherwise (Grammar.from_structural_tag without a tokenizer, as xgrammar).
        return StructuralTag(format=fmt, marker_tokens=markers)
    if markers:
        fmt = bind_marker_tokens(fmt, markers)
    return StructuralTag(format=fmt)
