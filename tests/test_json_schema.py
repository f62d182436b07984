"""JSON Schema front end: keywords, options, errors (driven through a real vocabulary)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

import xg2_jax as xg
from xg2_jax import greedy_tokenize
from xg2_jax._src.errors import UnsupportedSchemaError, UnsupportedSchemaWarning
from xg2_jax._src.grammar import Grammar

VOCAB = Path("/work/shared/data/vocab/llama3.json.gz")


@pytest.fixture(scope="module")
def tok():
    if not VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return xg.TokenizerInfo.from_vocab_file(VOCAB)


@pytest.fixture(scope="module")
def compiler(tok):
    return xg.GrammarCompiler(tok, cache_enabled=False)


def accepts_text(compiler, grammar: Grammar, text: str) -> bool:
    m = xg.GrammarMatcher(compiler.compile_grammar(grammar, lazy=True))
    for t in greedy_tokenize(compiler.tokenizer_info, text.encode("utf-8")):
        if not m.accept_token(t):
            return False
    return m.accept_token(compiler.tokenizer_info.stop_token_ids[0])


def check(compiler, schema, valid=(), invalid=(), **opts):
    g = Grammar.from_json_schema(schema, **opts)
    dump = opts.get("_dump", lambda v: json.dumps(v))
    for v in valid:
        assert accepts_text(compiler, g, dump(v)), f"valid instance rejected: {v!r}\n{g}"
    for v in invalid:
        assert not accepts_text(compiler, g, dump(v)), f"invalid instance accepted: {v!r}\n{g}"


def test_types(compiler):
    check(compiler, {"type": "integer"}, [0, -5, 123456789], [1.5, "1", None, True])
    check(compiler, {"type": "number"}, [0, -5.25, 1e10, 3], ["x", None])
    check(compiler, {"type": "string"}, ["", "a b", "é\n\"\\"], [1, None])
    check(compiler, {"type": "boolean"}, [True, False], [0, "true"])
    check(compiler, {"type": "null"}, [None], [0, False])
    check(compiler, {"type": ["string", "null"]}, ["x", None], [1])
    check(compiler, {}, [1, "x", None, [1, {"a": []}], {"k": 1.5}], [])
    check(compiler, True, [1, {"a": [True]}], [])


def test_false_schema_fails_to_compile(compiler):
    with pytest.raises(xg.GrammarError):
        compiler.compile_grammar(Grammar.from_json_schema(False))


def test_object_properties_required_additional(compiler):
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]}
    check(compiler, s, [{"a": 1}, {"a": 1, "b": "x"}], [{}, {"b": "x"}, {"a": "1"}, {"a": 1, "c": 2}])
    # strict_mode=False: the schema's defaults (additional properties allowed, any value)
    check(compiler, s, [{"a": 1, "c": [1, 2]}, {"a": 1, "b": "x", "zz": None}], [{"a": 1, "b": 2}],
          strict_mode=False)
    s2 = dict(s, additionalProperties={"type": "integer"})
    check(compiler, s2, [{"a": 1, "c": 2}], [{"a": 1, "c": "x"}])
    s3 = dict(s, additionalProperties=False)
    check(compiler, s3, [{"a": 1}], [{"a": 1, "c": 2}], strict_mode=False)


def test_property_order_and_any_order(compiler):
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
         "required": ["a", "b"]}
    check(compiler, s, [{"a": 1, "b": 2}], [{"b": 2, "a": 1}, {"a": 1}])
    check(compiler, s, [{"a": 1, "b": 2}, {"b": 2, "a": 1}], [{"a": 1}], any_order=True)
    g = Grammar.from_json_schema(s, any_order=True)
    assert not accepts_text(compiler, g, '{"a": 1, "a": 1, "b": 2}')


def _wide_object(n: int, required: int) -> dict:
    return {"type": "object", "additionalProperties": False,
            "properties": {f"p{i}": {"type": "integer"} if i % 2 else {"type": "string"} for i in range(n)},
            "required": [f"p{i}" for i in range(required)]}


@pytest.mark.parametrize("n,required", [(12, 3), (40, 10), (152, 0)])
def test_any_order_scales_and_is_exact(compiler, n, required):
    """any_order=True on wide objects (the parser tracks the set of written properties, so the
    grammar stays one node however many there are): any subset holding the required names, in
    any order, is accepted; a duplicate, a missing required name or a wrong value type is not.
    Random subsets and orders are checked against jsonschema."""
    import random

    import jsonschema

    s = _wide_object(n, required)
    g = Grammar.from_json_schema(s, any_order=True)
    rng = random.Random(n)
    for _ in range(12):
        names = [f"p{i}" for i in range(n) if i < required or rng.random() < 0.3]
        rng.shuffle(names)
        obj = {k: (7 if int(k[1:]) % 2 else "v") for k in names}
        assert jsonschema.Draft202012Validator(s).is_valid(obj)
        assert accepts_text(compiler, g, json.dumps(obj)), obj
        if names:
            dup = json.dumps(obj)[:-1] + f', "{names[0]}": {json.dumps(obj[names[0]])}' + "}"
            assert not accepts_text(compiler, g, dup), dup
            bad = dict(obj)
            bad[names[-1]] = [] if isinstance(obj[names[-1]], int) else 5
            assert not accepts_text(compiler, g, json.dumps(bad)), bad
        if required:
            missing = {k: v for k, v in obj.items() if k != "p0"}
            assert not accepts_text(compiler, g, json.dumps(missing)), missing
    assert not accepts_text(compiler, g, json.dumps({f"p{i}": 1 for i in range(required)} | {"zz": 1}))


def test_any_order_property_counts_and_additional(compiler):
    """minProperties/maxProperties with optional and additional properties, exact in both layouts."""
    s = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                                          "c": {"type": "integer"}},
         "required": ["b"], "additionalProperties": {"type": "string"}, "minProperties": 2,
         "maxProperties": 3}
    valid = [{"b": 1, "a": 2}, {"x": "s", "b": 1}, {"c": 1, "y": "t", "b": 2}, {"b": 1, "x": "s", "y": "t"}]
    invalid = [{"b": 1}, {"a": 1, "c": 2}, {"a": 1, "b": 2, "c": 3, "x": "s"}, {"b": 1, "x": 2},
               {"b": 1, "b": 2}, {}]  # noqa: F601 - a repeated key, as a dict: {"b": 2}
    check(compiler, s, valid, invalid, strict_mode=False, any_order=True)
    # The ordered default counts them too, with declared members in declaration order.
    check(compiler, s, [{"a": 2, "b": 1}, {"x": "s", "b": 1}, {"b": 2, "c": 1, "y": "t"}],
          [{"b": 1}, {"a": 1, "c": 2}, {"a": 1, "b": 2, "c": 3, "x": "s"}, {"b": 1, "a": 2}], strict_mode=False)
    # An object const: the same members in any order.
    check(compiler, {"const": {"foo": "bar", "baz": 1}}, [{"foo": "bar", "baz": 1}, {"baz": 1, "foo": "bar"}],
          [{"foo": "bar"}, {"baz": 1, "foo": "bar", "x": 1}], any_order=True)


def test_arrays(compiler):
    check(compiler, {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
          [[1], [1, 2, 3]], [[], [1, 2, 3, 4], ["x"]])
    check(compiler, {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
          [[], [1], [1, "a"]], [[1, "a", 3], ["a"]])
    check(compiler, {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
          [[1, "a", "b"]], [[1, 2]])
    # draft-7 array form of items with additionalItems
    check(compiler, {"items": [{"type": "integer"}], "additionalItems": False, "type": "array"},
          [[1]], [[1, 2]])
    check(compiler, {"type": "array", "contains": {"const": 5}, "items": {"type": "integer"}},
          [[5], [1, 5, 2]], [[], [1, 2]])


def test_large_bounds_use_repeat(compiler):
    g = Grammar.from_json_schema({"type": "array", "maxItems": 1000000, "items": {"type": "integer"}})
    assert "{0,999999}" in str(g)
    g = Grammar.from_json_schema({"type": "string", "maxLength": 100000})
    assert "{0,100000}" in str(g)


@pytest.mark.parametrize("keyword,schema,pointer", [
    ("minItems", {"type": "array", "minItems": 2**31 + 1}, "(root)"),
    ("minLength", {"type": "object", "properties": {"a": {"type": "string", "minLength": 2**31}}}, "/properties/a"),
    ("minProperties", {"anyOf": [{"type": "integer"}, {"type": "object", "minProperties": 2**40}]}, "/anyOf/1"),
    ("minContains", {"type": "array", "contains": {"type": "integer"}, "minContains": 2**31}, "/minContains"),
])
def test_lower_bounds_past_int32_are_refused(compiler, keyword, schema, pointer):
    # As xgrammar: no generation reaches such a count, and the parser's counts are int32. A
    # maximum past int32 bounds nothing a generation reaches, so it is kept.
    with pytest.raises(xg.LimitExceededError, match=f"schema at {re.escape(pointer)}: {keyword} "):
        Grammar.from_json_schema(schema)
    check(compiler, {"type": "array", "items": {"type": "string", "maxLength": 2**32}, "maxItems": 2**31 + 1},
          [["a", "b"], []], [["a", 1]])


def test_enum_const(compiler):
    check(compiler, {"enum": ["a", 1, None, {"x": [1]}, [True]]},
          ["a", 1, None, {"x": [1]}, [True]], ["b", 2, {"x": [2]}])
    check(compiler, {"const": "é/\""}, ["é/\""], ["e"])
    # every escape spelling of the constant is accepted
    g = Grammar.from_json_schema({"const": "é"})
    assert accepts_text(compiler, g, '"é"') and accepts_text(compiler, g, '"\\u00e9"')
    assert accepts_text(compiler, g, '"\\u00E9"')
    check(compiler, {"type": "string", "enum": ["a", 1]}, ["a"], [1])


def test_combinators_and_refs(compiler):
    check(compiler, {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}, [1, "ab"], ["abc", None])
    check(compiler, {"oneOf": [{"type": "integer"}, {"type": "null"}]}, [1, None], ["x"])
    check(compiler, {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                               {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
          [{"a": 1, "b": 2}], [{"a": 1}, {"b": 2}])
    tree = {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["v"]}}, "$ref": "#/$defs/node"}
    check(compiler, tree, [{"v": 1}, {"v": 1, "children": [{"v": 2, "children": [{"v": 3}]}]}],
          [{"v": 1, "children": [{"x": 2}]}])
    check(compiler, {"definitions": {"a~b/c": {"type": "integer"}}, "$ref": "#/definitions/a~0b~1c"}, [1], ["x"])
    check(compiler, {"not": {"type": "string"}}, [1, None], ["x"])


def test_string_lengths_count_decoded_characters(compiler):
    g = Grammar.from_json_schema({"type": "string", "minLength": 2, "maxLength": 3})
    assert accepts_text(compiler, g, '"ab"')
    assert accepts_text(compiler, g, '"\\n\\u00e9"')  # two characters
    assert accepts_text(compiler, g, '"\\ud83d\\ude00ab"')  # a surrogate pair is one
    assert not accepts_text(compiler, g, '"a"')
    assert not accepts_text(compiler, g, '"\\n\\n\\n\\n"')
    assert not accepts_text(compiler, g, '"a\nb"')  # raw control characters never


def test_integer_ranges(compiler):
    check(compiler, {"type": "integer", "minimum": -15, "maximum": 127},
          [-15, -1, 0, 9, 10, 99, 100, 127], [-16, 128, 1000, -100])
    check(compiler, {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}, [1, 9], [0, 10])
    check(compiler, {"type": "integer", "minimum": 1000}, [1000, 99999], [999, -1, 0])
    check(compiler, {"type": "integer", "minimum": 2.5, "maximum": 4.5}, [3, 4], [2, 5])
    check(compiler, {"type": "integer", "multipleOf": 3}, [0, 3, -9, 300], [1, 10])
    check(compiler, {"type": "integer", "multipleOf": 5, "minimum": 0, "maximum": 20}, [0, 5, 20], [3, 25])


def test_number_bounds(compiler):
    check(compiler, {"type": "number", "minimum": 0, "maximum": 1}, [0, 0.5, 1, 1.0], [-0.1, 1.01, 2])
    check(compiler, {"type": "number", "exclusiveMinimum": 0}, [0.001, 5], [0, -1])
    check(compiler, {"type": "number", "minimum": -2.5, "maximum": 3.25}, [-2.5, -1, 0, 3.25, 3.2],
          [-2.51, 3.26, 4])
    check(compiler, {"type": "number", "exclusiveMaximum": -1.5}, [-1.6, -100], [-1.5, 0])


def test_formats(compiler):
    check(compiler, {"type": "string", "format": "date"}, ["2024-02-29"], ["2024-13-01", "x"])


@pytest.mark.parametrize("year", [1900, 1996, 2000, 2023, 2024, 2100, 2400, 1, 9999])
def test_date_format_follows_the_calendar(compiler, year):
    import calendar
    import datetime

    valid, invalid = [], []
    for month in range(1, 13):
        last = calendar.monthrange(year, month)[1]
        valid.append(datetime.date(year, month, last).isoformat())
        invalid.append(f"{year:04d}-{month:02d}-{last + 1:02d}")
    check(compiler, {"type": "string", "format": "date"}, valid, invalid)
    check(compiler, {"type": "string", "format": "date-time"}, [valid[1] + "T00:00:00Z"], [invalid[1] + "T00:00:00Z"])
    check(compiler, {"type": "string", "format": "date-time"}, ["2024-01-01T10:20:30Z", "2024-01-01T10:20:30.5+02:00"],
          ["2024-01-01"])
    check(compiler, {"type": "string", "format": "time"}, ["23:59:60Z"], ["24:00:00Z"])
    check(compiler, {"type": "string", "format": "uuid"}, ["123e4567-e89b-12d3-a456-426614174000"], ["123"])
    check(compiler, {"type": "string", "format": "ipv4"}, ["192.168.0.255"], ["256.1.1.1", "1.2.3"])
    check(compiler, {"type": "string", "format": "ipv6"}, ["::1", "fe80::1:2", "2001:db8:0:0:0:0:2:1"], ["1:2"])
    check(compiler, {"type": "string", "format": "email"}, ["a.b@example.com"], ["ab", "a@"])
    check(
        compiler,
        {"type": "string", "format": "duration"},
        ["P1Y2M", "PT5S", "P3W", "P1Y2M3DT4H5M6S", "P2MT1M", "PT9H6M54S"],
        # RFC 3339 appendix A: a unit is followed only by the next one.
        ["P", "PT", "P1Y456D", "PT9H654S", "P1YT", "P1W2D"],
    )
    check(compiler, {"type": "string", "format": "hostname"}, ["a-b.example"], ["-a"])
    check(compiler, {"type": "string", "format": "uri-reference"}, ["a/b", "../x?y#z", "#f", "./a:b", "http://h/p"],
          ["://", "a b"])
    check(compiler, {"type": "string", "format": "uri"}, ["http://h/p", "urn:x"], ["a/b", "://"])
    check(compiler, {"type": "string", "format": "uri"}, ["https://x.org/a?b=c"], ["no scheme"])


def test_pattern(compiler):
    check(compiler, {"type": "string", "pattern": "^[a-z]+[0-9]{2}$"}, ["abc12"], ["abc1", "ABC12"])
    check(compiler, {"type": "string", "pattern": "ab"}, ["xxabyy", "ab"], ["a"])
    check(compiler, {"type": "object", "patternProperties": {"^x-": {"type": "integer"}}},
          [{"x-a": 1}], [{"x-a": "s"}, {"y": 1}])


@pytest.mark.parametrize("counted", ["[A-Fa-f0-9]{64}", "[0-9a-f]{40}", "ab[0-9]{33,35}"])
def test_searched_pattern_with_a_long_count_is_one_automaton(compiler, tok, counted):
    # A counted run searched in the string is the pattern's automaton, not a counted loop the
    # parser would start at every character: its masks equal the loop's (the same language
    # written anchored, which keeps the loop), and the string's first mask walks no token.
    searched = {"type": "object", "properties": {"h": {"type": "string", "pattern": counted}}}
    anchored = {"type": "object", "properties": {"h": {"type": "string", "pattern": f"^[\\s\\S]*{counted}[\\s\\S]*$"}}}
    assert "ByteDfa(" in str(Grammar.from_json_schema(searched))
    assert "ByteDfa(" not in str(Grammar.from_json_schema(anchored))
    run = {"[A-Fa-f0-9]{64}": "aB" * 32, "[0-9a-f]{40}": "0a" * 20, "ab[0-9]{33,35}": "ab" + "7" * 34}[counted]
    valid = [{"h": run}, {"h": "x " + run + "\u00e9!"}, {"h": run + run[:3]}]
    invalid = [{"h": run[:-3]}, {"h": run[:10] + "\"" + run[10:]}, {"h": 5}]
    check(compiler, searched, valid, invalid)
    bitmask = xg.allocate_token_bitmask(1, tok.vocab_size)
    expected = xg.allocate_token_bitmask(1, tok.vocab_size)
    for instance in valid:
        text = json.dumps(instance).encode()
        m = xg.GrammarMatcher(compiler.compile_json_schema(searched, lazy=True))
        reference = xg.GrammarMatcher(compiler.compile_json_schema(anchored, lazy=True))
        for i, t in enumerate(greedy_tokenize(tok, text)):
            m.fill_next_token_bitmask(bitmask)
            reference.fill_next_token_bitmask(expected)
            assert (bitmask == expected).all(), (instance, i)
            if i == 4:  # inside the string: decided by the automaton's entries alone
                assert m._handle.last_fill_stats()["walk_nodes"] == 0
            assert m.accept_token(t) and reference.accept_token(t)


def test_property_names_and_counts(compiler):
    check(compiler, {"type": "object", "propertyNames": {"maxLength": 2}, "additionalProperties": True},
          [{"ab": 1}], [{"abc": 1}])
    check(compiler, {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1,
                     "maxProperties": 2}, [{"a": 1}, {"a": 1, "b": 2}], [{}, {"a": 1, "b": 2, "c": 3}])


@pytest.mark.parametrize("indent,separators", [(None, None), (2, None), (4, (",", ": ")), (None, (",", ":"))])
def test_exact_formatting(compiler, indent, separators):
    s = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}},
                                          "b": {"type": "object", "properties": {"c": {"type": "string"}}},
                                          "d": {"enum": [{"x": [1, 2]}]}},
         "required": ["a", "b", "d"]}
    inst = {"a": [1, 2], "b": {"c": "x"}, "d": {"x": [1, 2]}}
    g = Grammar.from_json_schema(s, any_whitespace=False, indent=indent, separators=separators)
    assert accepts_text(compiler, g, json.dumps(inst, indent=indent, separators=separators))
    assert not accepts_text(compiler, g, json.dumps(inst, indent=7))
    empty = {"a": [], "b": {}, "d": {"x": [1, 2]}}
    assert accepts_text(compiler, g, json.dumps(empty, indent=indent, separators=separators))


def test_any_whitespace_and_max_whitespace(compiler):
    s = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    g = Grammar.from_json_schema(s)
    assert accepts_text(compiler, g, '{ \n "a" :\t1 }')
    g = Grammar.from_json_schema(s, max_whitespace_cnt=2)
    assert accepts_text(compiler, g, '{  "a":1}')
    assert not accepts_text(compiler, g, '{   "a":1}')


@pytest.mark.parametrize("separators,valid,invalid", [
    (None, ['{"a":1,"b":[2,3]}', '{\n"a" : 1 ,\t"b" : [2,\r\n3]\n}'], []),
    ((", ", ":"), ['{"a":1, "b":[2, 3]}', '{"a" : 1 , "b":[2, \n3]}'], ['{"a":1,"b":[2,3]}', '{"a":1 ,"b":[2, 3]}']),
    ((",", ": "), ['{"a": 1,"b":  [2,3]}'], ['{"a":1,"b": [2,3]}']),
])
def test_any_whitespace_keeps_the_whitespace_written_in_separators(compiler, separators, valid, invalid):
    # With any_whitespace, a separator's own whitespace is the least there is (xgrammar's meaning).
    g = Grammar.from_json_schema({}, separators=separators)
    for text in valid:
        assert accepts_text(compiler, g, text), text
    for text in invalid:
        assert not accepts_text(compiler, g, text), text


def test_unsupported_raise_and_warn(compiler):
    s = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    with pytest.raises(UnsupportedSchemaError, match=r"unsupported keyword 'uniqueItems' at /properties/tags"):
        Grammar.from_json_schema(s)
    with pytest.raises(xg.GrammarError):
        xg.GrammarCompiler  # noqa: B018 (UnsupportedSchemaError is a GrammarError)
        Grammar.from_json_schema(s)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        g = Grammar.from_json_schema(s, on_unsupported="warn")
    assert any(issubclass(w.category, UnsupportedSchemaWarning) and
               "unsupported keyword 'uniqueItems' at /properties/tags" in str(w.message) for w in rec)
    assert accepts_text(compiler, g, '{"tags": [1, 1]}')
    # A condition without an exact negation (uniqueItems) cannot become an alternative.
    with pytest.raises(UnsupportedSchemaError, match="'if' at \\(root\\): a condition whose negation"):
        Grammar.from_json_schema({"if": {"uniqueItems": True}, "then": {"minItems": 1}})
    # "regex" is a format JSON Schema defines that has no expression here: refused, not widened.
    with pytest.raises(UnsupportedSchemaError, match="format 'regex' is not enforced"):
        Grammar.from_json_schema({"type": "string", "format": "regex"})


def test_annotations_ignored():
    Grammar.from_json_schema({"title": "t", "description": "d", "examples": [1], "default": 1, "$comment": "c",
                              "$schema": "https://json-schema.org/draft/2020-12/schema", "deprecated": True,
                              "readOnly": True, "type": "integer"})


def test_invalid_schemas():
    with pytest.raises(xg.GrammarError, match="/properties/a"):
        Grammar.from_json_schema({"properties": {"a": 5}})
    with pytest.raises(xg.GrammarError, match="does not resolve"):
        Grammar.from_json_schema({"$ref": "#/$defs/missing"})
    with pytest.raises(xg.GrammarError, match="object or a boolean"):
        Grammar.from_json_schema("[1]")
    # RFC 6901 array indexes: no sign, no leading zero, within the array.
    choice = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    from xg2_jax._src.testing_helpers import _is_grammar_accept_string

    first = Grammar.from_json_schema({"$defs": {"c": choice}, "$ref": "#/$defs/c/anyOf/0"})
    assert _is_grammar_accept_string(first, '"x"') and not _is_grammar_accept_string(first, "1")
    for index in ["2", "-1", "+1", "01", "1x", " 1", "999999999999999999999", ""]:
        with pytest.raises(xg.GrammarError, match="does not resolve"):
            Grammar.from_json_schema({"$defs": {"c": choice}, "$ref": f"#/$defs/c/anyOf/{index}"})
    with pytest.raises(xg.GrammarSyntaxError, match="1:"):
        Grammar.from_json_schema('{"type": ')


def test_compile_json_schema(compiler):
    c = compiler.compile_json_schema({"type": "integer"}, lazy=True)
    assert c.num_states > 0


def test_pydantic(compiler):
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        name: str
        qty: int = 1

    class Order(pydantic.BaseModel):
        items: list[Item]
        note: str | None = None

    g = Grammar.from_json_schema(Order)
    inst = Order(items=[Item(name="x", qty=2)]).model_dump()
    assert accepts_text(compiler, g, json.dumps(inst))
    assert not accepts_text(compiler, g, json.dumps({"items": [{"qty": 2}]}))


# ---------------------------------------------------------------- fixes from the corpus runs

def test_const_and_enum_numbers_compare_by_value(compiler):
    check(compiler, {"const": 1}, [1, 1.0], [2, 1.5, "1"], strict_mode=False)
    check(compiler, {"const": -2.0}, [-2, -2.0], [2], strict_mode=False)
    check(compiler, {"enum": [0, 2.5, [1]]}, [0, 0.0, 2.5, [1], [1.0]], [25, 0.5, [2]], strict_mode=False)


def test_required_names_keep_their_listed_order(compiler):
    # Undeclared required properties are emitted in the order listed, not sorted.
    check(compiler, {"required": ["toString", "constructor"]},
          [{"toString": 1, "constructor": 2}], [{"constructor": 2}], strict_mode=False)
    check(compiler, {"type": "object", "anyOf": [{"required": ["foo", "bar"]}, {"required": ["foo", "baz"]}]},
          [{"foo": 1, "bar": 2}, {"foo": 1, "baz": 3}], [{"foo": 1}], strict_mode=False)


def test_false_prefix_item_caps_the_array(compiler):
    check(compiler, {"prefixItems": [True, False]}, [[], [1]], [[1, "foo"]], strict_mode=False)
    check(compiler, {"items": [True, False]}, [[], [1]], [[1, 2]], strict_mode=False)


def test_items_without_sibling_prefix_apply_to_every_position(compiler):
    schema = {"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}}
    check(compiler, schema, [[5, 5], [6]], [[3, 5], [4]], strict_mode=False)


def test_additional_properties_apply_to_properties_declared_elsewhere(compiler):
    schema = {"allOf": [{"properties": {"foo": {}}}], "additionalProperties": {"type": "boolean"}}
    check(compiler, schema, [{"foo": True, "bar": False}], [{"foo": 1, "bar": True}], strict_mode=False)
    schema = {"allOf": [{"properties": {"foo": {}}}, {"properties": {"bar": {}}, "additionalProperties": False}]}
    check(compiler, schema, [{"bar": 1}], [{"foo": 1}], strict_mode=False)


def test_escaped_keys_are_not_additional(compiler):
    props = {k: {"type": "number"} for k in ["foo\nbar", 'foo"bar', "foo\\bar", "foo/bar", "foo\u0001bar"]}
    for k in props:
        check(compiler, {"properties": props}, [{k: 1}, {k + "x": "s"}], [{k: "1"}], strict_mode=False)
    # The \u spelling of a control character is excluded too.
    g = Grammar.from_json_schema({"properties": props}, strict_mode=False)
    assert not accepts_text(compiler, g, '{"foo\\u0001bar": "1"}')
    assert accepts_text(compiler, g, '{"foo\\u0001bar": 1}')


def test_additional_keys_exclude_declared_names_randomly(compiler):
    """Key exclusion (an automaton: string contents minus the declared names' spellings) on
    random names over an alphabet with escapes, prefixes and non-ASCII: a declared name must
    take its declared value, any other key the additional one (jsonschema decides)."""
    import random

    import jsonschema

    rng = random.Random(7)
    alphabet = ["a", "b", "/", '"', "\\", "\n", "\u0001", "é", "😀"]
    for _ in range(6):
        names = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))) for _ in range(12)})
        schema = {"type": "object", "properties": {n: {"type": "string"} for n in names},
                  "additionalProperties": {"type": "integer"}}
        g = Grammar.from_json_schema(schema, any_order=True)
        validator = jsonschema.Draft202012Validator(schema)
        keys = names + [n[:-1] for n in names] + [n + rng.choice(alphabet) for n in names] + [""]
        for k in keys:
            for value in (1, "s"):
                inst = {k: value}
                assert accepts_text(compiler, g, json.dumps(inst, ensure_ascii=False)) == validator.is_valid(inst), inst
        # "\/" spells "/" too: a declared name written that way is still that name.
        for n in names:
            if "/" in n:
                text = '{"' + json.dumps(n, ensure_ascii=False)[1:-1].replace("/", "\\/") + '": 1}'
                assert not accepts_text(compiler, g, text), text


def test_draft7_ref_overrides_siblings(compiler):
    schema = {"$schema": "http://json-schema.org/draft-07/schema#",
              "definitions": {"reffed": {"type": "array"}},
              "properties": {"foo": {"$ref": "#/definitions/reffed", "maxItems": 2}}}
    check(compiler, schema, [{"foo": [1, 2, 3]}, {"foo": []}], [{"foo": "x"}], strict_mode=False)
    # 2020-12 (and no $schema): siblings apply.
    schema.pop("$schema")
    check(compiler, schema, [{"foo": [1, 2]}], [{"foo": [1, 2, 3]}], strict_mode=False)


def test_pattern_of_one_class_with_length_bounds(compiler):
    schema = {"type": "string", "pattern": "^[a-z0-9_-]+$", "minLength": 2, "maxLength": 4}
    check(compiler, schema, ["ab", "a_-9"], ["a", "abcde", "AB", ""])
    with pytest.raises(xg.GrammarError, match="no finite string|no JSON value"):  # empty intersection
        compiler.compile_grammar(Grammar.from_json_schema({"type": "string", "pattern": "^[a-z]{5,9}$", "maxLength": 3}))
    # Any other pattern: its automaton times a character counter (tests/test_json_schema_automata.py).
    check(compiler, {"type": "string", "pattern": "^a+b$", "maxLength": 3}, ["ab", "aab"], ["aaab", "b"])
    # A product too large: the parser counts the characters (tests/test_json_char_budget.py).
    long_ok, too_long = "a" + "x" * 99996 + "bcd", "a" + "x" * 99997 + "bcd"
    check(compiler, {"type": "string", "pattern": "a.*b.*c.*d", "maxLength": 100000},
          ["abcd", "xaxbxcxdx", long_ok], ["abc", too_long])


def test_many_objects_and_combinations_convert_quickly():
    import time
    # Thousands of same-named rules: rule naming must not probe every taken suffix.
    defs = {f"d{i}": {"type": "object", "properties": {f"p{j}": {"type": "string"} for j in range(40)}}
            for i in range(150)}
    schema = {"$defs": defs, "type": "object", "properties": {f"x{i}": {"$ref": f"#/$defs/d{i}"} for i in range(150)}}
    t = time.perf_counter()
    Grammar.from_json_schema(schema, strict_mode=False)
    assert time.perf_counter() - t < 10
    # Nested combinators merged with constrained siblings multiply; a budget stops that.
    level = {"type": "string"}
    for i in range(14):
        level = {"minLength": 0, "anyOf": [level, {"allOf": [level, {"maxLength": 100 + i}]}]}
    with pytest.raises(UnsupportedSchemaError, match="too many combinations"):
        Grammar.from_json_schema(level)


def test_uri_template_braces_balance(compiler):
    schema = {"type": "string", "format": "uri-template"}
    check(compiler, schema, ["http://example.com/{id}", "http://x/{+path,q*}{?a:3}", "plain"],
          ["http://example.com/resource/{", "http://x/}", "{}"])
    # RFC 6570 section 2: literals exclude ' % < > \\ ^ ` | (but pct-encoded octets), a varname
    # joins varchars with single dots, a prefix is 1-9999.
    check(compiler, schema, ["%Ff", "{%Ff}", "{i.j.k}", "{a_b_c:1234}", "/caf\u00e9/{x}"],
          ["'", "%", "%1", "%Gg", "a b", "{n.}", "{n..m}", "{m:100001}", "{a:0}", "x^y", "`"])


# oneOf is exact when its alternatives are provably exclusive: (schema, valid, invalid).
ONE_OF_EXCLUSIVE = [
    ({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}, ["a", 1, None], [True, 1.5]),
    ({"oneOf": [{"const": "a"}, {"enum": ["b", 1]}]}, ["a", "b", 1], ["c", 2]),
    ({"oneOf": [{"type": "integer", "maximum": 0}, {"type": "integer", "exclusiveMinimum": 0}]}, [0, 5, -3], [1.5]),
    ({"oneOf": [{"type": "string", "maxLength": 2}, {"type": "string", "minLength": 3}]}, ["ab", "abc"], [1]),
    ({"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"]},
                {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]}]},
     [{"kind": "a", "x": 1}, {"kind": "b", "y": "s"}], [{"kind": "c"}, {"kind": "a"}]),
    # a property required by one alternative and forbidden by the other
    ({"oneOf": [{"type": "object", "properties": {"a": {}}, "required": ["a"], "additionalProperties": False},
                {"type": "object", "properties": {"b": {}}, "required": ["b"], "additionalProperties": False}]},
     [{"a": 1}, {"b": 2}], [{"a": 1, "b": 2}, {}]),
    # exactly one of several required properties
    ({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
     [{"a": 1}, {"b": 1, "c": 2}], [{"a": 1, "b": 2}, {"c": 1}, {}]),
    ({"oneOf": [{"required": ["a"]}, {"required": ["a", "b"]}]}, [{"a": 1}], [{"a": 1, "b": 2}, {}, 1]),
]


@pytest.mark.parametrize("schema,valid,invalid", ONE_OF_EXCLUSIVE)
def test_one_of_exclusive_is_exact(compiler, schema, valid, invalid):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(compiler, schema, valid, invalid, strict_mode=False)


ONE_OF_OVERLAPPING = [
    # A dependency with a schema has no exact negation: the other alternative cannot exclude it.
    ({"oneOf": [{"type": "object", "dependencies": {"x": {"not": {"required": ["e"]}}}, "minProperties": 1},
                {"required": ["x"]}]},
     "(root)", [{"x": 1}, {"y": 1}]),
    ({"properties": {"v": {"oneOf": [{"type": "object", "dependencies": {"x": {"not": {"required": ["e"]}}}},
                                     {"type": "object", "minProperties": 1}]}}},
     "/properties/v", [{"x": 1}, {}]),
]

# Overlapping alternatives whose negations are exact: "A_i and not A_j" for the overlapping j.
ONE_OF_BY_NEGATION = [
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, [1.5, -0.25], [2, "x"]),
    ({"properties": {"v": {"oneOf": [{"type": "number", "maximum": 3}, {"type": "integer", "minimum": 0}]}}},
     [{"v": 1.5}, {"v": 5}, {"v": -2}], [{"v": 2}, {"v": 4.5}]),
    ({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]}, ["abcd", "abcdef"], ["ab", "", 1]),
    ({"oneOf": [{"properties": {"a": {}}}, {"type": "null"}]}, [{"a": 1}, 3, "x"], [None]),
    ({"oneOf": [{"type": "integer", "minimum": 5}, {"type": "integer", "maximum": 10}]}, [4, 11, -3], [5, 7, 10]),
    ({"type": "object", "oneOf": [{"required": ["a"]}, {"properties": {"a": {"type": "string"}}}]},
     [{"a": 1}, {}, {"b": 1}], [{"a": "x"}]),
    # not multipleOf (the remainder automaton's complement among plain decimals)
    ({"oneOf": [{"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 3}]}, [2, 3, 4], [6, 0, 1]),
    ({"properties": {"v": {"oneOf": [{"multipleOf": 2}, {"type": "integer", "minimum": 0}]}}},
     [{"v": 3}, {"v": -4}, {"v": "s"}], [{"v": 4}, {"v": -3}]),
]


@pytest.mark.parametrize("schema,valid,invalid", ONE_OF_BY_NEGATION)
def test_one_of_by_negation_is_exact(compiler, schema, valid, invalid):
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    assert all(validator.is_valid(v) for v in valid) and not any(validator.is_valid(v) for v in invalid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(compiler, schema, valid, invalid, strict_mode=False, any_order=True)


@pytest.mark.parametrize("schema,ptr,anyof_valid", ONE_OF_OVERLAPPING)
def test_one_of_overlapping_is_reported(compiler, schema, ptr, anyof_valid):
    with pytest.raises(UnsupportedSchemaError, match=f"unsupported keyword 'oneOf' at {re.escape(ptr)}:"):
        Grammar.from_json_schema(schema, strict_mode=False)
    with pytest.warns(UnsupportedSchemaWarning, match=f"'oneOf' at {re.escape(ptr)}"):
        g = Grammar.from_json_schema(schema, strict_mode=False, on_unsupported="warn")
    for v in anyof_valid:  # compiled as anyOf
        assert accepts_text(compiler, g, json.dumps(v if ptr == "(root)" else {"v": v}))


@pytest.mark.parametrize("schema,valid,invalid", [
    ({"type": "object", "not": {"required": ["b"]}}, [{"a": 1}, {}], [{"b": 1}, {"a": 1, "b": 2}]),
    # Non-objects satisfy "required", so they fail its negation.
    ({"properties": {"b": {}}, "not": {"required": ["b"]}}, [{"a": 1}], [{"b": 1}, 3]),
])
def test_not_required(compiler, schema, valid, invalid):
    check(compiler, schema, valid, invalid, strict_mode=False)


@pytest.mark.parametrize("schema,valid,invalid", [
    # length bounds the pattern implies: the pattern alone is exact
    ({"type": "string", "pattern": "^[0-9]{3}-[a-z]{2}$", "minLength": 6, "maxLength": 6}, ["123-ab"], ["12-ab", "1234-ab"]),
    ({"type": "string", "pattern": "^(ab|cde)$", "maxLength": 3}, ["ab", "cde"], ["abc"]),
    # no match of the pattern has an allowed length
    ({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a{5}$", "maxLength": 3}}}, [{}], [{"s": "aaaaa"}]),
])
def test_pattern_with_implied_length_bounds(compiler, schema, valid, invalid):
    check(compiler, schema, valid, invalid, strict_mode=False)


@pytest.mark.parametrize("bound,valid,invalid", [
    ({"minimum": 0}, ["1e-06", "0e5", "2.5E+3", "0"], ["-1e-06", "-2e3"]),
    ({"exclusiveMinimum": 0}, ["1e-06", "0.001e-5"], ["0e5", "0.0e1", "-1e-06"]),
    ({"maximum": 0}, ["-1e-06", "-0.0e3", "0"], ["1e-06", "5e2"]),
    ({"exclusiveMaximum": 0}, ["-1e-06", "-5e2"], ["-0e3", "1e-06"]),
])
def test_sign_bounded_numbers_take_exponents(compiler, bound, valid, invalid):
    """Bounds that only fix the sign keep exponent forms (json.dumps writes 1e-06), checked
    against Python's comparison of the parsed value."""
    g = Grammar.from_json_schema({"type": "number", **bound})
    for text in valid:
        assert accepts_text(compiler, g, text), text
    for text in invalid:
        assert not accepts_text(compiler, g, text), text
    lo, hi = bound.get("minimum"), bound.get("maximum")
    for text in valid:
        v = float(text)
        assert (lo is None or v >= lo) and (hi is None or v <= hi)
        assert "exclusiveMinimum" not in bound or v > 0
        assert "exclusiveMaximum" not in bound or v < 0


CONDITIONAL_CASES = [
    ({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
      "dependentRequired": {"a": ["b"]}},
     [{}, {"b": "x"}, {"a": 1, "b": "x"}, {"b": "x", "a": 1}, {"a": 1}, {"a": "1", "b": "x"}]),
    ({"type": "object", "dependencies": {"a": ["b", "c"], "c": {"properties": {"b": {"const": "y"}}}}},
     [{}, {"a": 1}, {"a": 1, "b": "y", "c": 0}, {"a": 1, "b": "x", "c": 0}, {"c": 0, "b": "y"}, {"c": 0}]),
    ({"type": "object", "dependentSchemas": {"k": {"required": ["v"], "properties": {"v": {"type": "integer"}}}}},
     [{}, {"k": 1, "v": 2}, {"k": 1}, {"k": 1, "v": "2"}, {"v": "2"}]),
    ({"if": {"properties": {"kind": {"const": "n"}}, "required": ["kind"]},
      "then": {"properties": {"value": {"type": "number"}}}, "else": {"properties": {"value": {"type": "string"}}},
      "type": "object"},
     [{"kind": "n", "value": 1}, {"kind": "n", "value": "1"}, {"kind": "s", "value": "1"}, {"kind": "s", "value": 1},
      {"value": "x"}, {"value": 2}]),
    ({"type": "integer", "minimum": 0, "maximum": 100, "if": {"minimum": 10}, "then": {"multipleOf": 5}},
     [10, 11, 15, 3, 9, 100, 101]),
    ({"type": "string", "if": {"maxLength": 2}, "else": {"pattern": "^a"}},
     ["", "zz", "abc", "zzz"]),
]


@pytest.mark.parametrize("schema,instances", CONDITIONAL_CASES)
def test_dependencies_and_conditions_match_jsonschema(compiler, schema, instances):
    """dependencies / dependentRequired / dependentSchemas and if/then/else are lowered as
    exact alternatives: acceptance equals jsonschema's verdict on every instance (any_order,
    since the alternatives add required names that the instances list in their own order)."""
    import jsonschema

    g = Grammar.from_json_schema(schema, strict_mode=False, any_order=True)
    validator = (jsonschema.Draft7Validator if "dependencies" in schema else jsonschema.Draft202012Validator)(schema)
    for inst in instances:
        assert accepts_text(compiler, g, json.dumps(inst)) == validator.is_valid(inst), (inst, str(g))


@pytest.mark.parametrize("schema", [
    {"type": "array", "uniqueItems": True, "items": {"enum": ["a", "b", "c"]}},
    {"type": "array", "uniqueItems": True, "items": {"type": "boolean"}, "minItems": 1},
    {"type": "array", "uniqueItems": True, "items": {"enum": [1, 2, "x", None]}, "maxItems": 2},
])
def test_unique_items_over_finite_values_match_jsonschema(compiler, schema):
    """uniqueItems over an enum (or booleans/null) is exact: each value at most once, in any
    order (an AnyOrder node); every array of up to 3 items from a value pool is judged as
    jsonschema judges it."""
    import itertools

    import jsonschema

    g = Grammar.from_json_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    pool = ["a", "b", True, False, 1, "x", None]
    for k in range(4):
        for inst in itertools.product(pool, repeat=k):
            assert accepts_text(compiler, g, json.dumps(list(inst))) == validator.is_valid(list(inst)), inst
    with pytest.raises(UnsupportedSchemaError, match="uniqueItems"):
        Grammar.from_json_schema({"type": "array", "uniqueItems": True, "items": {"type": "string"}})


def test_conditions_follow_the_draft(compiler):
    """if/then/else are keywords from draft 7 on; a draft-04/06 schema's validators ignore them."""
    body = {"type": "object", "if": {"properties": {"k": {"const": "a"}}, "required": ["k"]},
            "then": {"required": ["v"]}}
    check(compiler, body, [{"k": "a", "v": 1}], [{"k": "a"}], strict_mode=False, any_order=True)
    old = dict(body, **{"$schema": "http://json-schema.org/draft-04/schema#"})
    check(compiler, old, [{"k": "a", "v": 1}, {"k": "a"}], [], strict_mode=False, any_order=True)


def test_property_names_narrow_pattern_keys(compiler):
    """propertyNames narrows the keys of each patternProperties region (never widened to any
    matching key), with additionalProperties false or not."""
    closed = {"type": "object", "propertyNames": {"enum": ["a", "b"]}, "patternProperties": {".*": {"type": "number"}},
              "additionalProperties": False}
    check(compiler, closed, [{"a": 1}, {"a": 1, "b": 2.5}, {}], [{"c": 1}, {"a": "x"}], strict_mode=False)
    open_ = {"type": "object", "propertyNames": {"maxLength": 2}, "patternProperties": {"^x": {"type": "number"}},
             "additionalProperties": {"type": "string"}}
    check(compiler, open_, [{"x1": 1}, {"ab": "s"}, {"x": 2, "q": "t"}], [{"x1": "s"}, {"xyz": 1}, {"abc": "s"}, {"ab": 1}],
          strict_mode=False)


@pytest.mark.parametrize("schema", [
    {"type": "number", "minimum": 10, "maximum": 5},
    {"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 6},
    {"type": "number", "minimum": 5, "exclusiveMaximum": 5},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 1}}, "required": ["a"]},
    False,
])
def test_schema_no_value_satisfies_is_refused_at_conversion(schema):
    with pytest.raises(xg.GrammarError, match="no JSON value satisfies"):
        Grammar.from_json_schema(schema)


