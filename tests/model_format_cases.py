"""Realistic and malformed assistant turns for every built-in model format.

Each model has a renderer written from its chat template (independently of the structural
tags in xg2_jax/_src/model_formats*.py): it writes reasoning, text and tool calls the way the
model emits them. :func:`cases` turns those into accept/reject cases. Used by
tests/test_model_formats.py; no dependency on the native engine.
"""

from __future__ import annotations

import decimal
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Web search",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
        "required": ["query"]}}}
TOOLS = [WEATHER, SEARCH]

CALL_WEATHER = ("get_weather", {"city": "Paris", "unit": "celsius"})
CALL_SEARCH = ("search", {"query": "Eiffel tower height", "limit": 3})
CALL_UNKNOWN = ("get_stock_price", {"ticker": "AAPL"})
CALL_BAD_ARGS = ("get_weather", {"city": "Paris", "unit": "kelvin"})   # not in the enum
CALL_PLAIN = ("get_weather", {"city": "Paris"})
CALL_MISSING_REQUIRED = ("search", {"limit": 2})

REASONING = "The user asks about Paris. I should check the weather first."


def _xml_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


@dataclass(frozen=True)
class Renderer:
    """How one model family writes a turn (from its chat template)."""

    think: Callable[[str], str] | None        # reasoning text -> the emitted block
    calls: Callable[[list], str]              # [(name, args)] -> the emitted calls
    eos: str                                  # end-of-turn token string in the test vocabulary
    vocab: str                                # shared/data/vocab file used in the tests
    call_end_marker: str                      # the text a truncated call lacks at the end
    text_trigger: str                         # the marker that starts tool calling
    parallel: bool = True                     # several calls in one turn
    kwargs: dict = field(default_factory=dict)  # extra get_model_structural_tag arguments
    think_marker: str = "<think>"             # a reasoning marker that free text must not hold


def _qwen3_calls(calls):
    return "\n".join("<tool_call>\n" + json.dumps({"name": n, "arguments": a})
                     + "\n</tool_call>" for n, a in calls)


def _qwen3_coder_calls(calls):
    out = []
    for n, a in calls:
        params = "".join(f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in a.items())
        out.append(f"<tool_call>\n<function={n}>\n{params}</function>\n</tool_call>")
    return "\n".join(out)


def _ds_r1_calls(calls):
    inner = "\n".join(f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n"
                      f"{json.dumps(a)}\n```<｜tool▁call▁end｜>" for n, a in calls)
    return f"<｜tool▁calls▁begin｜>{inner}<｜tool▁calls▁end｜>"


def _ds_v31_calls(calls):
    inner = "".join(f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{json.dumps(a)}<｜tool▁call▁end｜>"
                    for n, a in calls)
    return f"<｜tool▁calls▁begin｜>{inner}<｜tool▁calls▁end｜>"


def _dsml_calls(wrapper, space=""):
    """DeepSeek's reference encoders (encoding_dsv32.py / encoding_dsv4.py / V4.1's
    encoding.py, render_message for "assistant"): "\n\n" + the calls section, invokes and
    parameters joined by "\n"."""
    def render(calls):
        invokes = []
        for n, a in calls:
            params = "\n".join(
                f'<｜DSML｜{space}parameter name="{k}" string="{str(isinstance(v, str)).lower()}">'
                f"{_xml_value(v)}</｜DSML｜{space}parameter>" for k, v in a.items())
            invokes.append(f'<｜DSML｜{space}invoke name="{n}">\n{params}\n</｜DSML｜{space}invoke>')
        return f"\n\n<｜DSML｜{wrapper}>\n" + "\n".join(invokes) + f"\n</｜DSML｜{wrapper}>"
    return render


def _dsml_think(r):             # "{reasoning}</think>": the prompt ends with "<think>"
    return f"{r}</think>"


def _gemma_value(v: Any) -> str:
    """Gemma 4's format_argument macro (escape_keys=False): raw strings between <|"|>,
    mappings with dictsort'ed bare keys, no whitespace."""
    if isinstance(v, str):
        return f'<|"|>{v}<|"|>'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{_gemma_value(x)}"
                              for k, x in sorted(v.items(), key=lambda kv: kv[0].lower())) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_gemma_value(x) for x in v) + "]"
    return "null" if v is None else json.dumps(v)


