"""Structural tag builders and get_model_structural_tag: pure Python (no native compile)."""

from __future__ import annotations

import json

import pytest
from model_format_cases import RENDERERS, TOOLS

import xg2_jax as xg
from xg2_jax._src.model_formats import supported_models

# The DSL's field names per format type (xgrammar's names); every emitted dict must use these.
DSL_FIELDS = {
    "const_string": {"value"},
    "json_schema": {"json_schema", "style", "any_order", "max_whitespace_cnt", "excludes"},
    "grammar": {"grammar"},
    "regex": {"pattern"},
    "any_text": {"excludes", "max_chars", "max_tokens"},
    "sequence": {"elements"},
    "or": {"elements"},
    "optional": {"content"},
    "star": {"content"},
    "plus": {"content"},
    "repeat": {"content", "min", "max"},
    "tag": {"begin", "content", "end"},
    "triggered_tags": {"triggers", "tags", "at_least_one", "stop_after_first", "excludes"},
    "tags_with_separator": {"tags", "separator", "at_least_one", "stop_after_first"},
    "dispatch": {"rules", "loop", "excludes"},
    "token": {"token"},
    "exclude_token": {"exclude_tokens"},
    "any_tokens": {"exclude_tokens", "max_tokens"},
    "token_triggered_tags": {"trigger_tokens", "tags", "exclude_tokens", "at_least_one",
                             "stop_after_first"},
}


def walk(fmt: dict):
    """Yields every format dict of a format tree."""
    yield fmt
    for key in ("content", "begin", "end"):
        if isinstance(fmt.get(key), dict):
            yield from walk(fmt[key])
    for key in ("elements", "tags"):
        for child in fmt.get(key, []):
            yield from walk(child)
    for _, child in fmt.get("rules", []):
        yield from walk(child)


def every_format() -> xg.StructuralTag:
    return xg.StructuralTag(format=xg.SequenceFormat(elements=[
        xg.OptionalFormat(content=xg.TagFormat(begin="<think>", content=xg.AnyTextFormat(
            excludes=["<think>"], max_chars=100), end=["</think>", "</thinking>"])),
        xg.OrFormat(elements=[xg.ConstStringFormat(value="a"), xg.RegexFormat(pattern="b+"),
                              xg.GrammarFormat(grammar='root ::= "c"')]),
        xg.StarFormat(content=xg.ConstStringFormat(value=" ")),
        xg.PlusFormat(content=xg.JSONSchemaFormat(json_schema={"type": "integer"})),
        xg.RepeatFormat(content=xg.JSONSchemaFormat(json_schema=True, style="qwen_xml"), min=0,
                        max=-1),
        xg.TriggeredTagsFormat(triggers=["<f"], tags=[xg.TagFormat(
            begin="<f>", content=xg.AnyTextFormat(), end="</f>")], at_least_one=True,
            stop_after_first=True, excludes=["x"]),
        xg.TagsWithSeparatorFormat(tags=[xg.TagFormat(begin="<g>", content=xg.AnyTextFormat(),
                                                      end="</g>")], separator=","),
        xg.DispatchFormat(rules=[("<calc>", xg.RegexFormat(pattern="[0-9]+</calc>"))],
                          loop=False, excludes=["<bad>"]),
        xg.TokenFormat(token=5),
        xg.ExcludeTokenFormat(exclude_tokens=[1, "</s>"]),
        xg.AnyTokensFormat(exclude_tokens=["</s>"]),
        xg.TokenTriggeredTagsFormat(trigger_tokens=["[TOOL_CALLS]"], tags=[xg.TagFormat(
            begin=xg.TokenFormat(token="[TOOL_CALLS]"), content=xg.AnyTextFormat(),
            end=xg.TokenFormat(token="</s>"))], exclude_tokens=[0]),
    ]))


def test_every_format_round_trips_and_uses_dsl_field_names():
    tag = every_format()
    data = json.loads(tag.to_json())
    assert data["type"] == "structural_tag"
    seen = set()
    for fmt in walk(data["format"]):
        seen.add(fmt["type"])
        assert set(fmt) - {"type"} <= DSL_FIELDS[fmt["type"]], fmt
    assert seen == set(DSL_FIELDS)
    assert xg.StructuralTag.from_dict(data).to_dict() == data
    assert xg.StructuralTag.from_dict(tag.to_json()) == tag


def test_builders_are_frozen_and_keyword_only():
    fmt = xg.ConstStringFormat(value="a")
    with pytest.raises(Exception):
        fmt.value = "b"
    with pytest.raises(TypeError):
        xg.ConstStringFormat("a")


