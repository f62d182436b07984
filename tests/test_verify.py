"""Verify-step masks (chains and trees) and the fused verify_chain, against numpy references
built from the plain matcher API, with one regression test per failure class of issue 20."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import mask_row, tokenize

import xg2_jax as xg
from xg2_jax._src import verify as verify_module

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"]}
DOC = json.dumps({"name": "Ada", "age": 36})


@pytest.fixture(scope="module")
def setup(gpt2_tokenizer):
    compiler = xg.GrammarCompiler(gpt2_tokenizer)
    return gpt2_tokenizer, compiler.compile_json_schema(SCHEMA)


def stop_row(m, width):
    bits = np.zeros(width * 32, bool)
    bits[m.stop_token_ids] = True
    return np.packbits(bits, bitorder="little").view(np.int32)


def reference_rows(m, tokens, parents, width, vocab):
    """Per node: (row, valid, stop_only) by replaying each node's path on a fresh fork."""
    n = len(tokens)
    rows, valid, stop = np.zeros((n, width), np.int32), np.zeros(n, bool), np.zeros(n, bool)
    if m is None:
        return rows - 1, valid | True, stop
    for i in range(n):
        path = []
        j = i
        while j > 0:
            path.append(j)
            j = parents[j]
        path.reverse()
        f = m.fork()
        if f.is_terminated():
            rows[i], valid[i], stop[i] = stop_row(m, width), i == 0, True
            continue
        ok, last_ok = True, 0
        for node in path:
            t = int(tokens[node])
            if f.is_terminated() or not 0 <= t < vocab or not f.accept_token(t):
                ok = False
                break
            last_ok = node
        valid[i] = ok
        if not ok:  # the deepest valid ancestor's row (computed earlier: ancestors < i)
            rows[i], stop[i] = rows[last_ok], stop[last_ok]
        elif f.is_terminated():
            rows[i], stop[i] = stop_row(m, width), True
        else:
            rows[i] = mask_row(f, vocab)[:width]
    return rows, valid, stop


def make_chain_drafts(tok, rng, b, k):
    """Drafts that follow DOC for a while, then diverge, sometimes with a stop token."""
    doc = tokenize(tok, DOC) + [tok.stop_token_ids[0]]
    drafts = np.full((b, k), -1, np.int64)
    for r in range(b):
        start = int(rng.integers(0, len(doc) - 1))
        seq = doc[start:start + k]
        if rng.random() < 0.5 and seq:
            seq[int(rng.integers(0, len(seq)))] = int(rng.integers(0, tok.vocab_size))
        if rng.random() < 0.3:
            seq = doc[-2:] + [int(rng.integers(0, tok.vocab_size)) for _ in range(k)]
        seq = seq[:k]
        drafts[r, :len(seq)] = seq
    starts = [int(rng.integers(0, 8)) for _ in range(b)]
    return doc, drafts, starts


@pytest.mark.parametrize("seed", range(4))
def test_chain_masks_match_reference(setup, seed):
    tok, compiled = setup
    rng = np.random.default_rng(seed)
    b, k = 6, 5
    doc, drafts, _ = make_chain_drafts(tok, rng, b, k)
    matchers = []
    for r in range(b):
        if r == 1:
            matchers.append(None)  # unconstrained request in a mixed batch
            continue
        m = xg.GrammarMatcher(compiled)
        # Put each matcher just before its chain's first draft.
        first = drafts[r, 0]
        pos = [i for i, t in enumerate(doc) if t == first]
        for t in doc[:pos[0] if pos else 0]:
            assert m.accept_token(t)
        matchers.append(m)
    num_draft = rng.integers(0, k + 1, size=b)
    vm = xg.chain_verify_masks(matchers, drafts, num_draft=num_draft)
    width = vm.masks.shape[-1]
    for r in range(b):
        tokens = np.concatenate([[0], np.where(np.arange(k) < num_draft[r], drafts[r], -1)])
        rows, valid, stop = reference_rows(matchers[r], tokens, np.arange(-1, k), width,
                                           tok.vocab_size)
        np.testing.assert_array_equal(vm.masks[r], rows, err_msg=f"request {r}")
        np.testing.assert_array_equal(vm.valid[r], valid)
        np.testing.assert_array_equal(vm.stop_only[r], stop)
    assert (vm.masks[1] == -1).all()


