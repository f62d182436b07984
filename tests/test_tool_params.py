"""Tool declarations (xgrammar's ``openai_tool_call_schema``), ``normalize_tool_choice``,
``register_model_structural_tag`` and the per-model builders' xgrammar call forms."""

import pytest

import xg2_jax
from xg2_jax import Grammar, get_model_structural_tag
from xg2_jax.builtin_structural_tag import (
    _bind_marker_tokens,
    _structural_tag_marker_tokens,
    _structural_tag_registry,
    get_llama_structural_tag,
    get_qwen_3_structural_tag,
    normalize_tool_choice,
    register_model_structural_tag,
)
from xg2_jax.openai_tool_call_schema import (
    BuiltinToolParam,
    FunctionDefinition,
    FunctionToolParam,
)
from xg2_jax.structural_tag import ConstStringFormat, StructuralTag, TokenFormat
from xg2_jax.testing import _is_grammar_accept_string

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def _tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": SCHEMA}}


SEARCH = {"type": "web_search_preview", "name": "browser.search", "parameters": SCHEMA}


def test_tool_objects_round_trip_to_dicts():
    tool = FunctionToolParam(function={"name": "f", "parameters": SCHEMA})
    assert isinstance(tool.function, FunctionDefinition)
    assert tool.to_dict() == _tool("f")
    assert BuiltinToolParam(type="code_interpreter").name == "code_interpreter"
    assert BuiltinToolParam(**SEARCH).to_dict() == SEARCH


@pytest.mark.parametrize("build, match", [
    (lambda: FunctionDefinition(name=""), "name"),
    (lambda: FunctionDefinition(name="f", parameters=[]), "parameters"),
    (lambda: FunctionToolParam(function="f"), "function"),
    (lambda: FunctionToolParam(type="other", function={"name": "f"}), "type"),
    (lambda: BuiltinToolParam(type="function"), "type"),
])
def test_tool_objects_check_their_fields(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize("choice, functions, builtins, simplified", [
    ("auto", ["a", "b"], ["browser.search"], "auto"),
    (None, ["a", "b"], ["browser.search"], "auto"),
    ("required", ["a", "b"], ["browser.search"], "required"),
    ("none", [], [], "auto"),
    ({"type": "function", "function": {"name": "b"}}, ["b"], [], "forced"),
    ({"type": "web_search_preview"}, [], ["browser.search"], "forced"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [
        {"type": "function", "function": {"name": "a"}}, {"type": "web_search_preview"}]}},
     ["a"], ["browser.search"], "required"),
])
def test_normalize_tool_choice(choice, functions, builtins, simplified):
    f, b, c = normalize_tool_choice([_tool("a"), _tool("b"), SEARCH], choice)
    assert [t.function.name for t in f] == functions
    assert [t.name for t in b] == builtins
    assert c == simplified


@pytest.mark.parametrize("tools, choice, match", [
    ("x", "auto", "must be a list"),
    ([], "required", "required"),
    ([_tool("a")], {"type": "function", "function": {"name": "z"}}, "not found"),
    ([SEARCH, SEARCH], {"type": "web_search_preview"}, "exactly one"),
    ([_tool("a")], {"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "web_search_preview"}]}}, "Allowed builtin"),
    ([_tool("a")], {"type": "allowed_tools", "allowed_tools": {"mode": "sometimes",
                                                               "tools": []}}, "mode"),
    ([{"type": "function", "function": "f"}], "auto", "function tool"),
    ([{"type": "web", "bogus": 1}], "auto", "tools\\[0\\]"),
    ([3], "auto", "tools\\[0\\]"),
    ([_tool("a")], "sometimes", "unknown tool_choice"),
])
def test_normalize_tool_choice_errors(tools, choice, match):
    with pytest.raises(ValueError, match=match):
        normalize_tool_choice(tools, choice)


def test_builtin_tools_are_left_out_where_the_model_has_no_format_for_them():
    objects = [FunctionToolParam(function={"name": "f", "parameters": SCHEMA})]
    assert get_model_structural_tag("qwen3", objects) == get_model_structural_tag(
        "qwen3", [_tool("f")])
    # As xgrammar: a format that cannot write a builtin (hosted) call leaves the tool out.
    assert get_model_structural_tag("qwen3", [_tool("f"), SEARCH]) == get_model_structural_tag(
        "qwen3", [_tool("f")])
    assert get_qwen_3_structural_tag([_tool("f")], builtin_tools=[BuiltinToolParam(**SEARCH)]) \
        == get_qwen_3_structural_tag([_tool("f")])
    with pytest.raises(ValueError, match="only harmony"):
        get_model_structural_tag("qwen3", [SEARCH], "required")
    with pytest.raises(ValueError, match="only harmony"):
        get_model_structural_tag("qwen3", [_tool("f"), SEARCH], {"type": "web_search_preview"})


def _harmony_accepts(tag, text) -> bool:
    return _is_grammar_accept_string(Grammar.from_structural_tag(tag), text)


HARMONY_CALL = '<|channel|>{channel} to=browser.search code<|message|>{{"q": "x"}}<|call|>'


@pytest.mark.parametrize("choice, final_ok", [
    ("auto", True), ("required", False), ({"type": "web_search_preview"}, False),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "required",
                                                 "tools": [{"type": "web_search_preview"}]}}, False),
])
def test_harmony_calls_builtin_tools(choice, final_ok):
    tag = get_model_structural_tag("harmony", [_tool("f"), SEARCH], choice, reasoning=False)
    # gpt-oss's browser calls use the analysis channel; xgrammar writes commentary: both.
    for channel in ("analysis", "commentary"):
        assert _harmony_accepts(tag, HARMONY_CALL.format(channel=channel))
        assert _harmony_accepts(tag, f' to=browser.search<|channel|>{channel} code<|message|>{{"q": "x"}}<|call|>')
    assert not _harmony_accepts(tag, '<|channel|>analysis to=browser.search<|message|>{"q": "x"}<|call|>')
    assert not _harmony_accepts(tag, '<|channel|>analysis to=browser.search code<|message|>{"r": 1}<|call|>')
    assert not _harmony_accepts(tag, '<|channel|>commentary to=functions.browser.search <|constrain|>json'
                                     '<|message|>{"q": "x"}<|call|>')
    assert _harmony_accepts(tag, "<|channel|>final<|message|>hi<|return|>") == final_ok
    function_call = '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"q": "x"}<|call|>'
    assert _harmony_accepts(tag, function_call) == (choice in ("auto", "required"))
    text = HARMONY_CALL.format(channel="analysis")
    calls = xg2_jax.parse_structured_output(text, tag, tools=[_tool("f"), SEARCH])["tool_calls"]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("browser.search", '{"q": "x"}')]


