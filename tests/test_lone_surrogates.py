"""A lone UTF-16 surrogate (JSON's ``"\\ud800"``, or a Python str holding one) has no UTF-8
encoding, so no output can spell it: schemas and structural tags that hold one are refused
with a typed, located error (before, the JSON reader turned it into U+FFFD, a silent change
of the schema, and a tag holding one reached the bindings as a TypeError)."""

from __future__ import annotations

import pytest

import xg2_jax as xg
from xg2_jax import _core


@pytest.mark.parametrize("schema, where", [
    ('{"const": "\\ud800"}', "1:12"),                      # JSON escape
    ('{"const": "\ud800"}', "1:12"),                        # the code point in the str
    ('{"enum": ["a\\udc00\\ud800"]}', "1:13"),              # low half first
    ('{"const": "\\ud800\\u0041"}', "1:12"),                # high half, no low half after it
    ({"properties": {"\ud800": {"type": "string"}}}, "1:"),  # a dict (json.dumps escapes it)
])
def test_json_schema_lone_surrogate_is_refused(schema, where):
    with pytest.raises(xg.GrammarSyntaxError) as e:
        xg.Grammar.from_json_schema(schema)
    assert str(e.value).startswith(where) and "Failed to parse JSON" in str(e.value)
    assert "cannot be encoded as UTF-8" in str(e.value)


def test_json_schema_surrogate_pair_still_reads_as_one_code_point():
    compiler = xg.GrammarCompiler(xg.TokenizerInfo(["a", '"', "\\", "u", "d83d", "de00", "😀"]))
    for schema in ('{"const": "\\ud83d\\ude00"}', {"const": "\U0001f600"}):
        matcher = xg.GrammarMatcher(compiler.compile_json_schema(schema))
        assert matcher.accept_string('"😀"') and matcher.is_completed()
        matcher = xg.GrammarMatcher(compiler.compile_json_schema(schema))
        assert matcher.accept_string('"\\ud83d\\ude00"') and matcher.is_completed()


@pytest.mark.parametrize("tag, path", [
    (xg.StructuralTag(format=xg.ConstStringFormat(value="\ud800")), "format.value"),
    ({"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": ["<a"],
        "tags": [{"begin": "<a", "content": {"type": "any_text"}, "end": "\udc00"}]}},
     "format.tags[0].end"),
    (xg.StructuralTag(format=xg.JSONSchemaFormat(
        json_schema={"type": "object", "properties": {"a/\ud800": {"type": "string"}}},
        style="minimax_m3_xml")),
     "format.json_schema/properties/a~1\\ud800"),
])
def test_structural_tag_lone_surrogate_is_refused_at_its_field(tag, path):
    with pytest.raises(xg.StructuralTagError) as e:
        xg.Grammar.from_structural_tag(tag)
    message = str(e.value)
    assert message.startswith(f"Invalid structural tag error: {path}: code point U+D")
    message.encode("utf-8")  # the message itself is printable


@pytest.mark.parametrize("text", [
    '{"type": "structural_tag", "format": {"type": "const_string", "value": "\\ud800"}}',
    '{"type": "structural_tag", "format": {"type": "const_string", "value": "\ud800"}}',
])
def test_structural_tag_text_lone_surrogate_is_refused(text):
    with pytest.raises(xg.GrammarSyntaxError, match=r"^1:73: Failed to parse JSON: .*UTF-8"):
        xg.Grammar.from_structural_tag(text)


def test_core_refuses_the_escape_for_every_json_front_end():
    with pytest.raises(xg.GrammarSyntaxError, match="lone surrogate"):
        _core.grammar_from_json_schema('{"const": "\\udfff"}')
    with pytest.raises(xg.GrammarSyntaxError, match="lone surrogate"):
        xg.Grammar.from_lark('start: %json {"const": "\\ud800"}')


def test_names_and_separators_with_a_lone_surrogate_are_typed_errors():
    # (They reached the bindings as a TypeError.) No text can define such a rule name.
    with pytest.raises(xg.GrammarError, match=r"root rule with name '\\ud800' is not found: code point U\+D800"):
        xg.Grammar.from_ebnf('root ::= "a"', root_rule_name="\ud800")
    compiler = xg.GrammarCompiler(xg.TokenizerInfo(["a", "</s>"], stop_token_ids=[1]))
    with pytest.raises(xg.GrammarError, match="U\\+DC00"):
        compiler.compile_grammar('root ::= "a"', root_rule_name="r\udc00")
    with pytest.raises(xg.InvalidArgumentError, match="separators .*U\\+D800 cannot be encoded"):
        xg.Grammar.from_json_schema({"type": "string"}, any_whitespace=False, separators=(",\ud800", ":"))
    with pytest.raises(xg.InvalidArgumentError, match="U\\+DBFF"):
        compiler.compile_json_schema({"type": "object"}, any_whitespace=False, separators=(",", "\udbff"))