def test_tree_masks_match_reference(setup):
    tok, compiled = setup
    doc = tokenize(tok, DOC) + [tok.stop_token_ids[0]]
    m = xg.GrammarMatcher(compiled)
    for t in doc[:-4]:
        assert m.accept_token(t)
    rest = doc[-4:]
    # Two branches: the true continuation (through the stop token and past it) and a bad one.
    tokens = np.array([[0, rest[0], rest[1], rest[2], rest[3], 11, tok.vocab_size + 3,
                        rest[1]]])
    parents = np.array([-1, 0, 1, 2, 3, 4, 0, 6])
    vm = xg.tree_verify_masks([m], tokens, parents)
    rows, valid, stop = reference_rows(m, tokens[0], parents, vm.masks.shape[-1], tok.vocab_size)
    np.testing.assert_array_equal(vm.masks[0], rows)
    np.testing.assert_array_equal(vm.valid[0], valid)
    np.testing.assert_array_equal(vm.stop_only[0], stop)
    assert vm.stop_only[0, 4] and vm.stop_only[0, 5] and not vm.valid[0, 5]


def test_terminated_matcher_is_never_asked_for_a_mask(setup, monkeypatch):
    """Failure class: a terminated matcher asked for another mask."""
    tok, compiled = setup
    done = xg.GrammarMatcher(compiled)
    for t in tokenize(tok, DOC) + [tok.stop_token_ids[0]]:
        assert done.accept_token(t)
    assert done.is_terminated()
    live = xg.GrammarMatcher(compiled)
    seen = []
    original = xg.BatchGrammarMatcher.batch_traverse_draft_tree

    def spy(self, matchers, *args, **kwargs):
        seen.extend(matchers)
        return original(self, matchers, *args, **kwargs)

    monkeypatch.setattr(xg.BatchGrammarMatcher, "batch_traverse_draft_tree", spy)
    vm = xg.chain_verify_masks([done, live], np.array([[5, 6], [-1, -1]]))
    assert seen == [live]
    width = vm.masks.shape[-1]
    assert (vm.masks[0] == stop_row(done, width)).all() and vm.stop_only[0].all()
    assert vm.valid[0].tolist() == [True, False, False]


def test_post_stop_drafts_get_stop_only_rows(setup):
    """Failure class: draft positions after a stop token."""
    tok, compiled = setup
    doc = tokenize(tok, DOC)
    m = xg.GrammarMatcher(compiled)
    for t in doc:
        assert m.accept_token(t)
    eos = tok.stop_token_ids[0]
    vm = xg.chain_verify_masks([m], np.array([[eos, 13, eos]]))
    width = vm.masks.shape[-1]
    assert vm.valid[0].tolist() == [True, True, False, False]
    assert vm.stop_only[0].tolist() == [False, True, True, True]
    for j in (1, 2, 3):
        assert (vm.masks[0, j] == stop_row(m, width)).all()
    assert not m.is_terminated()  # the caller's matcher is untouched


