"""Batch-sharded masks and vocab-sharded logits on 8 forced CPU devices (in a subprocess,
since jax may already be initialised with one device in this process)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import numpy as np, jax, jax.numpy as jnp
    from jax.sharding import Mesh
    import xg2_jax as xg
    from xg2_jax import testing as tm

    assert jax.device_count() == 8, jax.devices()
    mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "vocab"))
    rng = np.random.default_rng(0)

    # Vocab-sharded logits (GPT-2 padded to 50304 columns) and batch-sharded masks.
    B, V, MV = 8, 50304, 50257
    bits = rng.random((B, 32 * ((MV + 31) // 32))) < 0.3
    bits[:, MV:] = False
    bits[3] = False
    masks = np.packbits(bits, axis=-1, bitorder="little").view(np.int32)
    logits = rng.standard_normal((B, V)).astype(np.float32)
    want = np.asarray(xg.apply_token_bitmask(jnp.asarray(logits), jnp.asarray(masks)))
    lg = jax.device_put(logits, xg.logits_sharding(mesh, vocab_axis="vocab"))
    md = xg.put_masks(masks, xg.mask_sharding(mesh))
    got = jax.jit(xg.apply_token_bitmask)(lg, md)
    assert got.sharding.spec == lg.sharding.spec, got.sharding
    np.testing.assert_array_equal(np.asarray(got), want)
    gm = xg.make_global_masks(masks, mesh)
    np.testing.assert_array_equal(np.asarray(gm), masks)
    assert gm.sharding.spec == md.sharding.spec
    s1 = xg.masked_sample(jnp.asarray(logits), jnp.asarray(masks), jax.random.key(1))
    s8 = jax.jit(xg.masked_sample)(lg, md, jax.random.key(1))
    np.testing.assert_array_equal(np.asarray(s1), np.asarray(s8))

    # Constrained greedy decoding with sharded masks equals the single-device run.
    tok = xg.TokenizerInfo.from_vocab_file(PATH)
    g = xg.GrammarCompiler(tok).compile_json_schema(
        {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
         "additionalProperties": False}, any_whitespace=False)
    cfg = tm.RandomModelConfig(vocab_size=tok.vocab_size)
    params = tm.init_params(jax.random.key(0), cfg)
    prompts = (np.arange(B, dtype=np.int32)[:, None] * 991 + 7) % 50000
    def gen(sharding, cache):
        return xg.constrained_generate(
            tm.step, params, cache, prompts, [xg.GrammarMatcher(g) for _ in range(B)],
            max_new_tokens=24, sampling=xg.SamplingConfig(greedy=True),
            mask_sharding=sharding)
    single = gen(None, tm.init_cache(cfg, B))
    cache = jax.device_put(tm.init_cache(cfg, B), xg.mask_sharding(mesh))
    sharded = gen(xg.mask_sharding(mesh), cache)
    np.testing.assert_array_equal(single.tokens, sharded.tokens)
    assert single.finished.all()
    print("SHARDED-OK")
""")


def test_sharded_paths_match_single_device(shared_data):
    # xg2_jax imports as in this process (installed, or the caller's PYTHONPATH), from a
    # neutral cwd so the checkout's sources (no compiled extension in CI) do not shadow it.
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    script = f"PATH = {str(shared_data / 'vocab' / 'gpt2.json.gz')!r}\n" + SCRIPT
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "SHARDED-OK" in proc.stdout
