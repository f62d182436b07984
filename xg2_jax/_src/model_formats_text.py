"""Built-in model formats written as free text with tool-call markers.

Each family is a :class:`ToolCallSyntax`: its call tag, the trigger that starts tool calling in
free text, an optional section that wraps all calls of a turn, and its reasoning block. The
wire formats are written from the models' published chat templates and documentation; each
entry of :data:`TEXT_SYNTAXES` cites its source. :func:`text_syntax_format` turns a syntax,
the callable tools and the options into a plain structural-tag tree (triggered tags, tags,
sequences), so an output parser can walk the same tree.

Example:
    >>> from xg2_jax._src.model_formats_text import TEXT_SYNTAXES, text_syntax_format
    >>> fmt = text_syntax_format(TEXT_SYNTAXES["qwen3"], [], "none", "none", True, None, True)
    >>> fmt.type
    'any_text'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from xg2_jax._src.structural_tag import (
    AnyTextFormat,
    ConstStringFormat,
    JSONSchemaFormat,
    OptionalFormat,
    OrFormat,
    RegexFormat,
    SequenceFormat,
    TagFormat,
    TagsWithSeparatorFormat,
    TriggeredTagsFormat,
)

__all__ = ["TEXT_SYNTAXES", "ToolCallSyntax", "reasoning_block", "text_syntax_format"]

THINK_TAGS = ("<think>", "</think>")


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
        reasoning: the model emits a reasoning block.
        think: the reasoning block's ``(begin, end)`` markers.
        reasoning_prefilled: default for whether the chat template's generation prompt
            already ends with the block's begin marker.
        text_excludes: markers never allowed in free text (beyond the think markers).
        reasoning_excludes: markers never allowed inside reasoning (beyond the think markers).
        required_lead: with ``tool_choice="required"``, a regex for the text the template puts
            before the first call ("" for nothing); None: blank lines, and only after a
            reasoning block.
        marker_tokens: the markers that are single special tokens in the model's tokenizer
            (``token_markers`` binds them as tokens); None: not declared.
        token_markers_default: bind the markers as tokens unless the caller says otherwise.
        think_suffix: the text the template writes right after the reasoning block's end marker.
        lone_think_end: with optional reasoning, the model may skip the block by writing its
            end marker alone.
    """

    source: str
    call_tag: Callable
    trigger: str
    section: tuple[str, str, str] | None = None
    reasoning: bool = True
    think: tuple[str, str] = THINK_TAGS
    reasoning_prefilled: bool = False
    text_excludes: tuple[str, ...] = ()
    reasoning_excludes: tuple[str, ...] = ()
    required_lead: str | None = None
    marker_tokens: tuple[str, ...] | None = None
    token_markers_default: bool = False
    think_suffix: str = ""
    lone_think_end: bool = False


def _json_args(tool) -> JSONSchemaFormat:
    return JSONSchemaFormat(json_schema=tool.parameters)


def _styled_args(style: str) -> Callable:
    return lambda tool: JSONSchemaFormat(json_schema=tool.parameters, style=style)


def _call(begin: Callable[[str], str], args: Callable, end: str) -> Callable:
    """A call tag builder: ``begin(name)``, the arguments, ``end``."""
    return lambda tool: TagFormat(begin=begin(tool.name), content=args(tool), end=end)


def _kimi_k2_call(tool) -> TagFormat:
    return TagFormat(
        begin=f"<|tool_call_begin|>functions.{tool.name}:",
        content=SequenceFormat(elements=[RegexFormat(pattern=r"[0-9]+"),
                                         ConstStringFormat(value="<|tool_call_argument_begin|>"),
                                         _json_args(tool)]),
        end="<|tool_call_end|>")


