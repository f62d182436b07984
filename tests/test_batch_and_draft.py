"""BatchGrammarMatcher (parallel fill / accept / rollback), traverse_draft_tree and
CompiledGrammar serialization, checked against the single-matcher API."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from helpers import mask_row, tokenize

import xg2_jax as xg

JSON_DOC = '{"name": "xg2-jax", "tags": ["jax", "\\u00e9t\\u00e9", 12], "n": -1.5e3, "ok": true}'

# ------------------------------------------------------------------------------ helpers


def allowed_ids(row: np.ndarray, vocab_size: int) -> np.ndarray:
    return np.flatnonzero(xg.bitmask_to_bool(row, vocab_size))


def random_walk_states(compiled, steps: int, seed: int) -> list[xg.GrammarMatcher]:
    """Forks of one matcher after 0, 1, ..., steps-1 random valid (non-stop) tokens."""
    rng = random.Random(seed)
    tok = compiled.tokenizer_info
    vocab = tok.vocab_size
    m = xg.GrammarMatcher(compiled)
    stops = set(m.stop_token_ids)
    states = []
    for _ in range(steps):
        states.append(m.fork())
        ids = [t for t in allowed_ids(mask_row(m, vocab), vocab).tolist() if t not in stops]
        if not ids:
            break
        # Mostly skip pure-whitespace tokens, so walks do not idle after a complete value.
        solid = [t for t in ids if tok.token_bytes(t).strip()]
        assert m.accept_token(rng.choice(solid if solid and rng.random() < 0.9 else ids))
    return states


DOCS = [
    JSON_DOC,
    '[{"id": 1, "v": [true, false, null]}, {"id": 2, "s": "a \\"quoted\\" word"}, -0.25E+2]',
    '{\n  "nested": {"deep": {"deeper": [1, [2, [3, {"k": "v"}]]]}},\n  "empty": {}, "e": []\n}',
]


def document_states(compiled, text: str) -> list[xg.GrammarMatcher]:
    """Forks of a matcher before each token of a document, and after the last."""
    m = xg.GrammarMatcher(compiled)
    states = []
    for t in tokenize(compiled.tokenizer_info, text):
        states.append(m.fork())
        assert m.accept_token(t)
    states.append(m.fork())
    return states


@pytest.fixture(scope="module")
def gpt2(gpt2_tokenizer):
    return gpt2_tokenizer


@pytest.fixture(scope="module")
def json_compiled(gpt2):
    return xg.GrammarCompiler(gpt2).compile_builtin_json_grammar(lazy=False)  # eager: serialized with masks


@pytest.fixture(scope="module")
def json_states(json_compiled):
    """64 matchers at different states of the builtin JSON grammar, the last one completed."""
    states = [m for doc in DOCS for m in document_states(json_compiled, doc)]
    rng = random.Random(0)
    states = rng.sample(states, 52) + random_walk_states(json_compiled, 11, seed=1)
    done = xg.GrammarMatcher(json_compiled)
    assert done.accept_string('{"a": [1, 2]}')
    return states + [done]


def terminated(json_states):
    """A fork of the completed matcher that has accepted its stop token."""
    term = json_states[-1].fork()
    assert term.accept_token(term.stop_token_ids[0]) and term.is_terminated()
    return term


def forks(matchers):
    return [m.fork() for m in matchers]


def serial_masks(matchers, vocab_size):
    return np.stack([mask_row(m, vocab_size) for m in matchers])


def live_masks(matchers, vocab_size):
    """Each matcher's mask, or -1 where it accepted its stop token (a fill would raise)."""
    return np.stack([np.full(xg.get_bitmask_shape(1, vocab_size)[1], -1, np.int32)
                     if m.is_terminated() else mask_row(m, vocab_size) for m in matchers])


# ------------------------------------------------------------------------------ batch fill


@pytest.mark.parametrize("n", [8, 33, 64])
def test_batch_fill_equals_serial(json_states, gpt2, n):
    vocab = gpt2.vocab_size
    matchers = json_states[-n:]
    expected = serial_masks(matchers, vocab)
    batch = xg.BatchGrammarMatcher()
    bm = xg.allocate_token_bitmask(n, vocab)
    bm[:] = 0x5A5A5A5A
    need = batch.batch_fill_next_token_bitmask(matchers, bm)
    np.testing.assert_array_equal(bm, expected)
    assert need is None  # as xgrammar

    # Rows given by indices into a larger, padded bitmask: other rows untouched.
    rows = n + 5
    perm = np.random.default_rng(n).permutation(rows)[:n]
    bm2 = np.full((rows, bm.shape[1]), 7, dtype=np.int32)
    xg.BatchGrammarMatcher(max_threads=3).batch_fill_next_token_bitmask(matchers, bm2,
                                                                         indices=perm)
    np.testing.assert_array_equal(bm2[perm], expected)
    untouched = np.setdiff1d(np.arange(rows), perm)
    assert (bm2[untouched] == 7).all()


