"""xgrammar 0.2.9's structural-tag surface: the gemma and deepseek_v4_1_xml argument styles,
JSONSchemaFormat / AnyTextFormat options, get_model_structural_tag's keywords and the
per-model builders, Gemma 4 turns rendered by a Jinja template on the real Gemma vocabulary,
the DeepSeek "\\n\\n" regression, and mask/accept agreement for the new formats.

The Gemma template below is written for these tests after the published
google/gemma-4-31B-it chat_template.jinja (its format_argument macro and the tool_calls branch
of its message loop; https://ai.google.dev/gemma/docs/core/prompt-formatting-gemma4): jinja2
renders it, so dictsort's order and the raw <|"|> strings are Jinja's, not ours.
"""

from __future__ import annotations

import json
import random

import jinja2
import numpy as np
import pytest
from helpers import mask_row, tokenize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_format_cases import TOOLS, load_vocab_file, special_token_ids, tokenize_with_specials

import xg2_jax as xg
from xg2_jax import builtin_structural_tag

GEMMA_TEMPLATE = """
{%- macro format_argument(argument, escape_keys=True) -%}
  {%- if argument is string -%}{{- '<|"|>' + argument + '<|"|>' -}}
  {%- elif argument is boolean -%}{{- 'true' if argument else 'false' -}}
  {%- elif argument is mapping -%}{{- '{' -}}
    {%- for key, value in argument | dictsort -%}
      {%- if not loop.first %},{% endif -%}
      {%- if escape_keys %}{{ '<|"|>' + key + '<|"|>' }}{% else %}{{ key }}{% endif -%}
      :{{- format_argument(value, escape_keys=escape_keys) -}}
    {%- endfor -%}{{- '}' -}}
  {%- elif argument is sequence -%}{{- '[' -}}
    {%- for item in argument -%}{{- format_argument(item, escape_keys=escape_keys) -}}
      {%- if not loop.last %},{% endif -%}{%- endfor -%}{{- ']' -}}
  {%- elif argument is none -%}{{- 'null' -}}
  {%- else -%}{{- argument -}}
  {%- endif -%}
{%- endmacro -%}
{%- if message.reasoning_content -%}
  {{- '<|channel>thought\\n' + message.reasoning_content + '\\n<channel|>' -}}
{%- endif -%}
{%- for tool_call in message.tool_calls -%}
  {%- set function = tool_call['function'] -%}
  {{- '<|tool_call>call:' + function['name'] + '{' -}}
  {%- for key, value in function['arguments'] | dictsort -%}
    {%- if not loop.first %},{% endif -%}
    {{- key -}}:{{- format_argument(value, escape_keys=False) -}}
  {%- endfor -%}
  {{- '}<tool_call|>' -}}
{%- endfor -%}
"""


def render_gemma(calls, reasoning=None) -> str:
    message = {"reasoning_content": reasoning, "tool_calls": [
        {"type": "function", "function": {"name": n, "arguments": a}} for n, a in calls]}
    return jinja2.Environment().from_string(GEMMA_TEMPLATE).render(message=message)


class Vocab:
    def __init__(self, path):
        self.tokenizer = xg.TokenizerInfo.from_vocab_file(path)
        self.compiler = xg.GrammarCompiler(self.tokenizer)
        self.specials = special_token_ids(load_vocab_file(path))

    def ids(self, text: str) -> list[int]:
        return tokenize_with_specials(text, self.specials,
                                      lambda data: tokenize(self.tokenizer, data.decode()))

    def run(self, tag, text: str, *, eos: int | None = None) -> bool:
        """Feeds ``text`` (and ``eos``) token by token, each token allowed by the mask first."""
        m = xg.GrammarMatcher(self.compiler.compile_structural_tag(tag))
        size = self.tokenizer.vocab_size
        for tid in self.ids(text) + ([eos] if eos is not None else []):
            row = mask_row(m, size)
            if not (int(row[tid >> 5]) >> (tid & 31)) & 1 or not m.accept_token(tid):
                return False
        return m.is_terminated() if eos is not None else m.is_completed()


@pytest.fixture(scope="module")
def vocab(vocab_path):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = Vocab(vocab_path(name))
        return cache[name]
    return get


# ----------------------------------------------------------------------------------------------
# The gemma argument style (string level: the delimiter as text where the vocabulary lacks it)
# ----------------------------------------------------------------------------------------------
PROFILE = {"type": "object", "properties": {
    "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
    "Tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    "address": {"type": "object", "properties": {"zip": {"type": "string"}, "city": {"type": "string"}},
                "required": ["city"]},
    "kind": {"enum": ["a", "b", 3]}, "active": {"type": "boolean"}, "note": {"type": ["string", "null"]}},
    "required": ["name"]}


