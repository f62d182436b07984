"""Built-in model formats (xg2_jax.get_model_structural_tag) on real vocabularies.

For every format, complete assistant turns written the way the model writes them (reasoning,
text, one and several tool calls; see model_format_cases.py) are accepted token by token,
each token allowed by the mask first, and the turn ends with the vocabulary's end-of-turn
token. Malformed turns (unknown tool, bad or malformed arguments, missing end tag, trigger
text inside excluded regions, calls against tool_choice) are rejected: some token is refused,
or the matcher has not terminated after the end-of-turn token.

Special-token strings ([TOOL_CALLS], <|eot_id|>, <|im_end|>, ...) become their single special
ids; the text between them is tokenized greedily. Skipped until the native structural-tag
compiler (GrammarCompiler.compile_structural_tag) is present.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import mask_row, tokenize
from model_format_cases import (
    ALL_CASES,
    RENDERERS,
    TOOLS,
    Case,
    load_vocab_file,
    special_token_ids,
    tokenize_with_specials,
)

import xg2_jax as xg

if not hasattr(xg.GrammarCompiler, "compile_structural_tag"):
    pytest.skip("native structural tags (GrammarCompiler.compile_structural_tag) not built yet",
                allow_module_level=True)


class _Vocab:
    """A vocabulary file as a TokenizerInfo, its compiler, special-token ids and tokenizer."""

    def __init__(self, path):
        self.tokenizer = xg.TokenizerInfo.from_vocab_file(path)
        self.compiler = xg.GrammarCompiler(self.tokenizer)
        self.specials = special_token_ids(load_vocab_file(path))
        self.compiled: dict[str, xg.CompiledGrammar] = {}

    def ids(self, text: str) -> list[int]:
        return tokenize_with_specials(text, self.specials,
                                      lambda data: tokenize(self.tokenizer, data.decode("utf-8")))

    def compile(self, tag: xg.StructuralTag) -> xg.CompiledGrammar:
        key = json.dumps(tag.to_dict(), sort_keys=True)
        if key not in self.compiled:
            self.compiled[key] = self.compiler.compile_structural_tag(tag)
        return self.compiled[key]


@pytest.fixture(scope="module")
def vocabs(vocab_path):
    cache: dict[str, _Vocab] = {}

    def get(name: str) -> _Vocab:
        if name not in cache:
            cache[name] = _Vocab(vocab_path(name))
        return cache[name]
    return get


def run_case(case: Case, vocab: _Vocab, *, check_masks: bool) -> tuple[bool, str]:
    """Feeds the case's tokens; returns (accepted and terminated, where it stopped)."""
    renderer = RENDERERS[case.model]
    tag = xg.get_model_structural_tag(case.model_name, TOOLS, **case.kwargs)
    matcher = xg.GrammarMatcher(vocab.compile(tag))
    ids = vocab.ids(case.text + (renderer.eos if case.add_eos else ""))
    size = vocab.tokenizer.vocab_size
    for i, tid in enumerate(ids):
        if check_masks:
            row = mask_row(matcher, size)
            if not (int(row[tid >> 5]) >> (tid & 31)) & 1:
                return False, f"token {i} ({tid}) masked out"
        if not matcher.accept_token(tid):
            return False, f"token {i} ({tid}) refused"
    if not matcher.is_terminated():
        return False, "not terminated after the end-of-turn token"
    return True, "terminated"


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.ok], ids=str)
def test_valid_turn_is_accepted(case, vocabs):
    ok, where = run_case(case, vocabs(RENDERERS[case.model].vocab), check_masks=True)
    assert ok, f"{case}: {where}\n{case.text!r}"


@pytest.mark.parametrize("case", [c for c in ALL_CASES if not c.ok], ids=str)
def test_malformed_turn_is_rejected(case, vocabs):
    ok, where = run_case(case, vocabs(RENDERERS[case.model].vocab), check_masks=False)
    assert not ok, f"{case}: accepted\n{case.text!r}"