_DS_CALLS_BEGIN, _DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_DS_CALL_BEGIN, _DS_CALL_END, _DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_GLM_ARG_MARKERS = ("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
_QWEN_MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>")
_GEMMA_MARKERS = ("<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>")


def _xml_attribute(value: str) -> str:
    return (value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _cohere_call(tool) -> TagFormat:
    return TagFormat(
        begin='<cofl:tool_call id="',
        content=SequenceFormat(elements=[
            RegexFormat(pattern=r"[0-9]+"),
            ConstStringFormat(value=f'" name="{_xml_attribute(tool.name)}">'),
            JSONSchemaFormat(json_schema=tool.parameters, style="cohere_xml")]),
        end="</cofl:tool_call>")


def _gemma_args(tool) -> JSONSchemaFormat:
    # No marker inside a string or key: a <tool_call|> in a value would end the call for the
    # engine's parser. (With the markers bound as tokens, text cannot hold them anyway.)
    return JSONSchemaFormat(json_schema=tool.parameters, style="gemma", excludes=_GEMMA_MARKERS)


_GLM4 = ToolCallSyntax(
    source="zai-org/GLM-4.5 chat_template.jinja; GLM-4.7 chat_template.jinja",
    call_tag=_call(lambda name: f"<tool_call>{name}", _styled_args("glm_xml"), "</tool_call>"),
    trigger="<tool_call>", text_excludes=("</tool_call>", *_GLM_ARG_MARKERS),
    reasoning_excludes=("<tool_call>", "</tool_call>", *_GLM_ARG_MARKERS),
    marker_tokens=("<think>", "</think>", "<tool_call>", "</tool_call>", *_GLM_ARG_MARKERS))

_M3 = "]<]minimax[>["     # MiniMax-M3's namespace marker, before every tag


def _dsml(wrapper: str, space: str, style: str, source: str) -> ToolCallSyntax:
    """DeepSeek DSML (V3.2, V4, V4.1): ``wrapper`` names the calls section, ``space`` sits
    between the DSML marker and the tag names. The reference encoders put "\\n\\n" before the
    section, also when the reply has no text (so with tool_choice="required")."""
    trigger = f"<｜DSML｜{wrapper}>"
    return ToolCallSyntax(
        source=source,
        call_tag=_call(lambda name: f'<｜DSML｜{space}invoke name="{name}">\n',
                       _styled_args(style), f"</｜DSML｜{space}invoke>\n"),
        trigger=trigger, section=(trigger + "\n", "", f"</｜DSML｜{wrapper}>"),
        reasoning_prefilled=True, reasoning_excludes=(trigger,), required_lead="\n\n")


TEXT_SYNTAXES: dict[str, ToolCallSyntax] = {
    # Meta, "Llama 3.1 model card and prompt formats", JSON based tool calling
    # (https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/): the reply is
    # {"name": NAME, "parameters": {...}} (no <|python_tag|>, which is for built-in tools) and
    # ends with <|eot_id|>. Llama 3.2 uses the same JSON form.
    "llama3": ToolCallSyntax(
        source="https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/",
        call_tag=_call(lambda name: f'{{"name": "{name}", "parameters": ', _json_args, "}"),
        trigger='{"name": ', reasoning=False),
    # Qwen3 tokenizer_config.json chat_template (Hermes-style tool calls):
    # <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>, reasoning <think>..</think>;
    # the template writes an assistant turn as '<think>\n' + reasoning + '\n</think>\n\n' +
    # content, so "\n\n" always follows the block's end.
    "qwen3": ToolCallSyntax(
        source="Qwen/Qwen3-8B tokenizer_config.json chat_template",
        call_tag=_call(lambda name: f'<tool_call>\n{{"name": "{name}", "arguments": ',
                       _json_args, "}\n</tool_call>"),
        trigger="<tool_call>", reasoning_excludes=("<tool_call>",),
        text_excludes=("</tool_call>",), marker_tokens=_QWEN_MARKERS, think_suffix="\n\n"),
    # Qwen3-Coder chat_template.jinja (and Qwen3.5, which adopted the same XML form):
    # <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>;
    # Qwen3.5's template closes reasoning with '\n</think>\n\n' as Qwen3's.
    "qwen3_coder": ToolCallSyntax(
        source="Qwen/Qwen3-Coder-30B-A3B-Instruct chat_template.jinja; qwen3coder_tool_parser",
        call_tag=_call(lambda name: f"<tool_call>\n<function={name}>\n", _styled_args("qwen_xml"),
                       "</function>\n</tool_call>"),
        trigger="<tool_call>", reasoning_excludes=("<tool_call>",),
        text_excludes=("</tool_call>",), marker_tokens=_QWEN_MARKERS, think_suffix="\n\n"),
    # DeepSeek-R1 tokenizer_config.json chat_template (the 0528 template prefills "<think>\n"):
    # <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{..}\n```
    # <｜tool▁call▁end｜> joined by "\n", then <｜tool▁calls▁end｜>.
    "deepseek_r1": ToolCallSyntax(
        source="deepseek-ai/DeepSeek-R1-0528 tokenizer_config.json chat_template",
        call_tag=_call(lambda name: f"{_DS_CALL_BEGIN}function{_DS_SEP}{name}\n```json\n",
                       _json_args, f"\n```{_DS_CALL_END}"),
        trigger=_DS_CALLS_BEGIN, section=(_DS_CALLS_BEGIN, "\n", _DS_CALLS_END),
        reasoning_prefilled=True, reasoning_excludes=(_DS_CALLS_BEGIN,)),
    # DeepSeek-V3.1 README "Tool call" and assets/chat_template: thinking mode prompt ends with
    # <think>; calls are <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>.
    "deepseek_v3_1": ToolCallSyntax(
        source="deepseek-ai/DeepSeek-V3.1 README (Chat Template / ToolCall)",
        call_tag=_call(lambda name: f"{_DS_CALL_BEGIN}{name}{_DS_SEP}", _json_args, _DS_CALL_END),
        trigger=_DS_CALLS_BEGIN, section=(_DS_CALLS_BEGIN, "", _DS_CALLS_END),
        reasoning_prefilled=True, reasoning_excludes=(_DS_CALLS_BEGIN,)),
    # DeepSeek-V3.2 encoding/encoding_dsv32.py (render_message, role "assistant"): the reply is
    # "{reasoning}</think>{content}" then "\n\n" + tool_calls_template, i.e.
    # <｜DSML｜function_calls>\n<｜DSML｜invoke name="NAME">\n<｜DSML｜parameter name="P"
    # string="true|false">V</｜DSML｜parameter> (joined by "\n")\n</｜DSML｜invoke> (joined by
    # "\n")\n</｜DSML｜function_calls>; the thinking-mode prompt ends with <think>.
    "deepseek_v3_2": _dsml("function_calls", "", "deepseek_xml",
                           "deepseek-ai/DeepSeek-V3.2 encoding/encoding_dsv32.py"),
    # DeepSeek-V4 encoding/encoding_dsv4.py: DSML as V3.2 with the section renamed to
    # <｜DSML｜tool_calls>.
    "deepseek_v4": _dsml("tool_calls", "", "deepseek_xml",
                         "deepseek-ai/DeepSeek-V4-Flash encoding/encoding_dsv4.py"),
    # DeepSeek-V4.1 encoding/encoding.py (https://huggingface.co/deepseek-ai/DeepSeek-V4.1-Flash
    # /blob/main/encoding/encoding.py, its tool_calls templates; the same strings appear in
    # sglang's dsv41 encoder test fixtures): <｜DSML｜ calls>\n<｜DSML｜ invoke name="NAME">\n
    # <｜DSML｜ parameter name="P" string="true|false">V</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n
    # </｜DSML｜ calls>, a space after every DSML marker.
    "deepseek_v4_1": _dsml(" calls", " ", "deepseek_v4_1_xml",
                           "deepseek-ai/DeepSeek-V4.1-Flash encoding/encoding.py"),
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
    "glm4": _GLM4,
    # GLM-4.7 chat_template.jinja: the generation prompt ends with "<think>" when thinking
    # ('<|assistant|>' + ('</think>' if not enable_thinking else '<think>')), so the output
    # starts inside the block; the calls follow "</think>" and the content with no newline.
    "glm4_7": dataclasses.replace(_GLM4, source="zai-org/GLM-4.7 chat_template.jinja",
                                  reasoning_prefilled=True, required_lead=""),
    # MiniMax-M2 chat_template.jinja / docs/tool_calling_guide.md:
    # <minimax:tool_call>\n<invoke name="NAME">\n<parameter name="P">V</parameter>\n</invoke>\n
    # </minimax:tool_call>; reasoning in <think>...</think>. The generation prompt always ends
    # with ']~b]ai' ~ '\n' ~ '<think>' ~ '\n' (the template has no thinking switch), and a
    # turn's reasoning is written '<think>' ~ '\n' ~ reasoning ~ '\n</think>' ~ '\n\n'.
    "minimax": ToolCallSyntax(
        source="MiniMaxAI/MiniMax-M2 chat_template.jinja; docs/tool_calling_guide.md",
        call_tag=_call(lambda name: f'<invoke name="{name}">\n', _styled_args("minimax_xml"),
                       "</invoke>\n"),
        trigger="<minimax:tool_call>", section=("<minimax:tool_call>\n", "", "</minimax:tool_call>"),
        reasoning_prefilled=True, think_suffix="\n\n", reasoning_excludes=("<minimax:tool_call>",)),
    # Gemma 4: Google, "Gemma 4 prompt formatting" (https://ai.google.dev/gemma/docs/core/
    # prompt-formatting-gemma4) and the google/gemma-4-31B-it chat_template.jinja (its
    # message loop and format_argument macro): a call is "<|tool_call>call:" + NAME + "{" +
    # key:value pairs (dictsort, format_argument(escape_keys=False)) + "}<tool_call|>", calls
    # follow one another with nothing between; reasoning is '<|channel>thought\n' + text +
    # '\n<channel|>'. After the calls the template writes <|tool_response>: the engine stops
    # there (a stop sequence), the grammar does not produce it. All markers are special tokens
    # of Gemma's tokenizer, so they are bound as tokens unless token_markers=False.
    "gemma_4": ToolCallSyntax(
        source="https://ai.google.dev/gemma/docs/core/prompt-formatting-gemma4; "
               "google/gemma-4-31B-it chat_template.jinja",
        call_tag=_call(lambda name: f"<|tool_call>call:{name}", _gemma_args, "<tool_call|>"),
        trigger="<|tool_call>", think=("<|channel>thought\n", "<channel|>"),
        text_excludes=("<|channel>", "<tool_call|>"),
        reasoning_excludes=("<|channel>", "<|tool_call>", "<tool_call|>"),
        required_lead="", marker_tokens=_GEMMA_MARKERS, token_markers_default=True),
    # Xiaomi MiMo-V2.6 chat_template.jinja (https://huggingface.co/XiaomiMiMo/MiMo-V2.6-Pro-RL/
    # blob/main/chat_template.jinja, its tool_calls branch; not in the offline corpus, so as
    # xgrammar 0.2.9 describes it): the Qwen XML form without the newlines, <tool_call><function=NAME><parameter=P>V</parameter></function></tool_call>;
    # the generation prompt stops at "<|im_start|>assistant\n", so the model writes <think>.
    "mimo": ToolCallSyntax(
        source="XiaomiMiMo/MiMo-V2.6-Pro-RL chat_template.jinja",
        call_tag=_call(lambda name: f"<tool_call><function={name}>", _styled_args("qwen_xml"),
                       "</function></tool_call>"),
        trigger="<tool_call>", text_excludes=("</tool_call>", "<function="),
        reasoning_excludes=("<tool_call>", "</tool_call>", "<function=")),
    # LG EXAONE 4.0 chat_template (https://huggingface.co/LGAI-EXAONE/EXAONE-4.0-32B; quoted
    # whole in the Exaone4Handler docstring of the Berkeley Function-Calling Leaderboard's
    # bfcl_eval, and by LG AI Research in github.com/ggml-org/llama.cpp/pull/14630): calls are
    # <tool_call>{"name": NAME, "arguments": ARGS|tojson}</tool_call> joined by "\n"; the
    # generation prompt ends with "<think>\n" when thinking (else "<think>\n\n</think>\n\n"),
    # and the model closes reasoning with "\n</think>\n\n".
    "exaone": ToolCallSyntax(
        source="LGAI-EXAONE/EXAONE-4.0-32B chat_template (bfcl_eval Exaone4Handler; llama.cpp PR 14630)",
        call_tag=_call(lambda name: f'<tool_call>{{"name": "{name}", "arguments": ', _json_args,
                       "}</tool_call>"),
        trigger="<tool_call>", reasoning_prefilled=True, text_excludes=("</tool_call>",),
        reasoning_excludes=("<tool_call>",)),
    # MiniMax-M3 chat_template.jinja (its to_xml macro and tool_calls branch, as the M3 tool
    # parsers of mlx_lm / vLLM-based servers quote it): ]<]minimax[>[<tool_call>\n, per call
    # ]<]minimax[>[<invoke name="NAME"> + argument tags + ]<]minimax[>[</invoke>\n, then
    # ]<]minimax[>[</tool_call>; the generation prompt ends with <mm:think> when thinking. A
    # reply that skips reasoning may open with a lone </mm:think> (M3 prefixes earlier
    # non-thinking turns with one: sglang's MiniMaxM3Detector reasoning parser).
    "minimax_m3": ToolCallSyntax(
        source="MiniMaxAI/MiniMax-M3 chat_template.jinja (to_xml)",
        call_tag=_call(lambda name: f'{_M3}<invoke name="{name}">', _styled_args("minimax_m3_xml"),
                       f"{_M3}</invoke>\n"),
        trigger=f"{_M3}<tool_call>", section=(f"{_M3}<tool_call>\n", "", f"{_M3}</tool_call>"),
        think=("<mm:think>", "</mm:think>"), reasoning_prefilled=True, lone_think_end=True,
        text_excludes=(f"{_M3}</tool_call>", f"{_M3}<invoke", f"{_M3}</invoke>"),
        reasoning_excludes=(f"{_M3}<tool_call>", f"{_M3}</tool_call>", f"{_M3}<invoke",
                            f"{_M3}</invoke>")),
    # Cohere Command (the "cmd5" nested-XML template), as Cohere's reference renderer (Melody's
    # render_cmd5, PyPI cohere_melody; tests/test_model_formats_cohere_melody.py) writes it:
    # <|START_THINKING|>...<|END_THINKING|>, then <cofl:tool_calls><cofl:tool_call id="0"
    # name="NAME"> value nodes </cofl:tool_call>...</cofl:tool_calls>, names XML-escaped, string
    # values raw. The generation prompt ends with <|START_THINKING|> when thinking (and with
    # <|START_THINKING|><|END_THINKING|> when not), so with reasoning on the output starts
    # inside the block. Melody wraps text in <|START_TEXT|>...<|END_TEXT|>; it is free text here.
    "cohere": ToolCallSyntax(
        source="Cohere cmd5 nested-XML tool calls (cofl response parser)",
        call_tag=_cohere_call, trigger="<cofl:tool_calls>",
        section=("<cofl:tool_calls>", "", "</cofl:tool_calls>"),
        think=("<|START_THINKING|>", "<|END_THINKING|>"), reasoning_prefilled=True,
        reasoning_excludes=("<cofl:tool_calls>",)),
}


def reasoning_block(mode: str, *, prefilled: bool, excludes: list[str],
                    think: tuple[str, str] = THINK_TAGS, suffix: str = "",
                    lone_end: bool = False):
    """The leading reasoning block for a reasoning mode (None for ``"none"``).

    ``prefilled``: the chat template already ends the prompt with ``think[0]``, so the output
    starts inside the block (only ``think[1]`` is generated). ``suffix``: the text that follows
    the end marker. ``lone_end``: an optional block may be skipped with ``think[1]`` alone.
    """
    if mode == "none":
        return None
    block = TagFormat(begin="" if prefilled else think[0],
                      content=AnyTextFormat(excludes=_minimal(excludes)), end=think[1])
    if suffix:
        block = SequenceFormat(elements=[block, ConstStringFormat(value=suffix)])
    if mode != "optional":
        return block
    if lone_end:
        block = OrFormat(elements=[block, ConstStringFormat(value=think[1] + suffix)])
    return OptionalFormat(content=block)


def _minimal(excludes: list[str]) -> list[str]:
    """``excludes`` without duplicates and without the strings that hold another one (text
    that avoids the shorter one avoids them too), so marker binding sees only the markers."""
    unique = list(dict.fromkeys(excludes))
    return [e for e in unique if not any(o != e and o in e for o in unique)]


def _calls_body(syntax: ToolCallSyntax, tools: list, mode: str, parallel: bool,
                excludes: list[str]):
    calls = [syntax.call_tag(tool) for tool in tools]
    if syntax.section is None and len(calls) == 1 and mode == "required" and not parallel:
        # Exactly one call (a named tool_choice): the call itself, nothing around it.
        return calls[0]
    if syntax.section is None:
        return TriggeredTagsFormat(triggers=[syntax.trigger], tags=calls,
                                   at_least_one=mode == "required", stop_after_first=not parallel,
                                   excludes=excludes)
    begin, separator, end = syntax.section
    inner = TagsWithSeparatorFormat(tags=calls, separator=separator, at_least_one=True,
                                    stop_after_first=not parallel)
    # One calls section per turn: the turn ends after the section.
    return TriggeredTagsFormat(
        triggers=[syntax.trigger], tags=[TagFormat(begin=begin, content=inner, end=end)],
        at_least_one=mode == "required", stop_after_first=True, excludes=excludes)


def text_syntax_format(syntax: ToolCallSyntax, tools: list, mode: str, reasoning: str,
                       parallel_tool_calls: bool, reasoning_prefilled: bool | None,
                       exclude_special_tokens: bool):
    """The format of one assistant turn for a :class:`ToolCallSyntax`.

    Args:
        syntax: the model family.
        tools: the callable :class:`FunctionTool` list.
        mode: ``"auto"``, ``"required"`` or ``"none"`` (see ``resolve_tool_choice``).
        reasoning: ``"required"``, ``"optional"`` or ``"none"``.
        parallel_tool_calls: ``False`` allows at most one call.
        reasoning_prefilled: the prompt ends with the block's begin marker (None: the
            syntax's default).
        exclude_special_tokens: keep the model's markers out of free text and reasoning
            (the trigger stays excluded from text where no call may start).

    Returns:
        The format object.
    """
    think = list(syntax.think) if syntax.reasoning else []
    text_excludes = _minimal([*think, *syntax.text_excludes]) if exclude_special_tokens else []
    if mode == "none" or not tools:
        body = AnyTextFormat(excludes=_minimal([*text_excludes, syntax.trigger]))
    else:
        body = _calls_body(syntax, tools, mode, parallel_tool_calls, text_excludes)
    block = None
    if syntax.reasoning:
        # A template prefills the think tag only when thinking is on; where the model may
        # skip thinking ("optional"), it opens the block itself.
        prefilled = (syntax.reasoning_prefilled and reasoning == "required") if reasoning_prefilled is None \
            else reasoning_prefilled
        excludes = [*syntax.think, *syntax.reasoning_excludes] if exclude_special_tokens else []
        block = reasoning_block(reasoning, prefilled=prefilled, excludes=excludes,
                                think=syntax.think, suffix=syntax.think_suffix,
                                lone_end=syntax.lone_think_end)
    elements = [] if block is None else [block]
    if mode == "required" and tools:
        # With at_least_one the first call starts right away: let through what the template
        # writes before it.
        if syntax.required_lead:
            elements.append(ConstStringFormat(value=syntax.required_lead))
        elif syntax.required_lead is None and block is not None:
            elements.append(RegexFormat(pattern=r"[ \n]*"))
    if not elements:
        return body
    return SequenceFormat(elements=[*elements, body])