def test_unconstrained_rows_are_all_allowed_never_zero(setup):
    """Failure class: zero rows for unconstrained requests in a mixed batch."""
    tok, compiled = setup
    vm = xg.chain_verify_masks([None, xg.GrammarMatcher(compiled), None],
                               np.array([[1, 2], [3, 4], [-1, -1]]))
    assert (vm.masks[[0, 2]] == -1).all()
    assert np.all(np.any(vm.masks != 0, axis=-1))
    logits = jnp.asarray(np.random.default_rng(0).normal(size=(3, 3, tok.vocab_size)),
                         jnp.float32)
    out = xg.verify_chain(logits, jnp.asarray(vm.masks), jnp.array([[1, 2], [3, 4], [-1, -1]]),
                          jnp.array([2, 2, 0]), jax.random.key(0))
    top = np.argmax(np.asarray(logits), axis=-1)
    assert int(out.tokens[2, 0]) == top[2, 0]  # unconstrained: the plain argmax


@pytest.mark.parametrize("make_view", ["transposed", "strided", "read_only", "wrong_dtype"])
def test_non_contiguous_out_is_rejected(setup, make_view):
    """Failure class: non-contiguous bitmask buffers (the verify masks refuse them)."""
    _, compiled = setup
    width = xg.get_bitmask_shape(1, compiled.tokenizer_info.vocab_size)[1]
    if make_view == "transposed":
        out = np.zeros((width, 3, 1), np.int32).transpose(2, 1, 0)
    elif make_view == "strided":
        out = np.zeros((1, 6, width), np.int32)[:, ::2]
    elif make_view == "read_only":
        out = np.zeros((1, 3, width), np.int32)
        out.flags.writeable = False
    else:
        out = np.zeros((1, 3, width), np.int64)
    with pytest.raises(xg.InvalidArgumentError):
        xg.chain_verify_masks([xg.GrammarMatcher(compiled)], np.array([[1, 2]]), out=out)


def test_strided_rows_are_honoured_by_fill(setup):
    """Failure class: non-contiguous buffers: a matcher fills a strided row view in place."""
    tok, compiled = setup
    buf = np.zeros((4, xg.get_bitmask_shape(1, tok.vocab_size)[1]), np.int32)
    view = buf[::2]
    m = xg.GrammarMatcher(compiled)
    m.fill_next_token_bitmask(view, 1)
    np.testing.assert_array_equal(buf[2], mask_row(m, tok.vocab_size))
    assert not buf[[0, 1, 3]].any()


def verify_chain_reference(logits, masks, drafts, lengths):
    """Greedy verify in numpy: accept while draft == masked argmax, then one more token."""
    b, k1, v = logits.shape
    tokens = np.full((b, k1), -1)
    counts = np.zeros(b, int)
    for r in range(b):
        for j in range(k1):
            allowed = xg.bitmask_to_bool(masks[r, j], v)
            if not allowed.any():
                break
            score = np.where(allowed, np.nan_to_num(logits[r, j], nan=-np.inf), -np.inf)
            score = np.where(allowed, np.maximum(score, np.finfo(np.float32).min), -np.inf)
            best = int(np.argmax(score))
            if j < lengths[r] and drafts[r, j] == best:
                tokens[r, j] = best
                counts[r] += 1
                continue
            tokens[r, j] = best
            counts[r] += 1
            break
    return tokens, counts


@pytest.mark.parametrize("seed", range(3))
def test_verify_chain_greedy_matches_reference(setup, seed):
    tok, compiled = setup
    rng = np.random.default_rng(seed)
    b, k = 5, 4
    doc, drafts, _ = make_chain_drafts(tok, rng, b, k)
    matchers = [xg.GrammarMatcher(compiled) if r != 2 else None for r in range(b)]
    for m in matchers:
        if m is not None:
            for t in doc[:int(rng.integers(0, 6))]:
                m.accept_token(t)
    lengths = rng.integers(0, k + 1, size=b)
    vm = xg.chain_verify_masks(matchers, drafts, num_draft=lengths)
    logits = rng.normal(size=(b, k + 1, tok.vocab_size)).astype(np.float32)
    # Make the drafts likely so that chains get accepted, and put NaN in one row.
    for r in range(b):
        for j in range(k):
            if drafts[r, j] >= 0 and rng.random() < 0.8:
                logits[r, j, drafts[r, j]] = 30.0
    logits[0, 1, ::7] = np.nan
    out = xg.verify_chain(jnp.asarray(logits), jnp.asarray(vm.masks), jnp.asarray(drafts),
                          jnp.asarray(lengths), jax.random.key(0))
    ref_tokens, ref_counts = verify_chain_reference(logits, vm.masks, drafts, lengths)
    np.testing.assert_array_equal(np.asarray(out.tokens), ref_tokens)
    np.testing.assert_array_equal(np.asarray(out.num_tokens), ref_counts)


