"""Structural tags: every format type of the DSL, TagDispatch semantics against a pure-Python
reference, validation errors with paths, and mask/accept agreement on real vocabularies."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from helpers import mask_row, tokenize
from hypothesis import given, settings
from hypothesis import strategies as st

import xg2_jax as xg


def _tag(fmt: dict) -> dict:
    return {"type": "structural_tag", "format": fmt}


@pytest.fixture(scope="module")
def compiler(llama3_tokenizer):
    return xg.GrammarCompiler(llama3_tokenizer)


def _complete(compiled: xg.CompiledGrammar, text: str) -> bool:
    m = xg.GrammarMatcher(compiled)
    return m.accept_string(text) and m.is_completed()


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
           "required": ["city"]}

# (format, accepted complete outputs, rejected outputs)
FORMAT_CASES = {
    "const_string": ({"type": "const_string", "value": "Hello, é!"}, ["Hello, é!"], ["Hello", "Hello, é!!"]),
    "json_schema": ({"type": "json_schema", "json_schema": WEATHER},
                    ['{"city": "Paris"}', '{"city": "Oslo", "days": 3}'], ['{"days": 3}', '{"city": 1}']),
    "grammar": ({"type": "grammar", "grammar": 'root ::= "a" [0-9]+'}, ["a1", "a42"], ["a", "b1"]),
    "grammar_lark": ({"type": "grammar", "syntax": "lark",
                      "grammar": 'start:"a" num ("," num)*\nnum:/[0-9]+/'},
                     ["a1", "a4,2"], ["a", "a1,", "b1"]),
    "regex": ({"type": "regex", "pattern": r"\d{3}-[a-z]+"}, ["123-abc"], ["12-abc", "123-"]),
    "any_text": ({"type": "any_text"}, ["", "anything at all ✓\n"], []),
    "any_text_excludes": ({"type": "any_text", "excludes": ["<stop>", "bad"]}, ["fine <sto text"],
                          ["a <stop> b", "so bad", "<stop>"]),
    "any_text_max_chars": ({"type": "any_text", "max_chars": 3}, ["", "abc", "éé"], ["abcd"]),
    "sequence": ({"type": "sequence", "elements": [{"type": "const_string", "value": "A:"},
                                                   {"type": "regex", "pattern": "[0-9]+"}]}, ["A:12"], ["A:", "12"]),
    "or": ({"type": "or", "elements": [{"type": "const_string", "value": "yes"},
                                       {"type": "const_string", "value": "no"}]}, ["yes", "no"], ["maybe"]),
    "optional": ({"type": "optional", "content": {"type": "const_string", "value": "x"}}, ["", "x"], ["xx"]),
    "star": ({"type": "star", "content": {"type": "const_string", "value": "ab"}}, ["", "ab", "ababab"], ["aba"]),
    "plus": ({"type": "plus", "content": {"type": "const_string", "value": "ab"}}, ["ab", "abab"], [""]),
    "repeat": ({"type": "repeat", "min": 2, "max": 3, "content": {"type": "const_string", "value": "z"}},
               ["zz", "zzz"], ["z", "zzzz"]),
    "tag": ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"},
            ["<a></a>", "<a>x < / a > y</a>"], ["<a>x</a>y", "<a>x</a></a>", "<a>x"]),
    "tag_excludes_inside_end": ({"type": "tag", "begin": "<t>", "content": {"type": "any_text", "excludes": ["<", "/t"]},
                                 "end": "</t>"}, ["<t>a b</t>", "<t></t>", "<t>x/</t>"], ["<t>a<b</t>", "<t>x/t</t>"]),
    "tag_several_ends": ({"type": "tag", "begin": "<r>", "content": {"type": "any_text"},
                          "end": ["</r>", "<|end|>"]}, ["<r>t</r>", "<r>t<|end|>"], ["<r>t</x>"]),
    "tag_json": ({"type": "tag", "begin": "<f>", "content": {"type": "json_schema", "json_schema": WEATHER},
                  "end": "</f>"}, ['<f>{"city": "Rome"}</f>'], ['<f>{"city": "Rome"}', "<f>{}</f>"]),
    "triggered_tags": ({"type": "triggered_tags", "triggers": ["<fn="], "tags": [
        {"begin": "<fn=w>", "content": {"type": "json_schema", "json_schema": WEATHER}, "end": "</fn>"},
        {"begin": "<fn=now>", "content": {"type": "const_string", "value": "{}"}, "end": "</fn>"}]},
        ["", "just text", 'a <fn=w>{"city": "X"}</fn> b <fn=now>{}</fn>', "<fn=now>{}</fn><fn=now>{}</fn>"],
        ["<fn=x>{}</fn>", 'a <fn=w>{"town": "X"}</fn>', "<fn=now>{}"]),
    "triggered_tags_at_least_one": ({"type": "triggered_tags", "triggers": ["<t>"], "at_least_one": True, "tags": [
        {"begin": "<t>", "content": {"type": "const_string", "value": "1"}, "end": "</t>"}]},
        ["<t>1</t>", "<t>1</t>y<t>1</t>z"], ["", "text only", "x<t>1</t>"]),
    "triggered_tags_stop_after_first": ({"type": "triggered_tags", "triggers": ["<t>"], "stop_after_first": True,
                                         "tags": [{"begin": "<t>", "content": {"type": "const_string", "value": "1"},
                                                   "end": "</t>"}]},
                                        ["", "x<t>1</t>"], ["x<t>1</t>y", "<t>1</t><t>1</t>"]),
    "triggered_tags_excludes": ({"type": "triggered_tags", "triggers": ["<t>"], "excludes": ["<|eot|>"],
                                 "tags": [{"begin": "<t>", "content": {"type": "any_text"}, "end": "</t>"}]},
                                ["a<t>in <|eot|> tag</t>b"], ["a<|eot|>b"]),
    "tags_with_separator": ({"type": "tags_with_separator", "separator": ",", "tags": [
        {"begin": "<a>", "content": {"type": "const_string", "value": "1"}, "end": "</a>"}]},
        ["", "<a>1</a>", "<a>1</a>,<a>1</a>"], ["<a>1</a>,", "x<a>1</a>"]),
    "tags_with_separator_at_least_one": ({"type": "tags_with_separator", "separator": "\n", "at_least_one": True,
                                          "tags": [{"begin": "<a>", "content": {"type": "const_string", "value": "1"},
                                                    "end": "</a>"}]}, ["<a>1</a>\n<a>1</a>"], [""]),
    "dispatch": ({"type": "dispatch", "rules": [["CALL ", {"type": "regex", "pattern": "[a-z]+\\(\\)"}]],
                  "excludes": ["!!"]}, ["", "text CALL run() more", "CALL a()CALL b()"],
                 ["CALL 1", "wow!!"]),
    "dispatch_no_loop": ({"type": "dispatch", "loop": False, "rules": [["CALL ", {"type": "const_string",
                                                                                 "value": "x"}]]},
                         ["text CALL x"], ["text CALL x more"]),
    "qwen_xml": ({"type": "json_schema", "style": "qwen_xml", "json_schema": WEATHER},
                 ["<parameter=city>\nParis\n</parameter>\n", "<parameter=city>\nA\n</parameter>\n<parameter=days>\n2\n</parameter>\n"],
                 ["<parameter=days>\n2\n</parameter>\n", "<parameter=city>\nA\n</parameter>\n<parameter=days>\nx\n</parameter>\n"]),
    "minimax_xml": ({"type": "json_schema", "style": "minimax_xml", "json_schema": WEATHER},
                    ['<parameter name="city">Paris</parameter>'], ['<parameter name="town">Paris</parameter>']),
    "deepseek_xml": ({"type": "json_schema", "style": "deepseek_xml", "json_schema": WEATHER},
                     ['<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n'
                      '<｜DSML｜parameter name="days" string="false">4</｜DSML｜parameter>'],
                     ['<｜DSML｜parameter name="city" string="false">Paris</｜DSML｜parameter>']),
    "glm_xml": ({"type": "json_schema", "style": "glm_xml", "json_schema": WEATHER},
                ["<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"], ["<arg_key>city</arg_key>"]),
}


@pytest.mark.parametrize("name", sorted(FORMAT_CASES))
def test_format_accepts_and_rejects(compiler, name):
    fmt, good, bad = FORMAT_CASES[name]
    compiled = compiler.compile_structural_tag(_tag(fmt))
    for text in good:
        assert _complete(compiled, text), (name, text)
    for text in bad:
        assert not _complete(compiled, text), (name, text)


def test_builder_objects_and_json_text_are_accepted(compiler):
    fmt = FORMAT_CASES["triggered_tags"][0]

    class Builder:
        def to_dict(self):
            return _tag(fmt)

    a = xg.Grammar.from_structural_tag(Builder())
    b = xg.Grammar.from_structural_tag(json.dumps(_tag(fmt)))
    c = xg.Grammar.from_structural_tag(fmt)  # a bare format is accepted too
    assert str(a) == str(b) == str(c)


@pytest.mark.parametrize("name", sorted(FORMAT_CASES))
def test_pydantic_names_round_trip(name):
    """model_dump_json / model_validate_json, the names xgrammar's pydantic formats have."""
    from xg2_jax.structural_tag import StructuralTag, format_from_dict

    fmt = format_from_dict(FORMAT_CASES[name][0])
    text = fmt.model_dump_json()
    assert ": " not in text.replace('": "', "") and json.loads(text) == fmt.model_dump() == fmt.to_dict()
    assert type(fmt).model_validate_json(text) == fmt
    tag = StructuralTag(format=fmt)
    assert StructuralTag.model_validate_json(tag.model_dump_json(indent=2)) == tag
    assert str(xg.Grammar.from_structural_tag(tag.model_dump_json())) == str(xg.Grammar.from_structural_tag(tag))
    other = next(cls for cls in (xg.structural_tag.ConstStringFormat, xg.structural_tag.AnyTextFormat)
                 if not isinstance(fmt, cls))
    with pytest.raises(ValueError, match="expected a"):
        other.model_validate(fmt.to_dict())


