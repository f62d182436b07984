"""Object keys and constrained strings in the recursive argument styles (cohere_xml, gemma,
minimax_m3_xml): additionalProperties schemas, patternProperties, propertyNames and
unevaluatedProperties, pattern / format / length-bounded strings. Each cohere case decodes the
XML into the JSON value it stands for and checks the grammar's verdict against `jsonschema`.
"""
import html
import json
import re

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string, _json_schema_to_ebnf


def _grammar(schema, style):
    return xg.Grammar.from_ebnf(_json_schema_to_ebnf(schema, json_format=style))


_OPEN = re.compile(r'<cofl:value(?: name="([^"]*)")? type="(raw|json|list|dict)">')
_END = "</cofl:value>"


def _cohere_nodes(text, pos, named):
    """Parses value nodes from pos; returns ([(name, value)], end position)."""
    out = []
    while True:
        while pos < len(text) and text[pos] in " \t\n\r":
            pos += 1
        m = _OPEN.match(text, pos)
        if not m:
            return out, pos
        if (m.group(1) is not None) != named:
            raise ValueError("name attribute where none belongs, or missing")
        name = html.unescape(m.group(1)) if named else None
        kind, pos = m.group(2), m.end()
        if kind in ("raw", "json"):
            end = text.index(_END, pos)
            body = text[pos:end]
            value = body if kind == "raw" else json.loads(body)
            if kind == "json" and isinstance(value, (str, list, dict)):
                raise ValueError("a json node holds only numbers, booleans and null")
            pos = end + len(_END)
        else:
            items, pos = _cohere_nodes(text, pos, named=kind == "dict")
            while pos < len(text) and text[pos] in " \t\n\r":
                pos += 1
            if not text.startswith(_END, pos):
                raise ValueError("unclosed node")
            pos += len(_END)
            value = dict(items) if kind == "dict" else [v for _, v in items]
        out.append((name, value))


def cohere_to_json(text):
    """The argument object a cohere_xml text stands for (ValueError when it is not one)."""
    members, pos = _cohere_nodes(text, 0, named=True)
    if text[pos:].strip():
        raise ValueError("trailing text")
    names = [n for n, _ in members]
    if len(set(names)) != len(names):
        raise ValueError("duplicate key")
    return dict(members)


def _valid(schema, value):
    validator = jsonschema.Draft202012Validator
    return validator(schema, format_checker=validator.FORMAT_CHECKER).is_valid(value)


def _node(name, kind, body):
    return f'<cofl:value name="{html.escape(name, quote=True)}" type="{kind}">{body}</cofl:value>'


_TYPED_EXTRA = {"type": "object", "propertyNames": {"pattern": "^[a-z_]+$"}, "additionalProperties": {"type": "integer"}}
_PATTERNS = {
    "type": "object",
    "properties": {"id": {"type": "integer"}},
    "required": ["id"],
    "patternProperties": {"^text_[a-z]+$": {"type": "string"}},
    "additionalProperties": {"type": "boolean"},
}
_NAMES_ENUM = {"type": "object", "propertyNames": {"enum": ["a", "b", 3, ""]}, "additionalProperties": True}
_NAMES_LENGTH = {"type": "object", "propertyNames": {"maxLength": 2}, "additionalProperties": {"type": "null"}}
_UNEVALUATED = {
    "type": "object",
    "properties": {"config": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"},
                              "unevaluatedProperties": {"type": "integer"}}},
    "required": ["config"],
    "additionalProperties": False,
}
_DECLARED_ESCAPED = {
    "type": "object",
    "properties": {'a&<>"b': {"type": "integer"}},
    "required": ['a&<>"b'],
    "additionalProperties": {"type": "string"},
}
_STRINGS = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "day": {"type": "string", "format": "date"},
        "short": {"type": "string", "minLength": 1, "maxLength": 3},
        "free": {"type": "string", "pattern": "^.*$"},
    },
    "additionalProperties": False,
}

