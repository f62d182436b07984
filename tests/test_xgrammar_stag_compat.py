"""xgrammar 0.2.9's structural-tag names that xg2-jax provides for compatibility: the
deprecated ``qwen_xml_parameter`` format and ``testing._json_schema_to_ebnf`` with an argument
style (``json_format``)."""

import pytest

from xg2_jax import Grammar, StructuralTag
from xg2_jax._src.errors import InvalidArgumentError, StructuralTagError
from xg2_jax.structural_tag import JSONSchemaFormat, QwenXMLParameterFormat, format_from_dict
from xg2_jax.testing import _is_grammar_accept_string, _json_schema_to_ebnf

PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}

QWEN_INSTANCES = [
    ("<parameter=name>Bob</parameter><parameter=age>100</parameter>", True),
    ("\n<parameter=name>Bob</parameter>\n<parameter=age>\t100\n</parameter>", True),
    ('<parameter=name>"Bob&lt;"</parameter><parameter=age>100</parameter>', True),
    ("<parameter=age>100</parameter><parameter=name>Bob</parameter>", False),   # order
    ("<parameter=name>Bob</parameter>", False),                                # required age
    ("<parameter=name>Bob</parameter><parameter=age>x</parameter>", False),    # not an integer
    ("<parameter=name>Bob</param><parameter=age>1</parameter>", False),
    ('{"name": "Bob", "age": 100}', False),
]


def _accepts(fmt, text: str) -> bool:
    return _is_grammar_accept_string(Grammar.from_structural_tag(StructuralTag(format=fmt)), text)


@pytest.mark.parametrize("text, accepted", QWEN_INSTANCES)
@pytest.mark.parametrize("spelling", ["class", "dict"])
def test_qwen_xml_parameter_is_the_qwen_xml_style(spelling, text, accepted):
    fmt = (QwenXMLParameterFormat(json_schema=PERSON) if spelling == "class"
           else {"type": "qwen_xml_parameter", "json_schema": PERSON})
    assert _accepts(fmt, text) == accepted
    assert _accepts(JSONSchemaFormat(json_schema=PERSON, style="qwen_xml"), text) == accepted


def test_qwen_xml_parameter_round_trips_through_dicts():
    fmt = QwenXMLParameterFormat(json_schema=PERSON)
    assert fmt.to_dict() == {"type": "qwen_xml_parameter", "json_schema": PERSON}
    assert format_from_dict(fmt.to_dict()) == fmt


@pytest.mark.parametrize("fmt, error, where", [
    ({"type": "qwen_xml_parameter", "json_schema": PERSON, "style": "json"}, StructuralTagError,
     "format.style"),
    ({"type": "qwen_xml_parameter"}, StructuralTagError, "format.json_schema"),
    ({"type": "qwen_xml_parameter", "json_schema": 3}, StructuralTagError, "format.json_schema"),
])
def test_qwen_xml_parameter_bad_fields(fmt, error, where):
    with pytest.raises(error, match=where):
        Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})


def test_qwen_xml_parameter_builder_checks_its_schema_type():
    with pytest.raises(TypeError, match="json_schema"):
        QwenXMLParameterFormat(json_schema="{}")


STYLE_INSTANCES = [
    ("qwen_xml", "<parameter=name>Bob</parameter><parameter=age>1</parameter>", True),
    ("qwen_xml", '{"name": "Bob", "age": 1}', False),
    ("minimax_xml", '<parameter name="name">Bob</parameter><parameter name="age">1</parameter>',
     True),
    ("glm_xml", "<arg_key>name</arg_key><arg_value>Bob</arg_value>"
                "<arg_key>age</arg_key><arg_value>1</arg_value>", True),
    ("glm_xml", "<arg_key>age</arg_key><arg_value>1</arg_value>", False),
    ("gemma", '{age:1,name:<|"|>Bob<|"|>}', True),      # the template sorts the keys
    ("gemma", '{name:<|"|>Bob<|"|>,age:1}', True),      # xgrammar keeps the declaration order
    ("gemma", '{name:<|"|>Bob<|"|>,age:1,age:2}', False),
    ("gemma", '{"name":"Bob","age":1}', False),
    ("json", '{"name": "Bob", "age": 1}', True),
]


@pytest.mark.parametrize("style, text, accepted", STYLE_INSTANCES)
def test_json_schema_to_ebnf_prints_the_style_grammar(style, text, accepted):
    ebnf = _json_schema_to_ebnf(PERSON, json_format=style)
    assert _is_grammar_accept_string(Grammar.from_ebnf(ebnf), text) == accepted
    if style != "json":     # the same language as the structural tag's json_schema format
        assert _accepts(JSONSchemaFormat(json_schema=PERSON, style=style), text) == accepted


