"""Built-in structural tags for the reasoning and tool-call output of common model families.

:func:`get_model_structural_tag` turns an OpenAI-style ``tools`` list and ``tool_choice`` into
the structural tag (a JSON-ready ``dict``) that constrains one assistant turn of the given
model family: an optional or required reasoning block, then free text in which tool calls are
written in the model's own wire format, with every call's arguments checked against that
tool's JSON Schema.

Each family is described by a :class:`ToolCallSyntax` (or, for the special-token formats of
Mistral and gpt-oss Harmony, by its own builder in :mod:`xg2_jax._src.model_formats_special`).
The wire formats are written from the models' published chat templates and documentation;
each entry of ``_TEXT_SYNTAXES`` cites its source.

Example:
    >>> import xg2_jax as xg
    >>> tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    ...     "type": "object", "properties": {"city": {"type": "string"}}}}}]
    >>> tag = xg.get_model_structural_tag("qwen3", tools, reasoning=False)
    >>> tag["format"]["type"]
    'triggered_tags'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Union

from xg2_jax._src.structural_tag import (
    AnyTextFormat,
    ConstStringFormat,
    JSONSchemaFormat,
    OptionalFormat,
    RegexFormat,
    SequenceFormat,
    StructuralTag,
    TagFormat,
    TagsWithSeparatorFormat,
    TriggeredTagsFormat,
)

__all__ = ["FunctionTool", "ToolCallSyntax", "get_model_structural_tag", "normalize_tools",
           "resolve_tool_choice", "supported_models"]

ReasoningMode = Union[bool, str]     # True / "required", "optional", False

THINK_BEGIN, THINK_END = "<think>", "</think>"
THINK_TAGS = [THINK_BEGIN, THINK_END]
_EMPTY_PARAMETERS = {"type": "object", "properties": {}}


# --------------------------------------------------------------------------------------------
# Tools and tool_choice (OpenAI Chat Completions shapes)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FunctionTool:
    """One function tool: its name and the JSON Schema of its arguments."""

    name: str
    parameters: Union[dict, bool]


def normalize_tools(tools: Any) -> list[FunctionTool]:
    """Reads an OpenAI-style tools list.

    Args:
        tools: ``None`` or a list of ``{"type": "function", "function": {"name": ...,
            "description": ..., "parameters": {...}}}``; the bare inner ``{"name": ...,
            "parameters": ...}`` form is accepted too. Missing ``parameters`` means no arguments.

    Returns:
        The tools, in order.

    Raises:
        ValueError: a tool that is not a function tool, has no name, or repeats a name.

    Example:
        >>> normalize_tools([{"type": "function", "function": {"name": "f"}}])
        [FunctionTool(name='f', parameters={'type': 'object', 'properties': {}})]
    """
    if tools is None:
        return []
    if isinstance(tools, (str, bytes, dict)) or not hasattr(tools, "__iter__"):
        raise ValueError(f"tools must be a list of tool objects, got {type(tools).__name__}")
    out: list[FunctionTool] = []
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ValueError(f"tools[{i}] must be a dict, got {type(tool).__name__}")
        if "function" in tool:
            if tool.get("type", "function") != "function":
                raise ValueError(f"tools[{i}]: unsupported tool type {tool.get('type')!r} "
                                 "(only 'function' tools)")
            function = tool["function"]
        else:
            function = tool
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                or not function["name"]:
            raise ValueError(f"tools[{i}]: a function tool needs a non-empty 'name'")
        name = function["name"]
        if name in seen:
            raise ValueError(f"tools[{i}]: duplicate tool name {name!r}")
        seen.add(name)
        parameters = function.get("parameters")
        if parameters is None:
            parameters = dict(_EMPTY_PARAMETERS)
        if not isinstance(parameters, (dict, bool)):
            raise ValueError(f"tools[{i}] ({name!r}): 'parameters' must be a JSON Schema object")
        out.append(FunctionTool(name, parameters))
    return out


def resolve_tool_choice(tools: list[FunctionTool], tool_choice: Any) -> tuple[list[FunctionTool],
                                                                               str]:
    """Applies ``tool_choice`` to the tools.

    Args:
        tools: the normalized tools.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or
            ``{"type": "function", "function": {"name": NAME}}``.

    Returns:
        ``(callable tools, mode)`` where mode is ``"auto"``, ``"required"`` or ``"none"``; a
        named function gives ``([that tool], "required")``.

    Raises:
        ValueError: an unknown choice, a named tool that is not in ``tools``, or
            ``"required"`` with no tools.
    """
    if tool_choice is None:
        tool_choice = "auto"
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        if tool_choice.get("type") != "function" or not isinstance(function, dict) \
                or not isinstance(function.get("name"), str):
            raise ValueError("tool_choice must be 'auto', 'required', 'none' or "
                             "{'type': 'function', 'function': {'name': ...}}, got "
                             f"{tool_choice!r}")
        name = function["name"]
        chosen = [t for t in tools if t.name == name]
        if not chosen:
            known = ", ".join(t.name for t in tools) or "none"
            raise ValueError(f"tool_choice names unknown tool {name!r} (tools: {known})")
        return chosen, "required"
    if tool_choice not in ("auto", "required", "none"):
        raise ValueError(f"unknown tool_choice {tool_choice!r}; expected 'auto', 'required', "
                         "'none' or a {'type': 'function', ...} object")
    if tool_choice == "required" and not tools:
        raise ValueError("tool_choice='required' needs at least one tool")
    if tool_choice == "none":
        return [], "none"
    return tools, tool_choice


def reasoning_mode(reasoning: ReasoningMode) -> str:
    """``True``/``"required"`` -> ``"required"``, ``"optional"``, ``False``/``"none"`` ->
    ``"none"``; anything else raises ValueError."""
    if reasoning is True or reasoning == "required":
        return "required"
    if reasoning is False or reasoning == "none":
        return "none"
    if reasoning == "optional":
        return "optional"
    raise ValueError(f"reasoning must be True, False, 'required', 'optional' or 'none', "
                     f"got {reasoning!r}")


def reasoning_block(mode: str, *, prefilled: bool, excludes: list[str],
                    begin: str = THINK_BEGIN, end: str = THINK_END):
    """The leading ``<think> ... </think>`` block for a reasoning mode (None for ``"none"``).

    ``prefilled``: the chat template already ends the prompt with ``begin``, so the output
    starts inside the block (only ``end`` is generated).
    """
    if mode == "none":
        return None
    block = TagFormat(begin="" if prefilled else begin,
                      content=AnyTextFormat(excludes=excludes), end=end)
    return OptionalFormat(content=block) if mode == "optional" else block


# --------------------------------------------------------------------------------------------
# Text-marker tool-call syntaxes
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolCallSyntax:
    """How one model family writes tool calls with plain-text markers.

    Attributes:
        source: where the format comes from (chat template / documentation).
        call_tag: builds the tag of one call to a tool (``begin`` names the tool).
        trigger: the text that starts tool calling in free text.
        section: ``(begin, separator, end)`` when all calls of a turn sit in one wrapper
            section (the section begins with ``trigger``); None when every call is its own tag
            starting with ``trigger``.
        reasoning: the model emits ``<think>...</think>`` reasoning.
        reasoning_prefilled: default for whether the chat template's generation prompt
            already ends with ``<think>``.
        text_excludes: markers never allowed in free text (beyond the think tags).
        reasoning_excludes: markers never allowed inside reasoning (beyond the think tags).
    """

    source: str
    call_tag: Callable[[FunctionTool], TagFormat]
    trigger: str
    section: tuple[str, str, str] | None = None
    reasoning: bool = True
    reasoning_prefilled: bool = False
    text_excludes: tuple[str, ...] = ()
    reasoning_excludes: tuple[str, ...] = ()


def _json_args(tool: FunctionTool) -> JSONSchemaFormat:
    return JSONSchemaFormat(json_schema=tool.parameters)


def _xml_args(style: str) -> Callable[[FunctionTool], JSONSchemaFormat]:
    return lambda tool: JSONSchemaFormat(json_schema=tool.parameters, style=style)


def _llama3_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f'{{"name": "{tool.name}", "parameters": ', content=_json_args(tool),
                     end="}")


def _qwen3_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f'<tool_call>\n{{"name": "{tool.name}", "arguments": ',
                     content=_json_args(tool), end="}\n</tool_call>")


def _qwen3_coder_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f"<tool_call>\n<function={tool.name}>\n",
                     content=_xml_args("qwen_xml")(tool), end="</function>\n</tool_call>")


_DS_CALLS_BEGIN, _DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def _deepseek_r1_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f"{_DS_CALL_BEGIN}function{_DS_SEP}{tool.name}\n```json\n",
                     content=_json_args(tool), end=f"\n```{_DS_CALL_END}")


def _deepseek_v31_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f"{_DS_CALL_BEGIN}{tool.name}{_DS_SEP}", content=_json_args(tool),
                     end=_DS_CALL_END)


def _dsml_invoke(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f'<｜DSML｜invoke name="{tool.name}">\n',
                     content=_xml_args("deepseek_xml")(tool), end="</｜DSML｜invoke>\n")


def _kimi_k2_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(
        begin=f"<|tool_call_begin|>functions.{tool.name}:",
        content=SequenceFormat(elements=[RegexFormat(pattern=r"[0-9]+"),
                                         ConstStringFormat(value="<|tool_call_argument_begin|>"),
                                         _json_args(tool)]),
        end="<|tool_call_end|>")


def _glm4_call(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f"<tool_call>{tool.name}", content=_xml_args("glm_xml")(tool),
                     end="</tool_call>")


def _minimax_invoke(tool: FunctionTool) -> TagFormat:
    return TagFormat(begin=f'<invoke name="{tool.name}">\n',
                     content=_xml_args("minimax_xml")(tool), end="</invoke>\n")


_GLM_ARG_MARKERS = ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")

_TEXT_SYNTAXES: dict[str, ToolCallSyntax] = {
    # Meta, "Llama 3.1 model card and prompt formats", JSON based tool calling
    # (https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/): the reply is
    # {"name": NAME, "parameters": {...}} (no <|python_tag|>, which is for built-in tools) and
    # ends with <|eot_id|>. Llama 3.2 uses the same JSON form.
    "llama3": ToolCallSyntax(
        source="https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/",
        call_tag=_llama3_call, trigger='{"name": ', reasoning=False),
    # Qwen3 tokenizer_config.json chat_template (Hermes-style tool calls):
    # <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>, reasoning <think>..</think>.
    "qwen3": ToolCallSyntax(
        source="Qwen/Qwen3-8B tokenizer_config.json chat_template",
        call_tag=_qwen3_call, trigger="<tool_call>", reasoning_excludes=("<tool_call>",),
        text_excludes=("</tool_call>",)),
    # Qwen3-Coder chat_template.jinja (and Qwen3.5, which adopted the same XML form):
    # <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>
    "qwen3_coder": ToolCallSyntax(
        source="Qwen/Qwen3-Coder-30B-A3B-Instruct chat_template.jinja; qwen3coder_tool_parser",
        call_tag=_qwen3_coder_call, trigger="<tool_call>", reasoning_excludes=("<tool_call>",),
        text_excludes=("</tool_call>",)),
    # DeepSeek-R1 tokenizer_config.json chat_template (the 0528 template prefills "<think>\n"):
    # <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```
    # <｜tool▁call▁end｜> joined by "\n", then <｜tool▁calls▁end｜>.
    "deepseek_r1": ToolCallSyntax(
        source="deepseek-ai/DeepSeek-R1-0528 tokenizer_config.json chat_template",
        call_tag=_deepseek_r1_call, trigger=_DS_CALLS_BEGIN,
        section=(_DS_CALLS_BEGIN, "\n", _DS_CALLS_END), reasoning_prefilled=True,
        reasoning_excludes=(_DS_CALLS_BEGIN,)),
    # DeepSeek-V3.1 README "Tool call" and assets/chat_template: thinking mode prompt ends with
    # <think>; calls are <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>.
    "deepseek_v3_1": ToolCallSyntax(
        source="deepseek-ai/DeepSeek-V3.1 README (Chat Template / ToolCall)",
        call_tag=_deepseek_v31_call, trigger=_DS_CALLS_BEGIN,
        section=(_DS_CALLS_BEGIN, "", _DS_CALLS_END), reasoning_prefilled=True,
        reasoning_excludes=(_DS_CALLS_BEGIN,)),
    # DeepSeek-V3.2 encoding/encoding_dsv32.py (DSML): <｜DSML｜function_calls>\n<｜DSML｜invoke
    # name="NAME">\n<｜DSML｜parameter name="P" string="true|false">V</｜DSML｜parameter>\n...
    # </｜DSML｜invoke>\n</｜DSML｜function_calls>; thinking mode prompt ends with <think>.
    "deepseek_v3_2": ToolCallSyntax(
        source="deepseek-ai/DeepSeek-V3.2 encoding/encoding_dsv32.py",
        call_tag=_dsml_invoke, trigger="<｜DSML｜function_calls>",
        section=("<｜DSML｜function_calls>\n", "", "</｜DSML｜function_calls>"),
        reasoning_prefilled=True, reasoning_excludes=("<｜DSML｜function_calls>",)),
    # DeepSeek-V4: DSML as V3.2 with the wrapper renamed to <｜DSML｜tool_calls>. Not checked
    # against a published template here: follows xgrammar 0.2.9's "deepseek_v4" rendering.
    "deepseek_v4": ToolCallSyntax(
        source="DeepSeek-V4 DSML (as rendered by xgrammar 0.2.9 'deepseek_v4'; unverified)",
        call_tag=_dsml_invoke, trigger="<｜DSML｜tool_calls>",
        section=("<｜DSML｜tool_calls>\n", "", "</｜DSML｜tool_calls>"),
        reasoning_prefilled=True, reasoning_excludes=("<｜DSML｜tool_calls>",)),
    # Kimi-K2 docs/tool_call_guidance.md: <|tool_calls_section_begin|><|tool_call_begin|>
    # functions.NAME:IDX<|tool_call_argument_begin|>{json}<|tool_call_end|>...
    # <|tool_calls_section_end|>; K2-Thinking adds <think>...</think>.
    "kimi_k2": ToolCallSyntax(
        source="moonshotai/Kimi-K2-Instruct docs/tool_call_guidance.md",
        call_tag=_kimi_k2_call, trigger="<|tool_calls_section_begin|>",
        section=("<|tool_calls_section_begin|>", "", "<|tool_calls_section_end|>"),
        text_excludes=("<|tool_call_begin|>",),
        reasoning_excludes=("<|tool_calls_section_begin|>", "<|tool_call_begin|>")),
    # GLM-4.5/4.6 chat_template.jinja: <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V
    # </arg_value>\n</tool_call> (GLM-4.7 drops the newlines; glm_xml accepts both).
    "glm4": ToolCallSyntax(
        source="zai-org/GLM-4.5 chat_template.jinja; GLM-4.7 chat_template.jinja",
        call_tag=_glm4_call, trigger="<tool_call>",
        text_excludes=("</tool_call>", *_GLM_ARG_MARKERS),
        reasoning_excludes=("<tool_call>", "</tool_call>", *_GLM_ARG_MARKERS)),
    # MiniMax-M2 chat_template.jinja / docs/tool_calling_guide.md:
    # <minimax:tool_call>\n<invoke name="NAME">\n<parameter name="P">V</parameter>\n</invoke>\n
    # </minimax:tool_call>; reasoning in <think>...</think>.
    "minimax": ToolCallSyntax(
        source="MiniMaxAI/MiniMax-M2 chat_template.jinja; docs/tool_calling_guide.md",
        call_tag=_minimax_invoke, trigger="<minimax:tool_call>",
        section=("<minimax:tool_call>\n", "", "</minimax:tool_call>"),
        reasoning_excludes=("<minimax:tool_call>",)),
}

_ALIASES = {
    "llama": "llama3", "llama3_1": "llama3", "llama3_2": "llama3", "llama_3": "llama3",
    "llama_3_1": "llama3", "llama_3_2": "llama3",
    "qwen_3": "qwen3", "qwen2_5": "qwen3", "qwen3_5": "qwen3_coder", "qwen_3_5": "qwen3_coder",
    "qwen_3_coder": "qwen3_coder",
    "deepseek_v3_1_terminus": "deepseek_v3_1", "deepseek_v31": "deepseek_v3_1",
    "deepseek_v32": "deepseek_v3_2",
    "gpt_oss": "harmony", "kimi": "kimi_k2", "kimi_k2_thinking": "kimi_k2",
    "glm4_5": "glm4", "glm4_6": "glm4", "glm4_7": "glm4", "glm_4": "glm4", "glm_4_5": "glm4",
    "glm_4_6": "glm4", "glm_4_7": "glm4", "minimax_m2": "minimax",
}
_SPECIAL_MODELS = ("harmony", "mistral")


def supported_models() -> list[str]:
    """The canonical model names :func:`get_model_structural_tag` accepts (aliases aside)."""
    return sorted([*_TEXT_SYNTAXES, *_SPECIAL_MODELS])


def canonical_model_name(model: str) -> str:
    """Lower-cases ``model``, maps ``-``/``.`` to ``_`` and resolves aliases.

    Raises:
        ValueError: the model is not known.
    """
    if not isinstance(model, str):
        raise ValueError(f"model must be a str, got {type(model).__name__}")
    key = model.strip().lower().replace("-", "_").replace(".", "_")
    key = _ALIASES.get(key, key)
    if key not in _TEXT_SYNTAXES and key not in _SPECIAL_MODELS:
        raise ValueError(f"unknown model format {model!r}; known: {', '.join(supported_models())}")
    return key


def text_syntax_format(syntax: ToolCallSyntax, tools: list[FunctionTool], mode: str,
                       reasoning: str, parallel_tool_calls: bool,
                       reasoning_prefilled: bool | None):
    """The format for a :class:`ToolCallSyntax` (see :func:`get_model_structural_tag`)."""
    think = list(THINK_TAGS) if syntax.reasoning else []
    text_excludes = [*think, *syntax.text_excludes]
    if mode == "none" or not tools:
        body = AnyTextFormat(excludes=[*text_excludes, syntax.trigger])
    else:
        calls = [syntax.call_tag(tool) for tool in tools]
        if syntax.section is None:
            body = TriggeredTagsFormat(triggers=[syntax.trigger], tags=calls,
                                       at_least_one=mode == "required",
                                       stop_after_first=not parallel_tool_calls,
                                       excludes=text_excludes)
        else:
            begin, separator, end = syntax.section
            inner = TagsWithSeparatorFormat(tags=calls, separator=separator, at_least_one=True,
                                            stop_after_first=not parallel_tool_calls)
            # One calls section per turn: the turn ends after the section.
            body = TriggeredTagsFormat(
                triggers=[syntax.trigger], tags=[TagFormat(begin=begin, content=inner, end=end)],
                at_least_one=mode == "required", stop_after_first=True, excludes=text_excludes)
    if not syntax.reasoning:
        return body
    prefilled = syntax.reasoning_prefilled if reasoning_prefilled is None else reasoning_prefilled
    block = reasoning_block(reasoning, prefilled=prefilled,
                            excludes=[*THINK_TAGS, *syntax.reasoning_excludes])
    if block is None:
        return body
    if mode == "required":
        # With at_least_one, the first call starts right away: let the blank lines that
        # follow the reasoning block through.
        return SequenceFormat(elements=[block, RegexFormat(pattern=r"[ \n]*"), body])
    return SequenceFormat(elements=[block, body])


def get_model_structural_tag(
    model: str,
    tools: list[dict] | None = None,
    tool_choice: Union[str, dict] = "auto",
    reasoning: ReasoningMode = True,
    parallel_tool_calls: bool = True,
    *,
    reasoning_prefilled: bool | None = None,
) -> dict:
    """The structural tag for one assistant turn of ``model`` with these tools.

    Args:
        model: the model format: ``llama3`` (Llama 3.1/3.2), ``qwen3``, ``qwen3_coder``
            (also ``qwen3.5``), ``deepseek_r1``, ``deepseek_v3.1``, ``deepseek_v3.2``,
            ``deepseek_v4``, ``harmony`` (``gpt-oss``), ``mistral``, ``kimi_k2``, ``glm4``
            (GLM-4.5/4.6/4.7), ``minimax`` (MiniMax-M2). Case, ``-`` and ``.`` do not matter.
        tools: OpenAI-style ``[{"type": "function", "function": {"name", "description",
            "parameters"}}]``.
        tool_choice: ``"auto"`` (text and any number of calls), ``"required"`` (at least one
            call), ``"none"`` (text only; the tool-call marker is forbidden), or
            ``{"type": "function", "function": {"name": NAME}}`` (calls to NAME only, at
            least one).
        reasoning: for models that think: ``True``/``"required"`` (the turn starts with a
            reasoning block), ``"optional"``, ``False`` (no block; the think tags are
            forbidden). Ignored by llama3 and mistral.
        parallel_tool_calls: ``False`` allows at most one call (stop after the first).
        reasoning_prefilled: the prompt already ends with the opening think tag, so the
            output starts inside the reasoning; ``None`` uses the model's chat-template default
            (True for deepseek_r1/v3.1/v3.2/v4, False otherwise).

    Returns:
        ``{"type": "structural_tag", "format": {...}}``, ready for
        ``GrammarCompiler.compile_structural_tag``.

    Raises:
        ValueError: unknown model, malformed tools, or an unknown tool in ``tool_choice``.

    Example:
        >>> tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
        >>> get_model_structural_tag("llama3.1", tools)["format"]["triggers"]
        ['{"name": ']
    """
    key = canonical_model_name(model)
    callable_tools, mode = resolve_tool_choice(normalize_tools(tools), tool_choice)
    think = reasoning_mode(reasoning)
    if key in _TEXT_SYNTAXES:
        fmt = text_syntax_format(_TEXT_SYNTAXES[key], callable_tools, mode, think,
                                 bool(parallel_tool_calls), reasoning_prefilled)
    else:
        from xg2_jax._src import model_formats_special

        build = {"harmony": model_formats_special.harmony_format,
                 "mistral": model_formats_special.mistral_format}[key]
        fmt = build(callable_tools, mode, think, bool(parallel_tool_calls))
    return StructuralTag(format=fmt).to_dict()
