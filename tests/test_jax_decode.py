"""Constrained decoding loops with a tiny random JAX model over the GPT-2 vocabulary."""

from __future__ import annotations

import concurrent.futures
import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jsonschema  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import testing as tm  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "color": {"enum": ["red", "green", "blue"]},
        "n": {"type": "integer", "minimum": 0, "maximum": 99},
    },
    "required": ["ok", "color", "n"],
    "additionalProperties": False,
}
BATCH = 4
GREEDY = xg.SamplingConfig(greedy=True)
SAMPLED = xg.SamplingConfig(temperature=0.8, top_k=50)


@pytest.fixture(scope="module")
def setup(gpt2_tokenizer):
    compiler = xg.GrammarCompiler(gpt2_tokenizer)
    schema = compiler.compile_json_schema(SCHEMA, any_whitespace=False)
    cfg = tm.RandomModelConfig(vocab_size=gpt2_tokenizer.vocab_size)
    params = tm.init_params(jax.random.key(0), cfg)
    prompts = (np.arange(BATCH, dtype=np.int32)[:, None] * 997 + np.array([[11, 13]])) % 50000
    return dict(tok=gpt2_tokenizer, compiler=compiler, schema=schema, cfg=cfg, params=params,
                prompts=prompts)


def text(tok, tokens) -> str:
    data = b"".join(tok.token_bytes(int(t)) for t in tokens if int(t) not in tok.stop_token_ids)
    return data.decode("utf-8")


def run(fn, s, grammar, sampling, *, max_new_tokens=48, key=0, matchers=None):
    if matchers is None:
        matchers = [xg.GrammarMatcher(grammar) for _ in range(BATCH)]
    return fn(tm.step, s["params"], tm.init_cache(s["cfg"], BATCH), s["prompts"], matchers,
              max_new_tokens=max_new_tokens, sampling=sampling, key=jax.random.key(key),
              pad_token_id=0)