@pytest.mark.parametrize("build", [
    lambda: xg.ConstStringFormat(value=1),
    lambda: xg.AnyTextFormat(excludes="<think>"),           # a str, not a list
    lambda: xg.AnyTextFormat(max_chars=True),
    lambda: xg.RepeatFormat(content=xg.ConstStringFormat(value="a"), min="1", max=2),
    lambda: xg.TagFormat(begin=1, content=xg.AnyTextFormat(), end="x"),
    lambda: xg.TagFormat(begin="a", content="text", end="x"),
    lambda: xg.TagFormat(begin="a", content=xg.AnyTextFormat(), end=["x", 2]),
    lambda: xg.TriggeredTagsFormat(triggers=["a"], tags=[xg.ConstStringFormat(value="a")]),
    lambda: xg.TriggeredTagsFormat(triggers=["a"], tags=[], at_least_one=1),
    lambda: xg.DispatchFormat(rules=[("a",)]),
    lambda: xg.TokenFormat(token=1.5),
    lambda: xg.AnyTokensFormat(exclude_tokens=[None]),
    lambda: xg.SequenceFormat(elements="ab"),
    lambda: xg.StructuralTag(format="x"),
])
def test_python_type_errors(build):
    with pytest.raises(TypeError):
        build()


def test_unknown_style_and_type():
    with pytest.raises(ValueError, match="style"):
        xg.JSONSchemaFormat(json_schema={}, style="yaml")
    with pytest.raises(ValueError, match="nope"):
        xg.StructuralTag.from_dict({"type": "structural_tag", "format": {"type": "nope"}})
    with pytest.raises(ValueError):
        xg.StructuralTag.from_dict({"format": {"type": "any_text"}})


# ----------------------------------------------------------------------------------------------
# get_model_structural_tag
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", supported_models())
@pytest.mark.parametrize("tool_choice", ["auto", "required", "none",
                                         {"type": "function", "function": {"name": "search"}}])
@pytest.mark.parametrize("reasoning", [True, "optional", False])
def test_every_model_builds_dsl_json(model, tool_choice, reasoning):
    tag = xg.get_model_structural_tag(model, TOOLS, tool_choice=tool_choice,
                                      reasoning=reasoning, parallel_tool_calls=False).to_dict()
    data = json.loads(json.dumps(tag))
    assert data == tag and tag["type"] == "structural_tag"
    for fmt in walk(tag["format"]):
        assert set(fmt) - {"type"} <= DSL_FIELDS[fmt["type"]], fmt
    text = json.dumps(tag, ensure_ascii=False)
    if tool_choice == "none":
        assert '"name": "get_weather"' not in text and "=get_weather" not in text
    elif isinstance(tool_choice, dict):
        assert "get_weather" not in text and "search" in text


def test_every_model_has_cases():
    # kimi_k3 turns are fixed block sequences: their cases are in test_model_formats_xgrammar.py.
    assert {name.split("@")[0].replace(".", "_") for name in RENDERERS} == \
        set(supported_models()) - {"kimi_k3"}


@pytest.mark.parametrize("alias, canonical", [
    ("Llama-3.1", "llama3"), ("llama3.2", "llama3"), ("Qwen3.5", "qwen3_coder"),
    ("qwen3-coder", "qwen3_coder"), ("gpt-oss", "harmony"), ("DeepSeek-V3.1", "deepseek_v3_1"),
    ("GLM-4.5", "glm4"), ("GLM-4.7", "glm4_7"), ("MiniMax-M2", "minimax"), ("kimi-k2", "kimi_k2"),
])
def test_aliases(alias, canonical):
    assert xg.get_model_structural_tag(alias, TOOLS) == \
        xg.get_model_structural_tag(canonical, TOOLS)


def test_qwen3_shape():
    tag = xg.get_model_structural_tag("qwen3", [TOOLS[0]], reasoning=False,
                                      parallel_tool_calls=False).to_dict()
    assert tag["format"] == {
        "type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"type": "tag",
                  "begin": '<tool_call>\n{"name": "get_weather", "arguments": ',
                  "content": {"type": "json_schema",
                              "json_schema": TOOLS[0]["function"]["parameters"],
                              "style": "json"},
                  "end": "}\n</tool_call>"}],
        "at_least_one": False, "stop_after_first": True,
        "excludes": ["<think>", "</think>", "</tool_call>"]}