def test_special_tokens_are_single_ids(vocabs):
    """The cases really use the special ids: [TOOL_CALLS] in Tekken and the v3 SentencePiece
    model, <|eot_id|> in Llama-3, <|im_end|> in Qwen3."""
    assert vocabs("tekken_240911").ids("[TOOL_CALLS][")[0] == 9
    assert vocabs("mistral_v3_spm").ids("[TOOL_CALLS][")[0] == 5
    assert vocabs("llama3").ids("hi<|eot_id|>")[-1] == 128009
    assert vocabs("qwen3").ids("hi<|im_end|>")[-1] == 151645


def test_mistral_tool_calls_spelled_as_text_is_not_a_call(vocabs):
    """With tool_choice="required", the call list written after "[TOOL_CALLS]" spelled with
    ordinary tokens is refused; only the special id starts the list."""
    vocab = vocabs("tekken_240911")
    matcher = xg.GrammarMatcher(vocab.compile(
        xg.get_model_structural_tag("mistral", TOOLS, tool_choice="required")))
    body = '[{"name": "get_weather", "arguments": {"city": "Paris"}}]'
    plain = tokenize(vocab.tokenizer, "[TOOL_CALLS]" + body) + [2]
    assert 9 not in plain
    assert not (all(matcher.accept_token(t) for t in plain) and matcher.is_terminated())
    matcher = xg.GrammarMatcher(vocab.compile(
        xg.get_model_structural_tag("mistral", TOOLS, tool_choice="required")))
    assert all(matcher.accept_token(t) for t in [9, *tokenize(vocab.tokenizer, body), 2])
    assert matcher.is_terminated()


def test_llama3_special_token_inside_json_is_refused(vocabs):
    """A special id (Llama-3.1's <|python_tag|> slot, 128010) cannot appear in the arguments."""
    vocab = vocabs("llama3")
    matcher = xg.GrammarMatcher(vocab.compile(xg.get_model_structural_tag("llama3", TOOLS)))
    for tid in vocab.ids('{"name": "get_weather", "parameters": {"city": "'):
        assert matcher.accept_token(tid)
    assert not matcher.accept_token(128010)


@pytest.mark.parametrize("model", ["qwen3", "deepseek_v3.2", "harmony", "glm4"])
def test_accept_string_matches_tokens(model, vocabs):
    """accept_string on the whole text agrees with the token-by-token run."""
    case = next(c for c in ALL_CASES if c.model == model and c.name == "one_call")
    vocab = vocabs(RENDERERS[model].vocab)
    matcher = xg.GrammarMatcher(vocab.compile(
        xg.get_model_structural_tag(model, TOOLS, **case.kwargs)))
    assert matcher.accept_string(case.text)
    assert matcher.is_completed()


_TWO_CALLS = {m: next((c for c in ALL_CASES if c.model == m and c.ok and c.name == "two_calls"),
                      next(c for c in ALL_CASES if c.model == m and c.ok)) for m in RENDERERS}


@pytest.mark.parametrize("model", sorted(_TWO_CALLS))
def test_lazy_and_pool_masks_equal_eager_for_builtin_formats(model, vocabs):
    """Every built-in format, along a turn with tool calls: masks of an eager compile, a lazy
    one (entries built on first use) and one served from the warm cross-grammar pool and
    automaton cache are identical."""
    case = _TWO_CALLS[model]
    vocab = vocabs(RENDERERS[model].vocab)
    tag = xg.get_model_structural_tag(case.model_name, TOOLS, **case.kwargs)
    xg.clear_cross_grammar_cache()
    eager = xg.GrammarCompiler(vocab.tokenizer).compile_structural_tag(tag)
    lazy = xg.GrammarCompiler(vocab.tokenizer).compile_structural_tag(tag, lazy=True)
    pooled = xg.GrammarCompiler(vocab.tokenizer).compile_structural_tag(tag)
    matchers = [xg.GrammarMatcher(c) for c in (eager, lazy, pooled)]
    size = vocab.tokenizer.vocab_size
    for tid in vocab.ids(case.text + RENDERERS[model].eos) + [None]:
        if matchers[0].is_terminated():  # a fill after the stop token raises
            break
        rows = [mask_row(m, size) for m in matchers]
        assert all(np.array_equal(rows[0], r) for r in rows[1:])
        if tid is None:
            break
        for m in matchers:
            assert m.accept_token(tid)
