#!/usr/bin/env python3
"""Lark grammars: compile time and per-token mask time, xg2_jax beside xgrammar (from_lark).

Three Lark grammars in the dialect both engines read (no priorities, which xgrammar refuses):

    kv     key = value lines with %ignore'd spaces and common terminals;
    json   a JSON-like grammar over ESCAPED_STRING / SIGNED_NUMBER with %ignore WS;
    arith  arithmetic with functions, recursion and regex terminals.

Each grammar is compiled cold (compiler cache off) `--repeat` times; then a valid text is
tokenized greedily and replayed: at each step the engine fills its bitmask (timed), the
harness checks the token is allowed, and the engine accepts it. Runs with or without xgrammar
installed (engines and vocabularies as in bench_native.py).

    python benchmarks/bench_lark.py [--vocab PATH] [--repeat N] [--engines xg2_jax,xgrammar]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench_native import Engine, Vocab, load_engines

DEFAULT_VOCAB = Path(__file__).resolve().parents[2] / "shared" / "data" / "vocab" / "llama3.json.gz"

GRAMMARS = {
    "kv": (r"""
start: line+
line: KEY "=" value NL
value: SIGNED_NUMBER | ESCAPED_STRING | WORD ("," WORD)*
KEY: CNAME
NL: /\n/
%import common (CNAME, SIGNED_NUMBER, ESCAPED_STRING, WORD)
%ignore " "
""", 'name = "Zoe"\nage = 42\ntags = red, green, blue\nratio = -1.5e3\n' * 3),
    "json": (r"""
start: value
value: object | array | ESCAPED_STRING | SIGNED_NUMBER | "true" | "false" | "null"
object: "{" [pair ("," pair)*] "}"
pair: ESCAPED_STRING ":" value
array: "[" [value ("," value)*] "]"
%import common (ESCAPED_STRING, SIGNED_NUMBER, WS)
%ignore WS
""", '{"name": "x", "vals": [1, -2.5e3, true, null], "nested": {"k": "\\u00e9 text", "e": []}}'),
    "arith": (r"""
start: expr
expr: term (("+" | "-") term)*
term: factor (("*" | "/") factor)*
factor: NUMBER | NAME "(" [expr ("," expr)*] ")" | "(" expr ")" | "-" factor
NAME: /[a-z_][a-z0-9_]*/
%import common.NUMBER
""", "max(1,2*(3+4))-f(x(1.5),2)/3*(1-2)"),
}


def quantiles(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.99 * len(xs)))], xs[-1]


def greedy_ids(vocab: Vocab, text: str) -> list[int]:
    """Longest match over the decoded non-special tokens, then the end-of-sequence token."""
    data, out, i = text.encode(), [], 0
    while i < len(data):
        for n in range(min(vocab.max_len, len(data) - i), 0, -1):
            tid = vocab.table.get(data[i:i + n])
            if tid is not None:
                out.append(tid)
                i += n
                break
        else:
            raise SystemExit(f"no token for byte {data[i]:#x}")
    return out + [vocab.eos]


def measure(engine: Engine, vocab: Vocab, repeat: int) -> dict:
    rows = {}
    for name, (grammar, text) in GRAMMARS.items():
        times = []
        for _ in range(repeat):
            engine.clear_cache()
            t0 = time.perf_counter()
            compiled = engine.compiler.compile_lark(grammar)
            times.append((time.perf_counter() - t0) * 1e3)
        ids = greedy_ids(vocab, text)
        m = engine.matcher(compiled)
        mask = engine.bitmask(vocab.size)
        fills = []
        for t in ids:
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(mask)
            fills.append((time.perf_counter() - t0) * 1e6)
            if not (int(mask[0, t // 32]) >> (t % 32)) & 1:
                raise SystemExit(f"{engine.name} {name}: token {t} masked out")
            if not m.accept_token(t):
                raise SystemExit(f"{engine.name} {name}: token {t} refused")
        rows[name] = (statistics.median(times), quantiles(fills), len(ids))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default=str(DEFAULT_VOCAB))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engines", help="comma list of xg2_jax,xgrammar (default: those importable)")
    args = ap.parse_args()
    vocab = Vocab(Path(args.vocab))
    results = []
    for engine in load_engines(args.engines):
        engine.setup(vocab, threads=1)
        results.append((engine.name, engine.version(), measure(engine, vocab, args.repeat)))
    print(f"vocabulary {vocab.name} ({vocab.size} tokens); compile cold (cache cleared), median of "
          f"{args.repeat}; masks at every step of one text, 1 thread")
    print("| grammar | engine | tokens | compile ms | mask µs p50 | mask µs p99 | mask µs max |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in GRAMMARS:
        for engine, version, rows in results:
            compile_ms, (p50, p99, mx), n = rows[name]
            print(f"| {name} | {engine} {version} | {n} | {compile_ms:.2f} | {p50:.1f} | {p99:.1f} | "
                  f"{mx:.1f} |")


if __name__ == "__main__":
    main()