_COHERE_CASES = [
    (_TYPED_EXTRA, _node("abc", "json", "3")),
    (_TYPED_EXTRA, _node("abc", "json", "3") + _node("de_f", "json", "-1")),
    (_TYPED_EXTRA, _node("Abc", "json", "3")),  # name outside propertyNames
    (_TYPED_EXTRA, _node("abc", "json", "1.5")),  # value outside the extra schema
    (_TYPED_EXTRA, _node("abc", "raw", "3")),  # a string where an integer belongs
    (_TYPED_EXTRA, ""),
    (_PATTERNS, _node("id", "json", "1") + _node("text_label", "raw", "hello") + _node("enabled", "json", "true")),
    (_PATTERNS, _node("id", "json", "1") + _node("text_label", "json", "true")),  # pattern key takes its schema
    (_PATTERNS, _node("id", "json", "1") + _node("other", "raw", "x")),  # unmatched key takes additionalProperties
    (_PATTERNS, _node("id", "raw", "1")),  # a declared key keeps its own schema
    (_PATTERNS, _node("text_label", "raw", "x")),  # required id missing
    (_NAMES_ENUM, _node("a", "json", "1") + _node("b", "raw", "two")),
    (_NAMES_ENUM, _node("zzz", "json", "1")),
    (_NAMES_ENUM, _node("3", "json", "1")),  # a non-string enum value names no key
    (_NAMES_LENGTH, _node("ab", "json", "null")),
    (_NAMES_LENGTH, _node("abc", "json", "null")),
    (_NAMES_LENGTH, _node("é", "json", "null")),  # length counts characters
    (_UNEVALUATED, _node("config", "dict", _node("a", "json", "7"))),
    (_UNEVALUATED, _node("config", "dict", _node("a", "raw", "7"))),
    (_UNEVALUATED, _node("config", "dict", _node("A", "json", "7"))),
    (_DECLARED_ESCAPED, _node('a&<>"b', "json", "1")),
    (_DECLARED_ESCAPED, _node('a&<>"b', "json", "1") + _node("x<y", "raw", "s")),
    (_STRINGS, _node("code", "raw", "ABC") + _node("day", "raw", "2024-02-29")),
    (_STRINGS, _node("code", "raw", "ABCD")),
    (_STRINGS, _node("day", "raw", "2023-02-29")),
    (_STRINGS, _node("day", "raw", "tomorrow")),
    (_STRINGS, _node("short", "raw", "abc")),
    (_STRINGS, _node("short", "raw", "abcd")),
    (_STRINGS, _node("short", "raw", "")),
    (_STRINGS, _node("free", "raw", "any <b>text</b> &")),
]


@pytest.mark.parametrize("schema, text", _COHERE_CASES)
def test_cohere_keys_and_strings_match_jsonschema(schema, text):
    value = cohere_to_json(text)
    assert _is_grammar_accept_string(_grammar(schema, "cohere_xml"), text) == _valid(schema, value)


def _render_cohere(value, name=None):
    attr = "" if name is None else f' name="{html.escape(name, quote=True)}"'
    if isinstance(value, str):
        return f'<cofl:value{attr} type="raw">{value}</cofl:value>'
    if isinstance(value, dict):
        return f'<cofl:value{attr} type="dict">' + "".join(_render_cohere(v, k) for k, v in value.items()) + _END
    if isinstance(value, list):
        return f'<cofl:value{attr} type="list">' + "".join(_render_cohere(v) for v in value) + _END
    return f'<cofl:value{attr} type="json">{json.dumps(value)}</cofl:value>'


_KEYS = st.sampled_from(["id", "text_a", "text_", "x", "Ab", "a&b", "日本", "ab"])
_VALUES = st.one_of(st.integers(-3, 3), st.booleans(), st.none(), st.sampled_from(["", "s", "3"]),
                    st.lists(st.integers(0, 2), max_size=2))


@settings(max_examples=150, deadline=None)
@given(args=st.dictionaries(_KEYS, _VALUES, max_size=3),
       schema=st.sampled_from([_TYPED_EXTRA, _PATTERNS, _NAMES_ENUM, _NAMES_LENGTH, _DECLARED_ESCAPED]))
def test_cohere_rendered_objects_match_jsonschema(args, schema):
    # Declared properties first, in schema order (the order the style writes them), then the rest.
    declared = list(schema.get("properties", {}))
    keys = [k for k in declared if k in args] + [k for k in args if k not in declared]
    text = "".join(_render_cohere(args[k], k) for k in keys)
    assert _is_grammar_accept_string(_grammar(schema, "cohere_xml"), text) == _valid(schema, args), text


