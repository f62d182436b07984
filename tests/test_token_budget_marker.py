"""Token budgets on suffix/stop rules (`r[max_tokens=N, suffix=M]` / `stop=M`): a budget that
runs out closes the rule through its body alone, without the marker, as xgrammar does; the
fill commits the close, so the mask and the accept that follows agree.
"""

import pytest
from helpers import allowed_ids as allowed
from helpers import compile_lark

import xg2_jax as xg

VOCAB = ["x", "<", ">", "a!", "b!", "a", "b", "!", "y", "z"]


@pytest.fixture(scope="module")
def tok():
    return xg.TokenizerInfo(VOCAB, stop_token_ids=[])


def ids(*texts):
    return [VOCAB.index(t) for t in texts]


@pytest.mark.parametrize("attribute", ["suffix", "stop"])
def test_spent_budget_closes_through_the_body(tok, attribute):
    compiled = compile_lark(tok, f'start: value ">"\nvalue[max_tokens=2, {attribute}="!"]: /[ab]*/')
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("a")[0]) and matcher.accept_token(ids("b")[0])
    assert allowed(matcher, len(VOCAB)) == ids(">")
    # A rejected token leaves the close in place: the next fill says the same.
    assert not matcher.accept_token(ids("a")[0])
    assert allowed(matcher, len(VOCAB)) == ids(">")
    forked = matcher.fork()
    for m in (matcher, forked):
        assert m.accept_token(ids(">")[0]) and m.is_terminated()
    # Rolled back before the close, the marker path is open again.
    matcher.rollback(2)
    assert allowed(matcher, len(VOCAB)) == ids("a!", "b!", "a", "b", "!")
    assert matcher.accept_token(ids("b!")[0]) and matcher.accept_token(ids(">")[0])
    assert matcher.is_terminated()


def test_accept_without_a_fill_keeps_the_marker_required(tok):
    # As in xgrammar, budgets are enforced by the fill; an accept alone checks the language.
    compiled = compile_lark(tok, 'start: value ">"\nvalue[max_tokens=1, suffix="!"]: /[ab]*/')
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("a")[0])
    assert not matcher.accept_token(ids(">")[0])
    assert allowed(matcher, len(VOCAB)) == ids(">")
    assert matcher.accept_token(ids(">")[0]) and matcher.is_terminated()


def test_body_that_cannot_end_is_not_closed(tok):
    # "ab" pairs only: after one "a" the body cannot end, so the budget is relaxed.
    compiled = compile_lark(tok, 'start: value ">"\nvalue[max_tokens=1, suffix="!"]: /(ab)*/')
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("a")[0])
    assert allowed(matcher, len(VOCAB)) == ids("b!", "b")
    assert matcher.accept_token(ids("b")[0])
    assert allowed(matcher, len(VOCAB)) == ids(">")


@pytest.mark.parametrize("attribute", ["suffix", "stop"])
def test_close_reaches_an_expired_parent(tok, attribute):
    compiled = compile_lark(
        tok,
        f'start: outer "z"\nouter[max_tokens=1]: inner | inner "y"\ninner[max_tokens=1, {attribute}="!"]: /x*/',
    )
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("x")[0])
    assert allowed(matcher, len(VOCAB)) == ids("z")
    assert matcher.accept_token(ids("z")[0]) and matcher.is_terminated()


@pytest.mark.parametrize("attribute, marker_outer", [("suffix", b"ab!>"), ("stop", b"ab>")])
def test_captures_of_a_close_have_no_marker(tok, attribute, marker_outer):
    compiled = compile_lark(
        tok,
        f'start[capture="all"]: value ">"\n'
        f'value[max_tokens=2, capture="body", {attribute}="!", stop_capture="marker"]: /[ab]*/',
    )
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("a")[0]) and matcher.accept_token(ids("b")[0])
    assert allowed(matcher, len(VOCAB)) == ids(">")
    assert matcher.accept_token(ids(">")[0])
    assert matcher.get_captures() == [("body", b"ab"), ("all", b"ab>")]
    matcher.rollback(2)
    assert matcher.accept_token(ids("b!")[0]) and matcher.accept_token(ids(">")[0])
    assert matcher.get_captures() == [("marker", b"!"), ("body", b"ab"), ("all", marker_outer)]


def test_close_survives_serialization(tok):
    grammar = xg.Grammar.from_lark('start: value ">"\nvalue[max_tokens=2, stop="!"]: /[ab]*/')
    for again in (
        xg.Grammar.from_ebnf(str(grammar)),
        xg.Grammar.deserialize_json(grammar.serialize_json()),
    ):
        compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(again)
        matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert matcher.accept_token(ids("a")[0]) and matcher.accept_token(ids("a")[0])
        assert allowed(matcher, len(VOCAB)) == ids(">")


LAZY_HEAD = 'start: head "z"\nhead[max_tokens=2, lazy, capture]: TEXT "!"\nTEXT: /(\\n|.)*/'


def test_lazy_text_trigger_closes_before_its_trigger(tok):
    # xgrammar's lazy `TEXT "t"`: the trigger ends it first, or a spent budget ends it after
    # its text; its capture holds all of its text either way.
    compiled = compile_lark(tok, LAZY_HEAD)
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("a!")[0])
    assert allowed(matcher, len(VOCAB)) == ids("z")
    assert matcher.accept_token(ids("z")[0]) and matcher.get_captures() == [("head", b"a!")]
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(ids("x")[0]) and matcher.accept_token(ids("x")[0])
    assert allowed(matcher, len(VOCAB)) == ids("z")
    assert matcher.accept_token(ids("z")[0]) and matcher.get_captures() == [("head", b"xx")]


def test_lazy_split_prints_and_reads_back(tok):
    grammar = xg.Grammar.from_lark(LAZY_HEAD)
    printed = str(grammar)
    assert 'head[max_tokens=2, capture="head", lazy=(' in printed
    for again in (
        xg.Grammar.from_ebnf(printed),
        xg.Grammar.deserialize_json(grammar.serialize_json()),
    ):
        assert str(again) == printed
        compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(again)
        matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert matcher.accept_token(ids("x")[0]) and matcher.accept_token(ids("y")[0])
        assert allowed(matcher, len(VOCAB)) == ids("z")
    with pytest.raises(xg.GrammarSyntaxError, match="stop_capture requires stop or suffix"):
        xg.Grammar.from_ebnf('root ::= r\nr[lazy=("a", "!"), stop_capture="m"] ::= "a!"')


def test_lazy_text_trigger_under_a_character_budget():
    tok = xg.TokenizerInfo(["ab", "a!", "abz", "a", "z"], stop_token_ids=[])
    compiled = compile_lark(
        tok, 'start: head "z"\nhead[max_chars=2, lazy]: TEXT "!"\nTEXT: /(\\n|.)*/'
    )
    for tokens, accepted in [([2], True), ([1, 4], True), ([3, 4], False), ([0, 3], False)]:
        matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        ok = all(matcher.accept_token(t) for t in tokens) and matcher.is_terminated()
        assert ok == accepted, tokens
