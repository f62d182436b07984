"""Token-level EBNF (xgrammar 0.2.9): ``Token(ids...)``, ``ExcludeToken(ids...)`` and
``TokenTagDispatch(...)`` match tokens by id, on real vocabularies (GPT-2, Llama-3)."""

from __future__ import annotations

import random

import pytest

import xg2_jax as xg
from xg2_jax.testing import _get_masked_tokens_from_bitmask

VOCABS = ["gpt2_tokenizer", "llama3_tokenizer"]


@pytest.fixture(params=VOCABS)
def tokenizer(request):
    return request.getfixturevalue(request.param)


def allowed_ids(matcher, tokenizer) -> set[int]:
    bitmask = xg.allocate_token_bitmask(1, tokenizer.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return set(range(tokenizer.vocab_size)) - set(_get_masked_tokens_from_bitmask(bitmask, tokenizer.vocab_size))


def check_mask_agrees(matcher, tokenizer, extra_forbidden=(), sample=300, seed=0) -> set[int]:
    """Every allowed id is accepted (then rolled back); a sample of forbidden ones is refused."""
    allowed = allowed_ids(matcher, tokenizer)
    for token in sorted(allowed):
        assert matcher.accept_token(token), token
        matcher.rollback(1)
    forbidden = sorted(set(range(tokenizer.num_tokens)) - allowed)
    probe = random.Random(seed).sample(forbidden, min(sample, len(forbidden))) + list(extra_forbidden)
    for token in probe:
        assert token not in allowed
        assert not matcher.accept_token(token), token
    return allowed


def ids_of(tokenizer, *texts: str) -> list[int]:
    vocab = tokenizer.decoded_vocab
    index = {bytes(t): i for i, t in enumerate(vocab)}
    return [index[t.encode()] for t in texts]


def test_token_set_mask_is_exactly_the_ids(tokenizer):
    a, b = ids_of(tokenizer, "hello", "world")
    specials = [t for t in tokenizer.special_token_ids if t not in tokenizer.stop_token_ids][-1:]
    ids = ", ".join(str(t) for t in [a, b, *specials])
    compiled = xg.GrammarCompiler(tokenizer).compile_grammar(f'root ::= Token({ids}) "!"')
    matcher = xg.GrammarMatcher(compiled)
    assert check_mask_agrees(matcher, tokenizer) == {a, b, *specials}
    # Another token with the same text would not do: the element reads ids.
    assert matcher.accept_token(b)
    assert allowed_ids(matcher, tokenizer) == set(ids_of(tokenizer, "!")) | {
        t for t in range(tokenizer.num_tokens) if bytes(tokenizer.decoded_vocab[t]).startswith(b"!")
    } & allowed_ids(matcher, tokenizer)
    assert matcher.accept_string("!")
    assert matcher.is_completed()


def test_exclude_token_allows_every_other_id(tokenizer):
    excluded = ids_of(tokenizer, "hello", "world")
    compiled = xg.GrammarCompiler(tokenizer).compile_grammar(f'root ::= "<" ExcludeToken({excluded[0]}, {excluded[1]}) ">"')
    matcher = xg.GrammarMatcher(compiled)
    assert matcher.accept_string("<")
    allowed = check_mask_agrees(matcher, tokenizer, extra_forbidden=excluded)
    stops = set(tokenizer.stop_token_ids)
    assert allowed == set(range(tokenizer.num_tokens)) - set(excluded) - stops


def test_exclude_token_without_ids_is_any_token(tokenizer):
    """ExcludeToken() (how xgrammar prints exclude_token / any_tokens without exclusions) parses
    back: any one non-stop token."""
    grammar = xg.Grammar.from_ebnf('root ::= "<" ExcludeToken() ">"')
    assert str(xg.Grammar.from_ebnf(str(grammar))) == str(grammar)
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tokenizer).compile_grammar(grammar))
    assert matcher.accept_string("<")
    assert check_mask_agrees(matcher, tokenizer) == set(range(tokenizer.num_tokens)) - set(tokenizer.stop_token_ids)


def test_token_tag_dispatch_triggers_and_excludes(tokenizer):
    trigger, body, excluded = ids_of(tokenizer, "call", "x", "stop")
    grammar = f"""root ::= TokenTagDispatch(({trigger}, args), excludes=({excluded},))
args ::= Token({body}) "("
"""
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tokenizer).compile_grammar(grammar))
    free = check_mask_agrees(matcher, tokenizer, extra_forbidden=[excluded])
    assert trigger in free and excluded not in free
    assert matcher.accept_token(trigger)
    assert check_mask_agrees(matcher, tokenizer) == {body}
    assert matcher.accept_token(body)
    assert matcher.accept_string("(")
    assert allowed_ids(matcher, tokenizer) == free  # the loop: free tokens again


