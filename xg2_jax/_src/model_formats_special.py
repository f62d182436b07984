"""Built-in structural tags whose structure is not "free text + triggered calls": OpenAI
gpt-oss Harmony (a stream of channel messages), Kimi-K3 (a fixed sequence of blocks) and
Mistral (the ``[TOOL_CALLS]`` special token followed by a JSON list). Used by
:func:`xg2_jax.get_model_structural_tag`.

Example:
    >>> from xg2_jax._src.model_formats import FunctionTool
    >>> fmt = mistral_format([FunctionTool("f", {"type": "object"})], "auto", "none", True)
    >>> fmt.type
    'token_triggered_tags'
"""

from __future__ import annotations

from xg2_jax._src.structural_tag import (
    AnyTextFormat,
    AnyTokensFormat,
    ConstStringFormat,
    JSONSchemaFormat,
    OptionalFormat,
    OrFormat,
    RegexFormat,
    SequenceFormat,
    StarFormat,
    TagFormat,
    TagsWithSeparatorFormat,
    TokenFormat,
    TokenTriggeredTagsFormat,
)

__all__ = ["harmony_format", "kimi_k3_format", "mistral_format"]

# ---------------------------------------------------------------------------------------------
# gpt-oss Harmony. Source: OpenAI, "OpenAI Harmony Response Format"
# (https://cookbook.openai.com/articles/openai-harmony) and github.com/openai/harmony docs.
# The prompt ends with "<|start|>assistant"; the model then writes messages
#   <|channel|>analysis<|message|>...<|end|>            chain of thought
#   <|channel|>commentary<|message|>...<|end|>          preamble shown to the user
#   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{..}<|call|>
#   <|channel|>final<|message|>...<|return|>
# separated by "<|start|>assistant". The recipient may also be written in the role header:
#   " to=functions.NAME<|channel|>commentary <|constrain|>json<|message|>". A tool call
# (<|call|>) or the final answer (<|return|>) ends the turn, so a turn holds at most one call.
# ---------------------------------------------------------------------------------------------
HARMONY_SEPARATOR = "<|start|>assistant"
HARMONY_MARKERS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>",
                   "<|return|>", "<|constrain|>"]


def _harmony_message(channel: str, end, exclude_special_tokens: bool) -> TagFormat:
    ends = end if isinstance(end, list) else [end]
    excludes = [m for m in HARMONY_MARKERS if m not in ends] if exclude_special_tokens else []
    return TagFormat(begin=f"<|channel|>{channel}<|message|>",
                     content=AnyTextFormat(excludes=excludes), end=end)


def _harmony_calls(tool) -> list[TagFormat]:
    args = JSONSchemaFormat(json_schema=tool.parameters)
    if tool.builtin_type is not None:
        # A builtin tool keeps its own namespace and writes no <|constrain|>: gpt-oss calls
        # its browser as "<|channel|>analysis to=browser.search code<|message|>{...}<|call|>"
        # (openai/gpt-oss, gpt_oss/tools/simple_browser); xgrammar 0.2.9 writes the
        # commentary channel. Both channels, and the recipient in the role header.
        return [TagFormat(begin=begin, content=args, end="<|call|>") for channel in (
            "analysis", "commentary") for begin in (
            f"<|channel|>{channel} to={tool.name} code<|message|>",
            f" to={tool.name}<|channel|>{channel} code<|message|>")]
    # The last form is how gpt-oss's chat_template.jinja renders a call: "<|start|>assistant
    # to=" + "functions." + NAME + "<|channel|>commentary " + "json" + "<|message|>". The
    # renderer writes a space before <|constrain|>; openai/harmony's parser also reads the
    # marker right after the recipient or channel (encoding.rs inserts the space; its tests
    # test_streamable_parser_tool_call_with_constrain_adjacent and
    # test_tool_call_with_constrain_marker_adjacent), as xgrammar writes it, so both are taken.
    tags = []
    for space in (" ", ""):
        tags.append(TagFormat(begin=f"<|channel|>commentary to=functions.{tool.name}{space}"
                                    "<|constrain|>json<|message|>", content=args, end="<|call|>"))
        tags.append(TagFormat(begin=f" to=functions.{tool.name}<|channel|>commentary{space}"
                                    "<|constrain|>json<|message|>", content=args, end="<|call|>"))
    tags.append(TagFormat(begin=f" to=functions.{tool.name}<|channel|>commentary json<|message|>",
                          content=args, end="<|call|>"))
    return tags