def _gemma_tag(schema, style="gemma"):
    return {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema, "style": style}}


@pytest.fixture(scope="module")
def gpt2_compiler(gpt2_tokenizer):
    return xg.GrammarCompiler(gpt2_tokenizer)


def _complete(compiler, tag, text) -> bool:
    m = xg.GrammarMatcher(compiler.compile_structural_tag(tag))
    return m.accept_string(text) and m.is_completed()


@pytest.mark.parametrize("text, ok", [
    ('{name:<|"|>Ada<|"|>}', True),
    ('{active:true,address:{city:<|"|>Oslo<|"|>,zip:<|"|>0150<|"|>},age:36,kind:3,name:<|"|>Ada "L"<|"|>,'
     'note:null,Tags:[<|"|>x<|"|>,<|"|>y, z<|"|>]}', True),
    ('{kind:<|"|>b<|"|>,name:<|"|>line\nbreak {}<|"|>}', True),
    ('{"name":<|"|>Ada<|"|>}', False),            # quoted key
    ('{name:"Ada"}', False),                       # JSON string
    ('{name:<|"|>Ada<|"|>,age:36}', True),         # declaration order (xgrammar's): any order goes
    ('{name:<|"|>Ada<|"|>,kind:3,age:36}', True),  # neither order
    ('{name:<|"|>Ada<|"|>,age:36,name:<|"|>B<|"|>}', False),  # a key twice
    ('{name:<|"|>Ada<|"|> }', False),              # whitespace
    ('{age:36}', False),                           # required name missing
    ('{name:<|"|>Ada<|"|>,zzz:1}', False),         # undeclared key
    ('{age:-1,name:<|"|>Ada<|"|>}', False),        # minimum
    ('{name:<|"|>A<|"|>,Tags:[<|"|>1<|"|>,<|"|>2<|"|>,<|"|>3<|"|>,<|"|>4<|"|>]}', False),  # maxItems
    ('{kind:<|"|>c<|"|>,name:<|"|>A<|"|>}', False),  # enum
])
def test_gemma_style_text(gpt2_compiler, text, ok):
    assert _complete(gpt2_compiler, _gemma_tag(PROFILE), text) == ok


@pytest.mark.parametrize("text, ok", [
    ('{cfg:{name:<|"|>x<|"|>,tags:[<|"|>a<|"|>,3,true]}}', True),   # the template's dictsort order
    ('{cfg:{tags:[<|"|>a<|"|>,3,true],name:<|"|>x<|"|>}}', True),   # declaration order (xgrammar's)
    ('{cfg:{"tags":["a",3,true],"name":"x"}}', False),               # JSON
    ('{cfg:{name:<|"|>y<|"|>,tags:[<|"|>a<|"|>,3,true]}}', False),   # another value
])
def test_gemma_const_object_in_either_order(gpt2_compiler, text, ok):
    schema = {"type": "object", "properties": {"cfg": {"const": {"tags": ["a", 3, True], "name": "x"}}},
              "required": ["cfg"]}
    assert _complete(gpt2_compiler, _gemma_tag(schema), text) == ok


def _profile_values():
    s = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="<"), max_size=8)
    address = st.fixed_dictionaries({"city": s}, optional={"zip": s})
    return st.fixed_dictionaries({"name": s}, optional={
        "age": st.integers(0, 10**6), "Tags": st.lists(s, max_size=3), "address": address,
        "kind": st.sampled_from(["a", "b", 3]), "active": st.booleans(), "note": st.none() | s})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=_profile_values())
def test_gemma_style_accepts_what_the_template_renders(gpt2_compiler, args):
    text = render_gemma([("f", args)])
    body = text[len("<|tool_call>call:f"):-len("<tool_call|>")]
    assert _complete(gpt2_compiler, _gemma_tag(PROFILE), body), body


@pytest.mark.parametrize("schema, match", [
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "x+", "format": "date"}}}, "pattern"),
    ({"type": "object", "properties": {"a b": {"type": "string"}}}, "bare identifier"),
    ({"type": "array"}, "must be an object"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, r"\$ref"),
])
def test_gemma_style_refuses_what_it_cannot_keep(gpt2_compiler, schema, match):
    with pytest.raises(xg.StructuralTagError, match=match):
        gpt2_compiler.compile_structural_tag(_gemma_tag(schema))


