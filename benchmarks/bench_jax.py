"""Per-token latency of constrained vs unconstrained decoding with the tiny JAX model.

Usage:
    JAX_PLATFORMS=cpu python benchmarks/bench_jax.py [--vocab PATH] [--steps 64] [--repeats 5]

Prints two markdown tables:

* decoding: median per-step latency of an unconstrained loop (model step + sample, token read
  back every step, as a server does), the host-overlap constrained loop
  (:func:`xg2_jax.constrained_generate`) and the in-graph loop
  (:func:`xg2_jax.ingraph_generate`), at batch 1 and 16, with the overhead in percent;
* masking: :func:`xg2_jax.apply_token_bitmask` (packed int32 mask) vs ``jnp.where`` with a
  precomputed boolean mask, the lower bound for any masking.

Runs are alternated and medians quoted; shared machines are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import xg2_jax as xg
from xg2_jax._src import tiny_model as tm
from xg2_jax._src.decode import token_step

DEFAULT_VOCAB = Path(__file__).resolve().parents[2] / "shared" / "data" / "vocab" / "gpt2.json.gz"
# A long JSON string: nearly every token is allowed at each step (the busiest masks), and the
# random model rarely closes it, so rows keep running for the whole budget.
GRAMMAR = r'''root ::= "{\"text\": \"" char* "\"}"
char ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]'''


@jax.jit
def _sample(logits, key):
    key, sub = jax.random.split(key)
    return jax.random.categorical(sub, logits).astype(jnp.int32), key


def unconstrained_loop(params, cache, prompts, steps, key):
    """Model step + sampling, the token read back to the host every step.

    The same two jitted calls per step as the constrained loop (the model step on (B,)
    tokens via :func:`xg2_jax._src.decode.token_step`, no eager ``tokens[:, None]``), so the
    difference is the constrained work alone.
    """
    logits, cache = jax.jit(tm.step)(params, cache, prompts)
    step = token_step(tm.step)
    out = []
    for _ in range(steps):
        tokens, key = _sample(logits, key)
        logits, cache = step(params, cache, tokens)
        out.append(np.asarray(tokens))
    jax.block_until_ready(logits)
    return steps


def constrained_loop(fn, compiled):
    def run(params, cache, prompts, steps, key):
        matchers = [xg.GrammarMatcher(compiled) for _ in range(prompts.shape[0])]
        res = fn(tm.step, params, cache, prompts, matchers, max_new_tokens=steps, key=key,
                 sampling=xg.SamplingConfig(temperature=1.0))
        return int(res.lengths.max())
    return run


def bench_decoding(tok, steps, repeats):
    compiled = xg.GrammarCompiler(tok).compile_grammar(GRAMMAR)
    cfg = tm.TinyConfig(vocab_size=tok.vocab_size)
    params = tm.init_params(jax.random.key(0), cfg)
    loops = {"unconstrained": unconstrained_loop,
             "host-overlap": constrained_loop(xg.constrained_generate, compiled),
             "in-graph": constrained_loop(xg.ingraph_generate, compiled)}
    rows = []
    for batch in (1, 16):
        prompts = (np.arange(batch, dtype=np.int32)[:, None] * 131 + 17) % tok.vocab_size
        times = {name: [] for name in loops}
        for name, fn in loops.items():  # warm up (compile)
            fn(params, tm.init_cache(cfg, batch), prompts, steps, jax.random.key(1))
        for r in range(repeats):
            for name, fn in loops.items():
                cache = tm.init_cache(cfg, batch)
                t0 = time.perf_counter()
                n = fn(params, cache, prompts, steps, jax.random.key(2 + r))
                times[name].append((time.perf_counter() - t0) / max(n, 1))
        base = statistics.median(times["unconstrained"])
        for name in loops:
            med = statistics.median(times[name])
            rows.append((batch, name, med * 1e3, 100.0 * (med - base) / base))
    return rows


def bench_masking(repeats):
    rows = []
    rng = np.random.default_rng(0)
    apply = jax.jit(xg.apply_token_bitmask)
    where = jax.jit(lambda lg, ok: jnp.where(ok, lg, -jnp.inf))
    for vocab in (50257, 151936):
        for batch in (1, 16):
            logits = jnp.asarray(rng.standard_normal((batch, vocab)), jnp.float32)
            ok = rng.random((batch, 32 * ((vocab + 31) // 32))) < 0.5
            packed = jnp.asarray(np.packbits(ok, axis=-1, bitorder="little").view(np.int32))
            ok = jnp.asarray(ok[:, :vocab])
            fns = {"apply_token_bitmask": (apply, packed), "jnp.where(bool)": (where, ok)}
            times = {k: [] for k in fns}
            for f, m in fns.values():
                f(logits, m).block_until_ready()
            for _ in range(repeats * 20):
                for k, (f, m) in fns.items():
                    t0 = time.perf_counter()
                    f(logits, m).block_until_ready()
                    times[k].append(time.perf_counter() - t0)
            base = statistics.median(times["jnp.where(bool)"])
            for k in fns:
                med = statistics.median(times[k])
                rows.append((vocab, batch, k, med * 1e6, 100.0 * (med - base) / base))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=Path, default=DEFAULT_VOCAB)
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    tok = xg.TokenizerInfo.from_vocab_file(args.vocab)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; vocab {tok.vocab_size}; "
          f"{args.steps} steps; median of {args.repeats}\n")
    print("| batch | loop | ms / step | overhead vs unconstrained |")
    print("|---:|---|---:|---:|")
    for batch, name, ms, pct in bench_decoding(tok, args.steps, args.repeats):
        print(f"| {batch} | {name} | {ms:.3f} | {pct:+.1f}% |")
    print("\n| V | batch | masking | us | vs jnp.where(bool) |")
    print("|---:|---:|---|---:|---:|")
    for vocab, batch, name, us, pct in bench_masking(args.repeats):
        print(f"| {vocab} | {batch} | {name} | {us:.1f} | {pct:+.1f}% |")


if __name__ == "__main__":
    main()
