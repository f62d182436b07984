"""The performance features change no mask: lazy compiles give the masks of eager compiles, the
cross-grammar pool gives the masks of a compile without it, and grammars compiled concurrently
from several Python threads (sharing the pool) give the masks of serial compiles.

Schemas: a fixed sample of JSONSchemaBench files (``../shared/data/jsonschemabench``), one or
two per category, chosen among those that compile eagerly in well under a second on the GPT-2
vocabulary, compiled with ``strict_mode=False, on_unsupported="warn"``; a schema that raises
``XG2Error`` is left out. Each is driven along its valid test instances (``json.dumps`` with
``ensure_ascii=False``, greedy tokenization on GPT-2, then the stop token), and the mask of
every step is compared bit for bit.
"""

from __future__ import annotations

import gzip
import json
import threading
import warnings

import numpy as np
import pytest

import xg2_jax as xg
from xg2_jax import greedy_tokenize

# Category -> maskbench file names (fixed, so the sample is the same on every run).
SAMPLE = {
    "BFCL_java": ["BFCL_java_10.json"],
    "BFCL_javascript": ["BFCL_javascript_0.json"],
    "BFCL_multiple": ["BFCL_multiple_1.json", "BFCL_multiple_100.json"],
    "BFCL_parallel": ["BFCL_parallel_0.json"],
    "BFCL_parallel_multiple": ["BFCL_parallel_multiple_0.json"],
    "BFCL_simple": ["BFCL_simple_0.json"],
    "BFCL_sql": ["BFCL_sql_12.json"],
    "Github_easy": ["Github_easy---o10011.json", "Github_easy---o10014.json"],
    "Github_hard": ["Github_hard---o83745.json"],
    "Github_medium": ["Github_medium---o10079.json"],
    "Github_trivial": ["Github_trivial---o10020.json", "Github_trivial---o10021.json"],
    "Handwritten": ["Handwritten---dep1.json"],
    "JsonSchemaStore": ["JsonSchemaStore---aliases.json"],
    "Snowplow": ["Snowplow---sp_100_Normalized.json"],
    "WashingtonPost": ["WashingtonPost---wp_102_Normalized.json"],
}
MAX_INSTANCES = 2          # valid instances walked per schema
MAX_STEPS = 160            # tokens per instance (the walk stops there)
THREADS = 8


@pytest.fixture(scope="module")
def cases(shared_data, gpt2_tokenizer):
    """[(label, schema, [token ids per instance])] for the sample schemas that compile."""
    root = shared_data / "jsonschemabench"
    if not root.is_dir():
        pytest.skip(f"{root} not found")
    eos = gpt2_tokenizer.stop_token_ids[0]
    out = []
    probe = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    for category, names in SAMPLE.items():
        path = root / f"{category}.jsonl.gz"
        if not names or not path.exists():
            continue
        wanted = set(names)
        with gzip.open(path, "rt", encoding="utf-8") as f:      # lines start with "file"
            records = [json.loads(line) for line in f
                       if any(f'"{n}"' in line[:200] for n in wanted)]
        for rec in records:
            if rec["file"] not in wanted:
                continue
            data = rec["data"]
            schema = data["schema"]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    probe.compile_json_schema(schema, strict_mode=False, on_unsupported="warn",
                                              lazy=True)
            except xg.XG2Error:
                continue
            streams = []
            for test in data.get("tests") or []:
                if not test.get("valid") or len(streams) >= MAX_INSTANCES:
                    continue
                try:
                    text = json.dumps(test["data"], ensure_ascii=False, allow_nan=False)
                except ValueError:
                    continue
                ids = greedy_tokenize(gpt2_tokenizer, text.encode("utf-8"))[:MAX_STEPS]
                streams.append(ids + ([eos] if len(ids) < MAX_STEPS else []))
            if streams:
                out.append((rec["file"], schema, streams))
    if len(out) < 5:
        pytest.skip(f"only {len(out)} sample schemas found in {root}")
    return out


