"""The default compile mode (lazy=None): a lazy compile whose masks a background build started
by the compile fills in; its masks equal the eager ones at every step, before, during and
after that build, and dropping the grammar mid-build cancels it cleanly."""

from __future__ import annotations

import gc
import random

import numpy as np
import pytest
from helpers import mask_row

import xg2_jax as xg
from xg2_jax._src import compiler as compiler_mod

SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                           "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
                                           "n": {"type": "integer", "minimum": -5, "maximum": 300}},
          "required": ["name"]}


@pytest.fixture(scope="module")
def tok(gpt2_tokenizer):
    return gpt2_tokenizer


def walk_masks(compiled, vocab_size: int, seed: int, steps: int = 40) -> list[np.ndarray]:
    """Masks along a random valid path (the same path for equal masks and seed)."""
    m = xg.GrammarMatcher(compiled)
    rng = random.Random(seed)
    rows = []
    for _ in range(steps):
        row = mask_row(m, vocab_size)
        rows.append(row)
        bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:vocab_size]
        ids = [int(i) for i in np.flatnonzero(bits) if int(i) not in m.stop_token_ids]
        if not ids:
            break
        assert m.accept_token(rng.choice(ids))
    return rows


@pytest.mark.parametrize("wait", [False, True])
def test_default_masks_equal_eager(tok, wait):
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    eager = compiler.compile_json_schema(SCHEMA, lazy=False)
    default = compiler.compile_json_schema(SCHEMA)
    assert default._background is not None and eager._background is None
    if wait:
        assert default._background.wait(timeout=60)
        assert default.mask_cache_stats()["num_entries"] > 0
    for seed in range(3):
        for a, b in zip(walk_masks(eager, tok.vocab_size, seed), walk_masks(default, tok.vocab_size, seed)):
            np.testing.assert_array_equal(a, b)


def test_explicit_lazy_starts_no_build(tok):
    compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_json_schema(SCHEMA, lazy=True)
    assert compiled._background is None
    assert compiled.mask_cache_stats()["num_entries"] == 0


def test_dropping_the_grammar_mid_build(tok, monkeypatch):
    monkeypatch.setattr(compiler_mod, "DEFAULT_BACKGROUND_BUDGET_MS", 10_000.0)
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    for _ in range(3):
        compiled = compiler.compile_builtin_json_grammar()
        del compiled  # cancels and joins the build
        gc.collect()
    m = xg.GrammarMatcher(compiler.compile_builtin_json_grammar())
    assert m.accept_string('{"a": [1, 2]}') and m.is_completed()


WIDE_SCHEMA = {
    "type": "object",
    "properties": {
        **{f"s{i}": {"type": "string", "maxLength": 3 + i} for i in range(8)},
        **{f"a{i}": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99 * (i + 1)},
                     "minItems": 1, "maxItems": 2 + i} for i in range(6)},
        **{f"e{i}": {"enum": [f"v{i}{j}" for j in range(5)]} for i in range(6)},
    },
}


def test_concurrent_fills_during_build_equal_eager(tok, monkeypatch):
    # Fills on several threads while the background build runs: one thread builds each entry
    # and the others wait for it, so every thread's masks still equal the eager ones.
    import threading

    monkeypatch.setattr(compiler_mod, "DEFAULT_BACKGROUND_BUDGET_MS", 10_000.0)
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    eager = compiler.compile_json_schema(WIDE_SCHEMA, lazy=False)
    expected = {seed: walk_masks(eager, tok.vocab_size, seed, steps=60) for seed in range(4)}
    default = compiler.compile_json_schema(WIDE_SCHEMA)
    got: dict[int, list[np.ndarray]] = {}
    errors: list[BaseException] = []

    def walk(seed: int) -> None:
        try:
            got[seed] = walk_masks(default, tok.vocab_size, seed, steps=60)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=walk, args=(seed,)) for seed in expected]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert default._background.wait(timeout=60)
    for seed, rows in expected.items():
        assert len(got[seed]) == len(rows)
        for a, b in zip(rows, got[seed]):
            np.testing.assert_array_equal(a, b)