@pytest.mark.parametrize("text, ok", [
    (_node("k", "json", "1"), True),
    ('<cofl:value name="a&amp;b" type="json">1</cofl:value>', True),
    ('<cofl:value name="a&gt;b" type="json">1</cofl:value>', True),
    ('<cofl:value name="a>b" type="json">1</cofl:value>', False),  # markup is written as an entity
    ('<cofl:value name="a&b" type="json">1</cofl:value>', False),
    ('<cofl:value name="a&ampb" type="json">1</cofl:value>', False),
    ('<cofl:value name="" type="json">1</cofl:value>', False),
    ('<cofl:value name="a\0b" type="json">1</cofl:value>', False),
])
def test_cohere_free_names_have_one_spelling(text, ok):
    assert _is_grammar_accept_string(_grammar({"type": "object"}, "cohere_xml"), text) == ok


def test_cohere_declared_name_is_not_a_free_key():
    g = _grammar(_DECLARED_ESCAPED, "cohere_xml")
    assert not _is_grammar_accept_string(g, _node('a&<>"b', "json", "1") + _node('a&<>"b', "raw", "s"))
    assert not _is_grammar_accept_string(g, _node('a&<>"b', "raw", "s"))


def test_cohere_string_cannot_spell_its_end():
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^.*$"}}, "required": ["s"]}
    g = _grammar(schema, "cohere_xml")
    assert _is_grammar_accept_string(g, _node("s", "raw", "a</cofl:valu"))
    assert not _is_grammar_accept_string(g, _node("s", "raw", "a</cofl:value>b"))


@pytest.mark.parametrize("schema, match", [
    # A declared name that also matches a pattern with another schema needs their conjunction.
    ({"type": "object", "properties": {"x_a": {"type": "integer"}},
      "patternProperties": {"^x_": {"type": "string"}}}, "patternProperties"),
    ({"type": "object", "patternProperties": {"^a": {"type": "integer"}, "b$": {"type": "string"}}},
     "several patternProperties"),
    ({"type": "object", "propertyNames": {"type": "integer"}}, "propertyNames"),
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a", "format": "date"}}}, "pattern"),
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$", "maxLength": 3}}}, "maxLength"),
])
def test_cohere_refuses_what_it_cannot_keep(schema, match):
    with pytest.raises(xg.StructuralTagError, match=match):
        _grammar(schema, "cohere_xml")


# Gemma writes {key:value} with bare identifier keys and <|"|>-delimited strings; each case
# gives the JSON value the text stands for.
_GEMMA_PATTERNS = {"type": "object", "patternProperties": {"^x_[a-z]+$": {"type": "integer"}},
                   "additionalProperties": False}
_GEMMA_NAMES = {"type": "object", "propertyNames": {"enum": ["a", "b", 3, ""]}, "additionalProperties": {"type": "integer"}}
_GEMMA_STRINGS = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^.*$"},
                                                    "n": {"type": "string", "minLength": 2, "maxLength": 3}}}


@pytest.mark.parametrize("schema, text, value", [
    (_GEMMA_PATTERNS, "{x_ab:1}", {"x_ab": 1}),
    (_GEMMA_PATTERNS, "{x_ab:1,x_c:2}", {"x_ab": 1, "x_c": 2}),
    (_GEMMA_PATTERNS, '{x_ab:<|"|>1<|"|>}', {"x_ab": "1"}),
    (_GEMMA_PATTERNS, "{y:1}", {"y": 1}),
    (_GEMMA_NAMES, "{a:1,b:2}", {"a": 1, "b": 2}),
    (_GEMMA_NAMES, "{zzz:1}", {"zzz": 1}),
    (_GEMMA_NAMES, "{}", {}),
    (_GEMMA_STRINGS, '{s:<|"|>a<b<|"|>}', {"s": "a<b"}),
    (_GEMMA_STRINGS, '{n:<|"|>abc<|"|>}', {"n": "abc"}),
    (_GEMMA_STRINGS, '{n:<|"|>a<|"|>}', {"n": "a"}),
    (_GEMMA_STRINGS, '{n:<|"|>abcd<|"|>}', {"n": "abcd"}),
])
def test_gemma_keys_and_strings_match_jsonschema(schema, text, value):
    assert _is_grammar_accept_string(_grammar(schema, "gemma"), text) == _valid(schema, value)


def test_gemma_pattern_properties_alone_take_no_other_keys():
    # As in the JSON front end's strict mode: declared patterns close the object.
    schema = {"type": "object", "patternProperties": {"^x_[a-z]+$": {"type": "integer"}}}
    assert _is_grammar_accept_string(_grammar(schema, "gemma"), "{x_ab:1}")
    assert not _is_grammar_accept_string(_grammar(schema, "gemma"), "{y:1}")


