"""Masks for a serving engine's speculative verify step, and its fused mask, sample and accept.

A verify step scores every request's last token followed by its draft tokens, so the target
model returns one logits row per draft position: ``1 + k`` rows for a chain of ``k`` drafts
(n-gram, EAGLE, MTP) or one per node of a draft tree. Each row needs its own mask: row ``j``
is the grammar state after the first ``j`` drafts. :func:`chain_verify_masks` and
:func:`tree_verify_masks` fill them on the host by walking each request's draft on a fork of
its matcher (the native draft-tree walk, one accept + fill + rollback per node, requests in
parallel with the GIL released) while the device runs the target model. Their rows are never
empty where a token can still be emitted:

- unconstrained requests (``None`` matchers) get all-allowed rows;
- a matcher that has already terminated is never asked for a mask: all its rows are
  *stop-only* (only its stop tokens);
- the row after a draft token that ends the grammar (a stop token), and every row after it,
  is stop-only;
- rows after a draft token the grammar rejects (and padding) repeat the mask of the last
  state the grammar reached, as vLLM does: the target can never accept that draft, so those
  rows only have to stay valid.

:func:`verify_chain` masks the verify logits, samples and accepts in one jitted function
(greedy, or rejection sampling against the draft distribution) and returns the tokens per
request; a row whose mask allows nothing (a matcher without stop tokens after termination)
never yields NaN and never emits a token.

Example:
    >>> import numpy as np, xg2_jax as xg
    >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
    >>> m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"'))
    >>> vm = chain_verify_masks([m], np.array([[0, 1, 2]]))   # drafts a, b, </s>
    >>> [xg.bitmask_to_bool(r, 3).tolist() for r in vm.masks[0]]
    [[True, False, False], [False, True, False], [False, False, True], [False, False, True]]
    >>> logits = jnp.zeros((1, 4, 3))        # an indifferent target: the masks decide
    >>> out = verify_chain(logits, jnp.asarray(vm.masks), jnp.array([[0, 1, 2]]),
    ...                    jnp.array([3]), jax.random.key(0))
    >>> out.tokens.tolist(), out.num_tokens.tolist()
    ([[0, 1, 2, 2]], [4])
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import NamedTuple, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from xg2_jax._src.batch import BatchGrammarMatcher
from xg2_jax._src.errors import InvalidArgumentError
from xg2_jax._src.host_loop import mask_row_words
from xg2_jax._src.masking import bitmask_has_allowed, unpack_bitmask
from xg2_jax._src.matcher import GrammarMatcher

__all__ = ["ChainVerifyResult", "VerifyMasks", "chain_verify_masks", "tree_verify_masks",
           "verify_chain"]


@dataclasses.dataclass(frozen=True)
class VerifyMasks:
    """What :func:`chain_verify_masks` and :func:`tree_verify_masks` return (host arrays).

    Attributes:
        masks: int32 (B, N, W): row ``i`` masks the target's token after node ``i``.
        valid: bool (B, N): the grammar accepts the drafts on node ``i``'s path (always True
            for unconstrained requests and for node 0).
        stop_only: bool (B, N): row ``i`` allows only stop tokens (the path reached the end of
            the grammar, or the matcher had terminated).
    """

    masks: np.ndarray
    valid: np.ndarray
    stop_only: np.ndarray


def _stop_row(matcher: GrammarMatcher, width: int) -> np.ndarray:
    """int32 (W,): only ``matcher``'s stop tokens allowed."""
    bits = np.zeros(width * 32, dtype=bool)
    stops = [t for t in matcher.stop_token_ids if 0 <= t < width * 32]
    bits[stops] = True
    return np.packbits(bits, bitorder="little").view(np.int32)