def test_reasoning_block():
    def build(*args, **kwargs):
        return xg.get_model_structural_tag(*args, **kwargs).to_dict()

    required = build("qwen3", TOOLS)["format"]["elements"][0]     # the block, then "\n\n"
    assert required["type"] == "sequence" and required["elements"][0]["begin"] == "<think>"
    assert required["elements"][1] == {"type": "const_string", "value": "\n\n"}
    optional = build("qwen3", TOOLS, reasoning="optional")
    assert optional["format"]["elements"][0]["type"] == "optional"
    assert optional["format"]["elements"][0]["content"] == required
    prefilled = build("deepseek_v3.2", TOOLS)["format"]["elements"][0]
    assert prefilled["begin"] == "" and prefilled["end"] == "</think>"
    own = build("deepseek_v3.2", TOOLS, reasoning_prefilled=False)
    assert own["format"]["elements"][0]["begin"] == "<think>"
    # no reasoning for llama3 / mistral whatever the argument says
    assert xg.get_model_structural_tag("llama3", TOOLS, reasoning=True) == \
        xg.get_model_structural_tag("llama3", TOOLS, reasoning=False)


@pytest.mark.parametrize("kwargs, match", [
    ({"model": "gpt-17"}, "gpt-17"),
    ({"tool_choice": {"type": "function", "function": {"name": "fly"}}}, "fly"),
    ({"tool_choice": "always"}, "always"),
    ({"tool_choice": {"type": "function"}}, "tool_choice"),
    ({"tools": [TOOLS[0], TOOLS[0]]}, "duplicate"),
    ({"tools": [{"type": "code_interpreter", "bogus": 1}]}, r"tools\[0\]"),   # a builtin tool
    ({"tools": [{"type": "retrieval", "function": {"name": "x"}}]}, "function"),
    ({"tools": [], "tool_choice": "required"}, "at least one tool"),
    ({"reasoning": "maybe"}, "maybe"),
    ({"tools": {"name": "x"}}, "list"),
])
def test_value_errors(kwargs, match):
    args = {"model": "qwen3", "tools": TOOLS, **kwargs}
    with pytest.raises(ValueError, match=match):
        xg.get_model_structural_tag(**args)