def test_batch_fill_single_thread_and_strided_view(json_states, gpt2):
    vocab = gpt2.vocab_size
    matchers = json_states[:10]
    expected = serial_masks(matchers, vocab)
    big = np.zeros((20, expected.shape[1]), dtype=np.int32)
    view = big[::2]  # row stride of two rows
    xg.BatchGrammarMatcher(max_threads=1).batch_fill_next_token_bitmask(matchers, view)
    np.testing.assert_array_equal(big[::2], expected)
    assert (big[1::2] == 0).all()


def test_batch_fill_lazy_grammar_matches_eager(gpt2, json_compiled, json_states):
    vocab = gpt2.vocab_size
    lazy = xg.GrammarCompiler(gpt2, cache_enabled=False).compile_builtin_json_grammar(lazy=True)
    # Same states, replayed on the lazy grammar (every mask entry is built concurrently).
    rng = random.Random(5)
    eager_m, lazy_m = xg.GrammarMatcher(json_compiled), xg.GrammarMatcher(lazy)
    eager_states, lazy_states = [], []
    for _ in range(40):
        eager_states.append(eager_m.fork())
        lazy_states.append(lazy_m.fork())
        ids = [t for t in allowed_ids(mask_row(eager_m, vocab), vocab).tolist()
               if t not in eager_m.stop_token_ids]
        if not ids:  # the document is complete: only the stop token may follow
            break
        t = rng.choice(ids)
        assert eager_m.accept_token(t) and lazy_m.accept_token(t)
    bm = xg.allocate_token_bitmask(len(lazy_states), vocab)
    xg.BatchGrammarMatcher().batch_fill_next_token_bitmask(lazy_states, bm)
    np.testing.assert_array_equal(bm, serial_masks(eager_states, vocab))


def test_batch_fill_from_many_python_threads(json_states, gpt2):
    vocab = gpt2.vocab_size
    expected = serial_masks(json_states, vocab)
    shared = xg.BatchGrammarMatcher(max_threads=4)
    errors, results = [], {}

    def work(k: int):
        try:
            own = forks(json_states)  # distinct matchers per thread
            batch = shared if k % 2 else xg.BatchGrammarMatcher()
            for rep in range(3):
                bm = xg.allocate_token_bitmask(len(own), vocab)
                batch.batch_fill_next_token_bitmask(own, bm)
                results[(k, rep)] = bm
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 24
    for bm in results.values():
        np.testing.assert_array_equal(bm, expected)


def test_batch_fill_argument_errors(json_states, gpt2):
    vocab = gpt2.vocab_size
    batch = xg.BatchGrammarMatcher()
    a, b = json_states[3], json_states[4]
    bm = xg.allocate_token_bitmask(3, vocab)
    before = bm.copy()
    with pytest.raises(xg.InvalidArgumentError, match=r"matcher 2 is the same object as matcher 0"):
        batch.batch_fill_next_token_bitmask([a, b, a], bm)
    with pytest.raises(xg.InvalidArgumentError, match="out of range"):
        batch.batch_fill_next_token_bitmask([a, b], bm, indices=[0, 3])
    with pytest.raises(xg.InvalidArgumentError, match="more than one matcher"):
        batch.batch_fill_next_token_bitmask([a, b], bm, indices=[1, 1])
    with pytest.raises(xg.InvalidArgumentError, match="indices"):
        batch.batch_fill_next_token_bitmask([a, b], bm, indices=[1])
    with pytest.raises(xg.InvalidArgumentError, match="out of range"):
        batch.batch_fill_next_token_bitmask([a, b, json_states[5], json_states[6]], bm)
    with pytest.raises(xg.InvalidArgumentError, match="int32"):
        batch.batch_fill_next_token_bitmask([a], bm.astype(np.int64))
    with pytest.raises(xg.InvalidArgumentError, match="words"):
        batch.batch_fill_next_token_bitmask([a], bm[:, :10])
    with pytest.raises(xg.InvalidArgumentError, match="GrammarMatcher"):
        batch.batch_fill_next_token_bitmask([a, "not a matcher"], bm)
    np.testing.assert_array_equal(bm, before)  # nothing written by a failed call
    assert batch.batch_fill_next_token_bitmask([], bm) is None  # as xgrammar