def _gemma_calls(calls):
    return "".join(f"<|tool_call>call:{n}{_gemma_value(a)}<tool_call|>" for n, a in calls)


def _mimo_calls(calls):
    return "".join("<tool_call><function=" + n + ">" + "".join(
        f"<parameter={k}>{_xml_value(v)}</parameter>" for k, v in a.items())
        + "</function></tool_call>" for n, a in calls)


def _cohere_attribute(text: str) -> str:
    """A name attribute as Melody writes it (``&``, ``<``, ``>`` and ``"`` escaped)."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _cohere_number(v: float) -> str:
    """A float as Melody writes it: serde_json's shortest round-trip spelling (ryu), which
    differs from Python's (``1e20`` not ``1e+20``, ``0.00001`` not ``1e-05``, ``1e-6``)."""
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign = "-" if v < 0 else ""
    _, digit_tuple, exp = decimal.Decimal(repr(abs(v))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exp                 # the value is 0.DIGITS x 10^point
    if exp >= 0 and point <= 16:
        return f"{sign}{digits}{'0' * exp}.0"
    if 0 < point <= 16:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -5 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{point - 1}"


def _cohere_json(v: Any) -> str:
    """A non-string scalar as Melody writes it (serde_json: integers beyond 64 bits are read
    as floats)."""
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, int) and -2**63 <= v < 2**64:
        return str(v)
    return _cohere_number(float(v))


def _cohere_value(name, v) -> str:
    """A value node of Cohere's cmd5 nested-XML format, as Cohere's renderer (Melody's
    render_cmd5) writes it: strings raw, names XML-escaped, other scalars as serde_json's JSON
    (tests/test_model_formats_cohere_melody.py checks this against Melody)."""
    attr = f' name="{_cohere_attribute(name)}"' if name is not None else ""
    if isinstance(v, str):
        return f'<cofl:value{attr} type="raw">{v}</cofl:value>'
    if isinstance(v, dict):
        inner = "".join(_cohere_value(k, x) for k, x in v.items())
        return f'<cofl:value{attr} type="dict">{inner}</cofl:value>'
    if isinstance(v, list):
        inner = "".join(_cohere_value(None, x) for x in v)
        return f'<cofl:value{attr} type="list">{inner}</cofl:value>'
    return f'<cofl:value{attr} type="json">{_cohere_json(v)}</cofl:value>'


def _cohere_calls(calls):
    return "<cofl:tool_calls>" + "".join(
        f'<cofl:tool_call id="{i}" name="{_cohere_attribute(n)}">'
        + "".join(_cohere_value(k, v) for k, v in a.items())
        + "</cofl:tool_call>" for i, (n, a) in enumerate(calls)) + "</cofl:tool_calls>"


M3 = "]<]minimax[>["


def _m3_value(key, v) -> str:
    """MiniMax-M3's to_xml: raw strings, bare numbers, tojson booleans, nested tags for
    objects and <item> tags for lists."""
    if isinstance(v, dict):
        inner = "".join(_m3_value(k, x) for k, x in v.items())
    elif isinstance(v, list):
        inner = "".join(_m3_value("item", x) for x in v)
    else:
        inner = v if isinstance(v, str) else json.dumps(v)
    return f"{M3}<{key}>{inner}{M3}</{key}>"


def _m3_calls(calls):
    return f"{M3}<tool_call>\n" + "".join(
        f'{M3}<invoke name="{n}">' + "".join(_m3_value(k, v) for k, v in a.items())
        + f"{M3}</invoke>\n" for n, a in calls) + f"{M3}</tool_call>"


def _exaone_calls(calls):
    return "\n".join("<tool_call>" + json.dumps({"name": n, "arguments": a}) + "</tool_call>"
                     for n, a in calls)