@pytest.mark.parametrize("sampling", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_json_schema_outputs_validate(setup, sampling):
    out = run(xg.constrained_generate, setup, setup["schema"], sampling)
    assert out.finished.all() and not out.errors.any()
    for row in range(BATCH):
        toks = out.tokens[row, :out.lengths[row]]
        assert int(toks[-1]) in setup["tok"].stop_token_ids
        assert (out.tokens[row, out.lengths[row]:] == 0).all()
        jsonschema.validate(json.loads(text(setup["tok"], toks)), SCHEMA)


def test_builtin_json_completed_outputs_parse(setup):
    grammar = setup["compiler"].compile_builtin_json_grammar()
    out = run(xg.constrained_generate, setup, grammar, SAMPLED, max_new_tokens=32, key=3)
    assert not out.errors.any()
    for row in np.flatnonzero(out.finished):
        json.loads(text(setup["tok"], out.tokens[row, :out.lengths[row]]))


@pytest.mark.parametrize("sampling", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_ingraph_loop_matches_host_loop(setup, sampling):
    host = run(xg.constrained_generate, setup, setup["schema"], sampling, key=7)
    graph = run(xg.ingraph_generate, setup, setup["schema"], sampling, key=7)
    np.testing.assert_array_equal(graph.tokens, host.tokens)
    np.testing.assert_array_equal(graph.lengths, host.lengths)
    np.testing.assert_array_equal(graph.finished, host.finished)
    np.testing.assert_array_equal(np.asarray(graph.cache["h"]), np.asarray(host.cache["h"]))


def test_compile_overlaps_prefill_and_unconstrained_rows(setup):
    stop = setup["tok"].stop_token_ids[0]

    def compile_matchers():  # runs on a worker thread while the prefill is dispatched
        g = setup["compiler"].compile_json_schema(SCHEMA, any_whitespace=False)
        return [xg.GrammarMatcher(g), None, xg.GrammarMatcher(g), None]

    out = run(xg.constrained_generate, setup, None, GREEDY, matchers=compile_matchers)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(compile_matchers)
        again = run(xg.constrained_generate, setup, None, GREEDY, matchers=fut)
    np.testing.assert_array_equal(out.tokens, again.tokens)
    for row in (0, 2):
        jsonschema.validate(json.loads(text(setup["tok"], out.tokens[row, :out.lengths[row]])),
                            SCHEMA)
    # Unconstrained rows run to the budget (or to a stop token).
    for row in (1, 3):
        toks = out.tokens[row, :out.lengths[row]].tolist()
        assert out.lengths[row] == 48 or toks[-1] == stop


def test_host_mask_buffers_alternate_and_wait():
    bufs = xg.HostMaskBuffers((2, 3))
    i0, b0 = bufs.acquire()
    b0.fill(5)
    dev = xg.put_masks(b0)  # a copy: refilling b0 later must not change `dev`
    bufs.release(i0, dev)
    i1, b1 = bufs.acquire()
    assert i1 != i0 and b1 is not b0
    bufs.release(i1)
    i2, b2 = bufs.acquire()  # waits for `dev` before handing b0 back
    assert i2 == i0 and b2 is b0
    b2.fill(9)
    assert (np.asarray(dev) == 5).all()


def test_ingraph_step_errors_are_flags(setup):
    g = setup["schema"]
    with xg.InGraphMatchers([xg.GrammarMatcher(g)]) as session:
        width = session.mask_width
        step = jax.jit(lambda sid, t: xg.ingraph_matcher_step(sid, t, mask_width=width))
        bad = step(session.session_id, jnp.array([setup["tok"].stop_token_ids[0]], jnp.int32))
        assert bool(bad.error[0]) and bool(bad.finished[0]) and int(bad.status) == 0
        unknown = step(jnp.int32(2**31 - 2), jnp.array([0], jnp.int32))
        assert int(unknown.status) == 1 and bool(unknown.error[0])


def _spec_drafts(ref_row, pos, step, n_vocab, rng):
    """A 7-node tree: chain A (3 nodes) and chain B (2 nodes) from the root, plus a leaf."""
    def oracle(k):
        return int(ref_row[k]) if k < len(ref_row) else int(rng.integers(n_vocab))

    a = [oracle(pos + k) for k in range(3)]
    if step % 4 != 3:
        a[step % 4] = int(rng.integers(n_vocab))  # a wrong guess somewhere along chain A
    b = [oracle(pos), oracle(pos + 1)] if step % 2 else [int(rng.integers(n_vocab))] * 2
    leaf = oracle(pos + 1)
    parents = np.array([-1, 0, 1, 2, 0, 4, 1], np.int32)
    return [a[0], a[1], a[2], b[0], b[1], leaf], parents


def test_speculative_greedy_matches_non_speculative(setup):
    tok, cfg, params = setup["tok"], setup["cfg"], setup["params"]
    ref = run(xg.constrained_generate, setup, setup["schema"], GREEDY)
    matchers = [xg.GrammarMatcher(setup["schema"]) for _ in range(BATCH)]
    prompts = setup["prompts"]
    _, cache = tm.step(params, tm.init_cache(cfg, BATCH), prompts[:, :-1])
    roots = prompts[:, -1].copy()
    produced = [[] for _ in range(BATCH)]
    done = np.zeros(BATCH, bool)
    rng = np.random.default_rng(0)
    bufs = xg.HostMaskBuffers((BATCH * 7, (tok.vocab_size + 31) // 32))
    accepted_drafts = steps = 0
    for step in range(60):
        if done.all():
            break
        tree = np.zeros((BATCH, 7), np.int32)
        for r in range(BATCH):
            ref_row = ref.tokens[r, :ref.lengths[r]]
            draft, parents = _spec_drafts(ref_row, len(produced[r]), step, tok.vocab_size, rng)
            tree[r] = [roots[r]] + draft
        res = xg.speculative_step(tm.verify_tree, params, cache, matchers, tree, parents,
                                  active=~done, buffers=bufs)
        assert not res.errors.any()
        accepted_drafts += int(res.accepted.sum())
        steps += 1
        states = res.aux
        cache = {"h": states[jnp.arange(BATCH), jnp.asarray(res.last_node)]}
        for r in range(BATCH):
            produced[r] += res.new_tokens[r]
            if res.new_tokens[r]:
                roots[r] = res.new_tokens[r][-1]
        done |= res.finished
    assert done.all()
    assert accepted_drafts > 0 and steps < ref.lengths.max()  # drafts were used
    for r in range(BATCH):
        assert produced[r] == ref.tokens[r, :ref.lengths[r]].tolist()


def test_rejection_sampling_follows_masked_target():
    # One draft child per row; the first emitted token must follow the masked target p.
    rows, vocab = 40000, 5
    logits = jnp.log(jnp.array([0.1, 0.2, 0.3, 0.4, 0.0001]))
    verify = jnp.broadcast_to(logits, (rows, 2, vocab))
    masks = jnp.full((rows, 2, 1), 0b01111, jnp.int32)  # token 4 disallowed
    q = jnp.array([0.4, 0.1, 0.1, 0.1, 0.3])
    keys = jax.random.split(jax.random.key(0), 2)
    drafted = jax.random.categorical(keys[0], jnp.log(q), shape=(rows,)).astype(jnp.int32)
    tree = jnp.stack([jnp.zeros(rows, jnp.int32), drafted], axis=1)
    acc = xg.accept_draft_tree(verify, masks, tree, jnp.array([-1, 0]), keys[1], greedy=False,
                               draft_probs=jnp.broadcast_to(q, (rows, 2, vocab)))
    first = np.where(np.asarray(acc.accepted[:, 1]), np.asarray(drafted),
                     np.asarray(acc.bonus_token))
    freq = np.bincount(first, minlength=vocab) / rows
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    assert freq[4] == 0
    np.testing.assert_allclose(freq, p / p.sum(), atol=0.012)


def test_sampling_config_is_a_pytree_with_static_options():
    cfg = xg.SamplingConfig(temperature=0.7, top_k=5, top_p=0.9)
    leaves, treedef = jax.tree_util.tree_flatten(cfg)
    assert leaves == [0.7]
    assert jax.tree_util.tree_unflatten(treedef, [0.3]) == xg.SamplingConfig(0.3, 5, 0.9)
    other = jax.tree_util.tree_structure(xg.SamplingConfig(temperature=0.7, top_k=6, top_p=0.9))
    assert other != treedef  # a static field is part of the structure (jit cache key)
    assert treedef == jax.tree_util.tree_structure(xg.SamplingConfig(2.0, 5, 0.9))


def test_temperature_change_does_not_retrace(setup):
    from xg2_jax._src import ingraph
    from xg2_jax._src.sampling import sample_step

    traces = []

    @jax.jit
    def traced(logits, key, sampling):
        traces.append(1)  # runs once per trace
        return sample_step(logits, jnp.full((2, 1), -1, jnp.int32), key,
                           jnp.ones(2, bool), sampling=sampling, pad_token_id=0)

    logits = jnp.zeros((2, 8))
    for t in (0.5, 0.9, 2.0):
        traced(logits, jax.random.key(0), xg.SamplingConfig(temperature=t, top_k=3))
    assert len(traces) == 1
    # The host-overlap and in-graph loops: new temperatures reuse every compiled function.
    for fn in (xg.constrained_generate, xg.ingraph_generate):
        run(fn, setup, setup["schema"], xg.SamplingConfig(temperature=0.6), max_new_tokens=4)
        sizes = (sample_step._cache_size(), ingraph._build_loop.cache_info().currsize)
        for t in (0.8, 1.3):
            run(fn, setup, setup["schema"], xg.SamplingConfig(temperature=t), max_new_tokens=4)
        assert (sample_step._cache_size(),
                ingraph._build_loop.cache_info().currsize) == sizes
    loop = ingraph._build_loop(tm.step, 4, setup["tok"].vocab_size // 32 + 1, 0)
    assert loop._cache_size() == 1


def test_host_loop_has_no_per_step_eager_ops(setup, monkeypatch):
    # Eager JAX ops (e.g. tokens[:, None] outside jit) go through apply_primitive: their
    # number must not grow with the number of steps.
    from jax._src import dispatch

    calls = []
    original = dispatch.apply_primitive

    def counting(prim, *args, **params):
        calls.append(prim.name)
        return original(prim, *args, **params)

    grammar = setup["compiler"].compile_builtin_json_grammar()
    run(xg.constrained_generate, setup, grammar, SAMPLED, max_new_tokens=3)  # compile
    monkeypatch.setattr(dispatch, "apply_primitive", counting)
    counts = []
    for steps in (3, 12):
        calls.clear()
        out = run(xg.constrained_generate, setup, grammar, SAMPLED, max_new_tokens=steps)
        assert out.lengths.max() == steps
        counts.append(list(calls))
    assert counts[0] == counts[1]


def _letters_setup(rows):
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tok = xg.TokenizerInfo(letters + ["</s>"], stop_token_ids=[26])
    grammar = xg.GrammarCompiler(tok).compile_grammar('root ::= [a-z]+')
    cfg = tm.RandomModelConfig(vocab_size=27, hidden=8, logit_scale=0.1)  # nearly uniform
    params = tm.init_params(jax.random.key(1), cfg)
    return grammar, params, tm.init_cache(cfg, rows)


def test_speculative_step_returns_the_advanced_key():
    rows = 32
    grammar, params, cache = _letters_setup(rows)
    tree = np.tile(np.array([[0, 1, 2]], np.int32), (rows, 1))  # root "a" -> "b" -> "c"
    parents = np.array([-1, 0, 1], np.int32)
    sampling = xg.SamplingConfig(temperature=1.0)

    def step(key):
        matchers = [xg.GrammarMatcher(grammar) for _ in range(rows)]
        return xg.speculative_step(tm.verify_tree, params, cache, matchers, tree, parents,
                                   key=key, sampling=sampling)

    key = jax.random.key(3)
    first = step(key)
    assert first.key is not None
    assert not np.array_equal(jax.random.key_data(first.key), jax.random.key_data(key))
    np.testing.assert_array_equal(jax.random.key_data(first.key),
                                  jax.random.key_data(jax.random.split(key)[0]))
    again = step(key)  # same key: same draws
    assert again.new_tokens == first.new_tokens
    second = step(first.key)  # the returned key: new draws
    assert second.new_tokens != first.new_tokens
    assert not np.array_equal(jax.random.key_data(second.key), jax.random.key_data(first.key))
    # Greedy steps advance the key too (one key threads through mixed loops).
    greedy = xg.speculative_step(tm.verify_tree, params, cache,
                                 [xg.GrammarMatcher(grammar) for _ in range(rows)], tree,
                                 parents, key=key)
    np.testing.assert_array_equal(jax.random.key_data(greedy.key),
                                  jax.random.key_data(first.key))


def test_speculative_batched_advance_cuts_bad_paths():
    from xg2_jax._src.speculative import _advance_matchers

    tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    grammar = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
    matchers = [xg.GrammarMatcher(grammar) for _ in range(4)] + [None]
    paths = [[0, 1, 2], [0, 0, 1], [0, 1, 2, 0], [], [1, 1]]
    finished, errors = _advance_matchers(matchers, paths, xg.BatchGrammarMatcher())
    assert paths == [[0, 1, 2], [0], [0, 1, 2], [], [1, 1]]
    assert errors.tolist() == [False, True, True, False, False]
    assert finished.tolist() == [True, True, True, False, False]
    assert [m.num_accepted_tokens for m in matchers[:4]] == [3, 1, 3, 0]


def test_accept_draft_tree_per_row_temperature():
    rows, vocab = 8, 6
    logits = jax.random.normal(jax.random.key(0), (rows, 3, vocab))
    masks = jnp.full((rows, 3, 1), 0b111111, jnp.int32)
    tree = jnp.tile(jnp.array([[0, 1, 2]], jnp.int32), (rows, 1))
    kw = dict(greedy=False)
    scalar = xg.accept_draft_tree(logits, masks, tree, jnp.array([-1, 0, 1]),
                                  jax.random.key(1), temperature=0.7, **kw)
    per_row = xg.accept_draft_tree(logits, masks, tree, jnp.array([-1, 0, 1]),
                                   jax.random.key(1), temperature=jnp.full((rows,), 0.7), **kw)
    for a, b in zip(scalar, per_row):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
