"""JSONSchemaFormat.excludes on the json style: no string value or property name may contain an
excluded substring in its emitted text (escapes as written), exactly, and nothing else changes.

The reference is plain Python: a JSON text is accepted when it is an instance of the schema and
no string literal in it (key or value, between its quotes as written) contains an excluded
substring.
"""

import itertools
import json

import pytest

import xg2_jax as xg
from xg2_jax.testing import _is_grammar_accept_string


def _grammar(schema, excludes, style="json"):
    tag = {"type": "structural_tag",
           "format": {"type": "json_schema", "json_schema": schema, "style": style, "excludes": excludes}}
    return xg.Grammar.from_structural_tag(json.dumps(tag))


def _emitted_strings(text):
    """The contents (as written, escapes undecoded) of the string literals of JSON `text`."""
    out, i = [], 0
    while i < len(text):
        if text[i] != '"':
            i += 1
            continue
        j = i + 1
        while text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        out.append(text[i + 1:j])
        i = j + 1
    return out


def _reference_allows(text, excludes):
    return not any(e in s for s in _emitted_strings(text) for e in excludes)


# Every JSON string literal of up to 3 pieces over these spellings: raw characters, escapes
# (which spell a character differently) and a multi-byte character.
_PIECES = ["a", "b", "\\u0061", "\\\"", "\\\\", "é", "\\n"]
_LITERALS = ['"' + "".join(p) + '"' for n in range(4) for p in itertools.product(_PIECES, repeat=n)]


@pytest.mark.parametrize("excludes", [["ab"], ["ab", "ba"], ['"'], ["\\"], ["é", "bb"], ["a\\u0061"]])
def test_string_content_matches_reference(excludes):
    grammar = _grammar({"type": "string"}, excludes)
    for text in _LITERALS:
        assert _is_grammar_accept_string(grammar, text) == _reference_allows(text, excludes), text


@pytest.mark.parametrize("bounds", [(2, None), (None, 2), (1, 2)])
def test_length_bounds_stay_exact(bounds):
    lo, hi = bounds
    schema = {"type": "string"}
    if lo is not None:
        schema["minLength"] = lo
    if hi is not None:
        schema["maxLength"] = hi
    grammar = _grammar(schema, ["ab"])
    for text in _LITERALS:
        length = len(json.loads(text))
        in_bounds = (lo is None or length >= lo) and (hi is None or length <= hi)
        expected = in_bounds and _reference_allows(text, ["ab"])
        assert _is_grammar_accept_string(grammar, text) == expected, text


@pytest.mark.parametrize("schema,texts", [
    ({"type": "object"}, ['{"ok":1}', '{"xbady":1}', '{"a":"bad"}', '{"a":["x","bad"]}', '{"a":{"bad":2}}']),
    ({"type": "object", "properties": {"fixed": {"type": "integer"}}, "additionalProperties": True},
     ['{"fixed":1}', '{"fixed":"bad"}', '{"other":1}', '{"badfixed":1}', '{"fixed":1,"bad":2}']),
    ({"enum": ["bad", "ok", 1, {"k": "bad"}, ["ok"]]}, ['"bad"', '"ok"', "1", '{"k":"bad"}', '["ok"]']),
    (True, ['"bad"', '"ok"', '{"bad":1}', "[1,true,null]", '"b\\u0061d"']),
])
def test_keys_values_and_literals_match_reference(schema, texts):
    grammar = _grammar(schema, ["bad"])
    plain = _grammar(schema, [])
    for text in texts:
        expected = _is_grammar_accept_string(plain, text) and _reference_allows(text, ["bad"])
        assert _is_grammar_accept_string(grammar, text) == expected, text


@pytest.mark.parametrize("required,accepts_empty", [([], True), (["bad"], None)])
def test_excluded_fixed_key_cannot_be_written(required, accepts_empty):
    schema = {"type": "object", "properties": {"bad": {"type": "integer"}, "ok": {"type": "integer"}},
              "required": required, "additionalProperties": False}
    if accepts_empty is None:  # a required name that cannot be written: no instance at all
        with pytest.raises(xg.GrammarError, match="accepts no finite string"):
            _is_grammar_accept_string(_grammar(schema, ["bad"]), "{}")
        return
    grammar = _grammar(schema, ["bad"])
    assert _is_grammar_accept_string(grammar, "{}")
    assert _is_grammar_accept_string(grammar, '{"ok":1}')
    assert not _is_grammar_accept_string(grammar, '{"bad":1}')


@pytest.mark.parametrize("schema,text", [
    ({"type": "string", "pattern": "^(bad|ok)$"}, '"bad"'),
    ({"type": "string", "format": "email"}, '"bad@example.com"'),
])
def test_patterned_and_formatted_strings_keep_their_language(schema, text):
    assert _is_grammar_accept_string(_grammar(schema, ["bad"]), text)