@pytest.mark.parametrize("fmt, path, reason", [
    ({"type": "triggered_tags", "triggers": ["<a", "<z"], "tags": [
        {"begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}]},
     "format.triggers[1]", "not a prefix of any tag's begin"),
    ({"type": "sequence", "elements": [{"type": "const_string", "value": "x"}, {"type": "triggered_tags",
     "triggers": ["<a"], "tags": [{"begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"},
                                  {"begin": "<b>", "content": {"type": "any_text"}, "end": "</b>"}]}]},
     "format.elements[1].tags[1].begin", "does not start with any trigger"),
    ({"type": "any_text", "excludes": ["ok", ""]}, "format.excludes[1]", "empty string"),
    ({"type": "or", "elements": [{"type": "banana"}]}, "format.elements[0].type", "Format type not recognized"),
    ({"type": "const_string", "value": "x", "valeu": 1}, "format.valeu", "unknown field"),
    ({"type": "tag", "begin": "<a>", "end": "</a>"}, "format.content", "missing"),
    ({"type": "regex", "pattern": "(a"}, "format.pattern", ""),
    ({"type": "grammar", "grammar": "root ::= undefined_rule"}, "format.grammar",
     'Rule "undefined_rule" is not defined'),
    ({"type": "grammar", "grammar": 'root ::= "a" Regex("a\\\\b")'}, "format.grammar",
     "Failed to build the automaton for rule root: EBNF parser error at line 1, column 14: in Regex pattern"),
    ({"type": "grammar", "grammar": 'start: "a" (', "syntax": "lark"}, "format.grammar",
     "Lark error at line 1, column 13"),
    ({"type": "grammar", "grammar": 'root ::= "a"', "syntax": "peg"}, "format.syntax",
     'syntax must be "ebnf" or "lark"'),
    ({"type": "json_schema", "json_schema": {}, "style": "yaml"}, "format.style",
     'style must be "json", "qwen_xml"'),
    ({"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}},
     "format.json_schema", ""),
    ({"type": "repeat", "min": 3, "max": 2, "content": {"type": "const_string", "value": "a"}}, "format.max", ">= min"),
    ({"type": "any_text", "max_tokens": -1}, "format.max_tokens", "non-negative 32-bit integer"),
    # As xgrammar: content that runs on without bound needs a non-empty end to stop it.
    ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ""}, "format.end",
     "When the content is unlimited, at least one end string must be non-empty"),
    ({"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": ["", ""]}, "format.end", "non-empty"),
    ({"type": "triggered_tags", "triggers": ["<a"], "tags": [{"begin": "<a>", "end": "", "content": {
        "type": "sequence", "elements": [{"type": "const_string", "value": "x"},
                                         {"type": "repeat", "min": 0, "max": 3, "content": {"type": "star", "content": {
                                             "type": "const_string", "value": "y"}}}]}}]},
     "format.tags[0].end", "non-empty"),
])
def test_invalid_structural_tags_name_the_path(fmt, path, reason):
    with pytest.raises(xg.StructuralTagError) as info:
        xg.Grammar.from_structural_tag(_tag(fmt))
    message = str(info.value)
    assert message.startswith("Invalid structural tag error: " + path + ":"), message
    assert reason in message


@pytest.mark.parametrize("content", [
    {"type": "any_text", "excludes": ["</a>"]},
    {"type": "const_string", "value": "x"},
    {"type": "repeat", "min": 0, "max": 0, "content": {"type": "any_text"}},
    {"type": "or", "elements": [{"type": "const_string", "value": "x"}, {"type": "any_text", "excludes": ["!"]}]},
])
def test_bounded_content_takes_an_empty_end(content):
    # Content that stops by itself (or whose text excludes bound it) may end the tag with "".
    compiled = xg.GrammarCompiler(xg.TokenizerInfo([]), cache_enabled=False).compile_structural_tag(
        _tag({"type": "tag", "begin": "<a>", "content": content, "end": ""}))
    matcher = xg.GrammarMatcher(compiled)
    assert matcher.accept_string("<a>") and not matcher.accept_string("</a>!")


def test_lark_grammar_format_reads_special_tokens_with_the_compilers_tokenizer():
    # A Lark <special token> is one token by id: it resolves only where a tokenizer is known.
    tag = _tag({"type": "grammar", "syntax": "lark", "grammar": 'start: <|tool|> "a"'})
    compiled = xg.GrammarCompiler(xg.TokenizerInfo(["a", "<|tool|>", "b"])).compile_structural_tag(tag)
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(1) and matcher.accept_token(0) and matcher.is_terminated()
    assert not xg.GrammarMatcher(compiled).accept_token(0)
    with pytest.raises(xg.StructuralTagError, match="format.grammar: .*requires tokenizer_info"):
        xg.Grammar.from_structural_tag(tag)


def test_grammar_format_syntax_field_round_trips():
    lark = xg.GrammarFormat(grammar='start: "x"', syntax="lark")
    assert lark.to_dict() == {"type": "grammar", "grammar": 'start: "x"', "syntax": "lark"}
    assert "syntax" not in xg.GrammarFormat(grammar='root ::= "x"').to_dict()
    assert xg.GrammarFormat.model_validate(lark.to_dict()) == lark
    with pytest.raises(ValueError, match='"ebnf" or "lark"'):
        xg.GrammarFormat(grammar="x", syntax="peg")


def test_malformed_json_text_reports_line_and_column():
    with pytest.raises(xg.GrammarSyntaxError, match=r"^1:\d+"):
        xg.Grammar.from_structural_tag('{"type": "structural_tag", "format": {')


def test_tag_dispatch_ebnf_round_trip_and_serialization(compiler):
    g = xg.Grammar.from_structural_tag(_tag(FORMAT_CASES["triggered_tags"][0]))
    text = str(g)
    assert "TagDispatch((" in text
    assert str(xg.Grammar.from_ebnf(text)) == text
    compiled = compiler.compile_grammar(g)
    restored = compiler.deserialize(compiled.serialize())
    assert _complete(restored, 'x <fn=now>{}</fn>')
    assert not _complete(restored, 'x <fn=nope>{}</fn>')


def test_tag_dispatch_ebnf_syntax_errors_have_positions():
    with pytest.raises(xg.GrammarSyntaxError,
                       match=r"line 1, column \d+: Unknown named argument for TagDispatch: lop"):
        xg.Grammar.from_ebnf('root ::= TagDispatch(("a", "b"), lop=true)')
    with pytest.raises(xg.GrammarSyntaxError, match="must not be empty"):
        xg.Grammar.from_ebnf('root ::= TagDispatch(("", "b"))')


def test_tag_dispatch_argument_errors_are_located_at_the_argument_list():
    # As xgrammar: misuse of the arguments is reported at TagDispatch's '(' (column 21 here),
    # with the exact place after the message.
    cases = {
        'root ::= TagDispatch(("", r))\nr ::= "a"': "Tag must be a non-empty string literal: .*column 23",
        'root ::= TagDispatch(("t", undefined_rule))': 'Rule "undefined_rule" is not defined .*column 28',
        'root ::= TagDispatch("t", r)\nr ::= "a"': "Each tag dispatch element must be a tuple",
        'root ::= TagDispatch(("t", r), stop_eos=false)\nr ::= "a"': "Unknown named argument for TagDispatch: stop_eos",
        'root ::= TagDispatch(("tag1", r), excludes=("tag"))\nr ::= "a"':
            "Exclude string must not be a prefix of trigger string: tag ",
    }
    for text, message in cases.items():
        with pytest.raises(xg.GrammarSyntaxError, match="line 1, column 21: " + message) as info:
            xg.Grammar.from_ebnf(text)
        assert (info.value.line, info.value.column) == (1, 21)
    # A reference outside any TagDispatch stays located at itself.
    with pytest.raises(xg.GrammarSyntaxError, match=r'column 14: Rule "nope" is not defined$'):
        xg.Grammar.from_ebnf('root ::= "a" nope')


@pytest.mark.parametrize("trigger", ["xabc", "xabcq", "zabcz"])
def test_tag_dispatch_excludes_take_precedence_over_triggers(trigger):
    # A trigger holding an excluded string never fires: the string stays out of the output.
    vocab = list("xzabcq!hel")
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[])
    grammar = xg.Grammar.from_ebnf(f'root ::= TagDispatch(("{trigger}", body), excludes=("abc"))\nbody ::= "!"')
    compiled = xg.GrammarCompiler(tok).compile_grammar(grammar)
    assert not _complete(compiled, trigger + "!")
    assert _complete(compiled, "hello xab!")
    # Mask and parser agree on every character along the trigger; "c" (ending "abc") is refused.
    m = xg.GrammarMatcher(compiled)
    for ch in trigger:
        row = mask_row(m, len(vocab))
        allowed = {t for t in range(len(vocab)) if (int(row[t // 32]) >> (t % 32)) & 1}
        assert allowed == {t for t in range(len(vocab)) if m.fork().accept_token(t)}
        assert (vocab.index(ch) in allowed) == (ch != "c")
        if ch == "c":
            break
        assert m.accept_token(vocab.index(ch))


def test_triggered_tags_refuse_an_exclude_that_starts_a_trigger():
    fmt = {"type": "triggered_tags", "triggers": ["<tool"], "excludes": ["<to"],
           "tags": [{"begin": "<tool>", "content": {"type": "const_string", "value": "x"}, "end": "</tool>"}]}
    with pytest.raises(xg.StructuralTagError, match=r"excludes.*Exclude string must not be a prefix of trigger"):
        xg.Grammar.from_structural_tag(_tag(fmt))
    fmt = {"type": "dispatch", "rules": [["<f", {"type": "const_string", "value": ">"}]], "excludes": ["<f"]}
    with pytest.raises(xg.StructuralTagError, match="Exclude string must not be a prefix of trigger"):
        xg.Grammar.from_structural_tag(_tag(fmt))


# ----------------------------------------------------------------- TagDispatch vs a reference


def _reference_dispatch(s, *, triggers, conts, ends, excludes, loop, plain_end, at_least_one):
    """Whether ``s`` is in the language of a TagDispatch whose continuations are constants:
    free text until the first trigger or end string; a trigger must be followed by its
    continuation. No excluded string may occur in the text, nor inside a trigger (excludes take
    precedence over triggers); an occurrence entirely inside the end string that closes the
    text is not text (one straddling both counts as text)."""

    def clean(i, j, p_start):
        # No exclude occurrence in s[i:j] except inside s[p_start:j].
        for x in excludes:
            k = s.find(x, i)
            while k != -1 and k + len(x) <= j:
                if k < p_start:
                    return False
                k = s.find(x, k + 1)
        return True

    def text(i, phase):
        j = i
        while True:
            if j == len(s):
                return plain_end and (not at_least_one or phase == 1) and clean(i, j, j)
            j += 1
            exits = [p for p in list(triggers) + list(ends) if j - len(p) >= i and s[j - len(p):j] == p]
            if not exits:
                continue
            ok = False
            for k, t in enumerate(triggers):
                if t in exits and clean(i, j, j) and s.startswith(conts[k], j):
                    after = j + len(conts[k])
                    ok = ok or (text(after, 1) if loop else after == len(s))
            for e in ends:
                if e in exits and clean(i, j, j - len(e)) and (not at_least_one or phase == 1 or not triggers):
                    ok = ok or j == len(s)
            return ok

    return text(0, 0)


DISPATCH_SPECS = [
    dict(triggers=["<a"], conts=["1>"], ends=[], excludes=["bb"], loop=True, plain_end=True, at_least_one=False),
    dict(triggers=["<a", "a<"], conts=["1>", "2"], ends=["</b>"], excludes=[], loop=True, plain_end=False,
         at_least_one=False),
    dict(triggers=["<a"], conts=["1>"], ends=[], excludes=["é<"], loop=True, plain_end=True, at_least_one=True),
    dict(triggers=["<a"], conts=["1>"], ends=["</b>"], excludes=["</b>", "a"], loop=True, plain_end=False,
         at_least_one=False),
    dict(triggers=["a<a", "1"], conts=["1>", "2"], ends=["</b>"], excludes=["<a", "/b"], loop=True,
         plain_end=False, at_least_one=False),
    dict(triggers=["ab", "b"], conts=["!", "?"], ends=[], excludes=[], loop=False, plain_end=True,
         at_least_one=False),
    dict(triggers=[], conts=[], ends=["</b>", "b>"], excludes=["aa"], loop=True, plain_end=False,
         at_least_one=False),
]


# Single characters plus the watched strings whole, so valid strings are common.
PIECES = ["<", "a", "b", ">", "/", "1", "2", "!", "?", "é", " ", "<a", "1>", "</b>", "a<", "bb", "ab"]


def _dispatch_ebnf(spec) -> str:
    pairs = "".join(f"({json.dumps(t)}, {json.dumps(c)}), " for t, c in zip(spec["triggers"], spec["conts"]))
    lst = lambda xs: "(" + ", ".join(json.dumps(x, ensure_ascii=False) for x in xs) + ")"
    b = lambda v: "true" if v else "false"
    return (f"root ::= TagDispatch({pairs}ends={lst(spec['ends'])}, excludes={lst(spec['excludes'])}, "
            f"loop={b(spec['loop'])}, plain_end={b(spec['plain_end'])}, at_least_one={b(spec['at_least_one'])})")


@pytest.mark.parametrize("spec_index", range(len(DISPATCH_SPECS)))
@settings(max_examples=150, deadline=None)
@given(pieces=st.lists(st.sampled_from(PIECES), max_size=10))
def test_tag_dispatch_matches_reference(gpt2_tokenizer, spec_index, pieces):
    spec = DISPATCH_SPECS[spec_index]
    compiled = _compiled_dispatch(gpt2_tokenizer, spec_index)
    s = "".join(pieces)
    expected = _reference_dispatch(s, **spec)
    assert _complete(compiled, s) == expected, (s, spec)


_DISPATCH_CACHE: dict = {}


def _compiled_dispatch(tok, index):
    if index not in _DISPATCH_CACHE:
        grammar = xg.Grammar.from_ebnf(_dispatch_ebnf(DISPATCH_SPECS[index]))
        _DISPATCH_CACHE[index] = xg.GrammarCompiler(tok).compile_grammar(grammar)
    return _DISPATCH_CACHE[index]


# ---------------------------------------------------------- masks on real vocabularies


QWEN_TOOLS = {
    "type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "excludes": ["<|im_end|>"], "tags": [
            {"begin": '<tool_call>\n{"name": "get_weather", "arguments": ',
             "content": {"type": "json_schema", "json_schema": WEATHER}, "end": "}\n</tool_call>"},
            {"begin": '<tool_call>\n{"name": "add", "arguments": ',
             "content": {"type": "json_schema", "json_schema": {
                 "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "required": ["a", "b"]}}, "end": "}\n</tool_call>"}]}]}

QWEN_OUTPUT = ('<think>The user wants the weather in Paris, then a sum.</think>\n\nSure — checking.\n'
               '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>\n'
               '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 40}}\n</tool_call>')


def _check_masks_along(compiled, tok, token_ids, rng, samples=150):
    m = xg.GrammarMatcher(compiled)
    vocab = tok.vocab_size
    for step, token in enumerate(token_ids + [None]):
        row = mask_row(m, vocab)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab].astype(bool)
        allowed = np.flatnonzero(bits)
        forbidden = np.flatnonzero(~bits)
        picks = list(rng.sample(list(allowed), min(samples, len(allowed))))
        picks += list(rng.sample(list(forbidden), min(samples, len(forbidden))))
        for t in picks:
            f = m.fork()
            assert f.accept_token(int(t)) == bool(bits[t]), (step, int(t), tok.decoded_vocab[int(t)] if hasattr(tok, "decoded_vocab") else t)
        if token is None:
            break
        assert bits[token], (step, token)
        assert m.accept_token(token)
    assert m.is_completed()


def test_masks_agree_with_accept_on_qwen3(vocab_path):
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path("qwen3"))
    compiled = xg.GrammarCompiler(tok).compile_structural_tag(_tag(QWEN_TOOLS))
    _check_masks_along(compiled, tok, tokenize(tok, QWEN_OUTPUT), random.Random(0))


def test_masks_agree_with_accept_on_llama3(compiler, llama3_tokenizer):
    compiled = compiler.compile_structural_tag(_tag(QWEN_TOOLS))
    _check_masks_along(compiled, llama3_tokenizer, tokenize(llama3_tokenizer, QWEN_OUTPUT), random.Random(1))


@pytest.mark.parametrize("name", ["triggered_tags", "tag", "dispatch", "qwen_xml", "deepseek_xml",
                                  "any_text_excludes", "any_text_max_chars"])
def test_lazy_and_cached_masks_equal_eager(llama3_tokenizer, name):
    fmt, good, _ = FORMAT_CASES[name]
    text = max(good, key=len)
    xg.clear_cross_grammar_cache()
    eager = xg.GrammarCompiler(llama3_tokenizer).compile_structural_tag(_tag(fmt))
    lazy = xg.GrammarCompiler(llama3_tokenizer).compile_structural_tag(_tag(fmt), lazy=True)
    cached = xg.GrammarCompiler(llama3_tokenizer).compile_structural_tag(_tag(fmt))  # pool hits
    ms = [xg.GrammarMatcher(c) for c in (eager, lazy, cached)]
    for token in tokenize(llama3_tokenizer, text) + [None]:
        rows = [mask_row(m, llama3_tokenizer.vocab_size) for m in ms]
        assert np.array_equal(rows[0], rows[1]) and np.array_equal(rows[0], rows[2])
        if token is None:
            break
        for m in ms:
            assert m.accept_token(token)


# ------------------------------------------------------------------- token-level formats


HEADER = {"type": "tag", "begin": {"type": "token", "token": "<|start_header_id|>"},
          "content": {"type": "regex", "pattern": "[a-z]+"}, "end": {"type": "token", "token": 128007}}


def test_token_format_matches_only_the_special_token(compiler, llama3_tokenizer):
    compiled = compiler.compile_structural_tag(_tag(HEADER))
    text_spelling = tokenize(llama3_tokenizer, "<|start_header_id|>")
    assert len(text_spelling) > 1
    m = xg.GrammarMatcher(compiled)
    row = mask_row(m, llama3_tokenizer.vocab_size)
    allowed = np.flatnonzero(np.unpackbits(row.view(np.uint8), bitorder="little")[:llama3_tokenizer.vocab_size])
    assert allowed.tolist() == [128006]
    assert not m.fork().accept_token(text_spelling[0])
    assert m.accept_token(128006)
    for t in tokenize(llama3_tokenizer, "user"):
        assert m.accept_token(t)
    assert not m.fork().accept_token(128008)
    assert m.accept_token(128007)
    assert m.is_completed()
    # The virtual string never leaks into jump-forward text or EBNF round trips.
    assert xg.GrammarMatcher(compiled).find_jump_forward_string() == ""
    text = str(compiled.grammar)
    assert "Token(128006)" in text and str(xg.Grammar.from_ebnf(text)) == text


def test_any_tokens_allows_specials_except_excluded_and_stops(compiler, llama3_tokenizer):
    fmt = {"type": "tag", "begin": "<a>", "content": {"type": "any_tokens", "exclude_tokens": ["<|start_header_id|>"]},
           "end": "</a>"}
    compiled = compiler.compile_structural_tag(_tag(fmt))
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string("<a>")
    row = mask_row(m, llama3_tokenizer.vocab_size)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:llama3_tokenizer.vocab_size].astype(bool)
    assert bits[128007] and bits[128000] and not bits[128006]
    assert not bits[128009] and not bits[128001]  # stop tokens end generation, not text
    for t in [128007] + tokenize(llama3_tokenizer, "text ") + [128000]:
        assert m.accept_token(t)
    assert m.accept_string("</a>") and m.is_completed()


def test_token_triggered_tags(vocab_path):
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path("tekken_240911"))
    fmt = {"type": "token_triggered_tags", "trigger_tokens": ["[TOOL_CALLS]"], "tags": [
        {"begin": {"type": "token", "token": "[TOOL_CALLS]"}, "content": {"type": "json_schema", "json_schema": WEATHER},
         "end": "\n"}]}
    compiled = xg.GrammarCompiler(tok).compile_structural_tag(_tag(fmt))
    m = xg.GrammarMatcher(compiled)
    for t in tokenize(tok, "Let me check. ") + [9] + tokenize(tok, '{"city": "Lyon"}\nok'):
        assert m.accept_token(t), t
    assert m.is_completed()
    # The free part is tokens read by id (as xgrammar's TokenTagDispatch): a string, which has no
    # token boundaries, matches none of it.
    assert not xg.GrammarMatcher(compiled).accept_string("[TOOL_CALLS]")


@pytest.mark.parametrize("fmt, path, reason", [
    ({"type": "token", "token": "<|no such token|>"}, "format.token", "unknown token string"),
    ({"type": "token", "token": 10**7}, "format.token", "outside the vocabulary"),
    ({"type": "token", "token": "<|eot_id|>"}, "format.token", "stop token"),
    ({"type": "token", "token": -1}, "format.token", "negative"),
    ({"type": "any_tokens", "max_tokens": -2}, "format.max_tokens", "non-negative 32-bit integer"),
    ({"type": "any_tokens", "max_tokens": 2**31}, "format.max_tokens", "non-negative 32-bit integer"),
    ({"type": "any_text", "max_tokens": 2.5}, "format.max_tokens", "non-negative 32-bit integer"),
    ({"type": "exclude_token", "exclude_tokens": "5"}, "format.exclude_tokens", "list of token ids"),
])
def test_invalid_token_formats(llama3_tokenizer, fmt, path, reason):
    with pytest.raises(xg.StructuralTagError) as info:
        xg.Grammar.from_structural_tag(_tag(fmt), tokenizer_info=llama3_tokenizer)
    message = str(info.value)
    assert message.startswith("Invalid structural tag error: " + path + ":") and reason in message


def test_token_strings_without_tokenizer_say_so():
    """Ids need no tokenizer (the compiler checks them against its vocabulary); token strings do."""
    assert "Token(5)" in str(xg.Grammar.from_structural_tag(_tag({"type": "token", "token": 5})))
    with pytest.raises(xg.StructuralTagError, match="need the tokenizer"):
        xg.Grammar.from_structural_tag(_tag({"type": "token", "token": "<|eot_id|>"}))


def test_normal_tokens_holding_byte_ff_are_text_only_by_id(gpt2_tokenizer):
    """A token whose text holds byte 0xFF (the virtual strings' lead) is never read as text, and
    under any_tokens it is a token like any other, read by id."""
    ff = [i for i in range(gpt2_tokenizer.vocab_size) if b"\xff" in gpt2_tokenizer.token_bytes(i)]
    assert ff  # the byte token for 0xFF at least
    for fmt, allowed in (({"type": "any_text"}, False), ({"type": "any_tokens"}, True)):
        compiled = xg.GrammarCompiler(gpt2_tokenizer).compile_structural_tag(_tag(fmt))
        m = xg.GrammarMatcher(compiled)
        row = mask_row(m, gpt2_tokenizer.vocab_size)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:gpt2_tokenizer.vocab_size].astype(bool)
        for t in ff:
            assert bits[t] == allowed and m.fork().accept_token(t) == allowed


# ------------------------------------------------------- random structural tags (property)

_LEAVES = st.sampled_from([
    {"type": "const_string", "value": "ab"},
    {"type": "const_string", "value": "é<"},
    {"type": "regex", "pattern": "[0-9]{1,3}"},
    {"type": "any_text"},
    {"type": "any_text", "excludes": ["<", "zz"]},
    {"type": "any_text", "max_chars": 3},
    {"type": "json_schema", "json_schema": {"type": "object", "properties": {"k": {"type": "boolean"}},
                                            "required": ["k"]}},
    {"type": "json_schema", "style": "qwen_xml", "json_schema": {"type": "object",
                                                                 "properties": {"p": {"type": "string"}}}},
    {"type": "grammar", "grammar": 'root ::= "g" [a-c]*'},
])


def _tag_of(content, i):
    return {"type": "tag", "begin": f"<t{i}>", "content": content, "end": f"</t{i}>"}


def _composite(children):
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda xs: {"type": "sequence", "elements": xs}),
        st.lists(children, min_size=1, max_size=3).map(lambda xs: {"type": "or", "elements": xs}),
        children.map(lambda x: {"type": "optional", "content": x}),
        children.map(lambda x: {"type": "star", "content": x}),
        children.map(lambda x: _tag_of(x, 1)),
        st.tuples(st.lists(children, min_size=1, max_size=2), st.booleans(), st.booleans()).map(
            lambda a: {"type": "triggered_tags", "triggers": ["<t"], "tags": [_tag_of(c, i) for i, c in enumerate(a[0])],
                       "at_least_one": a[1], "stop_after_first": a[2], "excludes": ["!!"]}),
        st.tuples(children, st.booleans()).map(
            lambda a: {"type": "dispatch", "rules": [["@", a[0]]], "loop": a[1]}),
        st.lists(children, min_size=1, max_size=2).map(
            lambda xs: {"type": "tags_with_separator", "separator": ",", "tags": [_tag_of(c, i) for i, c in enumerate(xs)]}),
    )


FORMATS = st.recursive(_LEAVES, _composite, max_leaves=5)


@settings(max_examples=60, deadline=None)
@given(fmt=FORMATS, seed=st.integers(0, 2**16))
def test_random_structural_tags_mask_and_accept_agree(gpt2_tokenizer, fmt, seed):
    compiled = _random_compiler(gpt2_tokenizer).compile_structural_tag(_tag(fmt))
    rng = random.Random(seed)
    m = xg.GrammarMatcher(compiled)
    vocab = gpt2_tokenizer.vocab_size
    for _ in range(12):
        row = mask_row(m, vocab)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab].astype(bool)
        allowed = np.flatnonzero(bits)
        assert len(allowed) > 0  # never a dead end: the structure can always be finished
        for t in rng.sample(range(vocab), 40):
            assert m.fork().accept_token(t) == bool(bits[t]), t
        t = int(rng.choice(allowed))
        if t in gpt2_tokenizer.stop_token_ids:
            break
        assert m.accept_token(t)


_RANDOM_COMPILER: list = []


def _random_compiler(tok):
    if not _RANDOM_COMPILER:
        _RANDOM_COMPILER.append(xg.GrammarCompiler(tok, max_threads=1))
    return _RANDOM_COMPILER[0]


def test_masks_agree_with_accept_on_gemma(vocab_path):
    """A SentencePiece byte-fallback vocabulary of 262k tokens (Gemma): tool calls in free text."""
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path("gemma4"))
    compiled = xg.GrammarCompiler(tok).compile_structural_tag(_tag(QWEN_TOOLS))
    _check_masks_along(compiled, tok, tokenize(tok, QWEN_OUTPUT), random.Random(2), samples=60)