@pytest.mark.parametrize("value, ok", [
    ('{code:<|"|>ABC<|"|>,day:<|"|>2024-02-29<|"|>}', True),
    ('{code:<|"|>ABCD<|"|>,day:<|"|>2024-02-29<|"|>}', False),
    ('{code:<|"|>ABC<|"|>,day:<|"|>tomorrow<|"|>}', False),
])
def test_gemma_style_pattern_and_format_with_the_delimiter_token(vocab, value, ok):
    """With <|"|> a special token (Gemma's vocabulary) no pattern can run past the string, so
    pattern and format are kept; on a vocabulary without it they are refused (see above)."""
    v = vocab("gemma4")
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"},
                                               "day": {"type": "string", "format": "date"}},
              "required": ["code", "day"]}
    tool = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    tag = xg.get_model_structural_tag("gemma_4", tool, "required", "disabled")
    assert v.run(tag, f"<|tool_call>call:f{value}<tool_call|>", eos=106) == ok


def test_gemma_style_recursive_ref(gpt2_compiler):
    tree = {"type": "object", "$defs": {"node": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}, "v": {"type": "integer"}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"]}
    assert _complete(gpt2_compiler, _gemma_tag(tree), "{root:{kids:[{v:1},{kids:[]}],v:2}}")
    assert not _complete(gpt2_compiler, _gemma_tag(tree), "{root:{kids:[{v:<|\"|>1<|\"|>}]}}")


@pytest.mark.parametrize("text, ok", [
    ('<cofl:value name="name" type="raw">Ada &amp; "L"</cofl:value>', True),
    ('<cofl:value name="name" type="raw">A</cofl:value>\n<cofl:value name="age" type="json">3</cofl:value>'
     '<cofl:value name="Tags" type="list"><cofl:value type="raw">x</cofl:value></cofl:value>'
     '<cofl:value name="address" type="dict"><cofl:value name="city" type="raw">Oslo</cofl:value></cofl:value>'
     '<cofl:value name="kind" type="json">3</cofl:value><cofl:value name="note" type="json">null</cofl:value>', True),
    ('<cofl:value name="name" type="json">"A"</cofl:value>', False),       # a string is raw
    ('<cofl:value name="age" type="json">3</cofl:value>', False),          # name is required
    ('<cofl:value name="name" type="raw">A</cofl:value><cofl:value name="Tags" type="list">'
     '<cofl:value name="t" type="raw">x</cofl:value></cofl:value>', False),  # list items have no name
    ('<cofl:value name="name" type="raw">A</cofl:value><cofl:value name="kind" type="raw">c</cofl:value>',
     False),                                                                 # enum
])
def test_cohere_xml_style(gpt2_compiler, text, ok):
    assert _complete(gpt2_compiler, _gemma_tag(PROFILE, "cohere_xml"), text) == ok


M3 = "]<]minimax[>["


@pytest.mark.parametrize("text, ok", [
    (f"{M3}<name>Ada <b></b>{M3}</name>", True),
    (f"{M3}<name>A{M3}</name>\n{M3}<age>3{M3}</age>{M3}<Tags>{M3}<item>x{M3}</item>{M3}<item>y{M3}</item>{M3}</Tags>"
     f"{M3}<address>{M3}<city>Oslo{M3}</city>{M3}</address>{M3}<active>true{M3}</active>", True),
    (f"{M3}<age>3{M3}</age>", False),                                     # name is required
    (f"{M3}<name>A{M3}</name>{M3}<age>x{M3}</age>", False),               # not a number
    (f"{M3}<name>A{M3}</name>{M3}<Tags>{M3}<t>x{M3}</t>{M3}</Tags>", False),  # items are <item>
    ("<name>A</name>", False),                                              # no namespace marker
])
def test_minimax_m3_xml_style(gpt2_compiler, text, ok):
    assert _complete(gpt2_compiler, _gemma_tag(PROFILE, "minimax_m3_xml"), text) == ok


@pytest.mark.parametrize("text, ok", [
    ('<｜DSML｜ parameter name="city" string="true">Paris</｜DSML｜ parameter>', True),
    ('<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>', False),
    ('<｜DSML｜ parameter name="city" string="false">Paris</｜DSML｜ parameter>', False),
])
def test_deepseek_v4_1_xml_style(gpt2_compiler, text, ok):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert _complete(gpt2_compiler, _gemma_tag(schema, "deepseek_v4_1_xml"), text) == ok


# ----------------------------------------------------------------------------------------------
# Gemma 4 turns on the Gemma vocabulary (markers and <|"|> are special tokens there)
# ----------------------------------------------------------------------------------------------
GEMMA_CALLS = [("get_weather", {"unit": "celsius", "city": "Paris"}), ("search", {"query": "a <b> c", "limit": 2})]


@pytest.mark.parametrize("reasoning", ["enabled", "disabled", "auto"])
@pytest.mark.parametrize("tool_choice", ["auto", "required"])
def test_gemma_4_template_turn_is_accepted(vocab, reasoning, tool_choice):
    v = vocab("gemma4")
    text = render_gemma(GEMMA_CALLS, "I should call both." if reasoning == "enabled" else None)
    ids = v.ids(text)
    assert {48, 49, 52} <= set(ids) and (reasoning != "enabled") == (100 not in ids)
    tag = xg.get_model_structural_tag("gemma_4", TOOLS, tool_choice, reasoning)
    assert v.run(tag, text, eos=106)


@pytest.mark.parametrize("text", [
    '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,city:<|"|>Rome<|"|>}<tool_call|>',     # key twice
    '<|tool_call>call:get_weather{"city":<|"|>Paris<|"|>}<tool_call|>',                      # JSON key
    '<|tool_call>call:get_weather{city:"Paris"}<tool_call|>',                                 # JSON string
    '<|tool_call>call:get_time{}<tool_call|>',                                                # unknown tool
    '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}',                                     # no end marker
    'Sure. <|channel>thought\nlate<channel|>',                                                # marker in text
])
def test_gemma_4_malformed_turn_is_rejected(vocab, text):
    v = vocab("gemma4")
    assert not v.run(xg.get_model_structural_tag("gemma_4", TOOLS, reasoning="disabled"), text, eos=106)


def test_gemma_4_markers_spelled_as_text_are_not_markers(vocab, gpt2_compiler):
    """With the default token markers, "<|tool_call>" written with ordinary pieces is plain text,
    so under tool_choice="required" it cannot start a call; token_markers=False matches the
    markers as text (here on a vocabulary without Gemma's special tokens)."""
    v = vocab("gemma4")
    call = '<|tool_call>call:search{query:<|"|>x<|"|>}<tool_call|>'
    spelled = tokenize(v.tokenizer, "<|tool_call>")
    assert 48 not in spelled
    m = xg.GrammarMatcher(v.compiler.compile_structural_tag(
        xg.get_model_structural_tag("gemma_4", TOOLS, "required", "disabled")))
    assert not m.accept_token(spelled[0])
    as_text = xg.get_model_structural_tag("gemma_4", TOOLS, "required", "disabled", token_markers=False)
    assert as_text.format.type == "triggered_tags"
    assert _complete(gpt2_compiler, as_text, call)


def test_gemma_4_default_tag_defers_its_markers(vocab, gpt2_compiler):
    """The default gemma_4 tag lists its markers in marker_tokens: without a tokenizer
    (Grammar.from_structural_tag, as xgrammar's users build it) they are text; the compiler
    binds them where its tokenizer has them as special tokens, also when handed that grammar."""
    from xg2_jax.testing import _is_grammar_accept_string

    tag = xg.get_model_structural_tag("gemma_4", TOOLS, "required", "disabled")
    assert tag.marker_tokens == ("<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>")
    call = '<|tool_call>call:search{query:<|"|>x<|"|>}<tool_call|>'
    grammar = xg.Grammar.from_structural_tag(tag)
    assert _is_grammar_accept_string(grammar, call)
    assert not _is_grammar_accept_string(grammar, call.replace("<tool_call|>", ""))

    v = vocab("gemma4")
    spelled = tokenize(v.tokenizer, "<|tool_call>")
    for compiled in (v.compiler.compile_grammar(grammar), v.compiler.compile_structural_tag(tag)):
        m = xg.GrammarMatcher(compiled)
        assert not m.accept_token(spelled[0])  # the marker written with ordinary pieces
        assert m.accept_token(48)  # <|tool_call>, the special token
    assert v.run(tag, call, eos=106)
    # A vocabulary without Gemma's special tokens keeps the markers as text.
    assert _complete(gpt2_compiler, tag, call)


def test_marker_tokens_survive_json_and_bind_from_json(vocab):
    tag = xg.get_model_structural_tag("gemma_4", TOOLS, "required", "disabled")
    data = tag.to_dict()
    assert data["marker_tokens"] == list(tag.marker_tokens)
    assert xg.StructuralTag.from_dict(tag.to_json()) == tag
    assert xg.StructuralTag.model_validate_json(tag.model_dump_json()) == tag
    v = vocab("gemma4")
    call = '<|tool_call>call:search{query:<|"|>x<|"|>}<tool_call|>'
    for envelope in (data, json.dumps(data)):
        assert v.run(envelope, call, eos=106)
    with pytest.raises(xg.StructuralTagError, match="marker_tokens"):
        xg.Grammar.from_structural_tag({**data, "marker_tokens": [3]})
    # Bound now (True) or never (False): no marker_tokens left to resolve.
    assert xg.get_model_structural_tag("gemma_4", TOOLS, token_markers=True).marker_tokens == ()
    assert "marker_tokens" not in xg.get_model_structural_tag("gemma_4", TOOLS, token_markers=False).to_dict()


# ----------------------------------------------------------------------------------------------
# DeepSeek: the reference encoders' "\n\n" before the calls section (reasoning off, required)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model, wrapper, space", [
    ("deepseek_v3_2", "function_calls", ""), ("deepseek_v4", "tool_calls", ""), ("deepseek_v4_1", " calls", " ")])