def test_batch_fill_with_a_terminated_matcher_raises(json_states, gpt2):
    """As xgrammar: a matcher that accepted its stop token fails the whole call, on the
    calling thread, before any row is written; the other matchers stay usable."""
    live = json_states[0].fork()
    term = terminated(json_states)
    bm = xg.allocate_token_bitmask(2, gpt2.vocab_size)
    bm[:] = 7
    with pytest.raises(xg.MatcherStateError, match="matcher 1 has terminated"):
        xg.BatchGrammarMatcher(2).batch_fill_next_token_bitmask([live, term], bm)
    assert (bm == 7).all()
    with pytest.raises(RuntimeError, match="terminated after accepting the stop token"):
        term.fill_next_token_bitmask(bm)
    xg.BatchGrammarMatcher(2).batch_fill_next_token_bitmask([live], bm)
    np.testing.assert_array_equal(bm[0], mask_row(json_states[0], gpt2.vocab_size))
    term.rollback(1)  # the stop token undone: fills again
    xg.BatchGrammarMatcher(2).batch_fill_next_token_bitmask([live, term], bm)


# ------------------------------------------------------------------------------ batch accept / rollback


def test_batch_accept_and_rollback_equal_serial(json_states, gpt2):
    vocab = gpt2.vocab_size
    rng = random.Random(11)
    live = [m for m in json_states if not m.is_terminated()]
    serial, batched = forks(live), forks(live)
    batch = xg.BatchGrammarMatcher()
    for step in range(6):
        tokens = []
        for m in serial:
            if m.is_terminated():
                tokens.append(None)
                continue
            ids = allowed_ids(mask_row(m, vocab), vocab).tolist()
            tokens.append(rng.choice(ids) if rng.random() < 0.8 else rng.randrange(vocab))
        keep = [i for i, t in enumerate(tokens) if t is not None]
        expected = [serial[i].accept_token(tokens[i]) for i in keep]
        got = batch.batch_accept_token([batched[i] for i in keep], [tokens[i] for i in keep])
        assert got == expected
        np.testing.assert_array_equal(live_masks(batched, vocab), live_masks(serial, vocab))
        assert [m.num_accepted_tokens for m in batched] == [m.num_accepted_tokens for m in serial]
        assert [m.is_terminated() for m in batched] == [m.is_terminated() for m in serial]

    counts = [rng.randrange(0, m.num_accepted_tokens + 1) for m in serial]
    for m, c in zip(serial, counts):
        m.rollback(c)
    batch.batch_rollback(batched, counts)
    np.testing.assert_array_equal(live_masks(batched, vocab), live_masks(serial, vocab))
    assert [m.num_accepted_tokens for m in batched] == [m.num_accepted_tokens for m in serial]


def test_batch_accept_rollback_errors_change_nothing(json_states, gpt2):
    vocab = gpt2.vocab_size
    batch = xg.BatchGrammarMatcher()
    ms = forks(json_states[5:9])
    steps = [m.num_accepted_tokens for m in ms]
    masks = serial_masks(ms, vocab)
    ok_token = int(allowed_ids(masks[0], vocab)[0])
    with pytest.raises(xg.InvalidArgumentError, match="vocabulary"):
        batch.batch_accept_token(ms[:2], [ok_token, vocab + 5])
    with pytest.raises(xg.InvalidArgumentError, match="same object"):
        batch.batch_accept_token([ms[0], ms[0]], [ok_token, ok_token])
    with pytest.raises(xg.InvalidArgumentError):
        batch.batch_accept_token(ms[:2], [ok_token])
    term = terminated(json_states)
    # A terminated matcher refuses every token and string, the stop token too (as xgrammar).
    term_steps = term.num_accepted_tokens
    assert batch.batch_accept_token([term], [0]) == [False]
    assert batch.batch_accept_string([term], ["{"]) == [False]
    assert batch.batch_accept_token([term], [gpt2.stop_token_ids[0]]) == [False]
    assert term.num_accepted_tokens == term_steps and term.is_terminated()
    with pytest.raises(xg.MatcherStateError, match="cannot roll back"):
        batch.batch_rollback(ms[:2], [0, steps[1] + 1])
    with pytest.raises(xg.InvalidArgumentError, match=">= 0"):
        batch.batch_rollback(ms[:2], [1, -1])
    assert [m.num_accepted_tokens for m in ms] == steps
    np.testing.assert_array_equal(serial_masks(ms, vocab), masks)
    # The terminated matcher can be rolled back in a batch and then accept again.
    batch.batch_rollback([term], [1])
    assert not term.is_terminated()