def test_gemma_string_cannot_spell_the_delimiter():
    g = _grammar(_GEMMA_STRINGS, "gemma")
    assert not _is_grammar_accept_string(g, '{s:<|"|>a<|"|>b<|"|>}')
    assert not _is_grammar_accept_string(g, '{n:<|"|><|"|><|"|>}')


@pytest.mark.parametrize("schema", [
    {"type": "object", "additionalProperties": True},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}, "additionalProperties": False},
    {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
    # As xgrammar: propertyNames is refused even where no open key remains.
    {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "string"}}, "propertyNames": {"maxLength": 3},
     "additionalProperties": False},
])
def test_minimax_m3_refuses_open_keys(schema):
    with pytest.raises(xg.StructuralTagError, match="fixed object property names"):
        _grammar(schema, "minimax_m3_xml")


@pytest.mark.parametrize("string_schema", [
    {"type": "string", "pattern": ".*"},
    {"type": "string", "format": "email"},
    {"type": "string", "minLength": 1},
])
def test_minimax_m3_refuses_constrained_strings(string_schema):
    """Its values cannot be both checked and kept clear of the namespace marker: refused, in
    xgrammar's words, at the value's path."""
    schema = {"type": "object", "properties": {"value": string_schema}, "required": ["value"],
              "additionalProperties": False}
    with pytest.raises(xg.StructuralTagError, match=r"json_schema/properties/value: String pattern, "
                                                    r"recognized format, and length constraints are not supported"):
        _grammar(schema, "minimax_m3_xml")


# XML argument styles: parameters the schema does not declare, named by identifiers; each case
# gives the argument object the text stands for.
def _qwen(name, text):
    return f"<parameter={name}>\n{text}\n</parameter>"


_QWEN_NAMES = {"type": "object", "propertyNames": {"pattern": "^[a-z_]+$"}, "additionalProperties": {"type": "integer"}}
_QWEN_UNEVALUATED = {"type": "object", "propertyNames": {"pattern": "^[a-z_]+$"},
                     "unevaluatedProperties": {"type": "integer"}}
_QWEN_PATTERNS = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                  "patternProperties": {"^x_[a-z]+$": {"type": "integer"}}, "additionalProperties": False}


@pytest.mark.parametrize("schema, text, value", [
    (_QWEN_NAMES, _qwen("x_key", "3"), {"x_key": 3}),
    (_QWEN_NAMES, _qwen("x_key", "1.5"), {"x_key": 1.5}),
    (_QWEN_NAMES, _qwen("Bad", "3"), {"Bad": 3}),
    (_QWEN_UNEVALUATED, _qwen("x_key", "3"), {"x_key": 3}),
    (_QWEN_UNEVALUATED, _qwen("x_key", '"3"'), {"x_key": "3"}),
    (_QWEN_PATTERNS, _qwen("name", "n") + _qwen("x_ab", "3"), {"name": "n", "x_ab": 3}),
    (_QWEN_PATTERNS, _qwen("name", "n") + _qwen("x_ab", "true"), {"name": "n", "x_ab": True}),
    (_QWEN_PATTERNS, _qwen("name", "n") + _qwen("other", "3"), {"name": "n", "other": 3}),
    (_QWEN_PATTERNS, _qwen("x_ab", "3"), {"x_ab": 3}),
])
def test_xml_free_parameters_match_jsonschema(schema, text, value):
    assert _is_grammar_accept_string(_grammar(schema, "qwen_xml"), text) == _valid(schema, value)


def test_xml_declared_parameter_outside_property_names_is_refused():
    schema = {"type": "object", "properties": {"Name": {"type": "string"}}, "required": ["Name"],
              "propertyNames": {"pattern": "^[a-z]+$"}}
    with pytest.raises(xg.StructuralTagError, match="propertyNames"):
        _grammar(schema, "qwen_xml")


@pytest.mark.parametrize("style, end, written", [
    ("cohere_xml", "</cofl:value>", _node("v", "raw", "ok")),
    ("gemma", '<|"|>', '{v:<|"|>ok<|"|>}'),
    ("minimax_m3_xml", "]<]minimax[>[</v>", "]<]minimax[>[<v>ok]<]minimax[>[</v>"),
])
def test_enum_strings_that_spell_the_value_end_are_left_out(style, end, written):
    schema = {"type": "object", "properties": {"v": {"enum": [f"a{end}b", "ok"]}}, "required": ["v"]}
    g = _grammar(schema, style)
    assert _is_grammar_accept_string(g, written)
    assert not _is_grammar_accept_string(g, written.replace("ok", f"a{end}b"))
    with pytest.raises(xg.StructuralTagError, match="no value can be written"):
        _grammar({"type": "object", "properties": {"v": {"const": f"a{end}b"}}}, style)


