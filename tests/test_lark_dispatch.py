"""xgrammar's dynamic tool-call dispatch pattern in Lark (`start: (tool_a | ...)* tail` with
lazy trigger heads): free text until a complete trigger, then a call is mandatory.

The oracle is the pattern's meaning written in Python: the first complete trigger in the text
starts a call whose body (a Python regex here) must follow, then free text again.
"""

import itertools
import random
import re

import pytest

import xg2_jax as xg

EMPTY = xg.TokenizerInfo([])

HEADS = {
    "lazy-string": 'head[lazy]: TEXT "<tool>"',
    "suffix": 'head[suffix="<tool>"]: TEXT',
    "stop": 'head[stop="<tool>"]: TEXT',
    "regex-suffix": r"head[lazy]: /(\n|.)*<tool>/",
    "dotall-regex-suffix": "head[lazy]: /.*<tool>/s",
}
TEXTS = {"group": r"TEXT: /(\n|.)*/", "class": r"TEXT: /[\s\S]*/", "dotall": "TEXT: /.*/s"}


def oracle(text: str, trigger: str, bodies: list[str]) -> bool:
    at = text.find(trigger)
    if at < 0:
        return True                     # free text to the end (a partial trigger included)
    rest = text[at + len(trigger):]
    return any(re.fullmatch(body, rest[:end]) and oracle(rest[end:], trigger, bodies)
               for body in bodies for end in range(len(rest) + 1))


def compile_lark(text: str) -> xg.CompiledGrammar:
    return xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(xg.Grammar.from_lark(text))


def accepts(compiled, text: str) -> bool:
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return m.accept_string(text) and m.is_completed()


PIECES = ["a", "bc", "1", "\n", "<tool>", "</tool>", "<too", "l>", "<", "x y"]


def samples(seed: str, count: int = 300) -> list[str]:
    rng = random.Random(seed)
    fixed = ["", "<tool>", "<tool>abc</tool>", "x<tool>abc</tool>y", "partial <too", "<tool>123</tool>",
             "<tool>abc", "a<tool>b</tool><tool>c</tool>", "<tool><tool>a</tool>"]
    return fixed + ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 7))) for _ in range(count)]


@pytest.mark.parametrize("head, text_terminal", list(itertools.product(sorted(HEADS), sorted(TEXTS))))
def test_one_tool_against_the_oracle(head, text_terminal):
    grammar = "\n".join(["start: tool* tail", "tail: TEXT", HEADS[head],
                         'tool: head /[a-z]+/ "</tool>"', TEXTS[text_terminal]])
    compiled = compile_lark(grammar)
    for text in samples(head + text_terminal):
        assert accepts(compiled, text) == oracle(text, "<tool>", ["[a-z]+</tool>"]), repr(text)