@pytest.mark.parametrize("greedy", [True, False])
def test_all_masked_rows_never_nan_nor_leak(greedy):
    """Failure class: NaN (or an arbitrary token) from a row that allows nothing."""
    v = 40
    masks = np.full((3, 3, 2), -1, np.int32)
    masks[0] = 0  # nothing allowed anywhere
    masks[1, 1] = 0  # nothing allowed after the first draft
    masks[2, :, :] = 0
    masks[2, :, 0] = 1 << 5  # only token 5 allowed; its logit is -inf
    logits = np.zeros((3, 3, v), np.float32)
    logits[:, :, 5] = -np.inf
    logits[1, 0, 9] = 10.0
    drafts = np.array([[1, 2], [9, 3], [5, 5]])
    out = xg.verify_chain(jnp.asarray(logits), jnp.asarray(masks), jnp.asarray(drafts),
                          jnp.array([2, 2, 2]), jax.random.key(1), greedy=greedy)
    tokens = np.asarray(out.tokens)
    assert tokens[0].tolist() == [-1, -1, -1] and int(out.num_tokens[0]) == 0
    assert int(out.num_accepted[1]) == (1 if greedy else int(out.num_accepted[1]))
    assert tokens[1, 1:].tolist() == [-1, -1] and tokens[1, 0] in (-1, 9)
    assert tokens[2].tolist() == [5, 5, 5]  # the only allowed token, though its logit is -inf


def test_verify_chain_sampling_follows_masked_target(setup):
    """Rejection sampling: the first output token follows the masked target at row 0."""
    v, k, n = 8, 2, 20000
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(1, k + 1, v)).astype(np.float32)
    allowed = np.array([1, 1, 0, 1, 0, 1, 1, 0], bool)
    masks = np.tile(np.packbits(np.pad(allowed, (0, 24)), bitorder="little").view(np.int32),
                    (1, k + 1, 1))
    drafts = jnp.array([[3, 0]])
    keys = jax.random.split(jax.random.key(0), n)
    run = jax.vmap(lambda key: xg.verify_chain(jnp.asarray(logits), jnp.asarray(masks), drafts,
                                               jnp.array([k]), key, greedy=False).tokens)
    tokens = np.asarray(run(keys))[:, 0]
    assert set(np.unique(tokens[:, 0])) <= set(np.flatnonzero(allowed))
    assert (tokens >= -1).all() and np.isin(tokens[tokens >= 0], np.flatnonzero(allowed)).all()
    p = np.where(allowed, np.exp(logits[0, 0]), 0.0)
    p /= p.sum()
    freq = np.bincount(tokens[:, 0], minlength=v) / n
    np.testing.assert_allclose(freq, p, atol=0.02)


def test_verify_chain_compiles_once_per_shape(setup):
    """The fused function is jitted once per shape and takes the host masks as they are."""
    tok, compiled = setup
    vm = xg.chain_verify_masks([xg.GrammarMatcher(compiled)], np.array([[1, 2, 3]]))
    logits = jnp.zeros((1, 4, tok.vocab_size))
    before = verify_module.verify_chain._cache_size()
    for _ in range(3):
        xg.verify_chain(logits, jnp.asarray(vm.masks), jnp.array([[1, 2, 3]]), jnp.array([3]),
                        jax.random.key(0))
    assert verify_module.verify_chain._cache_size() - before <= 1
