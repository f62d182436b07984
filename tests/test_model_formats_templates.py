"""Built-in formats against what their chat templates write around the reasoning block and the
calls (GLM-4.7's prefilled <think>, Cohere's prefilled <|START_THINKING|>, Qwen3's "\\n\\n"
after </think>, MiniMax-M3's lone </mm:think>, gpt-oss's template call header), and the marker
binding of ``token_markers`` / ``_bind_marker_tokens`` (free text under an end token is
token-level; what cannot be bound is a located error).

The turns are written here from the templates (the renderers of model_format_cases.py, whose
call arguments are checked with jsonschema first), then fed token by token to the compiled tag.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from model_format_cases import RENDERERS, TOOLS
from test_model_formats_xgrammar import Vocab

import xg2_jax as xg
from xg2_jax.builtin_structural_tag import _bind_marker_tokens, get_minimax_m3_structural_tag
from xg2_jax.structural_tag import (
    AnyTextFormat,
    AnyTokensFormat,
    ConstStringFormat,
    DispatchFormat,
    OptionalFormat,
    RepeatFormat,
    SequenceFormat,
    StructuralTag,
    TagFormat,
    TokenFormat,
    TriggeredTagsFormat,
)

QWEN3_EOS = 151645      # <|im_end|> in the qwen3 test vocabulary
LLAMA3_EOS = 128009     # <|eot_id|> in the llama3 test vocabulary
CALL = ("search", {"query": "Eiffel tower height", "limit": 3})
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
M3 = "]<]minimax[>["


@pytest.fixture(scope="module")
def vocabs(vocab_path):
    cache: dict = {}

    def get(name):
        if name not in cache:
            cache[name] = Vocab(vocab_path(name))
        return cache[name]
    return get


def _calls(model: str, calls=(CALL,)) -> str:
    for name, args in calls:     # the oracle: the arguments follow the tool's schema
        jsonschema.validate(args, SCHEMAS[name])
    return RENDERERS[model].calls(list(calls))


def _run(vocabs, model, text, *, vocab="qwen3", eos=QWEN3_EOS, **kwargs) -> bool:
    return vocabs(vocab).run(xg.get_model_structural_tag(model, TOOLS, **kwargs), text, eos=eos)


# ----------------------------------------------------------------------------------------------
# Reasoning blocks as the templates write them
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", ["qwen3", "qwen3_coder"])
@pytest.mark.parametrize("text, ok", [
    ("<think>\nplan\n</think>\n\nThe answer.", True),     # '\n</think>\n\n' + content
    ("The answer.", True),                                # the block left out
    ("<think>plan</think>The answer.", False),            # the template's "\n\n" is missing
    ("<think>plan</think>\n\n<think>again</think>\n\nx", False),
])
def test_qwen_optional_reasoning_is_followed_by_two_newlines(vocabs, model, text, ok):
    assert _run(vocabs, model, text, reasoning="auto") == ok


@pytest.mark.parametrize("model", ["qwen3", "qwen3_coder"])
def test_qwen_reasoning_then_call_as_the_template_renders_it(vocabs, model):
    text = RENDERERS[model].think("I should search.") + _calls(model)
    assert _run(vocabs, model, text)
    assert _run(vocabs, model, text, tool_choice="required")


@pytest.mark.parametrize("model, think, ok", [
    # GLM-4.7: the generation prompt ends with "<think>"; calls follow "</think>" directly.
    ("glm4_7", "plan</think>", True), ("glm4_7", "<think>plan</think>", False),
    # GLM-4.5/4.6: the model opens the block itself and writes "\n" before a call.
    ("glm4", "<think>plan</think>\n", True), ("glm4", "plan</think>\n", False),
])
@pytest.mark.parametrize("tool_choice", ["auto", "required",
                                         {"type": "function", "function": {"name": "search"}}])
def test_glm_reasoning_prefill_follows_the_template(vocabs, model, think, ok, tool_choice):
    text = think + _calls(model)
    assert _run(vocabs, model, text, tool_choice=tool_choice) == ok


def test_glm_4_7_is_xgrammars_glm_4_7_and_a_forced_call_is_the_call_tag():
    assert xg.get_model_structural_tag("glm_4_7", TOOLS) == xg.get_model_structural_tag("GLM-4.7", TOOLS)
    forced = xg.get_model_structural_tag(
        "glm_4_7", TOOLS, {"type": "function", "function": {"name": "search"}}).format
    block, call = forced.elements
    assert block.begin == "" and block.end == "</think>"
    assert call == TagFormat(begin="<tool_call>search", content=xg.JSONSchemaFormat(
        json_schema=SCHEMAS["search"], style="glm_xml"), end="</tool_call>")


@pytest.mark.parametrize("reasoning, text, ok", [
    ("enabled", "plan<|END_THINKING|>The answer.", True),     # the prompt opened the block
    ("enabled", "<|START_THINKING|>plan<|END_THINKING|>The answer.", False),
    ("auto", "<|START_THINKING|>plan<|END_THINKING|>The answer.", True),
    ("auto", "The answer.", True),
    ("disabled", "The answer.", True),
    ("disabled", "plan<|END_THINKING|>The answer.", False),
])
def test_cohere_reasoning_starts_inside_the_prompted_block(vocabs, reasoning, text, ok):
    assert _run(vocabs, "cohere", text, reasoning=reasoning) == ok


def test_cohere_reasoning_then_calls(vocabs):
    text = RENDERERS["cohere"].think("Search first.") + _calls("cohere")
    assert _run(vocabs, "cohere", text, tool_choice="required")


@pytest.mark.parametrize("model, opener", [
    ("minimax", "<think>\n"), ("cohere", "<|START_THINKING|>"), ("glm4_7", "<think>"),
    ("minimax_m3", "<mm:think>")])
def test_prompt_opened_reasoning_is_not_opened_again(vocabs, model, opener):
    """Templates whose generation prompt opens the block (MiniMax-M2: ']~b]ai\n<think>\n'):
    the turn is the reasoning's rest, its end marker and the calls."""
    text = RENDERERS[model].think("I should search.") + _calls(model)
    assert not text.startswith(opener)
    assert _run(vocabs, model, text, tool_choice="required")
    assert not _run(vocabs, model, opener + text, tool_choice="required")


