"""Dependencies that only ask for other names (dependentRequired, draft-7 name arrays, a
dependency on `required` or on anyOf of `required`) are presence rules of the any-order object
node (AnyOrder depends=...), checked on the set of members seen instead of a union of objects
per combination. Every subset of the properties, in several orders, is checked against the
`jsonschema` package, in both property-order modes and with and without strict_mode; the
ordered mode and the shapes a rule cannot express keep the expansion, with the same language."""

from __future__ import annotations

import itertools
import json

import jsonschema
import pytest

import xg2_jax as xg

VOCAB = [bytes([c]) for c in range(32, 127)] + [b"</s>"]
TOK = xg.TokenizerInfo(VOCAB, stop_token_ids=[len(VOCAB) - 1])
COMPILER = xg.GrammarCompiler(TOK, cache_enabled=False)


def ints(names):
    return {k: {"type": "integer"} for k in names}


SCHEMAS = {
    "names_and_any_of": {"type": "object", "properties": ints("abcde"),
                         "dependencies": {"a": ["b"], "c": {"anyOf": [{"required": ["d"]}, {"required": ["e"]}]}}},
    "dependent_required_chain": {"type": "object", "properties": ints("abcd"), "required": ["a"],
                                 "dependentRequired": {"a": ["b", "c"], "b": ["d"]}},
    "mutual_with_min": {"type": "object", "properties": ints("abcd"), "minProperties": 3,
                        "dependencies": {"a": ["b"], "b": ["a"], "c": {"required": ["a"]}}},
    "false_member": {"type": "object", "properties": {"a": {"type": "integer"}, "b": False, "c": {"type": "integer"}},
                     "dependencies": {"a": ["b"], "c": {"anyOf": [{"required": ["b"]}, {"required": ["a"]}]}}},
    "undeclared_name": {"type": "object", "properties": ints("ab"),
                        "dependencies": {"a": ["z"], "b": {"required": ["a"], "description": "annotated"}}},
    "with_max": {"type": "object", "properties": ints("abc"), "maxProperties": 2,
                 "dependencies": {"a": ["b"]}},
    "nested": {"type": "object", "properties": {"o": {"type": "object", "properties": ints("abc"),
                                                      "dependencies": {"a": ["b", "c"]}}}},
    # Expanded (maxProperties), beside `not` requiring a key that starts with x: every object
    # of the union keeps that member.
    "expanded_with_witness": {"type": "object", "properties": ints("abc"), "maxProperties": 3,
                              "dependencies": {"a": {"anyOf": [{"required": ["b"]}, {"required": ["c"]}]}},
                              "not": {"propertyNames": {"not": {"pattern": "^x"}}}},
    # Undeclared names: declared as optional members taking the additional schema (any order).
    "undeclared_additional_string": {"type": "object", "properties": ints("ab"),
                                     "additionalProperties": {"type": "string"},
                                     "dependencies": {"z": ["x1"], "a": ["z"]}},
    "undeclared_only": {"type": "object", "properties": ints("a"), "dependencies": {"z": ["x1"], "x1": ["a"]}},
    "tmlanguage_like": {"type": "object", "properties": ints(["begin", "end", "while", "contentName", "match"]),
                        "dependencies": {
                            "begin": {"anyOf": [{"required": ["end"]}, {"required": ["while"]}]},
                            "end": ["begin"], "while": ["begin"],
                            "contentName": {"anyOf": [{"required": ["begin", "end"]}, {"required": ["begin", "while"]}]}}},
}


def validator(schema, strict):
    def closed(s):  # strict_mode: undeclared properties are not allowed
        if not isinstance(s, dict) or "properties" not in s:
            return s
        return dict(s, additionalProperties=False, properties={k: closed(v) for k, v in s["properties"].items()})
    if strict:
        schema = closed(schema)
    cls = jsonschema.Draft202012Validator if "dependentRequired" in json.dumps(schema) else jsonschema.Draft7Validator
    return cls(schema)


def accepts(compiled, text: str) -> bool:
    m = xg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.accept_token(TOK.stop_token_ids[0])


def instances(schema, *, ordered: bool):
    """Objects over every subset of the declared names plus an undeclared one, in up to six
    orders (in declaration order only when ordered); the nested schema's inner object so."""
    nested = list(schema["properties"]) == ["o"]
    keys = list(schema["properties"]["o"]["properties"] if nested else schema["properties"]) + ["z", "x1"]
    for r in range(len(keys) + 1):
        for subset in itertools.combinations(keys, r):
            for order in [subset] if ordered else itertools.islice(itertools.permutations(subset), 6):
                inner = {k: 1 for k in order}
                yield {"o": inner} if nested else inner


@pytest.mark.parametrize("any_order", [True, False], ids=["any_order", "ordered"])
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "loose"])
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_presence_dependencies_match_jsonschema(name, strict, any_order):
    schema = SCHEMAS[name]
    check = validator(schema, strict)
    try:
        # Both layouts take property counts and members the object must have.
        compiled = COMPILER.compile_json_schema(schema, any_order=any_order, strict_mode=strict)
    except xg.GrammarError as e:
        assert "no JSON value" in str(e) or "no finite string" in str(e)
        assert not any(check.is_valid(inst) for inst in instances(schema, ordered=False))
        return
    checked = 0
    for inst in instances(schema, ordered=not any_order):
        assert accepts(compiled, json.dumps(inst)) == check.is_valid(inst), inst
        checked += 1
    assert checked >= 8