@pytest.mark.parametrize("reasoning", [False, True])
def test_deepseek_required_accepts_reference_lead(vocab, model, wrapper, space, reasoning):
    v = vocab("qwen3")
    invoke = (f'<｜DSML｜{space}invoke name="search">\n<｜DSML｜{space}parameter name="query" string="true">x'
              f'</｜DSML｜{space}parameter>\n</｜DSML｜{space}invoke>')
    calls = f"\n\n<｜DSML｜{wrapper}>\n{invoke}\n</｜DSML｜{wrapper}>"
    text = ("Thinking.</think>" if reasoning else "") + calls
    tag = xg.get_model_structural_tag(model, TOOLS, "required", reasoning)
    assert v.run(tag, text, eos=151645)
    assert not v.run(tag, text.replace("\n\n<", "\n\n\n<"), eos=151645)


# ----------------------------------------------------------------------------------------------
# Kimi-K3 blocks (fixtures written from the renderer's format as quoted by K3 tool parsers)
# ----------------------------------------------------------------------------------------------
def _k3_arg(key, value):
    kind = "string" if isinstance(value, str) else "boolean" if isinstance(value, bool) else \
        "number" if isinstance(value, (int, float)) else "object" if isinstance(value, dict) else "array"
    body = value if isinstance(value, str) else json.dumps(value)
    return f'<|open|>argument key="{key}" type="{kind}"<|sep|>{body}<|close|>argument<|sep|>'