@pytest.mark.parametrize("text, ok", [
    ("</mm:think>The answer.", True),                       # reasoning skipped by its end marker
    ("</mm:think>" + _calls("minimax_m3"), True),
    ("<mm:think>plan</mm:think>The answer.", True),
    ("The answer.", True),
    ("plan</mm:think>The answer.", False),                  # no prompt-opened block in "auto"
    ("</mm:think></mm:think>The answer.", False),
    ("</mm:think><mm:think>plan</mm:think>The answer.", False),
])
def test_minimax_m3_auto_may_skip_reasoning_with_a_lone_end(vocabs, text, ok):
    assert _run(vocabs, "minimax_m3", text, reasoning="auto") == ok


def test_minimax_m3_builder_defaults_to_auto_reasoning():
    assert get_minimax_m3_structural_tag(TOOLS) == get_minimax_m3_structural_tag(TOOLS, reasoning="auto")
    assert get_minimax_m3_structural_tag(TOOLS) == xg.get_model_structural_tag("minimax_m3", TOOLS,
                                                                                reasoning="auto")
    assert xg.get_model_structural_tag("minimax_m3", TOOLS) != get_minimax_m3_structural_tag(TOOLS)


# ----------------------------------------------------------------------------------------------
# gpt-oss Harmony
# ----------------------------------------------------------------------------------------------
def _template_call(name: str, args: dict) -> str:
    """A call as gpt-oss's chat_template.jinja renders it, after "<|start|>assistant"."""
    jsonschema.validate(args, SCHEMAS[name])
    return f" to=functions.{name}<|channel|>commentary json<|message|>{json.dumps(args)}<|call|>"


@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_harmony_accepts_the_chat_templates_call_header(vocabs, tool_choice):
    text = "<|channel|>analysis<|message|>Search.<|end|><|start|>assistant" + _template_call(*CALL)
    assert _run(vocabs, "harmony", text, vocab="llama3", eos=LLAMA3_EOS, tool_choice=tool_choice)
    bad = _template_call(*CALL).replace('"limit": 3', '"limit": 0')     # minimum 1
    assert not _run(vocabs, "harmony", bad, vocab="llama3", eos=LLAMA3_EOS, reasoning=False)


@pytest.mark.parametrize("exclude", [True, False])
def test_harmony_exclude_special_tokens_gates_markers_in_message_text(vocabs, exclude):
    tag = xg.get_model_structural_tag("harmony", TOOLS, exclude_special_tokens=exclude)
    excludes = [list(f.excludes) for f in _walk(tag.format) if isinstance(f, AnyTextFormat)]
    assert excludes and all(bool(e) == exclude for e in excludes)
    text = "<|channel|>final<|message|>a <|channel|> b<|return|>"
    assert _run(vocabs, "harmony", text, vocab="llama3", eos=LLAMA3_EOS, reasoning=False,
                exclude_special_tokens=exclude) == (not exclude)