@pytest.mark.parametrize("schema", [PERSON, '{"type": "object"}', True])
def test_json_schema_to_ebnf_takes_every_schema_spelling(schema):
    assert "root ::=" in _json_schema_to_ebnf(schema, json_format="qwen_xml")


@pytest.mark.parametrize("any_order, accepted", [(True, True), (False, False)])
def test_json_schema_to_ebnf_passes_any_order(any_order, accepted):
    ebnf = _json_schema_to_ebnf(PERSON, json_format="qwen_xml", any_order=any_order)
    text = "<parameter=age>1</parameter><parameter=name>Bob</parameter>"
    assert _is_grammar_accept_string(ebnf, text) == accepted


@pytest.mark.parametrize("option", [{"any_whitespace": False}, {"indent": 2},
                                    {"separators": (",", ":")}, {"strict_mode": False}])
def test_json_schema_to_ebnf_refuses_layout_options_for_styles(option):
    with pytest.raises(InvalidArgumentError, match=next(iter(option))):
        _json_schema_to_ebnf(PERSON, json_format="qwen_xml", **option)


def test_json_schema_to_ebnf_unknown_style():
    with pytest.raises(StructuralTagError, match="format.style"):
        _json_schema_to_ebnf(PERSON, json_format="yaml")


def _param(style: str, value: str) -> str:
    return {"qwen_xml": f"<parameter=v>{value}</parameter>",
            "minimax_xml": f'<parameter name="v">{value}</parameter>',
            "deepseek_xml": f'<｜DSML｜parameter name="v" string="true">{value}</｜DSML｜parameter>',
            "glm_xml": f"<arg_key>v</arg_key><arg_value>{value}</arg_value>",
            "kimi_k3_xml": f'<|open|>argument key="v" type="string"<|sep|>{value}'
                           "<|close|>argument<|sep|>"}[style]


CONSTRAINED_STRINGS = [
    ({"format": "email"}, "a@example.com", True),
    ({"format": "email"}, "not-an-email", False),
    ({"format": "email"}, '"a@example.com"', False),         # raw, not a JSON string
    ({"format": "json-pointer"}, '/a"b', True),              # unescaped quote
    ({"format": "json-pointer"}, "/~", False),
    ({"format": "date"}, "2026-12-02", True),
    ({"format": "date"}, "2026-13-02", False),
    ({"format": "made-up"}, "anything", True),               # an annotation only
    ({"pattern": "^[a-z]+$"}, "abc", True),
    ({"pattern": "^[a-z]+$"}, "ab1", False),
    ({"pattern": "b"}, "abc", True),                         # JSON Schema search semantics
    ({"minLength": 2, "maxLength": 3}, "ab", True),
    ({"minLength": 2, "maxLength": 3}, "a", False),
    ({"minLength": 2, "maxLength": 3}, "abcd", False),
    ({"pattern": "^[0-9]{3}$", "maxLength": 3}, "123", True),  # the pattern fits the bound
]


@pytest.mark.parametrize("constraint, value, accepted", CONSTRAINED_STRINGS)
@pytest.mark.parametrize("style", ["qwen_xml", "minimax_xml", "deepseek_xml", "glm_xml",
                                   "kimi_k3_xml"])
def test_xml_styles_write_constrained_strings_raw(style, constraint, value, accepted):
    schema = {"type": "object", "properties": {"v": {"type": "string", **constraint}},
              "required": ["v"]}
    assert _accepts(JSONSchemaFormat(json_schema=schema, style=style),
                    _param(style, value)) == accepted


@pytest.mark.parametrize("style, padded", [("qwen_xml", True), ("deepseek_xml", False)])
def test_constrained_string_padding_follows_the_style(style, padded):
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "date"}},
              "required": ["v"]}
    fmt = JSONSchemaFormat(json_schema=schema, style=style)
    assert _accepts(fmt, _param(style, "\n2026-12-02\n")) == padded


@pytest.mark.parametrize("prop, fields, where", [
    ({"type": "string", "pattern": "^a+$", "minLength": 3}, {}, "minLength/maxLength"),
    ({"type": "string", "pattern": "^a$", "format": "date"}, {}, "'pattern' with"),
    ({"type": "string", "format": "regex"}, {}, "format 'regex'"),
    ({"type": "string", "maxLength": -1}, {}, "maxLength"),
    ({"type": "string", "minLength": 3, "maxLength": 2}, {}, "below minLength"),
    ({"type": "string", "maxLength": 5000}, {"excludes": ["xy"]}, "excluded substrings cannot be enforced"),
])
def test_constrained_strings_refused_when_not_enforceable(prop, fields, where):
    schema = {"type": "object", "properties": {"v": prop}}
    fmt = JSONSchemaFormat(json_schema=schema, style="qwen_xml", **fields)
    with pytest.raises(StructuralTagError, match=where):
        Grammar.from_structural_tag(StructuralTag(format=fmt))