def _k3_tools(calls):
    return "<|open|>tools<|sep|>" + "".join(
        f'<|open|>call tool="{n}" index="{i + 1}"<|sep|>' + "".join(_k3_arg(k, v) for k, v in a.items())
        + "<|close|>call<|sep|>" for i, (n, a) in enumerate(calls)) + "<|close|>tools<|sep|>"


K3_END = "<|close|>message<|sep|>"
K3_THINK = "Check the weather.<|close|>think<|sep|>"
K3_REPLY = "<|open|>response<|sep|>On it.<|close|>response<|sep|>"
K3_CALLS = [("get_weather", {"city": "New York", "unit": "celsius"}), ("search", {"query": "q", "limit": 2})]


@pytest.mark.parametrize("kwargs, text, ok", [
    ({}, K3_THINK + K3_REPLY + _k3_tools(K3_CALLS) + K3_END, True),
    ({}, K3_THINK + K3_REPLY + K3_END, True),
    ({"tool_choice": "required"}, K3_THINK + K3_REPLY + K3_END, False),
    ({"tool_choice": "required"}, K3_THINK + K3_REPLY + _k3_tools(K3_CALLS[:1]) + K3_END, True),
    ({"reasoning": False}, "On it.<|close|>response<|sep|>" + _k3_tools(K3_CALLS[1:]) + K3_END, True),
    ({"reasoning": "auto"}, K3_REPLY + K3_END, True),
    ({"reasoning": "auto"}, "<|open|>think<|sep|>" + K3_THINK + K3_REPLY + K3_END, True),
    ({"tool_choice": "none"}, K3_THINK + K3_REPLY + _k3_tools(K3_CALLS[:1]) + K3_END, False),
    ({"parallel_tool_calls": False}, K3_THINK + K3_REPLY + _k3_tools(K3_CALLS) + K3_END, False),
    ({}, K3_THINK + K3_REPLY + _k3_tools([("get_weather", {"city": "P", "unit": "kelvin"})]) + K3_END, False),
    ({}, K3_THINK + K3_REPLY + _k3_tools([("search", {"query": "q"})]).replace('type="string"', 'type="number"')
     + K3_END, False),                                                 # type attribute pinned
    ({}, K3_THINK + K3_REPLY + _k3_tools([("search", {"query": "q", "limit": 2})]).replace(
        'type="number"', 'type="integer"') + K3_END, False),            # numbers are "number"
    ({}, K3_THINK + "<|open|>response<|sep|>a <|open|>b<|close|>response<|sep|>" + K3_END, False),
])
def test_kimi_k3_turns(vocab, kwargs, text, ok):
    tag = xg.get_model_structural_tag("kimi_k3", TOOLS, **kwargs)
    assert vocab("qwen3").run(tag, text, eos=151645) == ok