# minProperties / maxProperties in the XML argument styles: every subset of the parameters, in
# the declared order and (with any_order) in every order, judged against jsonschema.
_COUNTED_VALUES = {"name": ("n", "n"), "age": ("3", 3), "ID": ("7", 7), "is_student": ("true", True),
                   "extra_a": ("1", 1)}  # name: (the parameter's text, its value)
_COUNTED_SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                      "ID": {"type": "integer"}, "is_student": {"type": "boolean"}},
     "minProperties": 2, "maxProperties": 3},
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name"], "additionalProperties": {"type": "integer"}, "minProperties": 3},
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "additionalProperties": {"type": "integer"}, "maxProperties": 1},
]


@pytest.mark.parametrize("any_order", [False, True])
@pytest.mark.parametrize("schema", _COUNTED_SCHEMAS)
def test_xml_parameter_counts_match_jsonschema(schema, any_order):
    import itertools

    grammar = xg.Grammar.from_ebnf(_json_schema_to_ebnf(schema, json_format="qwen_xml", any_order=any_order))
    names = list(schema["properties"]) + (["extra_a"] if schema.get("additionalProperties") else [])
    for k in range(len(names) + 1):
        for subset in itertools.combinations(names, k):
            for order in (itertools.permutations(subset) if any_order else [subset]):
                text = "".join(_qwen(n, _COUNTED_VALUES[n][0]) for n in order)
                value = {n: _COUNTED_VALUES[n][1] for n in order}
                assert _is_grammar_accept_string(grammar, text) == _valid(schema, value), (text, any_order)


@pytest.mark.parametrize("schema, match", [
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2}, "no parameters satisfy"),
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
      "maxProperties": 1}, "no parameters satisfy"),
    ({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": -1}, "non-negative integer"),
])
def test_xml_parameter_counts_nothing_satisfies(schema, match):
    with pytest.raises(xg.XG2Error, match=match):
        _grammar(schema, "qwen_xml")


_M3 = "]<]minimax[>["


@pytest.mark.parametrize("text, ok", [
    ("Alice", True),
    ("a < b > c </name>", True),
    (f"A{_M3}<unexpected>x{_M3}</unexpected>", False),  # a reader takes it as a nested element
    (f"A{_M3}", False),
])
def test_minimax_m3_string_never_holds_the_namespace_marker(text, ok):
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    written = f"{_M3}<name>{text}{_M3}</name>"
    assert _is_grammar_accept_string(_grammar(schema, "minimax_m3_xml"), written) == ok


def test_minimax_m3_const_holding_the_namespace_marker_is_left_out():
    schema = {"type": "object", "properties": {"v": {"enum": ["ok", f"x{_M3}<y>"]}}, "required": ["v"]}
    grammar = _grammar(schema, "minimax_m3_xml")
    assert _is_grammar_accept_string(grammar, f"{_M3}<v>ok{_M3}</v>")
    assert not _is_grammar_accept_string(grammar, f"{_M3}<v>x{_M3}<y>{_M3}</v>")


def test_minimax_m3_nested_const_and_empty_list_are_written_as_elements():
    schema = {"type": "object", "properties": {
        "fixed": {"const": {"x": [1, True]}},
        "none": {"type": "array", "items": False},
    }, "required": ["fixed", "none"]}
    grammar = _grammar(schema, "minimax_m3_xml")
    fixed = f"{_M3}<fixed>{_M3}<x>{_M3}<item>1{_M3}</item>{_M3}<item>true{_M3}</item>{_M3}</x>{_M3}</fixed>"
    assert _is_grammar_accept_string(grammar, fixed + f"{_M3}<none>{_M3}</none>")
    assert not _is_grammar_accept_string(grammar, fixed.replace("<item>1", "<item>2") + f"{_M3}<none>{_M3}</none>")
    assert not _is_grammar_accept_string(grammar, fixed + f"{_M3}<none>{_M3}<item>1{_M3}</item>{_M3}</none>")