def _kimi_calls(calls):
    inner = "".join(f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>"
                    f"{json.dumps(a)}<|tool_call_end|>" for i, (n, a) in enumerate(calls))
    return f"<|tool_calls_section_begin|>{inner}<|tool_calls_section_end|>"


def _glm4_calls(calls):
    out = []
    for n, a in calls:
        args = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{_xml_value(v)}</arg_value>\n"
                       for k, v in a.items())
        out.append(f"<tool_call>{n}\n{args}</tool_call>")
    return "\n".join(out)


def _glm47_calls(calls):         # GLM-4.7's template writes no newline around arguments
    return "".join(f"<tool_call>{n}" + "".join(
        f"<arg_key>{k}</arg_key><arg_value>{_xml_value(v)}</arg_value>" for k, v in a.items())
        + "</tool_call>" for n, a in calls)


def _minimax_calls(calls):
    out = ["<minimax:tool_call>\n"]
    for n, a in calls:
        out.append(f'<invoke name="{n}">\n')
        out.extend(f'<parameter name="{k}">{_xml_value(v)}</parameter>\n' for k, v in a.items())
        out.append("</invoke>\n")
    out.append("</minimax:tool_call>")
    return "".join(out)


def _harmony_calls(calls):
    return "<|start|>assistant".join(
        f"<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{json.dumps(a)}"
        "<|call|>" for n, a in calls)


def _mistral_calls(calls):
    return "[TOOL_CALLS]" + json.dumps([{"name": n, "arguments": a} for n, a in calls])


def _think_tags(r):
    return f"<think>\n{r}\n</think>\n\n"


def _prefilled_think(r):        # the prompt already ends with "<think>"
    return f"{r}\n</think>\n\n"


def _harmony_think(r):
    return f"<|channel|>analysis<|message|>{r}<|end|><|start|>assistant"


RENDERERS: dict[str, Renderer] = {
    "llama3": Renderer(None, lambda calls: "\n".join(
        json.dumps({"name": n, "parameters": a}) for n, a in calls),
        "<|eot_id|>", "llama3", "}", '{"name": '),
    "qwen3": Renderer(_think_tags, _qwen3_calls, "<|im_end|>", "qwen3", "</tool_call>",
                      "<tool_call>"),
    "qwen3_coder": Renderer(_think_tags, _qwen3_coder_calls, "<|im_end|>", "qwen3",
                            "</tool_call>", "<tool_call>"),
    "deepseek_r1": Renderer(_prefilled_think, _ds_r1_calls, "<|im_end|>", "qwen3",
                            "<｜tool▁calls▁end｜>", "<｜tool▁calls▁begin｜>"),
    "deepseek_v3.1": Renderer(_prefilled_think, _ds_v31_calls, "<|im_end|>", "qwen3",
                              "<｜tool▁calls▁end｜>", "<｜tool▁calls▁begin｜>"),
    "deepseek_v3.2": Renderer(_dsml_think, _dsml_calls("function_calls"), "<|im_end|>",
                              "qwen3", "</｜DSML｜function_calls>", "<｜DSML｜function_calls>"),
    "deepseek_v4": Renderer(_dsml_think, _dsml_calls("tool_calls"), "<|im_end|>", "qwen3",
                            "</｜DSML｜tool_calls>", "<｜DSML｜tool_calls>"),
    "deepseek_v4.1": Renderer(_dsml_think, _dsml_calls(" calls", " "), "<|im_end|>", "qwen3",
                              "</｜DSML｜ calls>", "<｜DSML｜ calls>"),
    "gemma_4": Renderer(lambda r: f"<|channel>thought\n{r}\n<channel|>", _gemma_calls, "<turn|>",
                        "gemma4", "<tool_call|>", "<|tool_call>", think_marker="<|channel>"),
    "mimo": Renderer(_think_tags, _mimo_calls, "<|im_end|>", "qwen3", "</tool_call>",
                     "<tool_call>"),
    "minimax_m3": Renderer(lambda r: f"{r}</mm:think>", _m3_calls, "<|im_end|>", "qwen3",
                           f"{M3}</tool_call>", f"{M3}<tool_call>", think_marker="<mm:think>"),
    # Calls and reasoning as Melody (Cohere's renderer) writes them; its text is wrapped in
    # <|START_TEXT|>...<|END_TEXT|> and never sits beside calls. The bare text of these cases
    # is free text the grammar also takes (as xgrammar's tests write it); Melody's own turns
    # are checked in tests/test_model_formats_cohere_melody.py.
    "cohere": Renderer(lambda r: f"{r}<|END_THINKING|>", _cohere_calls,   # prompt opens it
                       "<|im_end|>", "qwen3", "</cofl:tool_calls>", "<cofl:tool_calls>",
                       think_marker="<|START_THINKING|>"),
    "exaone": Renderer(lambda r: f"{r}\n</think>\n\n", _exaone_calls, "<|im_end|>", "qwen3", "</tool_call>",
                       "<tool_call>"),
    "kimi_k2": Renderer(lambda r: f"<think>{r}</think>", _kimi_calls, "<|im_end|>", "qwen3",
                        "<|tool_calls_section_end|>", "<|tool_calls_section_begin|>"),
    "glm4": Renderer(lambda r: f"<think>{r}</think>\n", _glm4_calls, "<|im_end|>", "qwen3",
                     "</tool_call>", "<tool_call>"),
    "glm4_7": Renderer(lambda r: f"{r}</think>", _glm47_calls, "<|im_end|>", "qwen3",  # prompt
                       "</tool_call>", "<tool_call>"),                               # opens it
    "minimax": Renderer(_prefilled_think, _minimax_calls, "<|im_end|>", "qwen3",
                        "</minimax:tool_call>", "<minimax:tool_call>"),
    "harmony": Renderer(_harmony_think, _harmony_calls, "<|eot_id|>", "llama3", "<|call|>",
                        "<|channel|>commentary to=", parallel=False),
    "mistral": Renderer(None, _mistral_calls, "</s>", "tekken_240911", "]", "[TOOL_CALLS]"),
    "mistral@spm": Renderer(None, _mistral_calls, "</s>", "mistral_v3_spm", "]",
                            "[TOOL_CALLS]"),
}