@pytest.fixture
def pool_limit():
    """Restores the pool's limit after the test (and leaves the pool empty)."""
    before = xg.cross_grammar_cache_stats()["limit_bytes"]
    yield
    xg.set_cross_grammar_cache_limit(before)
    xg.clear_cross_grammar_cache()


def compile_schema(compiler, schema, *, lazy=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compiler.compile_json_schema(schema, strict_mode=False, on_unsupported="warn",
                                            lazy=lazy)


def masks_along(compiled, streams):
    """Per stream: (the mask before every step as a (steps, W) array, accept results)."""
    out = []
    mask = xg.allocate_token_bitmask(1, compiled.tokenizer_info.vocab_size)
    for ids in streams:
        matcher = xg.GrammarMatcher(compiled)
        rows, accepted = [], []
        for tok in ids:
            matcher.fill_next_token_bitmask(mask)
            rows.append(mask[0].copy())
            ok = matcher.accept_token(tok)
            accepted.append(ok)
            if not ok or matcher.is_terminated():
                break
        out.append((np.stack(rows), accepted))
    return out


def assert_same(label, got, want):
    assert len(got) == len(want), label
    for k, ((g_rows, g_acc), (w_rows, w_acc)) in enumerate(zip(got, want)):
        assert g_acc == w_acc, f"{label} instance {k}: accept results differ"
        assert g_rows.shape == w_rows.shape, f"{label} instance {k}"
        diff = np.flatnonzero((g_rows != w_rows).any(axis=1))
        assert diff.size == 0, f"{label} instance {k}: masks differ at steps {diff[:10].tolist()}"


@pytest.fixture(scope="module")
def reference(cases, gpt2_tokenizer):
    """Masks of eager compiles without the cross-grammar pool, per case label."""
    before = xg.cross_grammar_cache_stats()["limit_bytes"]
    xg.set_cross_grammar_cache_limit(0)
    xg.clear_cross_grammar_cache()
    try:
        compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
        return {label: masks_along(compile_schema(compiler, schema), streams)
                for label, schema, streams in cases}
    finally:
        xg.set_cross_grammar_cache_limit(before)
        xg.clear_cross_grammar_cache()


def test_sample_walks_real_steps(cases, reference):
    steps = sum(rows.shape[0] for walks in reference.values() for rows, _ in walks)
    distinct = {rows[i].tobytes() for walks in reference.values() for rows, _ in walks
                for i in range(rows.shape[0])}
    assert len(cases) >= 12
    assert steps >= 500
    assert len(distinct) >= 100, "the walks should see many different masks"


def test_lazy_masks_equal_eager(cases, reference, gpt2_tokenizer, pool_limit):
    # Without the pool, so every lazy mask is built on use and none is borrowed from an eager
    # compile of the same structure.
    xg.set_cross_grammar_cache_limit(0)
    xg.clear_cross_grammar_cache()
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    for label, schema, streams in cases:
        lazy = compile_schema(compiler, schema, lazy=True)
        assert_same(f"{label} (lazy)", masks_along(lazy, streams), reference[label])


def test_lazy_with_background_precompute_equal_eager(cases, reference, gpt2_tokenizer,
                                                     pool_limit):
    xg.set_cross_grammar_cache_limit(0)
    xg.clear_cross_grammar_cache()
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    for label, schema, streams in cases[::2]:
        lazy = compile_schema(compiler, schema, lazy=True)
        handle = lazy.precompute_async(num_threads=2)
        got = masks_along(lazy, streams)          # races with the background build
        handle.wait()
        assert_same(f"{label} (lazy + precompute_async)", got, reference[label])


def test_pooled_masks_equal_unpooled(cases, reference, gpt2_tokenizer, pool_limit):
    xg.set_cross_grammar_cache_limit(512 << 20)
    xg.clear_cross_grammar_cache()
    compiler = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    compiled = {label: compile_schema(compiler, schema) for label, schema, _ in cases}
    # Twice: the second round of compiles is served from the pool.
    hits = xg.cross_grammar_cache_stats()["hits"]
    again = {label: compile_schema(compiler, schema) for label, schema, _ in cases}
    assert xg.cross_grammar_cache_stats()["hits"] > hits
    for label, _, streams in cases:
        assert_same(f"{label} (pooled)", masks_along(compiled[label], streams), reference[label])
        assert_same(f"{label} (pooled, 2nd)", masks_along(again[label], streams), reference[label])


def test_concurrent_compiles_equal_serial(cases, reference, gpt2_tokenizer, pool_limit):
    xg.set_cross_grammar_cache_limit(512 << 20)
    xg.clear_cross_grammar_cache()
    shared = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    n = len(cases)
    # Thread i compiles 4 consecutive schemas starting at i: neighbouring threads overlap, and
    # the first compiles of every schema race through the shared pool.
    plans = [[(i + k) % n for k in range(4)] for i in range(THREADS)]
    results: dict[tuple[int, int], object] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def work(t: int) -> None:
        try:
            own = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False) if t % 2 else shared
            barrier.wait()
            for j in plans[t]:
                results[(t, j)] = own.compile_grammar(grammars[j], lazy=(t % 4 == 3))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grammars = [xg.Grammar.from_json_schema(schema, strict_mode=False, on_unsupported="warn")
                    for _, schema, _ in cases]
    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(results) == THREADS * 4
    for (t, j), compiled in sorted(results.items()):
        label, _, streams = cases[j]
        assert_same(f"{label} (thread {t})", masks_along(compiled, streams), reference[label])