def _walk(fmt):
    yield fmt
    for name in ("content", "elements", "tags"):
        child = getattr(fmt, name, None)
        for item in child if isinstance(child, tuple) else [child] if child is not None else []:
            if not isinstance(item, (str, TokenFormat)):
                yield from _walk(item)


# ----------------------------------------------------------------------------------------------
# Marker binding
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("end", ["</think>", "\n</think>"])
def test_free_text_under_an_end_token_becomes_token_level(vocabs, end):
    tag = StructuralTag(format=TagFormat(begin="", content=AnyTextFormat(excludes=["<think>"]),
                                         end=end))
    bound = _bind_marker_tokens(tag, ["<think>", "</think>"]).format
    assert bound.end == TokenFormat(token="</think>")
    tail = [ConstStringFormat(value="\n")] if end.startswith("\n") else []
    assert bound.content == (SequenceFormat(elements=[AnyTokensFormat(exclude_tokens=["<think>"]), *tail])
                             if tail else AnyTokensFormat(exclude_tokens=["<think>"]))
    v = vocabs("qwen3")
    (think,), (end_think,) = v.ids("<think>"), v.ids("</think>")     # single added tokens
    m = xg.GrammarMatcher(v.compiler.compile_structural_tag(StructuralTag(format=bound)))
    assert m.accept_token(v.ids("plan")[0])
    assert not m.fork().accept_token(think)
    if not tail:
        assert m.accept_token(end_think) and m.is_completed()


def test_binding_keeps_unmarked_subtrees_and_converts_nested_free_text():
    inner = TagFormat(begin="<a>", content=AnyTextFormat(), end="</a>")
    tag = StructuralTag(format=TagFormat(begin="", end="</think>", content=SequenceFormat(
        elements=[OptionalFormat(content=AnyTextFormat()), inner, AnyTextFormat()])))
    first, nested, last = _bind_marker_tokens(tag, ["</think>"]).format.content.elements
    assert first == OptionalFormat(content=AnyTokensFormat()) and last == AnyTokensFormat()
    assert nested is inner
    untouched = StructuralTag(format=RepeatFormat(min=1, max=2, content=ConstStringFormat(
        value="<tool_call>x")))
    assert _bind_marker_tokens(untouched, ["<tool_call>"]) is untouched


@pytest.mark.parametrize("content, match", [
    (AnyTextFormat(excludes=["<|im_end|>"]), r"format\.content: .*must be markers"),
    (AnyTextFormat(max_chars=5), r"format\.content: .*max_chars"),
    (RepeatFormat(min=1, max=2, content=AnyTextFormat()), r"format\.content: .*Repeat or Dispatch"),
    (DispatchFormat(rules=[("<a>", ConstStringFormat(value="x"))]), "Repeat or Dispatch"),
    (SequenceFormat(elements=[TriggeredTagsFormat(triggers=["<b>"], tags=[TagFormat(
        begin="<b>", content=AnyTextFormat(), end="</b>")])]), r"format\.content\.elements\[0\]"),
])
def test_what_an_end_token_cannot_close_is_a_located_error(content, match):
    tag = StructuralTag(format=TagFormat(begin="", content=content, end="</think>"))
    with pytest.raises(xg.StructuralTagError, match=match):
        _bind_marker_tokens(tag, ["</think>"])


def test_marker_in_end_alternatives_is_refused_and_other_alternatives_stay():
    tag = StructuralTag(format=TagFormat(begin="<tool_call>", content=ConstStringFormat(value="x"),
                                         end=["</tool_call>", "</tool_call>\n"]))
    with pytest.raises(ValueError, match=r"format\.end: .*list of alternatives"):
        _bind_marker_tokens(tag, ["<tool_call>", "</tool_call>"])
    plain = StructuralTag(format=TagFormat(begin="<tool_call>", content=ConstStringFormat(value="x"),
                                           end=["a", "b"]))
    bound = _bind_marker_tokens(plain, ["<tool_call>"]).format
    assert bound.begin == TokenFormat(token="<tool_call>") and bound.end == ["a", "b"]


@pytest.mark.parametrize("model", ["qwen3", "qwen3_coder", "glm4", "glm4_7", "gemma_4"])
@pytest.mark.parametrize("reasoning", ["enabled", "auto"])
def test_models_with_token_markers_bind_their_reasoning_block(model, reasoning):
    """Every model with marker tokens keeps only markers in its reasoning excludes, so its
    reasoning binds to token-level text ended by the think end token."""
    fmt = xg.get_model_structural_tag(model, TOOLS, reasoning=reasoning, token_markers=True).format
    tokens = [f for f in _walk(fmt) if isinstance(f, AnyTokensFormat)]
    assert tokens and not [f for f in _walk(fmt) if isinstance(f, AnyTextFormat)]