def test_no_excludes_is_the_plain_schema():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    without = {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": schema}}
    assert str(xg.Grammar.from_structural_tag(json.dumps(without))) == str(_grammar(schema, []))


def test_xml_json_valued_argument_filters_its_strings():
    schema = {"type": "object", "properties": {"v": {"type": "array", "items": {"type": "string"}}},
              "required": ["v"], "additionalProperties": False}
    grammar = _grammar(schema, ["bad"], style="qwen_xml")
    assert _is_grammar_accept_string(grammar, '<parameter=v>\n["ok"]\n</parameter>\n')
    assert not _is_grammar_accept_string(grammar, '<parameter=v>\n["xbad"]\n</parameter>\n')


def test_mask_agrees_with_acceptance():
    vocab = ['"', "a", "b", "ab", "ba", '\\"', "\\u0061", '"a', 'b"', "</s>"]
    info = xg.TokenizerInfo(vocab, stop_token_ids=[len(vocab) - 1])
    compiled = xg.GrammarCompiler(info).compile_grammar(_grammar({"type": "string"}, ["ab"]))
    matcher = xg.GrammarMatcher(compiled)
    bitmask = xg.allocate_token_bitmask(1, len(vocab))
    for prefix in ([0], [0, 1], [0, 2], [0, 1, 1], [0, 4]):
        matcher.reset()
        for t in prefix:
            assert matcher.accept_token(t)
        matcher.fill_next_token_bitmask(bitmask)
        row = xg.testing._get_masked_tokens_from_bitmask(bitmask, len(vocab))
        for t in range(len(vocab) - 1):
            fork = matcher.fork()
            assert fork.accept_token(t) == (t not in row), (prefix, vocab[t])


# Kimi-K3 writes `<|open|>argument key="NAME" type="TYPE"<|sep|>VALUE<|close|>argument<|sep|>`,
# the name escaped as an attribute (" -> &quot;) and a string value raw.
def _k3(key, value, type_="string"):
    return f'<|open|>argument key="{key}" type="{type_}"<|sep|>{value}<|close|>argument<|sep|>'


def test_k3_name_excludes_read_the_escaped_name():
    # The name is written quo&quot;ted, which holds no '"'; the unwritable branch goes.
    for keyword in ("const", "enum"):
        literal = {'quo"ted': "safe"}
        schema = {keyword: literal if keyword == "const" else [literal, {'quo"ted': "BAD"}]}
        grammar = _grammar(schema, ['"', "BAD"], style="kimi_k3_xml")
        assert _is_grammar_accept_string(grammar, _k3("quo&quot;ted", "safe"))
        assert not _is_grammar_accept_string(grammar, _k3("quo&quot;ted", "BAD"))
    # A name whose escaped text holds an excluded string cannot be written.
    schema = {"type": "object", "properties": {"a&b": {"type": "string"}, "ok": {"type": "string"}}}
    grammar = _grammar(schema, ["&amp;"], style="kimi_k3_xml")
    assert _is_grammar_accept_string(grammar, _k3("ok", "x"))
    assert not _is_grammar_accept_string(grammar, _k3("a&amp;b", "x"))


@pytest.mark.parametrize("style", ["kimi_k3_xml", "qwen_xml"])
def test_xml_unwritable_alternatives_are_left_out(style):
    # Each alternative whose values are all excluded goes; with none left the tag is refused.
    schema = {"type": "object", "properties": {"v": {"anyOf": [{"const": "BAD"}, {"const": "safe"}]},
                                               "w": {"const": "BAD"}},
              "required": ["v"], "additionalProperties": False}
    grammar = _grammar(schema, ["BAD"], style=style)
    if style == "kimi_k3_xml":
        ok, bad, unwritable = _k3("v", "safe"), _k3("v", "BAD"), _k3("v", "safe") + _k3("w", "BAD")
    else:
        ok, bad = "<parameter=v>\nsafe\n</parameter>\n", "<parameter=v>\nBAD\n</parameter>\n"
        unwritable = ok + "<parameter=w>\nBAD\n</parameter>\n"
    assert _is_grammar_accept_string(grammar, ok)
    assert not _is_grammar_accept_string(grammar, bad)
    assert not _is_grammar_accept_string(grammar, unwritable)
    schema["properties"]["v"] = {"enum": ["xBADy", "BAD"]}
    with pytest.raises(xg.StructuralTagError, match="properties/v: every value contains an excluded substring"):
        _grammar(schema, ["BAD"], style=style)


def test_k3_type_attribute_follows_refs_and_unions():
    # A value with no "type" of its own takes the attribute of each leaf of its union: the
    # referenced array's "array", a string constant's "string" (written raw).
    schema = {"type": "object",
              "properties": {"list": {"$ref": "#/$defs/list"},
                             "mixed": {"anyOf": [{"const": "auto"}, {"type": "integer"}, {"$ref": "#/$defs/list"}]}},
              "$defs": {"list": {"type": "array", "items": {"type": "integer"}}},
              "additionalProperties": False}
    grammar = _grammar(schema, ["BAD"], style="kimi_k3_xml")
    for text in (_k3("list", "[1, 2]", "array"), _k3("mixed", "auto"), _k3("mixed", "7", "number"),
                 _k3("mixed", "[3]", "array")):
        assert _is_grammar_accept_string(grammar, text), text
    for text in (_k3("list", "[1]", "string"), _k3("mixed", '"auto"'), _k3("mixed", "auto", "number"),
                 _k3("mixed", "7", "array")):
        assert not _is_grammar_accept_string(grammar, text), text
    # A leaf that may take several types leaves the attribute undetermined: refused as before.
    schema["properties"]["mixed"] = {"anyOf": [{"const": "auto"}, {"type": ["integer", "null"]}]}
    with pytest.raises(xg.StructuralTagError, match="needs one 'type' per property"):
        _grammar(schema, [], style="kimi_k3_xml")
