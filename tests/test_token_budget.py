"""Token budgets (xgrammar's `name[max_tokens=N]` rule attribute and `AnyTextFormat.max_tokens`):
parsing in EBNF and Lark, enforcement by the mask (committed for the accept that follows),
relaxation where the body cannot end, rollback, fork, reset, serialization and the cache key.

The oracle of the randomized tests is an unbudgeted compile of the same grammar (the language)
plus the budget rule written out in Python: once the tokens that put bytes inside the region
reach the budget and the region's text can end there, no token may put another byte inside.
"""

import random
import re

import numpy as np
import pytest

import xg2_jax as xg

VOCAB = ["<", "a", "ab", "b ", " ", "a>", ">", ">1", "1", "ab>1", "<a", "ab ", "b", "<ab ", "</", "t>"]


@pytest.fixture(scope="module")
def tok():
    return xg.TokenizerInfo(VOCAB, stop_token_ids=[])


def compile_ebnf(tok, text):
    return xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(xg.Grammar.from_ebnf(text))


def allowed(matcher, vocab_size):
    mask = xg.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(mask)
    return [i for i in range(vocab_size) if (int(mask[0, i // 32]) >> (i % 32)) & 1]


# Region bodies over [a-z ] (never ">"), and whether the region's text may end at a given point.
BODIES = {
    "[a-z ]*": lambda text: True,
    "[a-z]+": lambda text: len(text) > 0 and " " not in text,
    '([a-z]* " ")+': lambda text: text.endswith(" "),
}
TAILS = ['"1"', '""', '"1"*']


def region_of(text):
    """The text inside the region so far (None before it opens or after it closes)."""
    if not text.startswith("<") or ">" in text:
        return None
    return text[1:]


@pytest.mark.parametrize("body", sorted(BODIES))
@pytest.mark.parametrize("tail", TAILS)
@pytest.mark.parametrize("budget", [0, 1, 2, 3])
def test_random_generation_against_the_budget_rule(tok, body, tail, budget):
    budgeted = compile_ebnf(tok, f'root ::= "<" r ">" {tail}\nr[max_tokens={budget}] ::= {body}')
    language = compile_ebnf(tok, f'root ::= "<" r ">" {tail}\nr ::= {body}')
    can_end = BODIES[body]
    rng = random.Random(f"{body}|{tail}|{budget}")
    for _ in range(15):
        m = xg.GrammarMatcher(budgeted, terminate_without_stop_token=True)
        free = xg.GrammarMatcher(language, terminate_without_stop_token=True)
        text, in_region = "", 0
        for _ in range(12):
            if m.is_terminated():
                break
            mask = allowed(m, len(VOCAB))
            region = region_of(text)
            closes = region is not None and in_region >= budget and can_end(region)
            for t in range(len(VOCAB)):
                f = free.fork()
                in_language = f.accept_token(t)
                adds_to_region = region is not None and not VOCAB[t].startswith(">")
                expected = in_language and not (closes and adds_to_region)
                assert (t in mask) == expected, (text, VOCAB[t], in_region)
                # The mask's verdict is the accept's (the fill's enforcement commits).
                assert m.fork().accept_token(t) == expected, (text, VOCAB[t])
            if not mask:
                break
            t = rng.choice(mask)
            piece = VOCAB[t]
            opens_with_text = region is None and text == "" and len(piece) > 1 and piece[1] != ">"
            if (region is not None and not piece.startswith(">")) or opens_with_text:
                in_region += 1
            assert m.accept_token(t) and free.accept_token(t)
            text += VOCAB[t]
        # Whatever was generated is in the grammar's language.
        check = xg.GrammarMatcher(language, terminate_without_stop_token=True)
        assert check.accept_string(text) or text == ""


def test_budget_closes_any_text_in_a_think_tag():
    vocab = ["<think>", "a", "b", "c", "de", "a</", "</", "think>", "<eos>"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[8])
    tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<think>", "end": "</think>",
                                                "content": {"type": "any_text", "max_tokens": 2}}}
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_structural_tag(tag)
    m = xg.GrammarMatcher(compiled)
    for t in [0, 1, 2]:
        assert m.accept_token(t)
    assert allowed(m, len(vocab)) == [6]          # "</" only: no "a</", no third text token
    assert not m.accept_token(1)
    assert m.accept_token(6) and m.accept_token(7) and m.accept_token(8)
    # A token that ends the text and starts the end tag is the text's second token.
    m = xg.GrammarMatcher(compiled)
    assert m.accept_token(0) and m.accept_token(1)
    assert 5 in allowed(m, len(vocab))
    assert m.accept_token(5) and m.accept_token(7) and m.is_completed()


@pytest.mark.parametrize("budget, deadline", [(2, 4), (2**31 - 1, 2**31 - 1)])
def test_debug_state_shows_the_deadline_without_overflow(budget, deadline):
    # The region opens at token 2 (after "prefix" and "<think>"): its deadline is 2 + budget,
    # read as the largest token index when that sum passes it (never reached, never wrapped).
    vocab = ["prefix", "<think>", "a", "</think>", "<eos>"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[4])
    text = {"type": "tag", "begin": "<think>", "end": "</think>", "content": {"type": "any_text", "max_tokens": budget}}
    fmt = {"type": "sequence", "elements": [{"type": "const_string", "value": "prefix"}, text]}
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_structural_tag(
        {"type": "structural_tag", "format": fmt})
    m = xg.GrammarMatcher(compiled)
    assert "budget_deadline" not in m._debug_print_internal_state()
    assert m.accept_token(0) and m.accept_token(1)
    assert f"budget_deadline={deadline} " in m._debug_print_internal_state()
    assert m.accept_token(2) and m.accept_token(2)
    assert (2 in allowed(m, len(vocab))) == (budget > 2)


def test_zero_budget_text_ends_at_once():
    vocab = ["<think>", "a", "</", "think>"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[])
    tag = {"type": "tag", "begin": "<think>", "end": "</think>", "content": {"type": "any_text", "max_tokens": 0}}
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_structural_tag(
        xg.StructuralTag.model_validate({"type": "structural_tag", "format": tag}))
    m = xg.GrammarMatcher(compiled)
    assert m.accept_token(0)
    assert allowed(m, len(vocab)) == [2]


def test_relaxed_where_the_body_cannot_end(tok, capfd):
    compiled = compile_ebnf(tok, 'root ::= "<" r ">"\nr[max_tokens=1] ::= ([a-z]* " ")+')
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_string("<") and m.accept_token(VOCAB.index("ab"))
    # Mid-word: the body cannot end, so the budget is relaxed (and warned once).
    relaxed = allowed(m, len(VOCAB))
    assert VOCAB.index("a") in relaxed and VOCAB.index(" ") in relaxed and VOCAB.index(">") not in relaxed
    assert "max_tokens" in capfd.readouterr().err
    assert m.accept_token(VOCAB.index("b "))
    # The earliest end: enforced.
    assert allowed(m, len(VOCAB)) == [VOCAB.index(">")]
    allowed(m, len(VOCAB))
    assert capfd.readouterr().err == ""  # once per matcher


def test_bare_accepts_are_not_enforced(tok):
    compiled = compile_ebnf(tok, 'root ::= "<" r ">"\nr[max_tokens=1] ::= [a-z ]*')
    m = xg.GrammarMatcher(compiled)
    # No fill, no enforcement: accept_token alone checks the language.
    assert all(m.accept_token(VOCAB.index(t)) for t in ["<", "a", "b", "a"])
    assert allowed(m, len(VOCAB)) == [VOCAB.index(">")]
    assert not m.accept_token(VOCAB.index("a"))   # after a fill, the budget holds
    assert not m.accept_token(VOCAB.index("a>"))


def test_rollback_fork_and_reset_keep_budget_state(tok):
    compiled = compile_ebnf(tok, 'root ::= "<" r ">"\nr[max_tokens=2] ::= [a-z ]*')
    A, GT = VOCAB.index("a"), VOCAB.index(">")
    m = xg.GrammarMatcher(compiled)
    assert m.accept_token(0) and m.accept_token(A)
    fork = m.fork()
    assert m.accept_token(A)
    assert A not in allowed(m, len(VOCAB))
    m.rollback(1)
    assert A in allowed(m, len(VOCAB))
    assert m.accept_token(A) and A not in allowed(m, len(VOCAB))
    assert fork.accept_token(A) and allowed(fork, len(VOCAB)) == [GT]
    m.reset()
    assert m.accept_token(0) and A in allowed(m, len(VOCAB))


def test_accept_string_is_not_counted(tok):
    compiled = compile_ebnf(tok, 'root ::= "<" r ">"\nr[max_tokens=2] ::= [a-z ]*')
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string("<ab ab ab ")
    assert m.accept_token(1) and m.accept_token(1)
    assert allowed(m, len(VOCAB)) == [VOCAB.index(">")]


def test_each_occurrence_has_its_own_budget(tok):
    compiled = compile_ebnf(tok, 'root ::= ("<" r ">")+\nr[max_tokens=1] ::= [a-z ]*')
    m = xg.GrammarMatcher(compiled)
    for _ in range(3):
        assert m.accept_token(0) and m.accept_token(1)
        assert allowed(m, len(VOCAB)) == [VOCAB.index(">")]
        assert m.accept_token(VOCAB.index(">"))


def test_nested_budgets_take_the_smallest(tok):
    compiled = compile_ebnf(tok, 'root ::= "<" a ">"\na[max_tokens=2] ::= "a" b\nb[max_tokens=9] ::= [a-z ]*')
    m = xg.GrammarMatcher(compiled)
    assert m.accept_token(0) and m.accept_token(1) and m.accept_token(1)
    assert allowed(m, len(VOCAB)) == [VOCAB.index(">")]


def test_budget_follows_the_derivation_not_the_rule(tok):
    # sub is right-recursive (its own rule, on the chart) and shared by a budgeted and a free rule.
    compiled = compile_ebnf(tok, 'root ::= a " " b\na[max_tokens=1] ::= sub\nb ::= sub\nsub ::= [a-z] sub | [a-z]')
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    assert m.accept_token(VOCAB.index("ab"))
    assert allowed(m, len(VOCAB)) == [VOCAB.index(" ")]
    assert m.accept_token(VOCAB.index(" "))
    assert m.accept_token(1) and m.accept_token(1) and m.accept_token(VOCAB.index("ab"))
    assert m.is_completed()


@pytest.mark.parametrize("grammar, first", [
    ('root ::= a | b\na[max_tokens=1] ::= "p" [^x]{0,3} "x"\nb[max_tokens=2] ::= [^x]{0,3} "x"', "ab"),
    ('root ::= a | b\na[max_tokens=1] ::= c "x"\nb[max_tokens=2] ::= c "y"\nc ::= [^xy] [^xy]?', "a"),
])
def test_an_expired_parent_does_not_continue_through_a_shared_child(grammar, first):
    vocab = ["a", "ab", "b", "p", "x", "y", "ax", "ay"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[])
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)
    for t in range(len(vocab)):
        m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        assert m.accept_token(vocab.index(first))
        assert (t in allowed(m, len(vocab))) == m.accept_token(t), vocab[t]


@pytest.mark.parametrize("form, text, printed", [
    ("ebnf", 'root ::= "<" r ">"\nr[max_tokens=3] ::= [a-z]*', "r[max_tokens=3] ::= "),
    ("ebnf", 'root ::= "<" r ">"\nr[temperature=0.5, max_tokens=2147483647] ::= [a-z]*',
     "r[max_tokens=2147483647, temperature=0.5] ::= "),
    ("lark", 'start: "<" r ">"\nr[max_tokens=3]: /[a-z]*/', "r[max_tokens=3] ::= "),
])
def test_printing_serialization_and_cache_key(tok, form, text, printed):
    grammar = xg.Grammar.from_ebnf(text) if form == "ebnf" else xg.Grammar.from_lark(text)
    assert printed in str(grammar)
    again = xg.Grammar.from_ebnf(str(grammar))
    assert str(again) == str(grammar)
    assert str(xg.Grammar.deserialize_json(grammar.serialize_json())) == str(grammar)
    compiler = xg.GrammarCompiler(tok)
    budgeted = compiler.compile_grammar(grammar)
    unbudgeted = compiler.compile_grammar(re.sub(r"\[[^\]]*max_tokens[^\]]*\]", "", str(grammar)))
    assert budgeted is not unbudgeted
    restored = xg.CompiledGrammar.deserialize_json(budgeted.serialize_json(), tok)
    for compiled, limited in ((budgeted, True), (restored, True), (unbudgeted, False)):
        m = xg.GrammarMatcher(compiled)
        assert m.accept_string("<")
        for _ in range(3):
            assert m.accept_token(1)
        if "2147483647" in printed:
            limited = False
        assert (allowed(m, len(VOCAB)) == [VOCAB.index(">")]) == limited


def test_batch_fill_enforces_budgets(tok):
    compiled = compile_ebnf(tok, 'root ::= "<" r ">"\nr[max_tokens=1] ::= [a-z ]*')
    matchers = [xg.GrammarMatcher(compiled) for _ in range(3)]
    for i, m in enumerate(matchers):
        assert m.accept_token(0)
        for _ in range(i):
            assert m.accept_token(1)
    mask = xg.allocate_token_bitmask(3, len(VOCAB))
    xg.BatchGrammarMatcher().batch_fill_next_token_bitmask(matchers, mask)
    rows = [[t for t in range(len(VOCAB)) if (int(mask[r, t // 32]) >> (t % 32)) & 1] for r in range(3)]
    assert VOCAB.index("a") in rows[0]
    assert rows[1] == rows[2] == [VOCAB.index(">")]


def test_reasoning_budget_with_a_real_tokenizer(gpt2_tokenizer):
    budget = 6
    grammar = f'root ::= "<think>" r "</think>" [0-9]+\nr[max_tokens={budget}] ::= [^<]*'
    compiled = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False).compile_grammar(grammar)
    vocab = gpt2_tokenizer.decoded_vocab
    rng = np.random.default_rng(0)
    for _ in range(5):
        m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
        pieces = []
        mask = xg.allocate_token_bitmask(1, gpt2_tokenizer.vocab_size)
        while not m.is_terminated() and len(pieces) < 40:
            m.fill_next_token_bitmask(mask)
            ids = np.flatnonzero(xg.bitmask_to_bool(mask[0], gpt2_tokenizer.vocab_size))
            t = int(rng.choice(ids))
            assert m.accept_token(t)
            pieces.append(vocab[t])
        data = b"".join(pieces)
        # Tokens with a byte between "<think>" and "</think>": at most the budget.
        start = len(b"<think>")
        end = data.find(b"</think>")
        offset, inside = 0, 0
        for p in pieces:
            lo, hi = offset, offset + len(p)
            if hi > start and (end < 0 or lo < end):
                inside += 1
            offset = hi
        assert inside <= budget, data