# ----------------------------------------------------------------------------------------------
# Mask/accept agreement along real turns of the new formats
# ----------------------------------------------------------------------------------------------
NEW_FORMAT_TURNS = {
    "gemma_4": ("gemma4", render_gemma(GEMMA_CALLS, "Both tools.") + "<turn|>"),
    "deepseek_v4_1": ("qwen3", "Plan.</think>Sure.\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"search\">\n"
                      "<｜DSML｜ parameter name=\"query\" string=\"true\">q</｜DSML｜ parameter>\n"
                      "<｜DSML｜ parameter name=\"limit\" string=\"false\">2</｜DSML｜ parameter>\n"
                      "</｜DSML｜ invoke>\n</｜DSML｜ calls><|im_end|>"),
    "mimo": ("qwen3", "<think>\nhm\n</think>\nOK<tool_call><function=search><parameter=query>q"
             "</parameter></function></tool_call><|im_end|>"),
    "exaone": ("qwen3", 'hm\n</think>\n\n<tool_call>{"name": "search", "arguments": '
               '{"query": "q"}}</tool_call><|im_end|>'),
    "kimi_k3": ("qwen3", K3_THINK + K3_REPLY + _k3_tools(K3_CALLS) + K3_END + "<|im_end|>"),
    "minimax_m3": ("qwen3", f'hm</mm:think>Sure.{M3}<tool_call>\n{M3}<invoke name="search">{M3}<query>q{M3}</query>'
                   f'{M3}<limit>2{M3}</limit>{M3}</invoke>\n{M3}</tool_call><|im_end|>'),
    "cohere": ("qwen3", 'hm<|END_THINKING|>Sure.<cofl:tool_calls><cofl:tool_call id="0" '
               'name="search"><cofl:value name="query" type="raw">q</cofl:value><cofl:value name="limit" '
               'type="json">2</cofl:value></cofl:tool_call></cofl:tool_calls><|im_end|>'),
}


@pytest.mark.parametrize("model", sorted(NEW_FORMAT_TURNS))
def test_mask_agrees_with_accept(vocab, model):
    """At every step, for the turn's next token and a random sample of the vocabulary (special
    tokens included): the mask allows a token exactly when accept_token takes it."""
    name, text = NEW_FORMAT_TURNS[model]
    v = vocab(name)
    m = xg.GrammarMatcher(v.compiler.compile_structural_tag(xg.get_model_structural_tag(model, TOOLS)))
    size, rng = v.tokenizer.vocab_size, random.Random(model)
    specials = sorted(v.specials.values())
    for tid in v.ids(text):
        bits = np.unpackbits(mask_row(m, size).view(np.uint8), bitorder="little")[:size]
        for probe in {tid, *rng.sample(range(size), 48), *rng.sample(specials, min(8, len(specials)))}:
            assert bool(bits[probe]) == m.fork().accept_token(probe), (model, probe)
        assert m.accept_token(tid)
    assert m.is_terminated()


# ----------------------------------------------------------------------------------------------
# get_model_structural_tag keywords, builders, options
# ----------------------------------------------------------------------------------------------
def _dict(*args, **kwargs):
    return xg.get_model_structural_tag(*args, **kwargs).to_dict()


@pytest.mark.parametrize("xgrammar, ours", [("enabled", True), ("disabled", False), ("auto", "optional")])
def test_reasoning_modes(xgrammar, ours):
    assert _dict("qwen3", TOOLS, reasoning=xgrammar) == _dict("qwen3", TOOLS, reasoning=ours)


def _json_formats(fmt):
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            yield fmt
        for value in fmt.values():
            yield from _json_formats(value)
    elif isinstance(fmt, list):
        for value in fmt:
            yield from _json_formats(value)


@pytest.mark.parametrize("model", builtin_structural_tag.supported_models())
def test_json_options_reach_every_argument_schema(model):
    tag = _dict(model, TOOLS, any_order=True, max_whitespace_cnt=2, force_reasoning=True)
    found = list(_json_formats(tag))
    assert len(found) >= len(TOOLS)
    assert all(f["any_order"] is True and f["max_whitespace_cnt"] == 2 for f in found)