def harmony_format(tools: list, mode: str, reasoning: str, parallel_tool_calls: bool, *,
                   exclude_special_tokens: bool = True):
    """The gpt-oss Harmony format for one assistant turn.

    Args:
        tools: the callable :class:`FunctionTool` list (empty for ``mode="none"``).
        mode: ``"auto"`` (ends with a final answer or a call), ``"required"`` (ends with a
            call), ``"none"`` (ends with a final answer).
        reasoning: ``"required"`` (the turn starts with an analysis message), ``"optional"``
            or ``"none"`` (no analysis messages).
        parallel_tool_calls: no effect: a Harmony turn ends at its first ``<|call|>``.
        exclude_special_tokens: keep the other Harmony markers out of message text.

    Returns:
        The format object.
    """
    del parallel_tool_calls
    analysis = _harmony_message("analysis", "<|end|>", exclude_special_tokens)
    final = _harmony_message("final", ["<|return|>", "<|end|>"], exclude_special_tokens)
    calls = [tag for tool in tools for tag in _harmony_calls(tool)] if mode != "none" else []
    interim = []                       # messages that may come before the last one
    if reasoning != "none":
        interim.append(analysis)
    if calls:
        interim.append(_harmony_message("commentary", "<|end|>", exclude_special_tokens))
    last = calls if mode == "required" else [final, *calls]
    elements = []
    if reasoning == "required":
        elements.append(SequenceFormat(elements=[analysis,
                                                 ConstStringFormat(value=HARMONY_SEPARATOR)]))
    if interim:
        one = interim[0] if len(interim) == 1 else OrFormat(elements=interim)
        elements.append(StarFormat(content=SequenceFormat(elements=[
            one, ConstStringFormat(value=HARMONY_SEPARATOR)])))
    elements.append(last[0] if len(last) == 1 else OrFormat(elements=last))
    return elements[0] if len(elements) == 1 else SequenceFormat(elements=elements)


# ---------------------------------------------------------------------------------------------
# Mistral (tokenizer v3 and v7: Mistral-Nemo with Tekken, Mistral-7B-v0.3 / Mixtral with the
# v3 SentencePiece model). Source: mistral-common 1.12, tokens/tokenizers/instruct.py,
# InstructTokenizerV2/V3._encode_tool_calls_in_assistant_message: the special token
# [TOOL_CALLS], then json.dumps([{"name": NAME, "arguments": {...}, "id": ID}, ...]) where "id"
# (9 alphanumerics) is present from v3 on when the call has one, then </s>. SentencePiece
# encodes that text with its dummy-prefix space, so " [" is accepted as well as "[".
# Tokenizer v11+ ([TOOL_CALLS]NAME[ARGS]{...}) is not covered.
# ---------------------------------------------------------------------------------------------
MISTRAL_TOOL_CALLS = "[TOOL_CALLS]"
MISTRAL_CALL_ID = r'(, "id": "[a-zA-Z0-9]{9}")?'


def _mistral_call(tool) -> TagFormat:
    return TagFormat(
        begin=f'{{"name": "{tool.name}", "arguments": ',
        content=SequenceFormat(elements=[JSONSchemaFormat(json_schema=tool.parameters),
                                         RegexFormat(pattern=MISTRAL_CALL_ID)]),
        end="}")


def mistral_format(tools: list, mode: str, reasoning: str, parallel_tool_calls: bool):
    """The Mistral ``[TOOL_CALLS][{...}, ...]`` format for one assistant turn.

    The free text is any tokens but ``[TOOL_CALLS]``; the special token starts the one list of
    calls of the turn. Token strings are resolved with the compiler's tokenizer, so the
    vocabulary must have ``[TOOL_CALLS]`` (Tekken and the v3 SentencePiece model do).

    Args:
        tools: the callable tools (empty for ``mode="none"``).
        mode: ``"auto"``, ``"required"`` or ``"none"``.
        reasoning: ignored (these models do not reason in tags).
        parallel_tool_calls: ``False``: the list holds exactly one call.

    Returns:
        The format object.
    """
    del reasoning
    if mode == "none" or not tools:
        return AnyTokensFormat(exclude_tokens=[MISTRAL_TOOL_CALLS])
    call_list = SequenceFormat(elements=[
        RegexFormat(pattern=r" ?\["),
        TagsWithSeparatorFormat(tags=[_mistral_call(t) for t in tools], separator=", ",
                                at_least_one=True, stop_after_first=not parallel_tool_calls),
    ])
    section = TagFormat(begin=TokenFormat(token=MISTRAL_TOOL_CALLS), content=call_list, end="]")
    return TokenTriggeredTagsFormat(trigger_tokens=[MISTRAL_TOOL_CALLS], tags=[section],
                                    at_least_one=mode == "required", stop_after_first=True)