def test_any_order_lazy_pooled_and_threaded_equal_eager(cases, gpt2_tokenizer, pool_limit):
    """The same three equalities for any_order=True grammars, whose parser states (sets of
    written properties) are made while parsing: eager without the pool is the reference; lazy,
    pooled and 4-thread batch fills must give the same rows."""
    def compile_any(compiler, schema, lazy=False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compiler.compile_json_schema(schema, strict_mode=False, on_unsupported="warn",
                                                any_order=True, lazy=lazy)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        texts = [str(xg.Grammar.from_json_schema(schema, strict_mode=False, on_unsupported="warn",
                                                 any_order=True)) for _, schema, _ in cases]
    assert sum("AnyOrder(" in t for t in texts) >= 8
    xg.set_cross_grammar_cache_limit(0)
    xg.clear_cross_grammar_cache()
    plain = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    reference = {label: masks_along(compile_any(plain, schema), streams) for label, schema, streams in cases}
    for label, schema, streams in cases:
        assert_same(f"{label} (any_order, lazy)", masks_along(compile_any(plain, schema, lazy=True), streams),
                    reference[label])
    xg.set_cross_grammar_cache_limit(512 << 20)
    pooled = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    for label, schema, streams in cases:
        compile_any(pooled, schema)
        assert_same(f"{label} (any_order, pooled)", masks_along(compile_any(pooled, schema), streams),
                    reference[label])
    # One compiled grammar shared by matchers filled together on 4 threads.
    for label, schema, streams in cases:
        compiled = compile_any(plain, schema, lazy=True)
        matchers = [xg.GrammarMatcher(compiled) for _ in streams]
        batch = xg.BatchGrammarMatcher(max_threads=4)
        masks = xg.allocate_token_bitmask(len(streams), gpt2_tokenizer.vocab_size)
        live = [True] * len(streams)
        for step in range(max(len(s) for s in streams)):
            rows_live = [k for k in range(len(streams)) if not matchers[k].is_terminated()]
            batch.batch_fill_next_token_bitmask([matchers[k] for k in rows_live], masks, rows_live)
            for k, ids in enumerate(streams):
                if not live[k] or step >= len(ids):
                    live[k] = False
                    continue
                rows, _ = reference[label][k]
                if step < rows.shape[0]:
                    assert (masks[k] == rows[step]).all(), f"{label} (any_order, batch) instance {k} step {step}"
                if not matchers[k].accept_token(ids[step]) or matchers[k].is_terminated():
                    live[k] = False
            if not any(live):
                break
