"""Token-level structural tag formats as xgrammar 0.2.9 defines them: `token`, `exclude_token`,
`any_tokens` (with `max_tokens`), `token_triggered_tags`, `token_dispatch` and tags whose begin
or end is a token. Every token is matched by id, so a token's text spelled by other tokens does
not count; the formats inside a tag whose end is a token leave that token out. Each case checks
that the mask and accept_token agree over the whole vocabulary at every step."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import mask_row

import xg2_jax as xg

# Plain (non-special) tokens, so that reading by id rather than by text is what is tested.
VOCAB = ["<begin>", "x", "y", "<end>", "<eos>", "xy", "<", "begin>", "<go>", "z"]
EOS = VOCAB.index("<eos>")


def _tag(fmt: dict) -> dict:
    return {"type": "structural_tag", "format": fmt}


def _tok(t: int | str) -> dict:
    return {"type": "token", "token": t}


@pytest.fixture(scope="module")
def compiler():
    return xg.GrammarCompiler(xg.TokenizerInfo(VOCAB, stop_token_ids=[EOS]), cache_enabled=False)


def _allowed(m: xg.GrammarMatcher) -> set[int]:
    bits = np.unpackbits(mask_row(m, len(VOCAB)).view(np.uint8), bitorder="little")[:len(VOCAB)]
    return {i for i in range(len(VOCAB)) if bits[i]}


def _run(compiled: xg.CompiledGrammar, tokens: list[str]) -> tuple[bool, list[set[int]]]:
    """Accepts the tokens one by one, checking at each step that the mask and accept_token agree
    on every id; returns (all accepted and complete, the allowed set before each token)."""
    m = xg.GrammarMatcher(compiled)
    seen = []
    for name in tokens:
        allowed = _allowed(m)
        for t in range(len(VOCAB)):
            assert m.fork().accept_token(t) == (t in allowed), (name, VOCAB[t])
        seen.append(allowed)
        if VOCAB.index(name) not in allowed:
            return False, seen
        assert m.accept_token(VOCAB.index(name))
    return m.is_completed(), seen


def _ids(*names: str) -> set[int]:
    return {VOCAB.index(n) for n in names}


ALL_BUT_EOS = set(range(len(VOCAB))) - {EOS}


def test_token_begin_and_end_are_read_by_id(compiler):
    fmt = {"type": "tag", "begin": _tok("<begin>"), "content": {"type": "const_string", "value": "xy"},
           "end": _tok(3)}
    compiled = compiler.compile_structural_tag(_tag(fmt))
    ok, seen = _run(compiled, ["<begin>", "xy", "<end>"])
    assert ok and seen[0] == _ids("<begin>") and seen[2] == _ids("<end>")
    assert _run(compiled, ["<begin>", "x", "y", "<end>"])[0]
    # "<" "begin>" spells the begin's text with other tokens: not the token.
    assert not _run(compiled, ["<", "begin>"])[0]
    assert not xg.GrammarMatcher(compiled).accept_string("<begin>")
    assert "Token(0)" in str(compiled.grammar) and "Token(3)" in str(compiled.grammar)


def test_exclude_token_is_one_token_and_leaves_out_the_end_token(compiler):
    fmt = {"type": "tag", "begin": _tok("<begin>"), "content": {"type": "exclude_token", "exclude_tokens": ["z"]},
           "end": _tok("<end>")}
    compiled = compiler.compile_structural_tag(_tag(fmt))
    ok, seen = _run(compiled, ["<begin>", "xy", "<end>"])
    assert ok and seen[1] == ALL_BUT_EOS - _ids("z", "<end>") and seen[2] == _ids("<end>")
    assert not _run(compiled, ["<begin>", "<end>"])[0]          # exactly one token
    assert not _run(compiled, ["<begin>", "x", "y", "<end>"])[0]
    assert str(xg.Grammar.from_structural_tag(_tag({"type": "exclude_token"}))).strip() == "root ::= ExcludeToken()"


@pytest.mark.parametrize("budget", [None, 0, 1, 2])
def test_any_tokens_max_tokens_is_exact(compiler, budget):
    content = {"type": "any_tokens", "exclude_tokens": [9]}
    if budget is not None:
        content["max_tokens"] = budget
    fmt = {"type": "tag", "begin": _tok(0), "content": content, "end": _tok(3)}
    compiled = compiler.compile_structural_tag(_tag(fmt))
    for n in range(4):
        body = ["x", "<go>", "xy"][:n]
        ok, seen = _run(compiled, ["<begin>", *body, "<end>"])
        fits = budget is None or n <= budget
        assert ok == fits, (budget, n)
        if fits:
            assert seen[-1] == (_ids("<end>") if n == budget else ALL_BUT_EOS - _ids("z"))
    assert not _run(compiled, ["<begin>", "z", "<end>"])[0]


def test_any_tokens_budget_outside_a_tag(compiler):
    compiled = compiler.compile_structural_tag(_tag({"type": "any_tokens", "max_tokens": 2}))
    ok, seen = _run(compiled, ["y", "<begin>"])
    assert ok and seen[0] == set(range(len(VOCAB)))             # a token, or the end
    m = xg.GrammarMatcher(compiled)
    assert m.accept_token(1) and m.accept_token(2)
    assert _allowed(m) == {EOS}                                  # budget spent: only the end
    m.rollback(1)
    assert _allowed(m) == set(range(len(VOCAB)))
    assert "{0,2}" in str(compiled.grammar)


def _triggered(**options) -> dict:
    tags = [{"type": "tag", "begin": _tok("<go>"), "content": {"type": "const_string", "value": "xy"},
             "end": _tok("<end>")}]
    return {"type": "token_triggered_tags", "trigger_tokens": ["<go>"], "tags": tags, **options}


def test_token_triggered_tags_dispatch_on_the_trigger_token(compiler):
    compiled = compiler.compile_structural_tag(_tag(_triggered(exclude_tokens=["z"])))
    ok, seen = _run(compiled, ["x", "<", "<go>", "x", "y", "<end>", "y", "<go>", "xy", "<end>"])
    assert ok
    assert seen[0] == ALL_BUT_EOS - _ids("z") | {EOS}         # free tokens, or the end
    assert seen[3] == _ids("x", "xy") and seen[5] == _ids("<end>")
    assert not _run(compiled, ["z"])[0]
    assert not _run(compiled, ["<go>", "z"])[0]


def test_token_triggered_tags_options(compiler):
    once = compiler.compile_structural_tag(_tag(_triggered(stop_after_first=True)))
    assert _run(once, ["x", "<go>", "xy", "<end>"])[0]
    assert not _run(once, ["<go>", "xy", "<end>", "x"])[0]
    first = compiler.compile_structural_tag(_tag(_triggered(at_least_one=True)))
    ok, seen = _run(first, ["<go>", "xy", "<end>", "x", "<go>", "xy", "<end>"])
    assert ok and seen[0] == _ids("<go>")
    assert not _run(first, ["x"])[0]
    one = compiler.compile_structural_tag(_tag(_triggered(at_least_one=True, stop_after_first=True)))
    assert _run(one, ["<go>", "xy", "<end>"])[0]
    assert not _run(one, ["<go>", "xy", "<end>", "x"])[0]


def test_token_triggered_tags_inside_a_token_tag_leave_out_its_end(compiler):
    fmt = {"type": "tag", "begin": _tok("<begin>"), "content": _triggered(), "end": _tok("z")}
    compiled = compiler.compile_structural_tag(_tag(fmt))
    assert _run(compiled, ["<begin>", "x", "<go>", "xy", "<end>", "z"])[0]
    # z is the outer end and never a free token: it ends the tag, and nothing follows.
    assert _run(compiled, ["<begin>", "z"])[0] and not _run(compiled, ["<begin>", "z", "x"])[0]
    assert "ExcludeToken(8, 9)" in str(compiled.grammar)


def test_token_dispatch(compiler):
    fmt = {"type": "token_dispatch", "rules": [["<go>", {"type": "const_string", "value": "y"}]],
           "exclude_tokens": ["z"]}
    compiled = compiler.compile_structural_tag(_tag(fmt))
    ok, seen = _run(compiled, ["x", "<go>", "y", "xy", "<go>", "y"])
    assert ok and seen[2] == _ids("y")
    assert not _run(compiled, ["z"])[0]
    once = compiler.compile_structural_tag(_tag({**fmt, "loop": False}))
    assert _run(once, ["x", "<go>", "y"])[0] and not _run(once, ["<go>", "y", "x"])[0]


def test_ids_outside_the_vocabulary_fail_at_compile(compiler):
    grammar = xg.Grammar.from_structural_tag(_tag({"type": "token", "token": 42}))
    with pytest.raises(xg.GrammarError):
        compiler.compile_grammar(grammar)


@pytest.mark.parametrize("fmt, path, reason", [
    ({"type": "triggered_tags", "triggers": ["<"], "tags": [
        {"begin": _tok(6), "content": {"type": "any_text"}, "end": ">"}]}, "format.tags[0].begin", "string begin"),
    ({"type": "token_triggered_tags", "trigger_tokens": [8], "tags": [
        {"begin": "<go>", "content": {"type": "any_text"}, "end": ">"}]}, "format.tags[0].begin", "token format begin"),
    ({"type": "token_triggered_tags", "trigger_tokens": [8], "tags": [
        {"begin": _tok(1), "content": {"type": "any_text"}, "end": ">"}]}, "format.tags[0].begin", "not a trigger"),
    ({"type": "token_triggered_tags", "trigger_tokens": [8, 1], "tags": [
        {"begin": _tok(8), "content": {"type": "any_text"}, "end": ">"}]}, "format.trigger_tokens[1]", "starts no tag"),
    (_triggered(exclude_tokens=["<go>"]), "format.trigger_tokens[0]", "also excluded"),
    ({"type": "token_dispatch", "rules": [[8, {"type": "any_text"}]], "exclude_tokens": [8]},
     "format.rules[0][0]", "also in exclude_tokens"),
    ({"type": "token_dispatch", "rules": [["<go>"]]}, "format.rules[0]", "[token, format] pair"),
    ({"type": "tag", "begin": _tok("<eos>"), "content": {"type": "any_text"}, "end": "."}, "format.begin.token",
     "stop token"),
    ({"type": "tag", "begin": {"type": "token"}, "content": {"type": "any_text"}, "end": "."}, "format.begin.token",
     "missing"),
    ({"type": "any_tokens", "exclude_tokens": ["nope"]}, "format.exclude_tokens[0]", "unknown token string"),
    ({"type": "any_tokens", "max_tokens": 1.5}, "format.max_tokens", "non-negative 32-bit integer"),
])
def test_errors_name_the_field(fmt, path, reason):
    tok = xg.TokenizerInfo(VOCAB, stop_token_ids=[EOS])
    with pytest.raises(xg.StructuralTagError) as info:
        xg.Grammar.from_structural_tag(_tag(fmt), tokenizer_info=tok)
    message = str(info.value)
    assert message.startswith("Invalid structural tag error: " + path + ":") and reason in message, message


def test_python_builders_carry_max_tokens(compiler):
    fmt = xg.TagFormat(begin=xg.TokenFormat(token=0), content=xg.AnyTokensFormat(max_tokens=1),
                       end=xg.TokenFormat(token="<end>"))
    assert fmt.to_dict()["content"] == {"type": "any_tokens", "exclude_tokens": [], "max_tokens": 1}
    compiled = compiler.compile_structural_tag(xg.StructuralTag(format=fmt))
    assert _run(compiled, ["<begin>", "x", "<end>"])[0] and not _run(compiled, ["<begin>", "x", "y", "<end>"])[0]
    assert "max_tokens" not in xg.AnyTokensFormat().to_dict()


# ------------------------------------------------- free regions entered in the middle of a token

MID_VOCAB = ["<s>", "</s>", "<tool>", "<end>", "\n\n", "\n\n\n", "hi", "<", "<hi", "\n\n\n\n", "a<hi"]
NN = {"type": "const_string", "value": "\n\n"}
ANY = {"type": "any_tokens", "exclude_tokens": ["<end>"]}


def _mid_token_case(elements, vocab=MID_VOCAB):
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[1])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_structural_tag(
        _tag({"type": "sequence", "elements": elements})))
    bits = np.unpackbits(mask_row(m, len(vocab)).view(np.uint8), bitorder="little")[:len(vocab)]
    allowed = {i for i in range(len(vocab)) if bits[i]}
    assert allowed == {i for i in range(len(vocab)) if m.fork().accept_token(i)}
    return m, allowed


@pytest.mark.parametrize("elements, token, taken", [
    # "\n\n\n" finishes the literal with "\n\n" and is the region's first token, whole.
    ([NN, ANY, _tok("<end>")], "\n\n\n", True),
    # The region follows the rule holding the literal.
    ([{"type": "or", "elements": [NN, {"type": "const_string", "value": "x"}]}, ANY], "\n\n\n", True),
    # The token must be one the region takes: "<end>" is excluded there, "<hi" is not.
    ([{"type": "const_string", "value": "<"}, ANY], "<end>", False),
    ([{"type": "const_string", "value": "<"}, ANY], "<hi", True),
    # A token excluded by id does not take another token down with it.
    ([NN, {"type": "any_tokens", "exclude_tokens": ["\n\n\n"]}, _tok("<end>")], "\n\n\n\n", True),
    # Two text bytes before the region: "a<" then the rest of "a<hi".
    ([{"type": "const_string", "value": "a<"}, ANY], "a<hi", True),
    # A token edge starts at a token boundary: it is never entered mid-token.
    ([{"type": "const_string", "value": "<"}, _tok("<hi")], "<hi", False),
])
def test_free_region_entered_mid_token(elements, token, taken):
    m, allowed = _mid_token_case(elements)
    token_id = MID_VOCAB.index(token)
    assert (token_id in allowed) == taken
    assert m.accept_token(token_id) == taken
    if taken:  # the region goes on after the token
        assert m.accept_token(MID_VOCAB.index("hi"))
        m.rollback(2)
        assert _mid_token_case(elements)[1] == allowed


def test_mid_token_entry_on_a_real_vocabulary(gpt2_tokenizer):
    # After the text "Answer", a token such as ":\n" finishes the literal ":" and is the
    # region's first token.
    fmt = {"type": "sequence", "elements": [{"type": "const_string", "value": "Answer:"},
                                             {"type": "any_tokens", "max_tokens": 3}]}
    m = xg.GrammarMatcher(xg.GrammarCompiler(gpt2_tokenizer).compile_structural_tag(_tag(fmt)))
    assert m.accept_string("Answer")
    row = mask_row(m, gpt2_tokenizer.vocab_size)
    bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:gpt2_tokenizer.vocab_size]
    allowed = set(np.flatnonzero(bits).tolist())
    entering = [i for i, t in enumerate(gpt2_tokenizer.decoded_vocab) if t.startswith(b":") and len(t) > 1]
    assert entering and allowed == {gpt2_tokenizer.decoded_vocab.index(b":"), *entering}
    rng = np.random.default_rng(0)
    for t in [*entering[:200], *rng.choice(gpt2_tokenizer.vocab_size, 300, replace=False).tolist()]:
        assert m.fork().accept_token(int(t)) == (t in allowed), t


def test_tokens_a_free_region_excludes_may_still_enter_the_next_one_mid_token(gpt2_tokenizer):
    # In the first region every token but "</" and "<" is allowed by id (so the fill tries the
    # few left one by one): "<" is the literal, and "</" finishes it and enters the second
    # region mid-token. Every id's bit equals accept_token.
    vocab = gpt2_tokenizer.decoded_vocab
    lt, lt_slash = vocab.index(b"<"), vocab.index(b"</")
    fmt = {"type": "sequence", "elements": [
        {"type": "any_tokens", "exclude_tokens": [lt, lt_slash]}, {"type": "const_string", "value": "<"},
        {"type": "any_tokens", "max_tokens": 2}]}
    m = xg.GrammarMatcher(xg.GrammarCompiler(gpt2_tokenizer).compile_structural_tag(_tag(fmt)))
    bits = np.unpackbits(mask_row(m, gpt2_tokenizer.vocab_size).view(np.uint8), bitorder="little")
    bits = bits[:gpt2_tokenizer.vocab_size]
    assert bits[lt] and bits[lt_slash]
    for t in range(gpt2_tokenizer.vocab_size):
        assert m.fork().accept_token(t) == bool(bits[t]), t


def test_free_text_before_a_token_begin_is_not_walked(llama3_tokenizer):
    # The region is reached from the free text only through a token read by id: no text
    # prefix can enter it, so the walk is skipped and the mask stays the free text's.
    header = llama3_tokenizer.decoded_vocab.index(b"<|start_header_id|>")
    tag = {"type": "tag", "begin": _tok(header), "content": {"type": "any_tokens"}, "end": "."}
    fmt = {"type": "triggered_tags", "triggers": ["@"], "tags": [
        {"begin": "@call", "content": {"type": "const_string", "value": "()"}, "end": ";"}]}
    compiled = xg.GrammarCompiler(llama3_tokenizer).compile_structural_tag(
        _tag({"type": "sequence", "elements": [fmt, {"type": "optional", "content": tag}]}))
    m = xg.GrammarMatcher(compiled)
    assert m.accept_string("some text")
    row = mask_row(m, llama3_tokenizer.vocab_size)
    for t in (0, 13, 198, header, 1000, 20000):
        assert m.fork().accept_token(t) == bool((int(row[t // 32]) >> (t % 32)) & 1), t


@pytest.mark.parametrize("elements", [
    [NN, ANY, _tok("<end>")],
    [{"type": "or", "elements": [{"type": "const_string", "value": "<"}, NN]}, ANY, _tok("<end>")],
    [{"type": "triggered_tags", "triggers": ["<t"], "tags": [
        {"begin": "<tool>", "content": {"type": "any_tokens", "max_tokens": 2}, "end": "\n\n"}]}],
    [{"type": "regex", "pattern": "[a-z<]+"}, {"type": "any_tokens", "exclude_tokens": ["a<hi"], "max_tokens": 2}],
])
def test_mask_agrees_with_accept_along_random_paths(elements):
    vocab = [*MID_VOCAB, "<t", "ool>", "<tool>hi", "ool>\n\n\n", "x"]
    tok = xg.TokenizerInfo(vocab, stop_token_ids=[1])
    compiled = xg.GrammarCompiler(tok).compile_structural_tag(_tag({"type": "sequence", "elements": elements}))
    rng = np.random.default_rng(len(elements))
    for _ in range(30):
        m = xg.GrammarMatcher(compiled)
        for _ in range(6):
            if m.is_terminated():
                break
            bits = np.unpackbits(mask_row(m, len(vocab)).view(np.uint8), bitorder="little")[:len(vocab)]
            allowed = [i for i in range(len(vocab)) if bits[i]]
            assert allowed == [i for i in range(len(vocab)) if m.fork().accept_token(i)]
            if not allowed:
                break
            assert m.accept_token(int(rng.choice(allowed)))