def test_rollback_restores_masks(tokenizer):
    a, b = ids_of(tokenizer, "hello", "world")
    grammar = f'root ::= (Token({a}) | ExcludeToken({a}, {b}) "!")+'
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tokenizer).compile_grammar(grammar))
    masks = [allowed_ids(matcher, tokenizer)]
    for token in [a, ids_of(tokenizer, "cat")[0], ids_of(tokenizer, "!")[0], a]:
        assert matcher.accept_token(token), token
        masks.append(allowed_ids(matcher, tokenizer))
    for expected in reversed(masks[:-1]):
        matcher.rollback(1)
        assert allowed_ids(matcher, tokenizer) == expected


def test_strings_never_match_token_elements(tokenizer):
    (a,) = ids_of(tokenizer, "hello")
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tokenizer).compile_grammar(f"root ::= Token({a})"))
    assert not matcher.accept_string("hello")
    assert not matcher.accept_string(b"\xff\x00\x00" + bytes([a & 0xFF]))
    assert matcher.accept_token(a)


GRAMMARS = [
    'root ::= Token(3, 1, 2, 1, 3) "a"',
    'root ::= "<" ExcludeToken(9, 4) ">"',
    "b ::= Token(4)\nroot ::= TokenTagDispatch((3, b), (5, b), loop_after_dispatch=false, excludes=(7,))",
]


@pytest.mark.parametrize("ebnf", GRAMMARS)
def test_printing_and_serialization_keep_token_elements(ebnf, gpt2_tokenizer):
    grammar = xg.Grammar.from_ebnf(ebnf)
    printed = str(grammar)
    assert "Token(" in printed
    assert str(xg.Grammar.from_ebnf(printed)) == printed
    assert str(xg.Grammar.deserialize_json(grammar.serialize_json())) == printed
    compiled = xg.GrammarCompiler(gpt2_tokenizer).compile_grammar(grammar)
    for restored in (
        xg.CompiledGrammar.deserialize_json(compiled.serialize_json(), gpt2_tokenizer),
        xg.CompiledGrammar.deserialize(compiled.serialize(), gpt2_tokenizer),
    ):
        assert str(restored.grammar) == printed
        assert allowed_ids(xg.GrammarMatcher(restored), gpt2_tokenizer) == allowed_ids(
            xg.GrammarMatcher(compiled), gpt2_tokenizer
        )


def test_printed_form_and_dedup():
    assert str(xg.Grammar.from_ebnf("root ::= Token(3, 1, 2, 1, 3)")).strip() == "root ::= Token(1, 2, 3)"
    assert str(xg.Grammar.from_ebnf("root ::= ExcludeToken(3, 1,)")).strip() == "root ::= ExcludeToken(1, 3)"


def test_cache_key_tells_token_sets_apart(gpt2_tokenizer):
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=True)
    first = compiler.compile_grammar("root ::= Token(4)")
    second = compiler.compile_grammar("root ::= Token(5)")
    excluded = compiler.compile_grammar("root ::= ExcludeToken(4)")
    assert allowed_ids(xg.GrammarMatcher(first), gpt2_tokenizer) == {4}
    assert allowed_ids(xg.GrammarMatcher(second), gpt2_tokenizer) == {5}
    assert 4 not in allowed_ids(xg.GrammarMatcher(excluded), gpt2_tokenizer)


@pytest.mark.parametrize("vocab", VOCABS)
def test_id_outside_the_vocabulary_is_refused_at_compile(vocab, request):
    tokenizer = request.getfixturevalue(vocab)
    grammar = xg.Grammar.from_ebnf(f'root ::= Token(1, {tokenizer.vocab_size}) "a"')
    with pytest.raises(xg.GrammarError, match="out of the vocabulary range"):
        xg.GrammarCompiler(tokenizer).compile_grammar(grammar)