# ------------------------------------------------------------------------------ draft trees


def reference_rows(root: xg.GrammarMatcher, tokens, parents, vocab):
    """Row and validity per node, by replaying each root-to-node path on a fresh fork."""
    n = len(tokens)
    words = (vocab + 31) // 32
    rows = np.zeros((n, words), dtype=np.int32)
    valid = np.zeros(n, dtype=bool)
    for i in range(n):
        path = []
        j = i
        while j > 0:
            path.append(int(tokens[j]))
            j = parents[j]
        path.reverse()
        m = root.fork()
        ok = True
        for t in path:
            if m.is_terminated() or not 0 <= t < vocab or not m.accept_token(t):
                ok = False
                break
        valid[i] = ok
        if ok and not m.is_terminated():
            rows[i] = mask_row(m, vocab)
    return rows, valid


def random_tree(root: xg.GrammarMatcher, n: int, rng: random.Random, vocab: int):
    """A draft tree grown from valid continuations, with some rejected tokens, out-of-vocab ids
    and stop tokens (mid-path: nodes may hang below them)."""
    stop = root.stop_token_ids[0]
    tokens, parents = [rng.randrange(vocab)], [-1]
    rows, _ = reference_rows(root, tokens, parents, vocab)
    node_rows = [rows[0]]
    for i in range(1, n):
        p = rng.randrange(i) if rng.random() < 0.3 else max(0, i - 1 - rng.randrange(3))
        ids = allowed_ids(node_rows[p], vocab)
        r = rng.random()
        if r < 0.08:
            t = stop
        elif r < 0.18 or len(ids) == 0:
            t = rng.randrange(vocab)  # usually rejected
        elif r < 0.21:
            t = rng.choice([vocab, vocab + 100, -1])
        else:
            t = int(rng.choice(ids.tolist()))
        tokens.append(t)
        parents.append(p)
        row, _ = reference_rows(root, tokens[: i + 1], parents, vocab)
        node_rows.append(row[i])
    return np.array(tokens, dtype=np.int64), np.array(parents, dtype=np.int64)


def links_from_parents(parents, reverse_children=False):
    n = len(parents)
    children = [[] for _ in range(n)]
    for i in range(1, n):
        children[parents[i]].append(i)
    first_child = np.full(n, -1, dtype=np.int64)
    next_sibling = np.full(n, -1, dtype=np.int64)
    for p, cs in enumerate(children):
        if reverse_children:
            cs = cs[::-1]
        if cs:
            first_child[p] = cs[0]
        for a, b in zip(cs, cs[1:]):
            next_sibling[a] = b
    return first_child, next_sibling


