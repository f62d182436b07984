"""Large tool sets from BFCL in one Qwen3-style triggered_tags format.

Tool sets of 10, 50 and 200 BFCL functions (converted to JSON Schema by bfcl_lib) compile into
one structural tag (get_model_structural_tag("qwen3", tools, reasoning=False)), and the calls
of the corpus answers that use those tools (one turn per BFCL entry, parallel calls included)
are accepted token by token on the Qwen3 vocabulary, each token allowed by the mask first.
The default run checks the first few entries per set; the slow run checks all of them, and a
500-tool set too. Skipped until the native structural-tag compiler is present.
"""

from __future__ import annotations

import json

import pytest
from bfcl_lib import BFCL_DIR, load_tool_set, render_qwen3_calls
from helpers import mask_row, tokenize
from model_format_cases import load_vocab_file, special_token_ids, tokenize_with_specials

import xg2_jax as xg

if not hasattr(xg.GrammarCompiler, "compile_structural_tag"):
    pytest.skip("native structural tags (GrammarCompiler.compile_structural_tag) not built yet",
                allow_module_level=True)

DEFAULT_ENTRIES = 6        # entries checked per tool set in the default run
EOS = "<|im_end|>"


@pytest.fixture(scope="module")
def qwen3(vocab_path, shared_data):
    if not (BFCL_DIR / "possible_answer").is_dir():
        pytest.skip(f"BFCL data not found at {BFCL_DIR}")
    path = vocab_path("qwen3")
    tok = xg.TokenizerInfo.from_vocab_file(path)
    specials = special_token_ids(load_vocab_file(path))
    compiled: dict[int, tuple] = {}

    def setup(size: int):
        if size not in compiled:
            tools = load_tool_set(size)
            tag = xg.get_model_structural_tag("qwen3", tools.tools, reasoning=False)
            compiled[size] = (tools, xg.GrammarCompiler(tok).compile_structural_tag(tag))
        return compiled[size]

    def ids(text: str) -> list[int]:
        return tokenize_with_specials(text, specials,
                                      lambda data: tokenize(tok, data.decode("utf-8")))
    return tok, setup, ids


def check_entries(qwen3, size: int, limit: int | None) -> int:
    tok, setup, ids = qwen3
    tools, compiled = setup(size)
    assert len(tools.tools) == size
    entries = tools.calls if limit is None else tools.calls[:limit]
    assert entries
    for calls in entries:
        text = "I'll use the tools.\n" + render_qwen3_calls(calls) + EOS
        matcher = xg.GrammarMatcher(compiled)
        for i, tid in enumerate(ids(text)):
            row = mask_row(matcher, tok.vocab_size)
            assert (int(row[tid >> 5]) >> (tid & 31)) & 1, f"{size} tools, token {i}: {calls}"
            assert matcher.accept_token(tid), f"{size} tools, token {i} refused: {calls}"
        assert matcher.is_terminated(), f"{size} tools: not terminated: {calls}"
    return len(entries)


@pytest.mark.parametrize("size", [10, 50, 200])
def test_bfcl_tool_set_accepts_answers(qwen3, size):
    check_entries(qwen3, size, DEFAULT_ENTRIES)


@pytest.mark.parametrize("size", [10, 50, 200])
def test_bfcl_tool_set_rejects_unknown_tool_and_bad_arguments(qwen3, size):
    _, setup, ids = qwen3
    tools, compiled = setup(size)
    name, args = tools.calls[0][0]
    wrong = [
        render_qwen3_calls([("not_a_bfcl_function", args)]),
        render_qwen3_calls([(name, {**args, "__extra__": 1})]),
        "<tool_call>\n" + json.dumps({"name": name, "arguments": args})[:-2] + "\n</tool_call>",
    ]
    for text in wrong:
        matcher = xg.GrammarMatcher(compiled)
        accepted = all(matcher.accept_token(t) for t in ids(text + EOS))
        assert not (accepted and matcher.is_terminated()), text


@pytest.mark.slow
@pytest.mark.parametrize("size", [10, 50, 200, 500])
def test_bfcl_tool_set_accepts_all_answers(qwen3, size):
    assert check_entries(qwen3, size, None) > 0