def _output_buffer(out: Optional[np.ndarray], shape: tuple[int, int, int]) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=np.int32)
    if not isinstance(out, np.ndarray) or out.dtype != np.int32 or out.shape != shape:
        raise InvalidArgumentError(
            f"out must be a numpy int32 array of shape {shape}; got "
            f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        # The native walk writes whole (N, W) slabs per request; a strided view would be
        # written past its rows, so it is refused rather than copied behind the caller's back.
        raise InvalidArgumentError("out must be a writable C-contiguous array "
                                   "(a strided view or a transposed buffer is refused)")
    return out


def _verify_rows(matchers: Sequence[Optional[GrammarMatcher]], tokens: np.ndarray,
                 parents: np.ndarray, out: Optional[np.ndarray],
                 batch_matcher: Optional[BatchGrammarMatcher],
                 mask_width: Optional[int]) -> VerifyMasks:
    """The shared fill: native tree walk for live matchers, then the row rules above."""
    b, n = tokens.shape
    if len(matchers) != b:
        raise InvalidArgumentError(f"got {len(matchers)} matchers for {b} draft rows")
    width = mask_width or mask_row_words(matchers, 32)
    masks = _output_buffer(out, (b, n, width))
    valid = np.ones((b, n), dtype=bool)
    stop_only = np.zeros((b, n), dtype=bool)
    par = np.broadcast_to(parents, (b, n))
    live = [i for i, m in enumerate(matchers) if m is not None and not m.is_terminated()]
    for i, m in enumerate(matchers):
        if m is None:
            masks[i] = -1
        elif m.is_terminated():  # never asked for a mask: nothing but a stop may follow
            masks[i] = _stop_row(m, width)
            valid[i, 1:] = False
            stop_only[i] = True
    if not live:
        return VerifyMasks(masks, valid, stop_only)
    rows = np.array(live)
    batch = batch_matcher or BatchGrammarMatcher()
    valid[rows] = batch.batch_traverse_draft_tree(
        [matchers[i] for i in live], tokens[rows], masks,
        parents=parents if parents.ndim == 1 else parents[rows], indices=rows)
    # A live matcher always allows some token, so an empty row on a valid path is the row
    # after a token that ended the grammar.
    sub = masks[rows]
    ended = valid[rows] & ~np.any(sub != 0, axis=-1)
    for r, i in enumerate(live):
        if ended[r].any():
            sub[r, ended[r]] = _stop_row(matchers[i], width)
    # Invalid nodes (after a rejected token, padding, or past the end) take the row of their
    # deepest valid ancestor; parents[j] < j, so one pass in index order resolves them.
    source = np.broadcast_to(np.arange(n), (len(live), n)).copy()
    vr, pr = valid[rows], par[rows]
    for j in range(1, n):
        source[:, j] = np.where(vr[:, j], j, source[np.arange(len(live)), pr[:, j]])
    sub = np.take_along_axis(sub, source[:, :, None], axis=1)
    masks[rows] = sub
    stop_only[rows] = np.take_along_axis(ended, source, axis=1)
    return VerifyMasks(masks, valid, stop_only)


def chain_verify_masks(matchers: Sequence[Optional[GrammarMatcher]], draft_tokens, *,
                       num_draft=None, out: Optional[np.ndarray] = None,
                       batch_matcher: Optional[BatchGrammarMatcher] = None,
                       mask_width: Optional[int] = None) -> VerifyMasks:
    """The (B, 1 + k, W) verify masks of a batch of draft chains (one row per position).

    Args:
        matchers: B matchers at each request's current state (left unchanged); ``None``: an
            unconstrained request (all-allowed rows).
        draft_tokens: int (B, k) draft tokens; negative entries are padding.
        num_draft: optional int (B,): drafts per request (entries past it are padding).
        out: optional C-contiguous int32 (B, 1 + k, W) buffer to fill.
        batch_matcher: reuse a :class:`~xg2_jax.BatchGrammarMatcher` (its thread pool).
        mask_width: words per row (default: from the matchers' vocabulary).

    Returns:
        A :class:`VerifyMasks`; row ``j`` of request ``b`` masks the target's token after its
        first ``j`` drafts (row ``k``: the bonus token after all of them).

    Raises:
        InvalidArgumentError: shapes that disagree, or an ``out`` that is not a C-contiguous
            int32 buffer of the right shape.

    Example:
        >>> import numpy as np, xg2_jax as xg
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> g = xg.GrammarCompiler(tok).compile_grammar('root ::= "a" "b"')
        >>> vm = chain_verify_masks([xg.GrammarMatcher(g), None], np.array([[1, -1], [0, 0]]))
        >>> vm.valid.tolist(), vm.masks[:, :, 0].tolist()
        ([[True, False, False], [True, True, True]], [[1, 1, 1], [-1, -1, -1]])
    """
    drafts = np.asarray(draft_tokens)
    if drafts.ndim != 2 or (drafts.size and not np.issubdtype(drafts.dtype, np.integer)):
        raise InvalidArgumentError(f"draft_tokens must be an integer array (B, k); got "
                                   f"{drafts.dtype} {drafts.shape}")
    b, k = drafts.shape
    tokens = np.zeros((b, k + 1), dtype=np.int64)
    tokens[:, 1:] = drafts
    if num_draft is not None:
        lengths = np.asarray(num_draft).reshape(-1)
        if lengths.shape != (b,):
            raise InvalidArgumentError(f"num_draft must have shape ({b},); got {lengths.shape}")
        tokens[:, 1:][np.arange(k)[None, :] >= lengths[:, None]] = -1
    parents = np.arange(-1, k, dtype=np.int64)
    return _verify_rows(matchers, tokens, parents, out, batch_matcher, mask_width)


def tree_verify_masks(matchers: Sequence[Optional[GrammarMatcher]], draft_tokens, parents, *,
                      out: Optional[np.ndarray] = None,
                      batch_matcher: Optional[BatchGrammarMatcher] = None,
                      mask_width: Optional[int] = None) -> VerifyMasks:
    """The (B, N, W) verify masks of a batch of draft trees (one row per node).

    The tree layout is :func:`~xg2_jax.traverse_draft_tree`'s: node 0 is the root (the
    request's current state; its token is not accepted again) and ``parents[i] < i``.

    Args:
        matchers: B matchers at the roots (left unchanged); ``None``: unconstrained.
        draft_tokens: int (B, N) tree tokens; negative entries are padding nodes.
        parents: int (N,) or (B, N), ``-1`` for the root.
        out: optional C-contiguous int32 (B, N, W) buffer to fill.
        batch_matcher: reuse a :class:`~xg2_jax.BatchGrammarMatcher`.
        mask_width: words per row (default: from the matchers' vocabulary).

    Returns:
        A :class:`VerifyMasks` (rules in the module docstring).

    Example:
        >>> import numpy as np, xg2_jax as xg
        >>> tok = xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2])
        >>> m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"'))
        >>> vm = tree_verify_masks([m], np.array([[0, 0, 1, 2]]), np.array([-1, 0, 0, 1]))
        >>> vm.valid.tolist(), vm.stop_only.tolist()
        ([[True, True, False, True]], [[False, False, False, True]])
    """
    tokens = np.asarray(draft_tokens)
    if tokens.ndim != 2 or (tokens.size and not np.issubdtype(tokens.dtype, np.integer)):
        raise InvalidArgumentError(f"draft_tokens must be an integer array (B, N); got "
                                   f"{tokens.dtype} {tokens.shape}")
    par = np.asarray(parents, dtype=np.int64)
    if par.shape not in ((tokens.shape[1],), tokens.shape):
        raise InvalidArgumentError(f"parents must have shape (N,) or (B, N) = "
                                   f"{tokens.shape}; got {par.shape}")
    return _verify_rows(matchers, tokens.astype(np.int64), par, out, batch_matcher, mask_width)


class ChainVerifyResult(NamedTuple):
    """What :func:`verify_chain` returns (device arrays).

    Attributes:
        tokens: int32 (B, 1 + k): the accepted drafts, then the token drawn at the first
            rejected position (or the bonus token after all drafts); ``-1`` after them.
        num_tokens: int32 (B,): valid entries of ``tokens``.
        num_accepted: int32 (B,): accepted drafts.
    """

    tokens: jax.Array
    num_tokens: jax.Array
    num_accepted: jax.Array


@partial(jax.jit, static_argnames=("greedy",))
def verify_chain(verify_logits: jax.Array, masks: jax.Array, draft_tokens: jax.Array,
                 num_draft: jax.Array, key: jax.Array, *, greedy: bool = True,
                 temperature=1.0, draft_probs: Optional[jax.Array] = None) -> ChainVerifyResult:
    """Masks the verify logits of draft chains, samples and accepts, in one jitted function.

    Greedy: draft ``j`` is accepted iff it is the argmax of the masked logits at row ``j``
    (so the tokens equal non-speculative constrained greedy decoding), and the argmax at the
    first non-accepted row is appended. Sampling: speculative rejection sampling; draft
    ``x`` is accepted with probability ``min(1, p(x) / q(x))`` where ``p`` is the masked target
    distribution; at the first rejection a token is drawn from ``normalize(max(p - q, 0))``,
    after all drafts from ``p``; the output follows the masked target distribution.

    Disallowed tokens are never emitted; NaN logits count as ``-inf``, and allowed tokens
    whose logits are ``-inf`` still beat disallowed ones. A row that allows nothing stops the
    request there without emitting a token.

    Args:
        verify_logits: float (B, 1 + k, V).
        masks: int32 (B, 1 + k, W), from :func:`chain_verify_masks`.
        draft_tokens: int32 (B, k).
        num_draft: int32 (B,): real drafts per request (the rest is padding).
        key: PRNG key (unused when greedy).
        greedy: static.
        temperature: scalar or (B,) (sampling only; traced).
        draft_probs: float (B, k, V): the distribution each draft was drawn from; default a
            deterministic drafter (one-hot on the draft, as n-gram drafting).

    Returns:
        A :class:`ChainVerifyResult`.
    """
    b, k1, v = verify_logits.shape
    k = k1 - 1
    drafts = jnp.asarray(draft_tokens, jnp.int32).reshape(b, k)
    lengths = jnp.asarray(num_draft, jnp.int32).reshape(b)
    allowed = unpack_bitmask(masks, v)  # (B, 1 + k, V)
    has = bitmask_has_allowed(masks, v)  # (B, 1 + k)
    x = verify_logits.astype(jnp.float32)
    floor = jnp.finfo(jnp.float32).min
    positions = jnp.arange(k)[None, :]
    in_range = (positions < lengths[:, None]) & (drafts >= 0) & (drafts < v)
    safe = jnp.clip(drafts, 0, v - 1)
    rows = jnp.arange(b)
    if greedy:
        scores = jnp.where(allowed, jnp.maximum(jnp.nan_to_num(x, nan=-jnp.inf), floor),
                           -jnp.inf)
        target = jnp.argmax(scores, axis=-1).astype(jnp.int32)  # (B, 1 + k)
        match = in_range & has[:, :k] & (drafts == target[:, :k])
        n_acc = jnp.sum(jnp.cumprod(match, axis=1), axis=1, dtype=jnp.int32)
        last = target[rows, n_acc]
    else:
        t = jnp.maximum(jnp.asarray(temperature, jnp.float32), jnp.float32(1e-6))
        t = t.reshape(t.shape + (1,) * (3 - t.ndim)) if t.ndim else t
        z = jnp.maximum(jnp.nan_to_num(x, nan=-jnp.inf) / t, floor)
        # Rows that allow nothing are never read; zeros keep their softmax finite.
        z = jnp.where(allowed, z, jnp.where(has[..., None], -jnp.inf, 0.0))
        p = jax.nn.softmax(z, axis=-1)  # (B, 1 + k, V)
        if draft_probs is None:
            q = jax.nn.one_hot(safe, v, dtype=jnp.float32)
        else:
            q = jnp.asarray(draft_probs, jnp.float32).reshape(b, k, v)
        px = jnp.take_along_axis(p[:, :k], safe[..., None], axis=-1)[..., 0]
        qx = jnp.maximum(jnp.take_along_axis(q, safe[..., None], axis=-1)[..., 0], 1e-20)
        key_accept, key_draw = jax.random.split(key)
        u = jax.random.uniform(key_accept, (b, k))
        take = in_range & has[:, :k] & (u * qx < px)
        n_acc = jnp.sum(jnp.cumprod(take, axis=1), axis=1, dtype=jnp.int32)
        p_last = p[rows, n_acc]  # (B, V)
        q_last = jnp.concatenate([q, jnp.zeros((b, 1, v), jnp.float32)], axis=1)[rows, n_acc]
        rejected = (n_acc < lengths) & in_range[rows, jnp.minimum(n_acc, k - 1)] if k else (
            jnp.zeros((b,), bool))
        resid = jnp.maximum(p_last - q_last, 0.0)
        total = jnp.sum(resid, axis=-1, keepdims=True)
        resid = jnp.where(total > 0, resid / jnp.where(total > 0, total, 1.0), p_last)
        final = jnp.where(rejected[:, None], resid, p_last)
        logp = jnp.where(final > 0, jnp.log(jnp.where(final > 0, final, 1.0)), -jnp.inf)
        last = jax.random.categorical(key_draw, logp, axis=-1).astype(jnp.int32)
    last_ok = has[rows, n_acc]
    cols = jnp.arange(k1)[None, :]
    padded = jnp.concatenate([drafts, jnp.full((b, 1), -1, jnp.int32)], axis=1)
    tokens = jnp.where(cols < n_acc[:, None], padded, -1)
    tokens = jnp.where((cols == n_acc[:, None]) & last_ok[:, None], last[:, None], tokens)
    return ChainVerifyResult(tokens, n_acc + last_ok.astype(jnp.int32), n_acc)