@pytest.mark.parametrize("seed", range(6))
def test_traverse_draft_tree_matches_path_replay(json_states, gpt2, seed):
    vocab = gpt2.vocab_size
    rng = random.Random(seed)
    root = json_states[(seed * 7) % 40]
    n = rng.randrange(2, 40)
    tokens, parents = random_tree(root, n, rng, vocab)
    expected_rows, expected_valid = reference_rows(root, tokens, parents, vocab)

    steps_before, mask_before = root.num_accepted_tokens, mask_row(root, vocab)
    bm = np.full((n + 2, (vocab + 31) // 32), 99, dtype=np.int32)
    valid = xg.traverse_draft_tree(root, tokens.astype(np.int32), bm, parents=parents)
    np.testing.assert_array_equal(bm[:n], expected_rows)
    assert (bm[n:] == 99).all()
    np.testing.assert_array_equal(valid, expected_valid)
    assert root.num_accepted_tokens == steps_before
    np.testing.assert_array_equal(mask_row(root, vocab), mask_before)

    for reverse in (False, True):
        fc, ns = links_from_parents(parents, reverse_children=reverse)
        bm2 = xg.allocate_token_bitmask(n, vocab)
        valid2 = xg.traverse_draft_tree(root, tokens, bm2, first_child=fc, next_sibling=ns)
        np.testing.assert_array_equal(bm2, expected_rows)
        np.testing.assert_array_equal(valid2, expected_valid)
        bm3 = xg.allocate_token_bitmask(n, vocab)
        # xgrammar's argument order and return value (the traversal completed)
        assert root.traverse_draft_tree(fc, ns, tokens, bm3) is True
        np.testing.assert_array_equal(bm3, expected_rows)
    assert root.num_accepted_tokens == steps_before


def test_traverse_draft_tree_stop_token_mid_path(json_compiled, gpt2):
    vocab = gpt2.vocab_size
    m = xg.GrammarMatcher(json_compiled)
    assert m.accept_string('{"a": 1')
    close = [t for t in range(vocab) if gpt2.token_bytes(t) == b"}"][0]
    stop = m.stop_token_ids[0]
    # root -> "}" -> stop -> "}" ; root -> stop (not allowed before the object closes)
    tokens = np.array([0, close, stop, close, stop])
    parents = np.array([-1, 0, 1, 2, 0])
    bm = xg.allocate_token_bitmask(5, vocab)
    valid = xg.traverse_draft_tree(m, tokens, bm, parents=parents)
    assert valid.tolist() == [True, True, True, False, False]
    assert bm[0].any() and bm[1].any()
    assert xg.bitmask_to_bool(bm[1], vocab)[stop]
    assert not bm[2].any() and not bm[3].any() and not bm[4].any()


def test_traverse_draft_tree_small_grammar():
    tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "a"')
    m = xg.GrammarMatcher(compiled, terminate_without_stop_token=True)
    bm = xg.allocate_token_bitmask(3, 3)
    valid = xg.traverse_draft_tree(m, [0, 0, 1], bm, first_child=[1, 2, -1],
                                   next_sibling=[-1, -1, -1])
    assert valid.tolist() == [True, True, False]
    assert bm[0].tolist() == [1] and bm[1].tolist() == [0] and bm[2].tolist() == [0]
    # A single node: just the current mask. A terminated root: a zero row.
    one = xg.allocate_token_bitmask(1, 3)
    assert xg.traverse_draft_tree(m, [5], one, parents=[-1]).tolist() == [True]
    assert one[0].tolist() == [1]
    assert m.accept_token(0) and m.is_terminated()
    assert xg.traverse_draft_tree(m, [5], one, parents=[-1]).tolist() == [True]
    assert one[0].tolist() == [0]
    # As xgrammar: with terminate_without_stop_token a path ends where the output is
    # complete, though the grammar could go on ("a"+).
    more = xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+')
    m = xg.GrammarMatcher(more, terminate_without_stop_token=True)
    valid = xg.traverse_draft_tree(m, [0, 0, 0], bm, parents=[-1, 0, 1])
    assert valid.tolist() == [True, True, False] and bm[:, 0].tolist() == [1, 0, 0]
    m = xg.GrammarMatcher(more)  # with a stop token the path goes on
    valid = xg.traverse_draft_tree(m, [0, 0, 0], bm, parents=[-1, 0, 1])
    assert valid.tolist() == [True, True, True] and bm[:, 0].tolist() == [1, 5, 5]


def test_traverse_draft_tree_deep_chain():
    tok = xg.TokenizerInfo(["a", "</s>"], stop_token_ids=[1])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+'))
    n = 5000
    parents = np.arange(-1, n - 1)
    bm = xg.allocate_token_bitmask(n, 2)
    valid = xg.traverse_draft_tree(m, np.zeros(n, dtype=np.int32), bm, parents=parents)
    assert valid.all()
    assert bm[0].tolist() == [1] and (bm[1:, 0] == 3).all()
    assert m.num_accepted_tokens == 0


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 1e-9, 60.0])
def test_traverse_draft_tree_time_threshold(threshold):
    # A time limit stops the walk (xgrammar's time_threshold): the rows of the nodes it did
    # reach are the full walk's, the others zero, the root's always filled; <= 0 is no limit.
    tok = xg.TokenizerInfo(["a", "</s>"], stop_token_ids=[1])
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+'))
    n = 3000
    first_child = np.append(np.arange(1, n), -1)
    next_sibling = np.full(n, -1)
    tokens = np.zeros(n, dtype=np.int64)
    full = xg.allocate_token_bitmask(n, 2)
    assert m.traverse_draft_tree(first_child, next_sibling, tokens, full) is True
    bm = xg.allocate_token_bitmask(n, 2)
    completed = m.traverse_draft_tree(first_child, next_sibling, tokens, bm,
                                      time_threshold=threshold)
    assert completed is (threshold != 1e-9)
    assert bm[0].tolist() == full[0].tolist() == [1]
    reached = int((bm[:, 0] != 0).sum())
    assert (bm[:reached] == full[:reached]).all() and (bm[reached:] == 0).all()
    assert reached == n if completed else reached < n
    assert m.num_accepted_tokens == 0


