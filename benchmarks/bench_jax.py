"""Per-token latency of constrained vs unconstrained decoding with the tiny JAX model.

Usage:
    JAX_PLATFORMS=cpu python benchmarks/bench_jax.py [--vocab PATH] [--steps 64] [--repeats 11]
        [--batches 1,16] [--no-masking]

Prints two markdown tables:

* decoding: median per-step latency of an unconstrained loop (model step + sample, token read
  back every step, as a server does), the host-overlap constrained loop
  (:func:`xg2_jax.constrained_generate`) and the in-graph loop
  (:func:`xg2_jax.ingraph_generate`), at batch 1 and 16, with the overhead in percent (median
  of the per-repeat ratios to the unconstrained run next to it, and their quartiles), and the
  same for the process CPU time (all threads: the host work plus, on CPU, the device
  computation), which shared-machine load perturbs much less than wall time;
* masking: :func:`xg2_jax.apply_token_bitmask` (packed int32 mask) vs ``jnp.where`` with a
  precomputed boolean mask, the lower bound for any masking.

Runs are alternated (rotating order) and medians quoted; shared machines are noisy.
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
from xg2_jax import testing as tm

DEFAULT_VOCAB = Path(__file__).resolve().parents[2] / "shared" / "data" / "vocab" / "gpt2.json.gz"
# A long JSON string: nearly every token is allowed at each step (the busiest masks), and the
# random model rarely closes it, so rows keep running for the whole budget.
GRAMMAR = r'''root ::= "{\"text\": \"" char* "\"}"
char ::= [^"\\\x00-\x1f] | "\\" ["\\/bfnrt]'''


_token_step = jax.jit(lambda params, cache, tokens: tm.step(params, cache, tokens[:, None]))


@jax.jit
def _sample(logits, key):
    key, sub = jax.random.split(key)
    return jax.random.categorical(sub, logits).astype(jnp.int32), key


def unconstrained_loop(params, cache, prompts, steps, key):
    """Model step + sampling, the token read back to the host every step.

    The same two jitted calls per step as the constrained loop (the model step takes the (B,)
    tokens, reshaped inside the jit: no eager ``tokens[:, None]``), so the difference is the
    constrained work alone.
    """
    logits, cache = jax.jit(tm.step)(params, cache, prompts)
    step = _token_step
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


def bench_decoding(tok, steps, repeats, batches=(1, 16)):
    """Per-step latency of each loop; the overhead is the median over repeats of the ratio
    to the unconstrained run of the same repeat (runs next to each other in time see the
    same machine load), the loops' order rotating from repeat to repeat."""
    compiled = xg.GrammarCompiler(tok).compile_grammar(GRAMMAR)
    cfg = tm.RandomModelConfig(vocab_size=tok.vocab_size)
    params = tm.init_params(jax.random.key(0), cfg)
    loops = {"unconstrained": unconstrained_loop,
             "host-overlap": constrained_loop(xg.constrained_generate, compiled),
             "in-graph": constrained_loop(xg.ingraph_generate, compiled)}
    names = list(loops)
    rows = []
    for batch in batches:
        prompts = (np.arange(batch, dtype=np.int32)[:, None] * 131 + 17) % tok.vocab_size
        times = {name: [] for name in loops}
        cpu = {name: [] for name in loops}
        for name, fn in loops.items():  # warm up (compile)
            fn(params, tm.init_cache(cfg, batch), prompts, steps, jax.random.key(1))
        for r in range(repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                cache = tm.init_cache(cfg, batch)
                t0, c0 = time.perf_counter(), time.process_time()
                n = loops[name](params, cache, prompts, steps, jax.random.key(2 + r))
                times[name].append((time.perf_counter() - t0) / max(n, 1))
                cpu[name].append((time.process_time() - c0) / max(n, 1))
        for name in loops:
            wall, wq1, wq3 = _paired(times[name], times["unconstrained"])
            proc, _, _ = _paired(cpu[name], cpu["unconstrained"])
            rows.append((batch, name, statistics.median(times[name]) * 1e3, wall, wq1, wq3,
                         statistics.median(cpu[name]) * 1e3, proc))
    return rows


def _paired(values, base):
    """Median and quartiles, in percent, of the per-repeat ratios ``values / base``."""
    ratios = sorted(v / b for v, b in zip(values, base))
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    return tuple(100.0 * (x - 1) for x in (statistics.median(ratios), q1, q3))


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
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--batches", default="1,16", help="comma list of batch sizes")
    ap.add_argument("--no-masking", action="store_true", help="skip the masking table")
    args = ap.parse_args()
    tok = xg.TokenizerInfo.from_vocab_file(args.vocab)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; vocab {tok.vocab_size}; "
          f"{args.steps} steps; median of {args.repeats}\n")
    print("| batch | loop | ms / step | overhead vs unconstrained | quartiles | CPU ms / step "
          "| CPU overhead |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    batches = [int(b) for b in args.batches.split(",")]
    for batch, name, ms, pct, q1, q3, cms, cpct in bench_decoding(tok, args.steps,
                                                                  args.repeats, batches):
        print(f"| {batch} | {name} | {ms:.3f} | {pct:+.1f}% | {q1:+.1f}% .. {q3:+.1f}% "
              f"| {cms:.3f} | {cpct:+.1f}% |")
    if args.no_masking:
        return
    print("\n| V | batch | masking | us | vs jnp.where(bool) |")
    print("|---:|---:|---|---:|---:|")
    for vocab, batch, name, us, pct in bench_masking(args.repeats):
        print(f"| {vocab} | {batch} | {name} | {us:.1f} | {pct:+.1f}% |")


if __name__ == "__main__":
    main()
