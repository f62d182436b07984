"""DeepSeek DSML argument styles (deepseek_xml for V3.2/V4, deepseek_v4_1_xml for V4.1): the
string attribute follows each value, as DeepSeek's reference encoders write it
(encoding_dsv4.py, encode_arguments_to_dsml: a str raw with string="true", anything else JSON
with string="false"), so a schema allowing both kinds takes both; the grammar agrees with
jsonschema on the values and the output parser reads them back."""

from __future__ import annotations

import json

import jsonschema
import pytest

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string

STYLES = {"deepseek_xml": "\uff5cDSML\uff5c", "deepseek_v4_1_xml": "\uff5cDSML\uff5c "}


def encode(arguments: dict, marker: str) -> str:
    """encode_arguments_to_dsml of DeepSeek's encoders, for one marker spelling."""
    return "\n".join(
        f'<{marker}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
        f'{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}</{marker}parameter>'
        for k, v in arguments.items())


def _grammar(schema, style, **kw):
    return xg.Grammar.from_structural_tag(xg.StructuralTag(
        format=xg.JSONSchemaFormat(json_schema=schema, style=style, **kw)))


DEFS = {"Text": {"type": "string"}, "Num": {"type": "integer", "minimum": 1},
        "V": {"anyOf": [{"const": "fixed"}, {"$ref": "#/$defs/W"}]},
        "W": {"anyOf": [{"$ref": "#/$defs/Num"}, {"$ref": "#/$defs/V"}]}}

# (value schema, values written by the encoder)
VALUE_CASES = [
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["text", "42", 42, 1.5, None, True]),
    ({"type": ["string", "null"]}, ["", "null", None, 0, [1]]),
    ({"oneOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]}, ["abc", "abcd", 7, "7"]),
    ({"enum": ["fixed", 2, None]}, ["fixed", 2, None, "2", " fixed", "null", 3]),
    ({"$ref": "#/$defs/V"}, ["fixed", 2, 0, "2", "other"]),                # a $ref cycle
    ({"allOf": [{"type": "string"}, {"minLength": 2}]}, ["ab", "a", 12]),
    ({}, ["x", "", 3, None, {"a": [1]}, [], False]),
    ({"minimum": 3}, ["anything", 3, 2, "2"]),
    ({"type": "string", "enum": ["a b", "c"]}, ["a b", "c", " c", "\nc\n"]),
    ({"type": "string", "pattern": "^[a-z]+$"}, ["abc", "ab1", " abc"]),
]


def _valid(schema, value):
    if schema == {"$ref": "#/$defs/V"}:  # jsonschema recurses without end on the cycle
        return value == "fixed" or (type(value) is int and value >= 1)
    return jsonschema.Draft202012Validator({**schema, "$defs": DEFS}).is_valid(value)


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("value_schema, values", VALUE_CASES)
@pytest.mark.parametrize("layout", ["property", "additional"])
def test_values_take_the_attribute_of_their_kind(style, value_schema, values, layout):
    schema = {"type": "object", "$defs": DEFS}
    if layout == "property":
        schema.update(properties={"value": value_schema}, required=["value"])
    else:
        schema["additionalProperties"] = value_schema
    grammar = _grammar(schema, style)
    marker = STYLES[style]
    for value in values:
        text = encode({"value": value}, marker)
        ok = _valid(value_schema, value)
        assert _is_grammar_accept_string(grammar, text) == ok, (value, text)
        # The other attribute never holds a value of this kind.
        flipped = text.replace('string="true"', 'string="@"').replace(
            'string="false"', 'string="true"').replace('string="@"', 'string="false"')
        if isinstance(value, str):
            # A str under string="false" is JSON text: only a non-string the schema allows.
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
                ok = False
            else:
                ok = not isinstance(parsed, str) and _valid(value_schema, parsed)
        else:   # JSON text of a non-string under string="true": only if the schema takes it as str
            ok = _valid(value_schema, json.dumps(value))
        assert _is_grammar_accept_string(grammar, flipped) == ok, (value, flipped)


@pytest.mark.parametrize("style", STYLES)
def test_json_values_may_be_padded_raw_strings_not(style):
    marker = STYLES[style]
    grammar = _grammar({"type": "object", "properties": {"v": {"enum": ["fixed", 2]}},
                        "required": ["v"]}, style)
    assert _is_grammar_accept_string(
        grammar, f'<{marker}parameter name="v" string="false"> 2\n</{marker}parameter>')
    assert not _is_grammar_accept_string(
        grammar, f'<{marker}parameter name="v" string="true">\nfixed\n</{marker}parameter>')


@pytest.mark.parametrize("style", STYLES)
def test_reference_to_the_root_is_the_tool_schema(style):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "child": {"$ref": "#"}},
              "required": ["name"], "additionalProperties": False}
    grammar = _grammar(schema, style)
    marker = STYLES[style]
    good = encode({"name": "parent", "child": {"name": "child", "child": {"name": "leaf"}}}, marker)
    assert _is_grammar_accept_string(grammar, good)
    assert not _is_grammar_accept_string(grammar, good.replace('"leaf"', "leaf"))
    assert not _is_grammar_accept_string(grammar, good.replace('"leaf"', "3"))


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("value_schema, match", [
    ({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]}, "oneOf"),
    ({"not": {"type": "integer"}}, "not"),
    ({"allOf": [{"pattern": "a"}, {"pattern": "b"}]}, "allOf"),
    ({"$ref": "#/$defs/Missing"}, "Missing"),
])
def test_what_cannot_be_split_is_refused_where_it_stands(style, value_schema, match):
    schema = {"type": "object", "properties": {"value": value_schema}}
    with pytest.raises(xg.StructuralTagError, match=match) as e:
        _grammar(schema, style)
    assert "properties/value" in str(e.value)


