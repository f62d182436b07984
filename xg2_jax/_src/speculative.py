"""Constrained speculative decoding over draft trees.

A draft tree per row has ``N`` nodes in xgrammar's layout: node 0 is the root (the last token
already accepted by the matcher, not yet scored by the target model) and ``parents[i] < i``.
One step of :func:`speculative_step`:

1. dispatch the target model's verify pass over the tree (asynchronous);
2. meanwhile on the host, :meth:`~xg2_jax.BatchGrammarMatcher.batch_traverse_draft_tree`
   writes the (B, N, W) mask stack: row ``i`` is the mask after node ``i``'s path;
3. on the device, :func:`accept_draft_tree` applies the masks to the verify logits and walks
   the tree from the root, accepting the longest valid path (greedy, or rejection sampling)
   and drawing one more ("bonus") token from the target at the last accepted node;
4. the host advances each matcher along the accepted path and the bonus token.

Example:
    >>> import numpy as np, xg2_jax as xg
    >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    >>> m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"'))
    >>> logits = jnp.zeros((1, 3, 3))  # the target is indifferent: the masks decide
    >>> masks, _ = draft_tree_masks([m], np.array([[2, 0, 1]]), np.array([-1, 0, 1]))
    >>> acc = accept_draft_tree(logits, jnp.asarray(masks), jnp.array([[2, 0, 1]]),
    ...                         jnp.array([-1, 0, 1]), jax.random.key(0))
    >>> acc.accepted.tolist(), acc.bonus_token.tolist()
    ([[False, True, True]], [2])
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any, Callable, NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.host_loop import HostMaskBuffers, jit_step, mask_argument, mask_row_words
from xg2_jax._src.masking import apply_token_bitmask, bitmask_has_allowed
from xg2_jax._src.matcher import GrammarMatcher
from xg2_jax._src.sampling import SamplingConfig

__all__ = ["DraftAcceptance", "SpeculativeStepResult", "accept_draft_tree",
           "draft_tree_masks", "speculative_step"]


class DraftAcceptance(NamedTuple):
    """What :func:`accept_draft_tree` returns (device arrays).

    Attributes:
        accepted: bool (B, N): nodes on the accepted path (the root excluded); in index order
            they are the path from the root.
        last_node: int32 (B,): the deepest accepted node (0: no draft token accepted).
        num_accepted: int32 (B,): accepted draft tokens.
        bonus_token: int32 (B,): the target's token after ``last_node``.
        bonus_valid: bool (B,): False when the grammar allows nothing after ``last_node``
            (its path ended with a stop token); ``bonus_token`` is then meaningless.
    """

    accepted: jax.Array
    last_node: jax.Array
    num_accepted: jax.Array
    bonus_token: jax.Array
    bonus_valid: jax.Array


def draft_tree_masks(matchers: Sequence[Optional[GrammarMatcher]], draft_tokens,
                     parents, *, out: Optional[np.ndarray] = None,
                     batch_matcher: Optional[BatchGrammarMatcher] = None,
                     mask_width: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """Computes the (B, N, W) mask stack of a batch of draft trees on the host.

    Args:
        matchers: B matchers at their roots' positions (left unchanged); ``None``: an
            unconstrained row (all ones).
        draft_tokens: int (B, N) tree tokens (node 0: the root).
        parents: int (N,) or (B, N) parent indices (``-1`` for the root).
        out: optional C-contiguous int32 (B, N, W) buffer to write.
        batch_matcher: reuse a :class:`~xg2_jax.BatchGrammarMatcher`.
        mask_width: words per row (default: from the matchers' vocabulary).

    Returns:
        ``(masks int32 (B, N, W), valid bool (B, N))``.
    """
    tokens = np.asarray(draft_tokens)
    b, n = tokens.shape
    if out is None:
        width = mask_width or mask_row_words(matchers, 32)
        out = np.empty((b, n, width), dtype=np.int32)
    rows = np.array([i for i, m in enumerate(matchers) if m is not None], dtype=np.int64)
    valid = np.ones((b, n), dtype=bool)
    out[[i for i, m in enumerate(matchers) if m is None]] = -1
    par = np.asarray(parents)
    if rows.size:
        batch = batch_matcher or BatchGrammarMatcher()
        full = rows.size == b
        valid[rows] = batch.batch_traverse_draft_tree(
            matchers if full else [matchers[i] for i in rows], tokens if full else tokens[rows],
            out, parents=par if par.ndim == 1 or full else par[rows],
            indices=None if full else rows)
    return out, valid


@partial(jax.jit, static_argnames=("greedy",))
def accept_draft_tree(verify_logits: jax.Array, tree_masks: jax.Array, draft_tokens: jax.Array,
                      parents: jax.Array, key: jax.Array, *, greedy: bool = True,
                      temperature=1.0, draft_probs: Optional[jax.Array] = None,
                      active: Optional[jax.Array] = None) -> DraftAcceptance:
    """Masks the verify logits and accepts the longest valid path of each draft tree.

    Greedy: a child is accepted iff its token is the argmax of the masked target logits at
    its parent, so the output equals non-speculative constrained greedy decoding. Otherwise
    multi-candidate rejection sampling (SpecInfer): the children of the current node are
    tried in index order; child ``x`` drawn from ``q`` is accepted with probability
    ``min(1, p(x) / q(x))``, else ``p`` becomes ``normalize(max(p - q, 0))``; the bonus token
    is drawn from the final ``p``. The tokens then follow the masked target distribution.

    Args:
        verify_logits: float (B, N, V): target logits of the token after each node.
        tree_masks: int32 (B, N, W) from :func:`draft_tree_masks`.
        draft_tokens: int32 (B, N).
        parents: int32 (N,) or (B, N).
        key: PRNG key (unused when greedy).
        greedy: static.
        temperature: target temperature, scalar or per row (B,) (sampling only; a runtime
            value: changing it does not recompile).
        draft_probs: float (B, N, V): the draft distribution node ``i``'s token was drawn
            from; default: a deterministic drafter (one-hot on the draft token).
        active: optional bool (B,): inactive rows accept nothing.

    Returns:
        A :class:`DraftAcceptance`.
    """
    b, n, v = verify_logits.shape
    draft_tokens = jnp.asarray(draft_tokens, jnp.int32)
    parents = jnp.broadcast_to(jnp.asarray(parents, jnp.int32), (b, n))
    masked = apply_token_bitmask(verify_logits, tree_masks).astype(jnp.float32)
    has_allowed = bitmask_has_allowed(tree_masks, v)
    rows = jnp.arange(b)
    go = jnp.ones((b,), bool) if active is None else jnp.asarray(active, bool)
    accepted0 = jnp.zeros((b, n), bool)

    if greedy:
        target = jnp.argmax(masked, axis=-1).astype(jnp.int32)  # (B, N)

        def body(j, carry):
            cur, accepted = carry
            take = (go & (parents[:, j] == cur) & has_allowed[rows, cur]
                    & (draft_tokens[:, j] == target[rows, cur]))
            return jnp.where(take, j, cur), accepted.at[:, j].set(take)

        cur, accepted = jax.lax.fori_loop(1, n, body, (jnp.zeros((b,), jnp.int32), accepted0))
        bonus = target[rows, cur]
    else:
        t = jnp.maximum(jnp.asarray(temperature, jnp.float32), jnp.float32(1e-6))
        if t.ndim:  # per row
            t = t.reshape(t.shape + (1,) * (3 - t.ndim))
        probs = jax.nn.softmax(masked / t, axis=-1)  # (B, N, V)
        keys = jax.random.split(key, n + 1)

        def body(j, carry):
            cur, p, accepted = carry
            x = draft_tokens[:, j]
            if draft_probs is None:
                q = jax.nn.one_hot(x, v, dtype=jnp.float32)
            else:
                q = draft_probs[:, j].astype(jnp.float32)
            px = p[rows, x]
            qx = jnp.maximum(q[rows, x], jnp.float32(1e-20))
            u = jax.random.uniform(keys[j], (b,))
            candidate = go & (parents[:, j] == cur) & has_allowed[rows, cur]
            take = candidate & (u * qx < px)
            resid = jnp.maximum(p - q, 0.0)
            total = jnp.sum(resid, axis=-1, keepdims=True)
            resid = jnp.where(total > 0, resid / jnp.where(total > 0, total, 1.0), p)
            p = jnp.where(take[:, None], probs[:, j], jnp.where(candidate[:, None], resid, p))
            return jnp.where(take, j, cur), p, accepted.at[:, j].set(take)

        cur, p, accepted = jax.lax.fori_loop(
            1, n, body, (jnp.zeros((b,), jnp.int32), probs[:, 0], accepted0))
        logp = jnp.where(p > 0, jnp.log(jnp.where(p > 0, p, 1.0)), -jnp.inf)
        bonus = jax.random.categorical(keys[0], logp, axis=-1).astype(jnp.int32)
    return DraftAcceptance(accepted, cur, jnp.sum(accepted, axis=-1, dtype=jnp.int32), bonus,
                           has_allowed[rows, cur] & go)


@partial(jax.jit, static_argnames=("greedy",))
def _split_and_accept(verify_logits, tree_masks, draft_tokens, parents, key, active,
                      draft_probs, temperature, *, greedy: bool):
    """:func:`accept_draft_tree` on a fresh subkey; returns it with the advanced key."""
    key, sub = jax.random.split(key)
    acc = accept_draft_tree(verify_logits, tree_masks, draft_tokens, parents, sub,
                            greedy=greedy, temperature=temperature, draft_probs=draft_probs,
                            active=active)
    return acc, key


@dataclasses.dataclass
class SpeculativeStepResult:
    """What :func:`speculative_step` returns (host arrays, except ``aux`` and ``key``).

    Attributes:
        new_tokens: per row, the accepted draft tokens then the bonus token (if any).
        last_node: int (B,): the deepest accepted node (select the model cache with it).
        accepted: bool (B, N).
        bonus_valid: bool (B,).
        finished: bool (B,): the row's matcher terminated (stop token accepted).
        errors: bool (B,): a token was rejected while advancing (should not happen).
        aux: whatever ``verify_fn`` returned next to the logits (e.g. per-node states).
        key: the advanced PRNG key: pass it to the next step (reusing the old key would
            repeat the same random draws).
    """

    new_tokens: list
    last_node: np.ndarray
    accepted: np.ndarray
    bonus_valid: np.ndarray
    finished: np.ndarray
    errors: np.ndarray
    aux: Any = None
    key: Any = None


def _advance_matchers(matchers: Sequence[Optional[GrammarMatcher]], paths: list,
                      batch: BatchGrammarMatcher) -> tuple[np.ndarray, np.ndarray]:
    """Accepts ``paths[i]`` into ``matchers[i]``, one batched accept per depth.

    A rejected token (or a token after the matcher terminated) ends that row's path there:
    the row gets an error and ``paths[i]`` is cut. Returns ``(finished, errors)``.
    """
    b = len(matchers)
    errors = np.zeros(b, bool)
    live = [i for i in range(b) if matchers[i] is not None and paths[i]]
    depth = 0
    while live:
        if depth:  # a stop token ends a path; anything after it is an error
            for i in live:
                if matchers[i].is_terminated():
                    errors[i] = True
                    paths[i] = paths[i][:depth]
            live = [i for i in live if not errors[i]]
        ok = batch.batch_accept_token([matchers[i] for i in live],
                                      [paths[i][depth] for i in live])
        for i, good in zip(live, ok):
            if not good:
                errors[i] = True
                paths[i] = paths[i][:depth]
        depth += 1
        live = [i for i in live if not errors[i] and depth < len(paths[i])]
    finished = np.array([m is not None and (m.is_terminated() or errors[i])
                         for i, m in enumerate(matchers)], dtype=bool)
    return finished, errors


def speculative_step(verify_fn: Callable, params: Any, cache: Any,
                     matchers: Sequence[Optional[GrammarMatcher]], draft_tokens, parents, *,
                     key: Optional[jax.Array] = None,
                     sampling: SamplingConfig = SamplingConfig(greedy=True),
                     draft_probs: Optional[jax.Array] = None,
                     active: Optional[np.ndarray] = None,
                     buffers: Optional[HostMaskBuffers] = None,
                     batch_matcher: Optional[BatchGrammarMatcher] = None,
                     mask_sharding: Any = None) -> SpeculativeStepResult:
    """One constrained speculative step: verify on the device, tree masks on the host.

    Args:
        verify_fn: ``verify_fn(params, cache, draft_tokens (B, N), parents) ->
            (logits (B, N, V), aux)`` (jitted here).
        params, cache: passed to ``verify_fn``.
        matchers: B matchers at the roots' positions (``None``: unconstrained row); advanced
            along the accepted path and the bonus token (one batched accept per depth).
        draft_tokens: int (B, N) trees, node 0 the root.
        parents: int (N,) or (B, N).
        key: PRNG key for sampling (default ``jax.random.key(0)``); split here, and the
            advanced key is returned in the result (also when greedy).
        sampling: greedy or temperature (a runtime value; top-k/top-p are not applied to
            verification).
        draft_probs: see :func:`accept_draft_tree`.
        active: optional bool (B,): inactive rows are left alone.
        buffers: a :class:`~xg2_jax.HostMaskBuffers` of shape (B * N, W) reused across steps
            (double-buffered); default: a fresh buffer.
        batch_matcher: reuse a :class:`~xg2_jax.BatchGrammarMatcher`.
        mask_sharding: sharding for the (B, N, W) mask stack.

    Returns:
        A :class:`SpeculativeStepResult`; ``result.key`` is the key for the next step.

    Example:
        >>> import xg2_jax as xg
        >>> from xg2_jax import testing as tm
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
        >>> cfg = tm.RandomModelConfig(vocab_size=3, hidden=8)
        >>> params, cache = tm.init_params(jax.random.key(0), cfg), tm.init_cache(cfg, 1)
        >>> res = speculative_step(tm.verify_tree, params, cache, [xg.GrammarMatcher(g)],
        ...                        np.array([[2, 0, 1]]), np.array([-1, 0, 1]))
        >>> res.new_tokens, res.finished.tolist()
        ([[0, 1, 2]], [True])
    """
    draft_np = np.asarray(draft_tokens, dtype=np.int32)
    b, n = draft_np.shape
    parents_np = np.asarray(parents, dtype=np.int32)
    act = np.ones(b, bool) if active is None else np.asarray(active, bool)
    logits, aux = jit_step(verify_fn)(params, cache, draft_np, parents_np)
    width = mask_row_words(matchers, logits.shape[-1])
    buffers = buffers or HostMaskBuffers((b * n, width))
    slot, flat = buffers.acquire()
    masks = flat.reshape(b, n, width)
    live = [m if (m is not None and act[i]) else None for i, m in enumerate(matchers)]
    draft_tree_masks(live, draft_np, parents_np, out=masks, batch_matcher=batch_matcher)
    acc, next_key = _split_and_accept(
        logits, mask_argument(masks, mask_sharding), draft_np, parents_np,
        jax.random.key(0) if key is None else key, act, draft_probs, sampling.temperature,
        greedy=sampling.greedy)
    buffers.release(slot, acc)
    accepted, last_node, bonus, bonus_valid = jax.device_get(
        (acc.accepted, acc.last_node, acc.bonus_token, acc.bonus_valid))
    paths = []
    for i in range(b):
        toks = draft_np[i, accepted[i]].tolist() if act[i] else []
        if act[i] and bonus_valid[i]:
            toks.append(int(bonus[i]))
        paths.append(toks)
    finished, errors = _advance_matchers(live, paths, batch_matcher or BatchGrammarMatcher())
    return SpeculativeStepResult(paths, last_node, accepted, bonus_valid, finished, errors,
                                 aux, next_key)