# ---------------------------------------------------------------------------------------------
# Kimi-K3 ("XTML"). Source: the checkpoint's encoding_k3.py renderer, as quoted by the K3
# tool parsers of vLLM/sglang-based servers (moonshotai Kimi-K3; their docstrings and test
# fixtures): a message is blocks <|open|>NAME<|sep|>...<|close|>NAME<|sep|>:
#   think (reasoning), response (the reply text), then optionally
#   <|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
#     <|open|>argument key="K" type="string|number|boolean|null|object|array"<|sep|>V
#     <|close|>argument<|sep|>...<|close|>call<|sep|>...<|close|>tools<|sep|>
#   and <|close|>message<|sep|>. Attribute values are escaped (& -> &amp;, " -> &quot;);
# string arguments are raw text, others JSON. The generation prompt ends with the first
# block's opener (<|open|>think<|sep|> when thinking, else <|open|>response<|sep|>).
# ---------------------------------------------------------------------------------------------
K3_OPEN, K3_CLOSE, K3_SEP = "<|open|>", "<|close|>", "<|sep|>"


def _k3_block(name: str) -> tuple[str, str]:
    return f"{K3_OPEN}{name}{K3_SEP}", f"{K3_CLOSE}{name}{K3_SEP}"


def _k3_attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _k3_call(tool, excludes: list[str]) -> TagFormat:
    return TagFormat(
        begin=f'{K3_OPEN}call tool="{_k3_attribute(tool.name)}" index="',
        content=SequenceFormat(elements=[
            RegexFormat(pattern=r"[0-9]+"), ConstStringFormat(value=f'"{K3_SEP}'),
            JSONSchemaFormat(json_schema=tool.parameters, style="kimi_k3_xml", excludes=excludes)]),
        end=f"{K3_CLOSE}call{K3_SEP}")


def kimi_k3_format(tools: list, mode: str, reasoning: str, parallel_tool_calls: bool, *,
                   exclude_special_tokens: bool = True):
    """The Kimi-K3 format for one assistant turn: [think block], the response block, [the
    tools block], the message end.

    Args:
        tools: the callable tools (empty for ``mode="none"``).
        mode: ``"auto"`` (the tools block is optional), ``"required"`` (it is there, with at
            least one call) or ``"none"`` (no tools block).
        reasoning: ``"required"`` (the output starts inside the think block), ``"optional"``
            (a think block may come first) or ``"none"`` (it starts inside the response block).
        parallel_tool_calls: ``False``: at most one call.
        exclude_special_tokens: keep ``<|open|>``/``<|close|>`` out of the think and response
            text, and the three markers (``<|sep|>`` too) out of the argument values' strings.

    Returns:
        The format object.
    """
    excludes = [K3_OPEN, K3_CLOSE] if exclude_special_tokens else []
    # An argument value ends at <|close|>argument<|sep|>: none of the markers may start inside it.
    value_excludes = [K3_OPEN, K3_CLOSE, K3_SEP] if exclude_special_tokens else []
    think_begin, think_end = _k3_block("think")
    response_begin, response_end = _k3_block("response")
    elements = []
    if reasoning != "none":
        think = TagFormat(begin="" if reasoning == "required" else think_begin,
                          content=AnyTextFormat(excludes=excludes), end=think_end)
        elements.append(OptionalFormat(content=think) if reasoning == "optional" else think)
    elements.append(TagFormat(begin="" if reasoning == "none" else response_begin,
                              content=AnyTextFormat(excludes=excludes), end=response_end))
    if mode != "none" and tools:
        tools_begin, tools_end = _k3_block("tools")
        section = TagFormat(begin=tools_begin, content=TagsWithSeparatorFormat(
            tags=[_k3_call(t, value_excludes) for t in tools], separator="", at_least_one=True,
            stop_after_first=not parallel_tool_calls), end=tools_end)
        elements.append(section if mode == "required" else OptionalFormat(content=section))
    elements.append(ConstStringFormat(value=f"{K3_CLOSE}message{K3_SEP}"))
    return SequenceFormat(elements=elements)