@pytest.mark.parametrize("schema,why", [
    ({"type": "integer", "minimum": 5, "maximum": 3}, "(root): minimum is greater than maximum: 5 > 3"),
    ({"type": "integer", "minimum": 1, "maximum": 4, "multipleOf": 5}, "(root): range contains no multipleOf value"),
    ({"type": "integer", "minimum": 1.2, "maximum": 1.5}, "(root): the range contains no integer"),
    ({"type": "array", "minItems": 5, "maxItems": 3}, "(root): minItems is greater than maxItems: 5 > 3"),
    ({"type": "array", "prefixItems": [{}, {}], "minItems": 3, "items": False},
     "(root): minItems is greater than the number of prefixItems, but additional items are not allowed: 3 > 2"),
    ({"type": "string", "minLength": 3, "maxLength": 1}, "(root): minLength is greater than maxLength: 3 > 1"),
    ({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"], "maxProperties": 1},
     "(root): maxProperties is less than the number of required properties: 1 < 2"),
    ({"type": "object", "properties": {"a": {"type": "array", "minItems": 2, "maxItems": 1}}, "required": ["a"]},
     "/properties/a: minItems is greater than maxItems: 2 > 1"),
])
def test_an_empty_schema_error_says_where_and_why(schema, why):
    with pytest.raises(xg.GrammarError) as info:
        Grammar.from_json_schema(schema)
    assert str(info.value) == f"invalid schema at (root): no JSON value satisfies the schema (at {why})"


def test_unsatisfiable_parts_stay_where_they_can_be_left_out():
    # An optional property whose schema no value satisfies is left out, not an error.
    Grammar.from_json_schema({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3, "maximum": 1}}})
    # Inside a structural tag, an alternative may still match.
    tag = {"type": "structural_tag", "format": {"type": "or", "elements": [
        {"type": "json_schema", "json_schema": {"type": "integer", "minimum": 3, "maximum": 1}},
        {"type": "const_string", "value": "x"}]}}
    Grammar.from_structural_tag(tag)


