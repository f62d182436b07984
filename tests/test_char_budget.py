"""Character budgets (`[max_chars=N]`) where they meet suffix/stop rules and tokens read by id:
a spent budget closes a suffix/stop rule through its body alone, and a token read by id is
one atomic step that may start while a character is left and spends the rest (xgrammar's
best effort). These are languages (the rule's automaton), so accepts and masks agree with or
without a fill.
"""

import pytest
from helpers import allowed_ids as allowed
from helpers import compile_lark

import xg2_jax as xg


def accepts(compiled, tokens):
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return all(matcher.accept_token(t) for t in tokens) and matcher.is_terminated()


@pytest.mark.parametrize("attribute", ["suffix", "stop"])
def test_spent_budget_closes_a_marker_rule_through_its_body(attribute):
    tok = xg.TokenizerInfo(["aa!", "a>!", "aa>!", "a!", "a>b!"], stop_token_ids=[])
    compiled = compile_lark(
        tok, f'start: r "!"\nr[max_chars=2, {attribute}=">"]: TEXT\nTEXT: /(\\n|.)*/'
    )
    assert accepts(compiled, [0])  # "aa": the budget is spent, the rule ends
    assert accepts(compiled, [1])  # "a>": the marker within the budget
    assert not accepts(compiled, [2])  # the marker would be a third character
    assert not accepts(compiled, [3])  # "a" alone: the budget is not spent
    assert not accepts(compiled, [4])  # the marker committed the rule first


def test_body_that_cannot_end_at_the_budget_is_not_closed():
    tok = xg.TokenizerInfo(["a", "b", "!", ">"], stop_token_ids=[])
    compiled = compile_lark(tok, 'start: r "!"\nr[max_chars=3, suffix=">"]: /(ab)*/')
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_token(0) and matcher.accept_token(1)
    # "ab" then ">" fits; "aba" spends the budget where the body cannot end.
    assert allowed(matcher, 4) == [3]


def test_stop_capture_sees_no_marker_after_a_close():
    tok = xg.TokenizerInfo(["aa!", "a>!"], stop_token_ids=[])
    compiled = compile_lark(
        tok,
        'start[capture="outer"]: r "!"\n'
        'r[max_chars=2, capture="inner", stop=">", stop_capture="marker"]: TEXT\n'
        "TEXT: /(\\n|.)*/",
    )
    closed = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert closed.accept_token(0) and closed.is_terminated()
    assert closed.get_captures() == [("inner", b"aa"), ("outer", b"aa!")]
    marked = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert marked.accept_token(1) and marked.is_terminated()
    assert marked.get_captures() == [("marker", b">"), ("inner", b"a"), ("outer", b"a!")]


def test_token_read_by_id_spends_the_rest_of_the_budget():
    vocab = ["<s>", "</s>", "a", "b", "ab", "abcd", "<", ">", "<|x|>"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[1])
    grammar = xg.Grammar.from_ebnf(
        'root ::= "<" body ">"\nbody[max_chars=8] ::= (Token(8) | [a-z])*'
    )
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)

    def after(prefix, tokens=()):
        matcher = xg.GrammarMatcher(compiled)
        assert matcher.accept_string(prefix)
        assert all(matcher.accept_token(t) for t in tokens)
        return allowed(matcher, len(vocab))

    assert after("<abcdab") == [2, 3, 4, 7, 8]
    assert after("<abcdabcd") == [7]
    assert after("<a", [8]) == [7]


def test_lark_special_token_in_a_char_budget_rule():
    tok = xg.TokenizerInfo(["<|wide|>", "!"], stop_token_ids=[])
    compiled = compile_lark(tok, 'start: value "!"\nvalue[max_chars=1]: <|wide|>')
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert allowed(matcher, 2) == [0]
    assert matcher.accept_token(0) and matcher.accept_token(1) and matcher.is_terminated()


def test_closes_survive_printing():
    grammar = xg.Grammar.from_lark('start: r "!"\nr[max_chars=2, suffix=">"]: /[a-z]*/')
    tok = xg.TokenizerInfo(["a", "!", ">"], stop_token_ids=[])
    for again in (
        xg.Grammar.from_ebnf(str(grammar)),
        xg.Grammar.deserialize_json(grammar.serialize_json()),
    ):
        compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(again)
        assert accepts(compiled, [0, 0, 1])
        assert accepts(compiled, [0, 2, 1])
        assert not accepts(compiled, [0, 1])