def test_excluded_token_set_mask_is_every_other_id_on_gemma(vocab_path):
    """An ExcludeToken region over Gemma 4's 262,144 ids (four high id bytes): the fill reads
    the middle and low id bytes off the automaton; every id's bit equals accept_token."""
    tokenizer = xg.TokenizerInfo.from_vocab_file(vocab_path("gemma4"))
    n = tokenizer.num_tokens
    # Excluded ids at byte boundaries: the first and last of a middle block and a high block.
    excluded = sorted({5, 255, 256, 65535, 65536, 70000, 131071, 200000, n - 1} - set(tokenizer.stop_token_ids))
    token = 131072 + 300
    compiled = xg.GrammarCompiler(tokenizer).compile_grammar(
        f'root ::= "a" (ExcludeToken({", ".join(map(str, excluded))}) | Token({token}) "b")*')
    matcher = xg.GrammarMatcher(compiled)
    assert matcher.accept_string("a")
    bitmask = xg.allocate_token_bitmask(1, tokenizer.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    allowed = xg.bitmask_to_bool(bitmask[0], tokenizer.vocab_size)
    assert not allowed[excluded].any() and allowed[token]
    for t in range(n):
        assert bool(allowed[t]) == matcher.fork().accept_token(t), t


def test_text_and_id_readings_of_a_token_both_go_on():
    # ")" closes tool_fn as text and is also a free token of `inner` by id: after it both
    # parses go on, so "<o_block>" (excluded only outside `inner`) may follow, and the mask
    # follows the merged parse; rollback leaves the state as before.
    vocab = ["<s>", "</s>", "<outer>", "<inner>", "<o_block>", "<i_block>", "hello", "world", "fn(", ")", "x"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[1])
    grammar = xg.Grammar.from_ebnf(
        'leaf ::= Token(10)\ninner ::= TokenTagDispatch((3, leaf), excludes=(5,))\n'
        'tool_fn ::= "fn(" inner ")"\nroot ::= TokenTagDispatch((2, tool_fn), excludes=(4,))')
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar(grammar))
    for token in [2, 8, 6, 3, 10]:
        assert matcher.accept_token(token)
    before = allowed_ids(matcher, tok)
    assert matcher.accept_token(9)
    after = check_mask_agrees(matcher, tok)
    assert after == set(range(len(vocab)))  # outside: all but 4; inside `inner`: all but 1 and 5
    matcher.rollback(1)
    assert allowed_ids(matcher, tok) == before
    assert matcher.accept_token(9) and matcher.accept_token(4) and not matcher.accept_token(1)
    assert matcher.accept_token(9) and matcher.accept_token(1) and matcher.is_terminated()


@pytest.mark.parametrize("prefix", [[2, 3, 9], [2, 3, 9, 7], [2, 3, 9, 2]])
def test_nullable_dispatch_ends_before_a_token_loop(prefix):
    # `inner` is a TagDispatch over free text: it ends anywhere, also before any text. After
    # token 9 it may be empty, so `mid`'s free tokens follow, <bad> (6) among them: excluded as
    # text inside `inner` and `root`, not as a free token of `mid`. (xgrammar refuses 6 right
    # after token 9 but takes it once `inner` holds text: see docs/XGRAMMAR_COMPAT.md.)
    vocab = ["<s>", "</s>", "<call>", "<mid>", "<skip>", "<end>", "<bad>", "hello", "world", "x", "y", "done"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[1])
    grammar = xg.Grammar.from_ebnf(
        'leaf ::= [a-z]+\ninner ::= TagDispatch(("<end>", leaf), excludes=("<bad>"))\n'
        'mid_body ::= Token(9, 10) inner\nmid ::= TokenTagDispatch((3, mid_body), excludes=(4,))\n'
        'root ::= TagDispatch(("<call>", mid), excludes=("<bad>"))')
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar(grammar))
    assert all(matcher.accept_token(t) for t in prefix)
    assert check_mask_agrees(matcher, tok) == set(range(len(vocab)))
    assert matcher.accept_token(6)
    # In `mid`'s loop (or back in `root` after it): every token, and the stop token ends.
    assert check_mask_agrees(matcher, tok) == set(range(len(vocab)))
    assert matcher.accept_token(1) and matcher.is_terminated()
    outer = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar(grammar))
    assert outer.accept_token(7) and not outer.accept_token(6)  # <bad> as text outside `mid`


def test_by_id_masks_kept_between_steps_equal_fresh_ones(gpt2_tokenizer):
    """A matcher keeps its last by-id result for the same lead-reading states: at every step
    (two regions with other excluded ids, a literal between, a rollback) its mask equals the
    mask of a fresh matcher that replays the same tokens."""
    tok = gpt2_tokenizer
    a, b, dot = ids_of(tok, "hello", "world", ".")
    grammar = f'root ::= ExcludeToken({a}, {dot})* "." ExcludeToken({b})* "!"'
    compiled = xg.GrammarCompiler(tok).compile_grammar(grammar)
    steps = [b, b, a + 1, dot, a, a, b + 1]
    kept = xg.GrammarMatcher(compiled)

    def fresh_after(tokens):
        # Its own compiled grammar: nothing kept or shared from the other matchers.
        fresh = xg.GrammarMatcher(xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar))
        for t in tokens:
            assert fresh.accept_token(t)
        return fresh

    for i, token in enumerate(steps):
        assert (mask_of(kept, tok) == mask_of(fresh_after(steps[:i]), tok)).all(), i
        assert kept.accept_token(token), (i, token)
    kept.rollback(3)  # back in the first region, its states met again
    assert (mask_of(kept, tok) == mask_of(fresh_after(steps[:-3]), tok)).all()