def test_harmony_builder_takes_builtin_tools_and_the_forced_form():
    from xg2_jax.builtin_structural_tag import get_harmony_structural_tag

    tag = get_harmony_structural_tag([], builtin_tools=[BuiltinToolParam(**SEARCH)],
                                     tool_choice="forced", reasoning="disabled")
    assert _harmony_accepts(tag, HARMONY_CALL.format(channel="commentary"))
    assert not _harmony_accepts(tag, "<|channel|>final<|message|>hi<|return|>")


@pytest.mark.parametrize("tools, accepted", [([_tool("f")], True), ([], None),
                                             ([_tool("f"), _tool("g")], None)])
def test_builders_take_the_forced_choice(tools, accepted):
    if accepted is None:
        with pytest.raises(ValueError, match="exactly one tool"):
            get_llama_structural_tag(tools, tool_choice="forced")
        return
    tag = get_llama_structural_tag(tools, tool_choice="forced")
    assert tag == get_llama_structural_tag(
        tools, tool_choice={"type": "function", "function": {"name": "f"}})
    grammar = Grammar.from_structural_tag(tag)
    assert _is_grammar_accept_string(grammar, '{"name": "f", "parameters": {"q": "x"}}')
    assert not _is_grammar_accept_string(grammar, "plain text")


@pytest.fixture
def registered_name():
    name = "_test_registered_model"
    yield name
    _structural_tag_registry.pop(name, None)
    _structural_tag_marker_tokens.pop(name, None)


def test_registered_model_builds_through_get_model_structural_tag(registered_name):
    calls = []

    def build(tools, tool_choice, reasoning, **options):
        calls.append((tools, tool_choice, reasoning, options))
        return StructuralTag(format=ConstStringFormat(value="<tool_call>x</tool_call>"))

    assert register_model_structural_tag(registered_name, marker_tokens=["<tool_call>"])(
        build) is build
    assert xg2_jax.register_model_structural_tag is register_model_structural_tag
    plain = get_model_structural_tag(registered_name, [_tool("f")], "required", "disabled")
    assert plain.format == ConstStringFormat(value="<tool_call>x</tool_call>")
    assert calls[0][:3] == ([_tool("f")], "required", "disabled")
    assert calls[0][3]["parallel_tool_calls"] is True
    bound = get_model_structural_tag(registered_name, token_markers=True)
    assert TokenFormat(token="<tool_call>") in bound.format.elements

    register_model_structural_tag(registered_name)(build)      # again, without markers
    with pytest.raises(ValueError, match="token_markers is not supported"):
        get_model_structural_tag(registered_name, token_markers=True)


def test_registered_builder_must_return_a_structural_tag(registered_name):
    register_model_structural_tag(registered_name)(lambda *a, **k: {"type": "structural_tag"})
    with pytest.raises(ValueError, match="not a StructuralTag"):
        get_model_structural_tag(registered_name)


def test_unknown_model_names_the_format():
    with pytest.raises(ValueError, match="Unknown format type"):
        get_model_structural_tag("no_such_model")


def test_bind_marker_tokens_returns_the_same_tag_without_markers():
    tag = StructuralTag(format=ConstStringFormat(value="<think>x"))
    assert _bind_marker_tokens(tag, []) is tag
    assert _bind_marker_tokens(tag, ["<tool_call>"]) is tag
    bound = _bind_marker_tokens(tag, ["<think>", "<think>"])
    assert bound is not tag and TokenFormat(token="<think>") in bound.format.elements