@pytest.mark.parametrize("fmt, valid, invalid", [
    # RFC 3986: the authority holds one userinfo '@', a host and a numeric port; '[' ']' only
    # around an IP literal (IPvFuture's "v" in either case, as ABNF strings).
    ("uri", ["http://example.com/a?b=c#d", "http://[::1]:80/x", "http://[V1.fe]", "urn:isbn:1", "a:",
             "http://user:pw@host:8080/p", "file:///etc/x"],
     ["aaa:?[#]", "abc://@@", "abc://::", "abc:/[]", "http://a b", "//a", "http://x/%zz", "http://\u00e9"]),
    ("uri-reference", ["../x", "#frag", "", "a:b:c", "//host/p"], ["?[#]", "//@@", "//::", "/[]", "1a:b"]),
    ("iri", ["http://\u00e9.com/\u00fc", "http://[v1.fe]"], ["http://a b", "http://[v1.f\u00e9]"]),
    # RFC 5321: a dot-string or a quoted string local part.
    ("email", ["a@b.c", '" "@example.org', '"john..doe"@example.org', '"a\\"b"@x.org'],
     ["john..doe@x.org", 'a"b@x.org', '"a"b"@x.org', "@x.org"]),
])
def test_uri_and_email_formats_follow_their_rfcs(compiler, fmt, valid, invalid):
    check(compiler, {"type": "string", "format": fmt}, valid, invalid)