def test_tools_without_parameters_and_flat_form():
    tag = xg.get_model_structural_tag("llama3", [{"name": "ping"}]).to_dict()
    # No parameters (or strict=False): unconstrained arguments, the True schema, as xgrammar.
    assert tag["format"]["tags"][0]["content"]["json_schema"] is True
    loose = xg.get_model_structural_tag("llama3", [{"name": "ping", "strict": False, "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}}}}]).to_dict()
    assert loose["format"]["tags"][0]["content"]["json_schema"] is True


@pytest.mark.parametrize("type_attr, value, ok", [
    ("string", "text", True), ("number", "42", True), ("integer", "42", True), ("boolean", "true", True),
    ("object", '{"a":1}', True), ("array", "[1]", True), ("null", "null", True), ("bogus", "x", False),
    ("boolean", "42", False)])
def test_kimi_k3_unconstrained_arguments_take_every_type_attribute(type_attr, value, ok):
    from xg2_jax.testing import _is_grammar_accept_string
    tag = xg.get_model_structural_tag("kimi_k3", [{"name": "anything", "parameters": None}], reasoning=False)
    text = ("<|close|>response<|sep|><|open|>tools<|sep|>"
            '<|open|>call tool="anything" index="1"<|sep|>'
            f'<|open|>argument key="k" type="{type_attr}"<|sep|>{value}<|close|>argument<|sep|>'
            "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>")
    assert _is_grammar_accept_string(xg.Grammar.from_structural_tag(tag), text) is ok


def _k3_single_argument(type_attr, value, key="q"):
    return ("<|close|>response<|sep|><|open|>tools<|sep|>"
            '<|open|>call tool="get_weather" index="1"<|sep|>'
            f'<|open|>argument key="{key}" type="{type_attr}"<|sep|>{value}<|close|>argument<|sep|>'
            "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>")


@pytest.mark.parametrize("string_schema, value, excluded_ok, kept_ok", [
    ({"type": "string"}, "a <|close] b", True, True),
    ({"type": "string"}, "a<|sep|>b", False, True),           # the markers, <|sep|> included
    ({"type": "string"}, "x<|open|>", False, True),
    ({"type": "string", "minLength": 2, "maxLength": 12}, "ab<|sep|>", False, True),  # bounded: product
    ({"type": "string", "minLength": 2, "maxLength": 12}, "abc", True, True),
    ({"type": "string", "minLength": 2, "maxLength": 12}, "a", False, False),
    ({"type": "string", "pattern": "^[a-z<|>]+$"}, "a<|sep|>b", True, True),   # a pattern keeps its language
    ({"type": "string", "pattern": "^[a-z<|>]+$"}, "a b", False, False),
])
def test_kimi_k3_argument_values_exclude_the_markers(string_schema, value, excluded_ok, kept_ok):
    from xg2_jax.testing import _is_grammar_accept_string
    tools = [{"name": "get_weather", "parameters": {
        "type": "object", "properties": {"q": string_schema}, "required": ["q"]}}]
    for exclude, ok in ((True, excluded_ok), (False, kept_ok)):
        tag = xg.get_model_structural_tag("kimi_k3", tools, reasoning=False, exclude_special_tokens=exclude)
        nodes = [t["content"]["elements"][2] for t in tag.to_dict()["format"]["elements"][1]["content"]["content"]["tags"]]
        assert nodes[0].get("excludes", []) == (["<|open|>", "<|close|>", "<|sep|>"] if exclude else [])
        grammar = xg.Grammar.from_structural_tag(tag)
        assert _is_grammar_accept_string(grammar, _k3_single_argument("string", value)) is ok


def test_kimi_k3_unconstrained_names_with_excludes():
    from xg2_jax.testing import _is_grammar_accept_string
    # A free parameter name is an identifier, which no marker (with '<' and '|') can occur in.
    tag = xg.get_model_structural_tag("kimi_k3", [{"name": "get_weather"}], reasoning=False)
    grammar = xg.Grammar.from_structural_tag(tag)
    assert _is_grammar_accept_string(grammar, _k3_single_argument("string", "v", key="any_name"))
    assert not _is_grammar_accept_string(grammar, _k3_single_argument("string", "v<|sep|>", key="k"))
    # An excluded string of identifier characters could occur in a name: refused, located.
    raw = {"type": "structural_tag", "format": {"type": "json_schema", "style": "kimi_k3_xml", "excludes": ["ab"],
                                                "json_schema": {"type": "object", "additionalProperties": True}}}
    with pytest.raises(xg.StructuralTagError, match="additionalProperties.*'ab'"):
        xg.Grammar.from_structural_tag(raw)


def test_format_list_fields_equal_lists():
    fmt = xg.AnyTextFormat(excludes=["<a>", "<b>"])
    assert fmt.excludes == ["<a>", "<b>"] and fmt.excludes == ("<a>", "<b>") and fmt.excludes != ["<a>"]
    assert hash(fmt) == hash(xg.AnyTextFormat(excludes=("<a>", "<b>")))
    seq = xg.SequenceFormat(elements=[fmt])
    assert seq.elements == [fmt] and xg.AnyTextFormat().excludes == [] and [] == xg.AnyTextFormat().excludes


@pytest.mark.parametrize("body, ok", [
    ('<cofl:value name="text" type="raw">hello</cofl:value>', True),
    ('<cofl:value name="c" type="dict"><cofl:value name="m" type="raw">x</cofl:value>'
     '<cofl:value name="l" type="list"><cofl:value type="json">1</cofl:value></cofl:value></cofl:value>', True),
    ('<cofl:value name="t" type="json">"quoted"</cofl:value>', False),
    ('<cofl:value name="l" type="list"><cofl:value name="0" type="raw">x</cofl:value></cofl:value>', False)])
def test_cohere_unconstrained_arguments_are_recursive_values(body, ok):
    from xg2_jax.testing import _is_grammar_accept_string
    tag = xg.get_model_structural_tag("cohere", [{"name": "anything"}], tool_choice="required", reasoning=False)
    text = f'<cofl:tool_calls><cofl:tool_call id="0" name="anything">{body}</cofl:tool_call></cofl:tool_calls>'
    assert _is_grammar_accept_string(xg.Grammar.from_structural_tag(tag), text) is ok


@pytest.mark.parametrize("model", ["deepseek_r1", "deepseek_v3_1", "deepseek_v4_1", "exaone", "minimax_m3"])
def test_reasoning_auto_opens_its_own_block_where_thinking_is_prefilled(model):
    from xg2_jax.testing import _is_grammar_accept_string
    think, end = ("<mm:think>", "</mm:think>") if model == "minimax_m3" else ("<think>", "</think>")
    auto = xg.Grammar.from_structural_tag(xg.get_model_structural_tag(model, [], reasoning="auto"))
    assert _is_grammar_accept_string(auto, "answer")
    assert _is_grammar_accept_string(auto, f"{think}plan{end}answer")
    assert not _is_grammar_accept_string(auto, f"plan{end}answer")
    # Thinking on: the template ends the prompt with the open tag, the output starts inside.
    on = xg.Grammar.from_structural_tag(xg.get_model_structural_tag(model, [], reasoning=True))
    assert _is_grammar_accept_string(on, f"plan{end}answer")
    assert not _is_grammar_accept_string(on, f"{think}plan{end}answer")