def mask_of(matcher, tokenizer):
    bitmask = xg.allocate_token_bitmask(1, tokenizer.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return bitmask


def test_by_id_results_shared_between_matchers_equal_unshared_ones(gpt2_tokenizer):
    """Matchers of one compiled grammar share by-id results (ByIdTokenCache): filled together on
    threads at different places of two regions, each row equals the mask of a matcher whose
    grammar was compiled apart (nothing shared)."""
    tok = gpt2_tokenizer
    a, b, dot = ids_of(tok, "hello", "world", ".")
    grammar = f'root ::= ExcludeToken({a}, {dot})* "." ExcludeToken({b})* "!"'
    compiled = xg.GrammarCompiler(tok).compile_grammar(grammar)
    prefixes = [[], [b], [b, b], [dot], [b, dot], [dot, a], [dot, a, a], [b, dot, a + 1]]
    matchers = [xg.GrammarMatcher(compiled) for _ in prefixes]
    for matcher, prefix in zip(matchers, prefixes):
        assert all(matcher.accept_token(t) for t in prefix)
    for _ in range(2):  # the second round reads every result from the cache
        bitmask = xg.allocate_token_bitmask(len(matchers), tok.vocab_size)
        xg.BatchGrammarMatcher(max_threads=4).batch_fill_next_token_bitmask(matchers, bitmask)
        for row, prefix in enumerate(prefixes):
            alone = xg.GrammarMatcher(xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar))
            assert all(alone.accept_token(t) for t in prefix)
            assert (bitmask[row] == mask_of(alone, tok)[0]).all(), prefix


def test_shared_by_id_results_are_counted(gpt2_tokenizer):
    """The shared by-id results are bounded and reported: a second matcher in the same region
    reads the first one's result (a hit), and the bytes are within the limit."""
    tok = gpt2_tokenizer
    (a,) = ids_of(tok, "hello")
    compiled = xg.GrammarCompiler(tok).compile_grammar(f'root ::= ExcludeToken({a})* "!"')
    for _ in range(2):
        mask_of(xg.GrammarMatcher(compiled), tok)
    stats = compiled.mask_cache_stats()
    assert stats["by_id_entries"] == 1 and stats["by_id_misses"] == 1 and stats["by_id_hits"] == 1
    assert 0 < stats["by_id_bytes"] <= stats["by_id_limit_bytes"] and stats["by_id_evictions"] == 0


@pytest.mark.parametrize("padding", [0, 37])
@pytest.mark.parametrize("excluded_count", [0, 1, 40, 3000])
@pytest.mark.parametrize("tail", ["", ' "!"'])
def test_free_token_region_flag_and_mask(tokenizer, padding, excluded_count, tail):
    """In a free token region the fill reads only the bitmask words the by-id tokens leave
    open (a few excluded ids) or the whole row (many): either way its flag says whether any id
    of the (padded) vocabulary is forbidden, and the mask is the same at every step."""
    tok = xg.TokenizerInfo(tokenizer.decoded_vocab, vocab_type=tokenizer.vocab_type,
                           vocab_size=tokenizer.num_tokens + padding,
                           stop_token_ids=tokenizer.stop_token_ids)
    step = max(1, tokenizer.num_tokens // max(1, excluded_count))
    excluded = list(range(5, tokenizer.num_tokens, step))[:excluded_count]
    body = f"ExcludeToken({', '.join(map(str, excluded))})*" if excluded else "ExcludeToken()*"
    matcher = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar(f"root ::= {body}{tail}"))
    stops = set(tok.stop_token_ids)
    free = ids_of(tokenizer, "hello")[0]
    for _ in range(3):  # the by-id result is computed, then kept
        bitmask = xg.allocate_token_bitmask(1, tok.vocab_size)
        flag = matcher.fill_next_token_bitmask(bitmask)
        masked = set(_get_masked_tokens_from_bitmask(bitmask, tok.vocab_size))
        # (With a tail the stop tokens are cleared after the by-id tokens set them.)
        assert masked == set(excluded) | set(range(tokenizer.num_tokens, tok.vocab_size)) | (
            stops if tail else set())
        assert flag == bool(masked)
        assert matcher.accept_token(free)
