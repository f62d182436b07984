"""xgrammar's any-text forms (`r[suffix="M"]: TEXT`, `r[stop="M"]: TEXT`, `r[lazy]: TEXT "M"`)
also end at the end of the input without their marker: the free text before a marker is a
sentence where nothing follows it. Elsewhere the marker stays required.
"""

import pytest

import xg2_jax as xg

EMPTY = xg.TokenizerInfo([])
TEXT = "TEXT: /(\\n|.)*/"


def matches(grammar, value):
    compiled = xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(grammar)
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return matcher.accept_string(value) and matcher.is_terminated()


def captures(grammar, value):
    compiled = xg.GrammarCompiler(EMPTY, cache_enabled=False).compile_grammar(grammar)
    matcher = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert matcher.accept_string(value) and matcher.is_terminated()
    return matcher.get_captures()


HEADS = ['r[lazy]: TEXT "<end>"', 'r[suffix="<end>"]: TEXT', 'r[stop="<end>"]: TEXT']


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize(
    "start, accepted, rejected",
    [
        ("start: r", ["", "plain", "<end>", "plain<end>", "partial <en"], ["<end>x", "a<end>b"]),
        ('start: r "!"', ["<end>!", "abc<end>!"], ["abc!", "!", "abc"]),
        # What may follow is empty: the free text may end at the end of the input.
        ('start: r x?\nx: "!"', ["abc", "abc!", "abc<end>", "abc<end>!"], ["abc<end>x"]),
        ("start: r+", ["a<end>b", "a<end>b<end>", "a<end><end>", ""], []),
        ('start: "<" r', ["<a", "<a<end>"], ["a"]),
    ],
)
def test_any_text_forms_end_at_the_end_of_the_input(head, start, accepted, rejected):
    grammar = xg.Grammar.from_lark(f"{start}\n{head}\n{TEXT}")
    for again in (grammar, xg.Grammar.from_ebnf(str(grammar))):
        for value in accepted:
            assert matches(again, value), value
        for value in rejected:
            assert not matches(again, value), value


def test_other_bodies_keep_the_marker_required():
    grammar = xg.Grammar.from_lark('start: r\nr[suffix="<end>"]: /[a-z]*/')
    assert matches(grammar, "ab<end>") and not matches(grammar, "ab")


@pytest.mark.parametrize("attribute", ["suffix", "stop"])
def test_captures_of_an_end_without_marker(attribute):
    grammar = xg.Grammar.from_lark(
        f'start[capture="outer"]: r\nr[capture="inner", {attribute}="<end>", stop_capture="m"]: TEXT\n{TEXT}'
    )
    assert captures(grammar, "plain") == [("inner", b"plain"), ("outer", b"plain")]
    outer = b"foo<end>" if attribute == "suffix" else b"foo"
    assert captures(grammar, "foo<end>") == [("m", b"<end>"), ("inner", b"foo"), ("outer", outer)]


def test_stop_token_is_allowed_where_the_free_text_may_end():
    tok = xg.TokenizerInfo(["ab", "<end>", "</s>"], stop_token_ids=[2])
    grammar = xg.Grammar.from_lark(f'start: r\nr[stop="<end>"]: TEXT\n{TEXT}')
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)
    matcher = xg.GrammarMatcher(compiled)
    assert matcher.accept_token(0)
    mask = xg.allocate_token_bitmask(1, 3)
    matcher.fill_next_token_bitmask(mask)
    assert [i for i in range(3) if (int(mask[0, 0]) >> i) & 1] == [0, 1, 2]
    assert matcher.accept_token(2) and matcher.is_terminated()


def test_captures_through_enclosing_rules_survive_printing():
    grammar = xg.Grammar.from_lark(
        'start[capture="o"]: mid\nmid[capture="m"]: "<" r\nr[capture="i", stop="<end>"]: TEXT\n'
        + TEXT
    )
    printed = str(grammar)
    assert "end_only" in printed
    for again in (
        grammar,
        xg.Grammar.from_ebnf(printed),
        xg.Grammar.deserialize_json(grammar.serialize_json()),
    ):
        assert captures(again, "<ab") == [("i", b"ab"), ("m", b"<ab"), ("o", b"<ab")]
        assert captures(again, "<ab<end>") == [("i", b"ab"), ("m", b"<ab"), ("o", b"<ab")]