def _v41_call(arguments: dict) -> str:
    marker = STYLES["deepseek_v4_1_xml"]
    return (f'\n\n<{marker}calls>\n<{marker}invoke name="search">\n{encode(arguments, marker)}\n'
            f'</{marker}invoke>\n</{marker}calls>')


SEARCH = {"type": "object", "properties": {"query": {"type": "string"},
                                          "limit": {"type": "integer", "minimum": 1}},
          "required": ["query", "limit"], "additionalProperties": False}


@pytest.mark.parametrize("function", [
    {"name": "search"}, {"name": "search", "parameters": None},
    {"name": "search", "parameters": {}},
    {"name": "search", "parameters": SEARCH, "strict": False}])
def test_unconstrained_tool_takes_what_the_encoder_writes(function):
    tag = xg.get_model_structural_tag("deepseek_v4_1", [{"type": "function", "function": function}],
                                      "required", False)
    grammar = xg.Grammar.from_structural_tag(tag)
    for arguments in ({"query": '北京\n<code>"hi"</code>', "limit": 2}, {"o": {"a": [1, None]}}, {}):
        assert _is_grammar_accept_string(grammar, _v41_call(arguments))
    assert not _is_grammar_accept_string(
        grammar, _v41_call({"limit": 2}).replace('string="false">2', 'string="false">not-json'))


@pytest.mark.parametrize("model", ["deepseek_v4_1", "deepseek_v4", "qwen3_coder"])
def test_named_tool_choice_is_exactly_one_call(model):
    tools = [{"type": "function", "function": {"name": n, "parameters": SEARCH}}
             for n in ("search", "other")]
    named = {"type": "function", "function": {"name": "search"}}
    one = xg.get_model_structural_tag(model, tools, named, False, parallel_tool_calls=True)
    many = xg.get_model_structural_tag(model, tools, "required", False)
    call = {"query": "q", "limit": 1}
    if model == "qwen3_coder":
        body = ("<tool_call>\n<function=search>\n<parameter=query>\nq\n</parameter>\n"
                "<parameter=limit>\n1\n</parameter>\n</function>\n</tool_call>")
        once, twice = body, body + "\n" + body
    else:
        once = _v41_call(call)
        inv = once[once.index("<\uff5cDSML\uff5c invoke"):once.index("</\uff5cDSML\uff5c calls>")]
        twice = once.replace(inv, inv + inv)
        if model == "deepseek_v4":
            once, twice = (t.replace("\uff5cDSML\uff5c calls", "\uff5cDSML\uff5ctool_calls")
                           .replace("\uff5cDSML\uff5c ", "\uff5cDSML\uff5c") for t in (once, twice))
    assert _is_grammar_accept_string(xg.Grammar.from_structural_tag(one), once)
    assert not _is_grammar_accept_string(xg.Grammar.from_structural_tag(one), twice)
    assert _is_grammar_accept_string(xg.Grammar.from_structural_tag(many), twice)


@pytest.mark.parametrize("model", ["deepseek_v3_2", "deepseek_v4_1"])
def test_parser_reads_the_attribute(model):
    tools = [{"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                                         "s": {"type": "string"}}}}}]
    tag = xg.get_model_structural_tag(model, tools, "required", False)
    marker = STYLES["deepseek_v4_1_xml" if model == "deepseek_v4_1" else "deepseek_xml"]
    section = " calls" if model == "deepseek_v4_1" else "function_calls"
    space = " " if model == "deepseek_v4_1" else ""
    for arguments in ({"q": "42", "s": "\nline\n"}, {"q": 42, "s": ""}):
        text = (f'\n\n<\uff5cDSML\uff5c{section}>\n<\uff5cDSML\uff5c{space}invoke name="search">\n'
                f'{encode(arguments, marker)}\n</\uff5cDSML\uff5c{space}invoke>\n'
                f'</\uff5cDSML\uff5c{section}>')
        call = xg.parse_structured_output(text, tag, tools=tools)["tool_calls"][0]
        assert json.loads(call["function"]["arguments"]) == arguments