def test_dependencies_become_presence_rules():
    """The any-order node carries the rules (one node, no union of objects per combination)."""
    printed = str(xg.Grammar.from_json_schema(SCHEMAS["tmlanguage_like"], any_order=True))
    assert printed.count("AnyOrder(") == 1
    assert "depends=((0, (1), (2)), (1, (0)), (2, (0)), (3, (0, 1), (0, 2)))" in printed
    # Round trip: the printed grammar parses back to itself and the same language.
    assert str(xg.Grammar.from_ebnf(printed)) == printed
    compiled = COMPILER.compile_grammar(printed)
    assert accepts(compiled, '{"end": 1, "begin": 2}')
    assert not accepts(compiled, '{"end": 1}')
    assert accepts(compiled, '{"contentName": 1, "begin": 2, "end": 3, "while": 4}')
    assert not accepts(compiled, '{"contentName": 1, "begin": 2}')


def test_undeclared_dependency_names_are_declared():
    """Dependencies on names the schema does not declare (a meta-schema's "pattern" needs
    "maxLength") are presence rules too: the names become optional members taking the schema
    an undeclared key takes, instead of 2^k objects."""
    schema = {"type": "object", "properties": ints("ab"), "additionalProperties": {"type": "integer"},
              "dependencies": {"pattern": ["maxLength"], "format": ["maxLength"], "a": ["b"]}}
    printed = str(xg.Grammar.from_json_schema(schema, any_order=True, strict_mode=False))
    assert printed.count("AnyOrder(") == 1, printed
    compiled = COMPILER.compile_json_schema(schema, any_order=True, strict_mode=False)
    check = jsonschema.Draft7Validator(schema)
    for inst in [{"pattern": 1}, {"pattern": 1, "maxLength": 2}, {"maxLength": "x", "format": 1},
                 {"q": 1, "format": 2, "maxLength": 3, "a": 4, "b": 5}, {"pattern": "s", "maxLength": 1}]:
        assert accepts(compiled, json.dumps(inst)) == check.is_valid(inst), inst


def test_presence_rules_in_the_cache_key():
    """Grammars that differ only in their presence rules compile to different languages."""
    with_rule = COMPILER.compile_grammar('root ::= "{" AnyOrder(",", optional=("a", "b"), depends=((0, (1)))) "}"')
    without = COMPILER.compile_grammar('root ::= "{" AnyOrder(",", optional=("a", "b")) "}"')
    assert not accepts(with_rule, "{a}") and accepts(without, "{a}")
    assert accepts(with_rule, "{b,a}") and accepts(with_rule, "{b}")


def test_presence_rules_in_ebnf():
    compiled = COMPILER.compile_grammar(
        'root ::= "[" AnyOrder(",", required=("r"), optional=("a", "b", "c"), repeated=("x"), min=1, '
        'depends=((1, (2), (3)), (2, (0, 3)))) "]"')
    for text, ok in [("[r]", True), ("[r,a]", False), ("[a,c,r]", True), ("[b,r]", False), ("[b,c,r]", True),
                     ("[x,r,a,b,c]", True), ("[a,x,r,b]", False)]:
        assert accepts(compiled, text) == ok, text


@pytest.mark.parametrize("body, words", [
    ('AnyOrder(",", optional=("a", "b"), depends=((2, (0))))', "not a required or optional member"),
    ('AnyOrder(",", optional=("a"), repeated=("b"), depends=((0, (1))))', "not a required or optional member"),
    ('AnyOrder(",", optional=("a", "b"), max=2, depends=((0, (1))))', "cannot be combined with max"),
    ('AnyOrder(",", optional=("a", "b"), depends=((0)))', "without alternatives"),
    ('AnyOrder(",", optional=("a", "b"), depends=((0, 1)))', "expected '\\('"),
])
def test_presence_rule_errors_are_located(body, words):
    with pytest.raises(xg.GrammarSyntaxError, match=words) as info:
        xg.Grammar.from_ebnf("root ::= " + body)
    assert info.value.line == 1 and info.value.column >= 10


def test_unmeetable_presence_rule():
    """A required member whose every alternative names a member that cannot appear: no string."""
    with pytest.raises(xg.GrammarError, match="no finite string|no JSON value"):
        COMPILER.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}, "b": False},
                                      "required": ["a"], "dependencies": {"a": ["b"]}}, any_order=True)


def test_enum_values_checked_against_presence_dependencies():
    schema = {"enum": [{"a": 1}, {"a": 1, "b": 2}, {"b": 2}], "properties": ints("ab"), "dependencies": {"a": ["b"]}}
    compiled = COMPILER.compile_json_schema(schema, any_order=True)
    assert not accepts(compiled, '{"a": 1}')
    assert accepts(compiled, '{"a": 1, "b": 2}') and accepts(compiled, '{"b": 2}')
