"""Parsed outputs: every built-in model format's realistic turns (tests/model_format_cases.py,
written from the models' chat templates, independently of the structural tags) parse into
the OpenAI message they hold, by following the structural tag; the parser and the grammar
agree (a turn the grammar accepts parses; the parse of the text needs no regex of its own)."""

from __future__ import annotations

import json

import pytest
from model_format_cases import (
    ALL_CASES,
    CALL_SEARCH,
    CALL_WEATHER,
    REASONING,
    TOOLS,
)

import xg2_jax as xg

EXPECTED_CALLS = {"one_call": [CALL_WEATHER], "one_call_required": [CALL_WEATHER],
                  "named_choice": [CALL_WEATHER], "two_calls": [CALL_WEATHER, CALL_SEARCH],
                  "preamble_then_call": [CALL_WEATHER], "recipient_in_header": [CALL_WEATHER],
                  "constrain_adjacent": [CALL_WEATHER], "constrain_adjacent_in_header": [CALL_WEATHER],
                  "required_without_reasoning": [CALL_WEATHER]}
OK_CASES = [c for c in ALL_CASES if c.ok]


def _tag(case):
    kw = dict(case.kwargs)
    return xg.get_model_structural_tag(case.model_name, TOOLS, kw.pop("tool_choice", "auto"),
                                       kw.pop("reasoning", True), **kw)


@pytest.mark.parametrize("case", OK_CASES, ids=str)
def test_turns_parse_into_their_message(case):
    message = xg.parse_structured_output(case.text, _tag(case), tools=TOOLS)
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
             for c in message["tool_calls"]]
    assert calls == EXPECTED_CALLS.get(case.name, [])
    assert all(c["type"] == "function" and c["id"].startswith("call_")
               for c in message["tool_calls"])
    assert len({c["id"] for c in message["tool_calls"]}) == len(calls)
    thinks = "think" in case.text or "analysis" in case.text
    if thinks and case.kwargs.get("reasoning", True) is not False:
        assert message["reasoning_content"] == REASONING
    if case.name == "text_only":
        assert message["content"] == "Paris is sunny today."
    if case.name in ("one_call", "two_calls") and not case.model.startswith(("harmony",
                                                                             "mistral")):
        assert message["content"] == "Let me look that up for you."


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.name == "missing_end_tag"], ids=str)
def test_cut_turns_raise(case):
    with pytest.raises(xg.OutputParseError):
        xg.parse_structured_output(case.text, _tag(case), tools=TOOLS)


def test_tool_names_that_contain_one_another():
    tools = [{"type": "function", "function": {"name": n, "parameters": {
        "type": "object", "properties": {p: {"type": "integer"}}, "required": [p]}}}
        for n, p in (("get", "a"), ("get_item", "b"))]
    tag = xg.get_model_structural_tag("qwen3", tools, "required", False)
    text = '<tool_call>\n{"name": "get_item", "arguments": {"b": 1}}\n</tool_call>'
    message = xg.parse_structured_output(text, tag, tools=tools)
    assert message["tool_calls"][0]["function"]["name"] == "get_item"


def test_structural_tag_without_calls_is_content():
    tag = {"type": "structural_tag", "format": {"type": "json_schema",
                                                "json_schema": {"type": "integer"}}}
    assert xg.parse_structured_output(" 42", tag)["content"] == "42"
    with pytest.raises(xg.OutputParseError):
        xg.parse_structured_output("x", tag)


def test_xml_styles_decode_values_by_schema():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"},
                                         "e": {"enum": ["a", "b"], "type": "string"},
                                         "o": {"type": "object"}}}}}]
    tag = xg.get_model_structural_tag("qwen3_coder", tools, "required", False)
    text = ("<tool_call>\n<function=f>\n<parameter=s>\nline one\nline two\n</parameter>\n"
            "<parameter=n>\n2.5\n</parameter>\n<parameter=e>\nb\n</parameter>\n"
            '<parameter=o>\n{"k": [1]}\n</parameter>\n</function>\n</tool_call>')
    call = xg.parse_structured_output(text, tag, tools=tools)["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {
        "s": "line one\nline two", "n": 2.5, "e": "b", "o": {"k": [1]}}


@pytest.mark.parametrize("text, content", [
    ("<|START_TEXT|>Hi & <b>bye</b><|END_TEXT|>", "Hi & <b>bye</b>"),
    ("<|START_TEXT|>\n Hi \n<|END_TEXT|>", "Hi"),
    ("<|START_RESPONSE|>Hi<|END_RESPONSE|>", "Hi"),  # Command A's template
    ("<|START_RESPONSE|>Hi<|END_TEXT|>", "<|START_RESPONSE|>Hi<|END_TEXT|>"),
    # Not one whole block: kept as written.
    ("<|START_TEXT|>Hi", "<|START_TEXT|>Hi"),
    ("<|START_TEXT|>a<|END_TEXT|><|START_TEXT|>b<|END_TEXT|>",
     "<|START_TEXT|>a<|END_TEXT|><|START_TEXT|>b<|END_TEXT|>"),
])
def test_cohere_text_block_is_unwrapped(text, content):
    tag = xg.get_model_structural_tag("cohere", [], reasoning="disabled")
    assert xg.parse_structured_output(text, tag)["content"] == content