def test_exclude_special_tokens_false_allows_markers_in_text():
    on = _dict("qwen3", TOOLS, reasoning=False)
    off = _dict("qwen3", TOOLS, reasoning=False, exclude_special_tokens=False)
    assert on["format"]["excludes"] and off["format"]["excludes"] == []
    gemma_on = list(_json_formats(_dict("gemma_4", TOOLS)))
    gemma_off = list(_json_formats(_dict("gemma_4", TOOLS, exclude_special_tokens=False)))
    assert all("<tool_call|>" in f["excludes"] for f in gemma_on)
    assert all("excludes" not in f for f in gemma_off)


def test_gemma_4_text_markers_keep_markers_out_of_strings(gpt2_compiler):
    """token_markers=False: an argument string cannot hold <tool_call|> (it would end the call
    for the engine's parser)."""
    tag = xg.get_model_structural_tag("gemma_4", TOOLS, "required", "disabled", token_markers=False)
    ok = '<|tool_call>call:search{query:<|"|>x<|"|>}<tool_call|>'
    assert _complete(gpt2_compiler, tag, ok)
    assert not _complete(gpt2_compiler, tag, ok.replace(">x<", "><tool_call|><"))


def test_token_markers():
    bound = xg.get_model_structural_tag("qwen3", TOOLS, reasoning=False, token_markers=True)
    assert bound.format.type == "token_triggered_tags"
    assert bound.format.tags[0].begin == xg.TokenFormat(token="<tool_call>")
    with pytest.raises(ValueError, match="token_markers"):
        xg.get_model_structural_tag("llama3", TOOLS, token_markers=True)
    with pytest.raises(ValueError, match="token_markers"):
        xg.get_model_structural_tag("qwen3", TOOLS, token_markers="yes")


def test_token_markers_keep_the_text_on_qwen3(vocab):
    """Qwen3's markers are plain added tokens in this vocabulary: bound or not, the same turn is
    accepted."""
    v = vocab("qwen3")
    text = '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>'
    for markers in (False, True):
        assert v.run(xg.get_model_structural_tag("qwen3", TOOLS, "required", False,
                                                  token_markers=markers), text, eos=151645)


@pytest.mark.parametrize("key", sorted(builtin_structural_tag.XGRAMMAR_MODEL_KEYS))
def test_builders_match_get_model_structural_tag(key):
    build = getattr(builtin_structural_tag, f"get_{key}_structural_tag")
    assert build(TOOLS, "required", "disabled").to_dict() == _dict(key, TOOLS, "required", "disabled")
    assert build.__name__ == f"get_{key}_structural_tag"


def test_returns_structural_tag_and_round_trips():
    tag = xg.get_model_structural_tag("gemma_4", TOOLS)
    assert isinstance(tag, xg.StructuralTag)
    assert xg.StructuralTag.from_dict(tag.to_json()) == tag


@pytest.mark.parametrize("fmt, accepted, rejected", [
    (xg.JSONSchemaFormat(json_schema={"type": "object", "properties": {"a": {"type": "integer"}, "b": {
        "type": "integer"}}, "required": ["a", "b"]}, any_order=True), ['{"b": 1, "a": 2}'], ['{"a": 1}']),
    (xg.JSONSchemaFormat(json_schema={"type": "array"}, max_whitespace_cnt=1), ["[1, 2]"], ["[1,  2]"]),
])
def test_json_schema_format_options(gpt2_compiler, fmt, accepted, rejected):
    tag = xg.StructuralTag(format=fmt)
    assert all(_complete(gpt2_compiler, tag, t) for t in accepted)
    assert not any(_complete(gpt2_compiler, tag, t) for t in rejected)


EXCLUDES_SCHEMA = {"type": "object", "properties": {
    "q": {"type": "string"}, "mode": {"enum": ["a<x>", "b"]}, "n": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}}, "bad<x>": {"type": "string"}}, "required": ["q"]}


@pytest.mark.parametrize("style, text, ok", [
    ("gemma", '{q:<|"|>fine<|"|>}', True),
    ("gemma", '{q:<|"|>no <x> here<|"|>}', False),
    ("gemma", '{q:<|"|>a<|"|>,tags:[<|"|>ok<|"|>,<|"|><x><|"|>]}', False),     # nested strings too
    ("gemma", '{mode:<|"|>b<|"|>,q:<|"|>a<|"|>}', True),
    ("gemma", '{mode:<|"|>a<x><|"|>,q:<|"|>a<|"|>}', False),                  # enum value removed
    ("qwen_xml", "<parameter=q>fine</parameter>", True),
    ("qwen_xml", "<parameter=q>no <x> here</parameter>", False),
    ("qwen_xml", "<parameter=q>a</parameter><parameter=n>3</parameter>", True),
])
def test_json_schema_excludes(gpt2_compiler, style, text, ok):
    schema = dict(EXCLUDES_SCHEMA)
    if style != "gemma":      # the XML texts below write no JSON-valued 'tags' argument
        schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "tags"}
    tag = xg.StructuralTag(format=xg.JSONSchemaFormat(json_schema=schema, style=style, excludes=["<x>"]))
    assert _complete(gpt2_compiler, tag, text) == ok