def test_traverse_draft_tree_argument_errors(json_states, gpt2):
    vocab = gpt2.vocab_size
    m = json_states[2]
    bm = xg.allocate_token_bitmask(4, vocab)
    t = np.zeros(4, dtype=np.int64)
    cases = [
        (dict(parents=[0, 0, 1, 2]), "parents\\[0\\] must be -1"),
        (dict(parents=[-1, 0, 2, 1]), "parents\\[2\\] = 2"),
        (dict(parents=[-1, 0, -1, 1]), "parents\\[2\\] = -1"),
        (dict(parents=[-1, 0, 1]), "parents has 3 entries"),
        (dict(parents=[-1, 0, 1, 2], first_child=[1, 2, 3, -1], next_sibling=[-1] * 4),
         "either"),
        (dict(first_child=[1, 2, 3, -1]), "either"),
        (dict(), "either"),
        (dict(first_child=[1, 2, 3, 1], next_sibling=[-1] * 4), "reached twice"),
        (dict(first_child=[1, 0, -1, -1], next_sibling=[-1] * 4), "reached twice"),
        (dict(first_child=[1, -1, -1, -1], next_sibling=[-1, 2, 1, -1]), "reached twice"),
        (dict(first_child=[1, -1, -1, -1], next_sibling=[2, -1, -1, -1]), "root"),
        (dict(first_child=[4, -1, -1, -1], next_sibling=[-1] * 4), "first_child\\[0\\] = 4"),
        (dict(first_child=[1, -1, -1, -1], next_sibling=[-1, -7, -1, -1]),
         "next_sibling\\[1\\] = -7"),
        (dict(parents=[-1.0, 0.0, 1.0, 2.0]), "integer"),
        (dict(first_child=np.array([1, 2, 3, -1]), next_sibling=np.full(4, -1, np.int32)),
         "same dtype"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(xg.InvalidArgumentError, match=msg):
            xg.traverse_draft_tree(m, t, bm, **kwargs)
    par = dict(parents=[-1, 0, 1, 2])
    with pytest.raises(xg.InvalidArgumentError, match="rows"):
        xg.traverse_draft_tree(m, t, bm[:3], **par)
    with pytest.raises(xg.InvalidArgumentError, match="rows"):
        xg.traverse_draft_tree(m, t, bm[0], **par)
    with pytest.raises(xg.InvalidArgumentError, match="int32"):
        xg.traverse_draft_tree(m, t, bm.astype(np.uint32), **par)
    with pytest.raises(xg.InvalidArgumentError, match="words"):
        xg.traverse_draft_tree(m, t, bm[:, :3], **par)
    with pytest.raises(xg.InvalidArgumentError, match="at least one node"):
        xg.traverse_draft_tree(m, [], bm, parents=[])
    with pytest.raises(xg.InvalidArgumentError, match="1-D"):
        xg.traverse_draft_tree(m, np.zeros((2, 2)), bm, parents=[-1, 0])


def test_batch_traverse_draft_tree_equals_single(json_states, gpt2):
    vocab = gpt2.vocab_size
    words = (vocab + 31) // 32
    rng = random.Random(99)
    roots = [json_states[i] for i in (0, 5, 17, 30, 44, 61)]
    n = 12
    built = [random_tree(r, n, rng, vocab) for r in roots]
    tokens = np.stack([t for t, _ in built])
    parents = np.stack([p for _, p in built])
    batch = xg.BatchGrammarMatcher(max_threads=3)

    # A tree per matcher, (B, N, W) bitmask.
    bm = np.full((len(roots), n, words), 5, dtype=np.int32)
    valid = batch.batch_traverse_draft_tree(roots, tokens, bm, parents=parents)
    assert valid.shape == (len(roots), n)
    for b, root in enumerate(roots):
        one = xg.allocate_token_bitmask(n, vocab)
        v1 = xg.traverse_draft_tree(root, tokens[b], one, parents=parents[b])
        np.testing.assert_array_equal(bm[b], one)
        np.testing.assert_array_equal(valid[b], v1)

    # One tree shape for the whole batch, as links, (B * N, W) bitmask.
    fc, ns = links_from_parents(parents[0])
    flat = xg.allocate_token_bitmask(len(roots) * n, vocab)
    valid2 = batch.batch_traverse_draft_tree(roots, tokens, flat, first_child=fc, next_sibling=ns)
    for b, root in enumerate(roots):
        rows, v = reference_rows(root, tokens[b], parents[0], vocab)
        np.testing.assert_array_equal(flat[b * n:(b + 1) * n], rows)
        np.testing.assert_array_equal(valid2[b], v)

    with pytest.raises(xg.InvalidArgumentError, match="same object"):
        batch.batch_traverse_draft_tree([roots[0], roots[0]], tokens[:2], bm[:2], parents=parents[:2])
    with pytest.raises(xg.InvalidArgumentError, match="rows"):
        batch.batch_traverse_draft_tree(roots, tokens, flat[:-1], parents=parents)
    with pytest.raises(xg.InvalidArgumentError, match="shape"):
        batch.batch_traverse_draft_tree(roots, tokens, bm, parents=parents[:2])
    with pytest.raises(xg.InvalidArgumentError, match="contiguous"):
        batch.batch_traverse_draft_tree(roots, tokens, bm[:, ::-1], parents=parents)
    with pytest.raises(xg.InvalidArgumentError, match="draft_tokens"):
        batch.batch_traverse_draft_tree(roots, tokens[:3], bm, parents=parents)
    bad = parents.copy()
    bad[2, 5] = 7
    with pytest.raises(xg.InvalidArgumentError, match="parents\\[5\\] = 7"):
        batch.batch_traverse_draft_tree(roots, tokens, bm, parents=bad)
    assert batch.batch_traverse_draft_tree([], np.zeros((0, 3)), bm[0], parents=[-1, 0, 0]).shape == (0, 3)


@pytest.mark.parametrize("slots", [[3, 1, 4], [1, 2, 3], [0]], ids=["scattered", "run", "one"])
def test_batch_traverse_draft_tree_indices(json_states, gpt2, slots):
    vocab = gpt2.vocab_size
    words = (vocab + 31) // 32
    rng = random.Random(7)
    roots = [json_states[i] for i in (2, 9, 33)][:len(slots)]
    n = 6
    built = [random_tree(r, n, rng, vocab) for r in roots]
    tokens = np.stack([t for t, _ in built])
    parents = np.stack([p for _, p in built])
    batch = xg.BatchGrammarMatcher()
    ref = np.zeros((len(roots), n, words), dtype=np.int32)
    ref_valid = batch.batch_traverse_draft_tree(roots, tokens, ref, parents=parents)

    stack = np.full((5, n, words), 7, dtype=np.int32)  # 5 tree slots, some not written
    valid = batch.batch_traverse_draft_tree(roots, tokens, stack, parents=parents,
                                            indices=slots)
    np.testing.assert_array_equal(valid, ref_valid)
    np.testing.assert_array_equal(stack[slots], ref)
    others = [s for s in range(5) if s not in slots]
    assert (stack[others] == 7).all()

    flat = np.full((5 * n + 2, words), 7, dtype=np.int32)  # (rows, W): rows >= slots * N
    batch.batch_traverse_draft_tree(roots, tokens, flat, parents=parents, indices=slots)
    np.testing.assert_array_equal(flat[:5 * n].reshape(5, n, words)[slots], ref)
    assert (flat[:5 * n].reshape(5, n, words)[others] == 7).all() and (flat[5 * n:] == 7).all()

    stack[:] = 7
    bad_parents = parents.copy()
    bad_parents[0, 3] = 9
    for kwargs, match in [(dict(indices=slots[:-1] + [5]), "indices must be in"),
                          (dict(indices=[slots[0]] * len(slots)), "distinct"),
                          (dict(indices=slots + [0]), "indices"),
                          (dict(indices=slots, parents=bad_parents), "parents")]:
        if match == "distinct" and len(slots) == 1:
            continue
        kwargs.setdefault("parents", parents)
        with pytest.raises(xg.InvalidArgumentError, match=match):
            batch.batch_traverse_draft_tree(roots, tokens, stack, **kwargs)
        assert (stack == 7).all()  # nothing written


# ------------------------------------------------------------------------------ serialization


def test_serialize_round_trip_masks_along_document(json_compiled, gpt2):
    vocab = gpt2.vocab_size
    data = json_compiled.serialize()
    assert isinstance(data, bytes) and data[:4] == b"XG2C"
    for loaded in (xg.CompiledGrammar.deserialize(data, gpt2),
                   xg.GrammarCompiler(gpt2, cache_enabled=False).deserialize(bytearray(data))):
        assert loaded.mask_cache_stats()["num_entries"] > 0  # precomputed, as the original
        a, b = xg.GrammarMatcher(json_compiled), xg.GrammarMatcher(loaded)
        rng = random.Random(3)
        for _ in range(30):
            row = mask_row(a, vocab)
            np.testing.assert_array_equal(mask_row(b, vocab), row)
            ids = [t for t in allowed_ids(row, vocab).tolist() if t not in a.stop_token_ids]
            t = rng.choice(ids)
            assert a.accept_token(t) and b.accept_token(t)
        c, d = xg.GrammarMatcher(json_compiled), xg.GrammarMatcher(loaded)
        for ch in JSON_DOC:
            np.testing.assert_array_equal(mask_row(d, vocab), mask_row(c, vocab))
            assert c.accept_string(ch) and d.accept_string(ch)
        assert c.is_completed() and d.is_completed()
        # Serializing the loaded grammar gives the same blob.
        assert loaded.serialize() == data


def test_serialize_lazy_and_custom_root():
    tok = xg.TokenizerInfo(["a", "b", "ab", "c", "</s>"], stop_token_ids=[4])
    compiler = xg.GrammarCompiler(tok, cache_enabled=False)
    compiled = compiler.compile_grammar('start ::= x+ "c"\nx ::= "a" | "b"',
                                        root_rule_name="start", lazy=True)
    data = compiled.serialize()
    loaded = xg.CompiledGrammar.deserialize(data, tok)
    assert loaded.mask_cache_stats()["num_entries"] == 0  # stays lazy
    for g in (compiled, loaded):
        m = xg.GrammarMatcher(g)
        assert m.accept_string("abba") and not m.accept_string("d") and m.accept_string("c")
        assert m.is_completed()
    compiled.precompute()
    eager = xg.CompiledGrammar.deserialize(compiled.serialize(), tok)
    assert eager.mask_cache_stats()["num_entries"] > 0


def _expect_bad(data: bytes, tok, match=None):
    with pytest.raises(xg.InvalidArgumentError, match=match):
        xg.CompiledGrammar.deserialize(data, tok)


def test_deserialize_rejects_bad_blobs(gpt2):
    tok = xg.TokenizerInfo(["a", "b", "ab", "{", "}", "</s>"], stop_token_ids=[5])
    compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "{" ("a" | "b")* "}"')
    data = compiled.serialize()
    _expect_bad(b"", tok, "not an xg2-jax compiled grammar")
    _expect_bad(b"PK\x03\x04" + data[4:], tok, "not an xg2-jax compiled grammar")
    _expect_bad(data[:10], tok, "truncated")
    _expect_bad(data[:-1], tok, "truncated")
    _expect_bad(data + b"\0", tok, "unexpected bytes")
    _expect_bad(data[:4] + (7).to_bytes(4, "little") + data[8:], tok,
                "unsupported format version 7")
    flipped = bytearray(data)
    flipped[-3] ^= 0x20
    _expect_bad(bytes(flipped), tok, "checksum mismatch")
    _expect_bad(data, gpt2, "different vocabulary")
    padded = xg.TokenizerInfo(["a", "b", "ab", "{", "}", "</s>"], stop_token_ids=[5], vocab_size=64)
    _expect_bad(data, padded, "different vocabulary")
    with pytest.raises(xg.InvalidArgumentError, match="different vocabulary"):
        xg.GrammarCompiler(gpt2).deserialize(data)
    with pytest.raises(xg.InvalidArgumentError, match="bytes"):
        xg.CompiledGrammar.deserialize("XG2C", tok)
    # Every truncation fails cleanly.
    for k in range(len(data)):
        _expect_bad(data[:k], tok)


def test_deserialize_fuzz_byte_flips():
    tok = xg.TokenizerInfo(["a", "b", "ab", "{", "}", "</s>"], stop_token_ids=[5])
    compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= "{" ("a" | "b")* "}"')
    data = compiled.serialize()
    rng = random.Random(2024)
    # Every single-byte change is detected (magic, version, length, checksum or payload).
    for pos in range(len(data)):
        blob = bytearray(data)
        blob[pos] ^= 1 << rng.randrange(8)
        _expect_bad(bytes(blob), tok)
    for _ in range(300):
        blob = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            blob[rng.randrange(len(blob))] = rng.randrange(256)
        if bytes(blob) == data:
            continue
        _expect_bad(bytes(blob), tok)
    for _ in range(100):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        _expect_bad(b"XG2C" + blob if rng.random() < 0.5 else blob, tok)