@dataclass(frozen=True)
class Case:
    """One assistant turn: ``text`` (may hold special-token strings), then the eos token."""

    model: str          # key of RENDERERS
    name: str
    text: str
    ok: bool
    kwargs: dict = field(default_factory=dict)
    add_eos: bool = True

    @property
    def model_name(self) -> str:
        return self.model.split("@")[0]

    def __str__(self) -> str:
        return f"{self.model}:{self.name}"


def _final(model: str, text: str) -> str:
    if model == "harmony":
        return f"<|channel|>final<|message|>{text}<|return|>"
    return text


def cases(model: str) -> list[Case]:
    """Accept and reject cases for one key of :data:`RENDERERS`."""
    r = RENDERERS[model]
    think = r.think(REASONING) if r.think else ""
    text = "Let me look that up for you.\n"
    out: list[Case] = []

    def add(name, body, ok, **kwargs):
        out.append(Case(model, name, body, ok, {**r.kwargs, **kwargs}))

    calls1 = r.calls([CALL_WEATHER])
    harmony = model == "harmony"
    lead = "" if harmony or model.startswith("mistral") else text
    add("text_only", think + _final(model, "Paris is sunny today."), True)
    add("one_call", think + lead + calls1, True)
    add("one_call_required", think + calls1, True, tool_choice="required")
    add("named_choice", think + calls1, True,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    if r.parallel:
        two = r.calls([CALL_WEATHER, CALL_SEARCH])
        add("two_calls", think + lead + two, True)
        add("two_calls_not_parallel", think + lead + two, False, parallel_tool_calls=False)
    else:
        add("second_call_rejected", think + calls1 + "<|start|>assistant" + calls1, False)
    if harmony:
        preamble = ("<|channel|>commentary<|message|>Checking the weather now.<|end|>"
                    "<|start|>assistant")
        add("preamble_then_call", think + preamble + calls1, True)
        add("recipient_in_header", think + calls1.replace(
            "<|channel|>commentary to=functions.get_weather <|constrain|>json",
            " to=functions.get_weather<|channel|>commentary <|constrain|>json"), True)
        # openai/harmony's parser also reads <|constrain|> right after the recipient or the
        # channel (its *_constrain_adjacent tests), as xgrammar writes it.
        add("constrain_adjacent", think + calls1.replace(
            "get_weather <|constrain|>", "get_weather<|constrain|>"), True)
        add("constrain_adjacent_in_header", think + calls1.replace(
            "<|channel|>commentary to=functions.get_weather <|constrain|>json",
            " to=functions.get_weather<|channel|>commentary<|constrain|>json"), True)
        add("constrain_two_spaces_rejected", think + calls1.replace(
            "get_weather <|constrain|>", "get_weather  <|constrain|>"), False)
        add("final_after_call_rejected", think + calls1 + "<|start|>assistant"
            + _final(model, "Done."), False)
        add("marker_inside_analysis", _harmony_think("thinking <|channel|>final") + calls1,
            False)
    if r.think:
        add("no_reasoning_when_off", _final(model, "Hi there.") if harmony else "Hi there.",
            True, reasoning=False)
        add("missing_required_reasoning", _final(model, "Hi there."), False)
        add("optional_reasoning_absent", _final(model, "Hi there."), True, reasoning="optional")
        # What the template writes before the calls when the reply has no text (DeepSeek's
        # encoders: "\n\n"), also with reasoning off.
        add("required_without_reasoning", calls1, True, reasoning=False, tool_choice="required")
        if not harmony:
            add("think_tag_in_text", think + f"Done. {r.think_marker}again", False)
            add("trigger_in_reasoning", r.think(f"I will call {r.text_trigger} now."), False)
    add("unknown_tool", think + r.calls([CALL_UNKNOWN]), False)
    add("bad_argument_type", think + r.calls([CALL_BAD_ARGS]), False)
    add("missing_required_argument", think + r.calls([CALL_MISSING_REQUIRED]), False)
    plain = r.calls([CALL_PLAIN])
    broken = plain.replace('{"city": "Paris"}', '{"city": "Paris",}')
    if broken != plain:                       # JSON arguments: a trailing comma
        add("malformed_argument_json", think + broken, False)
    cut = calls1[: calls1.rindex(r.call_end_marker)]
    add("missing_end_tag", think + cut, False)
    add("text_when_required", think + _final(model, "No tools needed."), False,
        tool_choice="required")
    add("call_when_none", think + calls1, False, tool_choice="none")
    if not harmony:
        add("call_to_other_tool_when_named", think + r.calls([CALL_SEARCH]), False,
            tool_choice={"type": "function", "function": {"name": "get_weather"}})
    return out


ALL_CASES = [c for m in RENDERERS for c in cases(m)]


# --------------------------------------------------------------------------------------------
# Tokenization with special tokens
# --------------------------------------------------------------------------------------------
def load_vocab_file(path) -> dict:
    """The JSON object of a shared/data/vocab file (see its README)."""
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def special_token_ids(vocab: dict) -> dict[str, int]:
    """Token string -> id for the vocabulary's special ids (lowest id wins)."""
    out: dict[str, int] = {}
    for tid in sorted(vocab["special_ids"]):
        out.setdefault(vocab["tokens"][tid], tid)
    return out


def tokenize_with_specials(text: str, specials: dict[str, int],
                           tokenize_text: Callable[[bytes], list[int]]) -> list[int]:
    """Ids for ``text``: every special-token string becomes its id, the text between is
    tokenized with ``tokenize_text`` (e.g. a greedy longest match over the text tokens)."""
    ids: list[int] = []
    pos = 0
    names = sorted(specials, key=len, reverse=True)
    while pos < len(text):
        nxt, name = len(text), None
        for s in names:
            i = text.find(s, pos)
            if i != -1 and (i < nxt or (i == nxt and name is not None and len(s) > len(name))):
                nxt, name = i, s
        if nxt > pos:
            ids.extend(tokenize_text(text[pos:nxt].encode("utf-8")))
        if name is None:
            break
        ids.append(specials[name])
        pos = nxt + len(name)
    return ids