@pytest.mark.parametrize("fmt, match", [
    (xg.JSONSchemaFormat(json_schema={"type": "object", "properties": {"t": {"type": "string"}}},
                         style="qwen_xml", excludes=[" x"]), "whitespace"),
    (xg.JSONSchemaFormat(json_schema={"type": "object", "properties": {"x": {"type": "string"}},
                                      "required": ["x"]}, style="gemma", excludes=["x"]), "excluded"),
])
def test_options_without_native_support_raise(gpt2_compiler, fmt, match):
    with pytest.raises(xg.StructuralTagError, match=match):
        gpt2_compiler.compile_structural_tag(xg.StructuralTag(format=fmt))
    data = json.loads(fmt.to_json())
    assert data.get("excludes")       # the field reaches the compiler


def _allowed(mode, *names):
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": [
        {"type": "function", "function": {"name": n}} for n in names]}}


@pytest.mark.parametrize("choice, same_as", [
    (_allowed("auto", "search"), {"tool_choice": "auto", "tools": [TOOLS[1]]}),
    (_allowed("required", "search", "get_weather"), {"tool_choice": "required", "tools": TOOLS}),
    (_allowed("auto"), {"tool_choice": "none", "tools": TOOLS}),
])
def test_allowed_tools_choice(choice, same_as):
    assert _dict("qwen3", TOOLS, choice) == _dict("qwen3", same_as["tools"], same_as["tool_choice"])


@pytest.mark.parametrize("choice, match", [
    (_allowed("auto", "fly"), "fly"),
    (_allowed("required"), "at least one"),
    (_allowed("sometimes", "search"), "mode"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"type": "web_search"}]}},
     "Allowed builtin tools are not found"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [{"function": {}}]}},
     "a tool reference is"),
])
def test_allowed_tools_errors(choice, match):
    with pytest.raises(ValueError, match=match):
        xg.get_model_structural_tag("qwen3", TOOLS, choice)


ORDER_SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"},
                                                 "c": {"type": "string"}}, "required": ["a", "b"]}


@pytest.mark.parametrize("style, in_order, reordered, repeated", [
    ("qwen_xml", "<parameter=a>x</parameter><parameter=b>1</parameter>",
     "<parameter=c>z</parameter><parameter=b>1</parameter><parameter=a>x</parameter>",
     "<parameter=b>1</parameter><parameter=a>x</parameter><parameter=b>2</parameter>"),
    ("gemma", '{a:<|"|>x<|"|>,b:1}', '{c:<|"|>z<|"|>,b:1,a:<|"|>x<|"|>}', '{b:1,a:<|"|>x<|"|>,b:2}'),
    ("cohere_xml", '<cofl:value name="a" type="raw">x</cofl:value><cofl:value name="b" type="json">1</cofl:value>',
     '<cofl:value name="b" type="json">1</cofl:value><cofl:value name="a" type="raw">x</cofl:value>',
     '<cofl:value name="b" type="json">1</cofl:value><cofl:value name="a" type="raw">x</cofl:value>'
     '<cofl:value name="b" type="json">2</cofl:value>'),
])
def test_any_order_in_argument_styles(gpt2_compiler, style, in_order, reordered, repeated):
    """any_order: any order, required members still exactly once (stricter than xgrammar 0.2.9,
    which drops presence and uniqueness). Gemma's keys come in any order either way (its
    template sorts them, xgrammar keeps the declaration order)."""
    def tag(any_order):
        return xg.StructuralTag(format=xg.JSONSchemaFormat(json_schema=ORDER_SCHEMA, style=style,
                                                           any_order=any_order))
    assert _complete(gpt2_compiler, tag(False), in_order)
    assert _complete(gpt2_compiler, tag(False), reordered) is (style == "gemma")
    assert not _complete(gpt2_compiler, tag(False), repeated)
    assert _complete(gpt2_compiler, tag(True), in_order) and _complete(gpt2_compiler, tag(True), reordered)
    assert not _complete(gpt2_compiler, tag(True), repeated)
