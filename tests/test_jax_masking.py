"""apply_token_bitmask / masked_sample against a numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import xg2_jax as xg  # noqa: E402

# (logits width, tokenizer vocab the mask was made for)
VOCABS = [(50257, 50257), (128256, 128256), (151936, 151669)]


def ref_allowed(bitmask: np.ndarray, width: int) -> np.ndarray:
    """bool (..., width): the unpacked mask; columns past 32 * W are disallowed."""
    bits = np.unpackbits(np.ascontiguousarray(bitmask).view(np.uint8), axis=-1,
                         bitorder="little").astype(bool)
    out = np.zeros(bitmask.shape[:-1] + (width,), dtype=bool)
    n = min(width, bits.shape[-1])
    out[..., :n] = bits[..., :n]
    return out


def ref_apply(logits: np.ndarray, bitmask: np.ndarray, active=None) -> np.ndarray:
    allowed = ref_allowed(bitmask, logits.shape[-1])
    keep_row = allowed.any(axis=-1)
    if active is not None:
        keep_row &= active
    keep = allowed | ~keep_row[..., None]
    return np.where(keep, logits, -np.inf).astype(logits.dtype)


def random_case(batch, width, mask_vocab, dtype, seed):
    rng = np.random.default_rng(seed)
    words = (mask_vocab + 31) // 32
    density = rng.uniform(0.001, 0.9, size=(batch, 1))
    bits = rng.random((batch, words * 32)) < density
    bits[:, mask_vocab:] = False  # the matcher never sets bits past its vocabulary
    if batch > 1:
        bits[0] = False           # a row with no allowed token
        bits[-1, :mask_vocab] = True
    bitmask = np.packbits(bits, axis=-1, bitorder="little").view(np.int32)
    logits = rng.standard_normal((batch, width)).astype(np.float32)
    if dtype == "bfloat16":
        logits = np.asarray(jnp.asarray(logits, jnp.bfloat16))
    return logits, bitmask


def assert_same(got, want):
    got = np.asarray(got).astype(np.float32)
    want = np.asarray(want).astype(np.float32)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("width,mask_vocab", VOCABS)
@pytest.mark.parametrize("batch", [1, 7, 64])
def test_apply_matches_numpy_under_jit(batch, width, mask_vocab, dtype):
    logits, bitmask = random_case(batch, width, mask_vocab, dtype, seed=batch + width)
    got = jax.jit(xg.apply_token_bitmask)(jnp.asarray(logits), jnp.asarray(bitmask))
    assert got.dtype == logits.dtype
    assert_same(got, ref_apply(logits, bitmask))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("width,mask_vocab", VOCABS)
def test_apply_under_vmap_and_scan(width, mask_vocab, dtype):
    logits, bitmask = random_case(6, width, mask_vocab, dtype, seed=width)
    logits3, bitmask3 = logits.reshape(3, 2, width), bitmask.reshape(3, 2, -1)
    want = ref_apply(logits, bitmask).reshape(3, 2, width)

    vmapped = jax.jit(jax.vmap(xg.apply_token_bitmask))(jnp.asarray(logits3),
                                                          jnp.asarray(bitmask3))
    assert_same(vmapped, want)

    def body(carry, xs):
        lg, bm = xs
        return carry, xg.apply_token_bitmask(lg, bm)

    scanned = jax.jit(lambda lg, bm: jax.lax.scan(body, 0, (lg, bm))[1])(
        jnp.asarray(logits3), jnp.asarray(bitmask3))
    assert_same(scanned, want)


def test_inactive_rows_pass_through():
    logits, bitmask = random_case(7, 50257, 50257, "float32", seed=3)
    active = np.array([True, False, True, False, True, True, False])
    got = jax.jit(xg.apply_token_bitmask)(jnp.asarray(logits), jnp.asarray(bitmask),
                                          active=jnp.asarray(active))
    assert_same(got, ref_apply(logits, bitmask, active))
    np.testing.assert_array_equal(np.asarray(got)[~active], logits[~active])


def test_rows_that_do_not_broadcast_are_named():
    with pytest.raises(ValueError, match=r"bitmask rows \(3,\) do not broadcast against the logits' rows \(2,\)"):
        xg.apply_token_bitmask(jnp.zeros((2, 40)), jnp.zeros((3, 2), jnp.int32))
    # One mask row for every logits row broadcasts (as documented).
    out = xg.apply_token_bitmask(jnp.zeros((2, 4)), jnp.array([[0b0101]], jnp.int32))
    assert np.isinf(np.asarray(out)[:, 1]).all()


def test_padded_vocab_and_ignored_bits():
    # Logits wider than 32 * W are disallowed; bits past the logits width are ignored.
    logits = jnp.zeros((2, 70))
    bitmask = jnp.array([[-1, -1], [0, 1 << 5]], jnp.int32)
    got = np.asarray(xg.apply_token_bitmask(logits, bitmask))
    assert np.isfinite(got[0, :64]).all() and np.isneginf(got[0, 64:]).all()
    assert np.isfinite(got[1, 37]) and np.isneginf(np.delete(got[1], 37)).all()
    narrow = np.asarray(xg.apply_token_bitmask(jnp.zeros((1, 36)),
                                               jnp.array([[0, 1 << 6]], jnp.int32)))
    assert np.isfinite(narrow).all()  # only bit 38 set, past the width: an empty row


def test_empty_row_never_nan():
    logits = jnp.asarray(np.random.default_rng(0).standard_normal((3, 1000)), jnp.bfloat16)
    bitmask = jnp.asarray(np.zeros((3, 32), np.int32)).at[1, 3].set(1)
    masked = xg.apply_token_bitmask(logits, bitmask)
    probs = jax.nn.softmax(masked.astype(jnp.float32), axis=-1)
    assert not np.isnan(np.asarray(probs)).any()
    assert not np.asarray(xg.bitmask_has_allowed(bitmask, 1000))[0]
    for greedy in (True, False):
        toks = np.asarray(xg.masked_sample(logits, bitmask, jax.random.key(1), greedy=greedy,
                                           fallback_token=7, top_k=10, top_p=0.9))
        assert toks.tolist() == [7, 96, 7]


def test_greedy_top_k_top_p_reference():
    rng = np.random.default_rng(5)
    logits, bitmask = random_case(7, 300, 300, "float32", seed=9)
    want = np.argmax(ref_apply(logits, bitmask), axis=-1)
    want[0] = 0  # empty row -> fallback
    got = xg.masked_sample(jnp.asarray(logits), jnp.asarray(bitmask), jax.random.key(0),
                           greedy=True)
    np.testing.assert_array_equal(np.asarray(got), want)
    # top_k=1 and a tiny top_p are greedy too, whatever the temperature.
    for kw in (dict(top_k=1), dict(top_p=1e-6)):
        got = xg.masked_sample(jnp.asarray(logits), jnp.asarray(bitmask),
                               jax.random.key(int(rng.integers(100))), temperature=3.0, **kw)
        np.testing.assert_array_equal(np.asarray(got)[1:], want[1:])


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), top_k=st.sampled_from([0, 3]),
       top_p=st.sampled_from([1.0, 0.7]), temperature=st.floats(0.05, 5.0),
       density=st.floats(0.0, 1.0))
def test_sampling_never_picks_a_masked_token(seed, top_k, top_p, temperature, density):
    rng = np.random.default_rng(seed)
    batch, vocab = 5, 77
    bits = rng.random((batch, 96)) < density
    bits[:, vocab:] = False
    bits[np.arange(batch), rng.integers(0, vocab, batch)] = True  # at least one allowed
    bitmask = np.packbits(bits, axis=-1, bitorder="little").view(np.int32)
    logits = rng.standard_normal((batch, vocab)).astype(np.float32) * 10
    toks = np.asarray(xg.masked_sample(jnp.asarray(logits), jnp.asarray(bitmask),
                                       jax.random.key(seed), temperature=temperature,
                                       top_k=top_k, top_p=top_p))
    assert bits[np.arange(batch), toks].all()