@pytest.mark.parametrize("prop, value, accepted", [
    ({"type": "string"}, "axyb", False),
    ({"type": "string", "maxLength": 6}, "axyb", False),      # bounded: the product automaton
    ({"type": "string", "maxLength": 6}, "ab", True),
    ({"type": "string", "maxLength": 6}, "abcdefg", False),
    ({"type": "string", "format": "email"}, "xy@example.com", True),  # a format keeps its language
    ({"type": "string", "pattern": "^[a-z]+$"}, "axyb", True),
])
def test_xml_excludes_filter_free_strings(prop, value, accepted):
    schema = {"type": "object", "properties": {"v": prop}, "required": ["v"]}
    fmt = JSONSchemaFormat(json_schema=schema, style="qwen_xml", excludes=["xy"])
    assert _accepts(fmt, _param("qwen_xml", value)) == accepted


EXTRA = {"type": "object", "properties": {"age": {"type": "integer"}, "a-b": {"type": "string"}},
         "additionalProperties": {"type": "string"}}
EXTRA_INSTANCES = [
    ("<parameter=age>1</parameter><parameter=x>hi</parameter>", True, True),
    ("<parameter=x>hi</parameter><parameter=y_2>z</parameter>", True, True),
    ("<parameter=x>hi</parameter><parameter=age>1</parameter>", False, True),  # order
    ("<parameter=age>1</parameter><parameter=age>hi</parameter>", False, False),  # declared
    ("<parameter=ag>hi</parameter><parameter=agex>hi</parameter>", True, True),  # prefixes
    ("<parameter=1a>hi</parameter>", False, False),                     # not an identifier
    ("<parameter=x>1</parameter>", True, True),                         # a raw string
]


@pytest.mark.parametrize("text, in_order, any_order", EXTRA_INSTANCES)
@pytest.mark.parametrize("ordered", [True, False])
def test_xml_styles_take_additional_properties(ordered, text, in_order, any_order):
    fmt = JSONSchemaFormat(json_schema=EXTRA, style="qwen_xml", any_order=not ordered)
    assert _accepts(fmt, text) == (in_order if ordered else any_order)


@pytest.mark.parametrize("extra, text, accepted", [
    (False, "<parameter=x>1</parameter>", False),
    (True, "<parameter=x>[1, 2]</parameter>", True),              # any JSON value
    ({"type": "integer"}, "<parameter=x>1</parameter>", True),
    ({"type": "integer"}, "<parameter=x>one</parameter>", False),
])
def test_xml_additional_properties_values(extra, text, accepted):
    schema = {"type": "object", "additionalProperties": extra}
    assert _accepts(JSONSchemaFormat(json_schema=schema, style="qwen_xml"), text) == accepted


def test_xml_additional_properties_with_excludes():
    # Free names are identifiers: "<" cannot occur in one, so only the values are filtered.
    fmt = JSONSchemaFormat(json_schema=EXTRA, style="qwen_xml", excludes=["<"])
    assert _accepts(fmt, "<parameter=x>hi</parameter>")
    assert not _accepts(fmt, "<parameter=x>h<i</parameter>")
    # An excluded string of identifier characters could occur in a free name: refused.
    fmt = JSONSchemaFormat(json_schema=EXTRA, style="qwen_xml", excludes=["ab"])
    with pytest.raises(StructuralTagError, match="additionalProperties"):
        Grammar.from_structural_tag(StructuralTag(format=fmt))


def test_output_parser_reads_additional_properties_by_their_schema():
    from xg2_jax._src.output_parser_xml import parse_xml_arguments

    text = "<parameter=age>1</parameter><parameter=x>hi</parameter>"
    ends = list(parse_xml_arguments(text, 0, "qwen_xml", EXTRA, ()))
    assert ends[-1] == (len(text), {"age": 1, "x": "hi"})


@pytest.mark.parametrize("tag, text, accepted", [
    ({"format": {"type": "const_string", "value": "hi"}}, "hi", True),       # type left out
    ({"format": {"type": "const_string", "value": "hi"}}, "ho", False),
    ({"type": "structural_tag", "format": {"type": "const_string", "value": "hi"}}, "hi", True),
    ({"type": "const_string", "value": "hi"}, "hi", True),                  # a bare format
])
def test_structural_tag_envelope_spellings(tag, text, accepted):
    assert _is_grammar_accept_string(Grammar.from_structural_tag(tag), text) == accepted


def test_structural_tag_envelope_without_type_checks_its_fields():
    with pytest.raises(StructuralTagError, match=r"\(root\)\.extra"):
        Grammar.from_structural_tag({"format": {"type": "const_string", "value": "hi"},
                                     "extra": 1})