def test_tools_sharing_a_trigger_against_the_oracle():
    compiled = compile_lark(r"""
        start: (foo | bar)* tail
        tail: TEXT
        foo_head[lazy]: TEXT "<function"
        foo: foo_head "=foo>" /[a-z]+/ "</function>"
        bar_head[lazy]: TEXT "<function"
        bar: bar_head "=bar>" /[0-9]+/ "</function>"
        TEXT: /(\n|.)*/
    """)
    rng = random.Random(3)
    pieces = ["<function", "=foo>", "=bar>", "abc", "12", "</function>", " ", "<fun"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        expected = oracle(text, "<function", ["=foo>[a-z]+</function>", "=bar>[0-9]+</function>"])
        assert accepts(compiled, text) == expected, repr(text)


def test_a_json_payload_and_the_mask():
    compiled = xg.GrammarCompiler(xg.TokenizerInfo(["<tool_call>", "{", '"x"', ":", "1", "}", "</tool_call>",
                                                   "hi", "<tool"]), cache_enabled=False).compile_grammar(
        xg.Grammar.from_lark(r"""
            start: tool* tail
            tail: TEXT
            tool_head[lazy]: TEXT "<tool_call>"
            tool: tool_head %json {"type": "object", "properties": {"x": {"type": "integer"}},
                                   "required": ["x"], "additionalProperties": false} "</tool_call>"
            TEXT: /(\n|.)*/
        """))
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_token(7) and m.accept_token(0)
    mask = xg.allocate_token_bitmask(1, 9)
    m.fill_next_token_bitmask(mask)
    # Once the trigger is complete only the payload may follow.
    assert [t for t in range(9) if (int(mask[0, 0]) >> t) & 1] == [1]
    for t in [1, 2, 3, 4, 5, 6, 7]:
        assert m.accept_token(t)
    assert m.is_completed()


@pytest.mark.parametrize("grammar", [
    # Not the pattern (a head without lazy): a plain context-free grammar, whose tail's TEXT
    # may hold the trigger.
    'start: tool* tail\ntail: TEXT\nhead: TEXT "<tool>"\ntool: head "x"\nTEXT: /(\\n|.)*/',
    # A tail that is not any text.
    'start: tool* tail\ntail: /[a-z<>]*/\nhead[lazy]: TEXT "<tool>"\ntool: head "x"\nTEXT: /(\\n|.)*/',
])
def test_other_shapes_stay_context_free(grammar):
    assert accepts(compile_lark(grammar), "a<tool>")


TOKEN_VOCAB = ["plain", "<|tool|>", "{", '"x"', ":", "1", "}", "</tool>", "bad", "</s>", "<|t2|>"]
TOKEN_TOOLS = xg.TokenizerInfo(TOKEN_VOCAB, stop_token_ids=[9])
TOKEN_DISPATCH = r"""
start: (tool | other)* tail
tail: TEXT
tool: TEXT <|tool|> %json {"type": "object", "properties": {"x": {"const": 1}},
                           "required": ["x"], "additionalProperties": false} "</tool>"
other: TEXT <|t2|> "}"
TEXT: /(\n|.)*/
"""


def token_run(compiled, tokens):
    matcher = xg.GrammarMatcher(compiled)
    for t in tokens:
        if not matcher.accept_token(t):
            return False
    return matcher.accept_token(9)


@pytest.mark.parametrize("tokens, accepted", [
    ([0], True), ([], True), ([0, 8, 0], True),
    ([1, 2, 3, 4, 5, 6, 7], True), ([0, 1, 2, 3, 4, 5, 6, 7, 0, 10, 6], True),
    ([1], False), ([1, 8], False), ([1, 2, 3, 4, 8], False), ([10], False), ([10, 7], False),
])
def test_special_token_triggers_dispatch_by_id(tokens, accepted):
    # xgrammar's token-level dispatch: free tokens until a trigger token, whose call is then
    # mandatory; the trigger's text read as free text would let a call be skipped.
    grammar = xg.Grammar.from_lark(TOKEN_DISPATCH, tokenizer_info=TOKEN_TOOLS)
    for candidate in (grammar, xg.Grammar.deserialize_json(grammar.serialize_json())):
        compiled = xg.GrammarCompiler(TOKEN_TOOLS, cache_enabled=False).compile_grammar(candidate)
        assert token_run(compiled, tokens) == accepted


def test_max_chars_on_the_dispatch_is_ignored_with_a_warning(capfd):
    # As in xgrammar: the dispatch is lowered, its start rule and tools are not bounded.
    grammar = xg.Grammar.from_lark(r"""
        start[max_chars=5]: tool* tail
        tail: TEXT
        tool_head[lazy]: TEXT "<tool>"
        tool[max_chars=3]: tool_head /[0-9]+/ "</tool>"
        TEXT: /(\n|.)*/
    """)
    err = capfd.readouterr().err
    assert "Ignoring max_chars on dynamic dispatch start rule 'start'." in err
    assert "Ignoring max_chars on rule 'tool' because it is consumed by dynamic dispatch." in err
    compiled = xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(grammar)
    for text, accepted in [("long free text <tool>12345</tool> more", True), ("x<tool>", False)]:
        matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert (matcher.accept_string(text) and matcher.is_completed()) == accepted


@pytest.mark.parametrize("attribute, outer", [("stop", b"axbxc"), ("suffix", b"a<t>xb<t>xc")])
def test_dispatch_head_marker_is_the_trigger_for_captures(attribute, outer):
    # The trigger is the head's marker: stop_capture records it, and stop= hides it from the
    # captures around the call, through a named grammar too.
    dynamic = (
        f'start: tool* tail\ntail: TEXT\nhead[{attribute}="<t>", stop_capture="marker"]: TEXT\n'
        'tool: head "x"\nTEXT: /(\\n|.)*/'
    )
    direct = xg.Grammar.from_lark(dynamic.replace("start:", 'start[capture="outer"]:', 1))
    named = xg.Grammar.from_lark('start[capture="outer"]: @d', named_grammars={"d": dynamic})
    for grammar in (direct, named, xg.Grammar.from_ebnf(str(direct))):
        matcher = xg.GrammarMatcher(compile_grammar(grammar), terminate_without_stop_token=True)
        assert matcher.accept_string("a<t>xb<t>xc") and matcher.is_completed()
        assert matcher.get_captures() == [("marker", b"<t>"), ("marker", b"<t>"), ("outer", outer)]


def compile_grammar(grammar):
    return xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(grammar)
