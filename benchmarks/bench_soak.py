#!/usr/bin/env python3
"""Memory soak benchmark (issue #18): one long-lived process compiling a stream of distinct
grammars, with the default cache limits.

For each vocabulary (Llama-3, then Qwen3; one GrammarCompiler each, both alive to the end):

    cold    every schema of the shared JSONSchemaBench corpus in turn (strict_mode=False,
            default options, each compiled grammar dropped at once)
    warm    the same schemas again (the caches still hit: compiled grammars still kept, and
            the process-wide mask pool / automaton / suffix caches)
    recent  the last 100 schemas again: they fit in the caches, so these hit (the corpus
            is far larger than the default limits, so a whole warm pass cycles through an
            LRU cache and hits about as often as the cold one)
    tools   structural tags (Qwen3 triggered_tags format) of random BFCL tool subsets

Every 500 grammars it prints one row: process RSS, the compiler's compiled-grammar cache
(``compiler.cache_stats()``), the process-wide caches (``xg.cross_grammar_cache_stats()``)
and compile p50/p99 over those 500. RSS should flatten at the bound documented in the README
("Memory"). A benchmark script, not a test: the full run takes many minutes.

    python benchmarks/bench_soak.py                    # both vocabularies, whole corpus
    python benchmarks/bench_soak.py --limit 1000       # the first 1000 schemas only
    python benchmarks/bench_soak.py --vocabs llama3 --tools 200

Compiles use ``time_limit_s`` (default 10 s, ``--time-limit``) so that the handful of
pathological schemas (Handwritten---allany16's pattern products) cost seconds, not minutes;
failures (unsupported keywords, limits) are counted, not fatal.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import bfcl_lib  # noqa: E402
from helpers import vm_rss_mib  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import get_model_structural_tag  # noqa: E402

DATA = Path("/work/shared/data")
VOCABS = {"llama3": DATA / "vocab" / "llama3.json.gz", "qwen3": DATA / "vocab" / "qwen3.json.gz"}
ROW_EVERY = 500


def load_schemas() -> list:
    out = []
    for f in sorted((DATA / "jsonschemabench").glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            entries = [json.loads(line) for line in fh]
        entries.sort(key=lambda e: e["file"])
        out.extend(e["data"]["schema"] for e in entries)
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


class Soak:
    def __init__(self, time_limit: float):
        self.time_limit = time_limit
        self.rows: list[str] = []
        self.total = 0
        header = (f"{'vocab':7} {'phase':5} {'n':>6} {'RSS MiB':>8} {'cg MiB':>7} {'cg n':>5} "
                  f"{'cg hit%':>7} {'pool MiB':>8} {'mask hit%':>9} {'auto MiB':>8} {'sfx MiB':>7} "
                  f"{'kex MiB':>7} {'fail':>5} {'p50 ms':>7} {'p99 ms':>8}")
        self.emit(header)
        self.emit("-" * len(header))

    def emit(self, line: str) -> None:
        print(line, flush=True)
        self.rows.append(line)

    def run(self, vocab: str, phase: str, compiler, items, compile_one) -> None:
        times: list[float] = []
        fails = 0
        cs0 = compiler.cache_stats()
        ps0 = xg.cross_grammar_cache_stats()
        n = 0
        for item in items:
            t = time.perf_counter()
            try:
                cg = compile_one(compiler, item)
                del cg
            except xg.XG2Error:
                fails += 1
            times.append((time.perf_counter() - t) * 1e3)
            n += 1
            self.total += 1
            if n % ROW_EVERY == 0:
                self.row(vocab, phase, n, compiler, cs0, ps0, times, fails)
                times, fails = [], 0
                cs0, ps0 = compiler.cache_stats(), xg.cross_grammar_cache_stats()
        if n % ROW_EVERY:
            self.row(vocab, phase, n, compiler, cs0, ps0, times, fails)

    def row(self, vocab, phase, n, compiler, cs0, ps0, times, fails) -> None:
        cs, ps = compiler.cache_stats(), xg.cross_grammar_cache_stats()
        dh, dm = cs["hits"] - cs0["hits"], cs["misses"] - cs0["misses"]
        ph, pm = ps["hits"] - ps0["hits"], ps["misses"] - ps0["misses"]
        mib = lambda b: b / 2**20  # noqa: E731
        self.emit(f"{vocab:7} {phase:5} {n:6d} {vm_rss_mib():8.0f} {mib(cs['bytes']):7.0f} {cs['entries']:5d} "
                  f"{100 * dh / max(1, dh + dm):7.1f} {mib(ps['bytes']):8.0f} {100 * ph / max(1, ph + pm):9.1f} "
                  f"{mib(ps['automaton_bytes']):8.1f} {mib(ps['suffix_bytes']):7.1f} "
                  f"{mib(ps['key_exclusion_bytes']):7.1f} {fails:5d} {pct(times, 0.5):7.1f} {pct(times, 0.99):8.1f}")


def compile_schema(compiler, schema):
    return compiler.compile_json_schema(schema, strict_mode=False)


def compile_tag(compiler, tag):
    return compiler.compile_structural_tag(tag)


def tool_tags(n: int, seed: int = 0) -> list:
    tools = bfcl_lib.load_tool_set(400, validate=False).tools
    rng = random.Random(seed)
    return [get_model_structural_tag("qwen3", rng.sample(tools, rng.randint(1, 8)), reasoning=False)
            for _ in range(n)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocabs", default="llama3,qwen3")
    ap.add_argument("--limit", type=int, default=0, help="schemas per pass (0: the whole corpus)")
    ap.add_argument("--tools", type=int, default=1000, help="structural tags of random BFCL tool subsets")
    ap.add_argument("--passes", default="cold,warm")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=2, help="compile threads (max_threads)")
    ap.add_argument("--md", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)

    schemas = load_schemas()
    if args.limit:
        schemas = schemas[: args.limit]
    tags = tool_tags(args.tools) if args.tools else []
    base = vm_rss_mib()
    soak = Soak(args.time_limit)
    compilers = []
    start = time.time()
    for vocab in args.vocabs.split(","):
        tok = xg.TokenizerInfo.from_vocab_file(VOCABS[vocab])
        compiler = xg.GrammarCompiler(tok, max_threads=args.threads, time_limit_s=args.time_limit)
        compilers.append(compiler)
        soak.emit(f"# {vocab}: RSS {vm_rss_mib():.0f} MiB after loading the vocabulary "
                  f"(process baseline {base:.0f} MiB)")
        for phase in args.passes.split(","):
            soak.run(vocab, phase, compiler, schemas, compile_schema)
        soak.run(vocab, "recent", compiler, schemas[-100:], compile_schema)
        if tags:
            soak.run(vocab, "tools", compiler, tags, compile_tag)
    ps = xg.cross_grammar_cache_stats()
    soak.emit(f"# {soak.total} compiles in {time.time() - start:.0f} s; final RSS {vm_rss_mib():.0f} MiB; "
              f"process-wide caches {ps['total_bytes'] / 2**20:.0f} / {ps['total_limit_bytes'] / 2**20:.0f} MiB; "
              f"compiled-grammar caches {sum(c.cache_stats()['bytes'] for c in compilers) / 2**20:.0f} / "
              f"{sum(c.cache_stats()['limit_bytes'] for c in compilers) / 2**20:.0f} MiB")
    if args.md:
        args.md.write_text("```\n" + "\n".join(soak.rows) + "\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
