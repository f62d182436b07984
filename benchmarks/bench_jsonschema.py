#!/usr/bin/env python3
"""JSON Schema benchmark per JSONSchemaBench category: xg2_jax, xgrammar and llguidance side by
side on the same schemas and valid instances, Llama-3 vocabulary.

For each category a deterministic sample of schemas (evenly spaced by file name, as the corpus
tests pick them) is kept when every engine compiles it (strict_mode=False: the schema as
written). Per engine:

  compile  cold compile time per schema (xg2_jax/xgrammar: caches cleared, eager compile, or
           with --lazy xg2_jax lazy=True and xgrammar's dynamic compilation; llguidance:
           grammar construction + matcher creation, it always computes masks lazily);
  mask     per-token fill time while replaying the valid instances of those schemas (greedy
           tokenization of json.dumps(instance) plus the stop token), median / p99 / max;
  viol     tokens of a valid instance the engine masked out or refused (0 expected).

Engines are alternated per schema (rotating order). Ratios are engine / xg2_jax.

    PYTHONPATH=. /work/.venv-peers/bin/python benchmarks/bench_jsonschema.py \
        [--per-category 5] [--instances 2] [--engines xg2_jax,xgrammar,llguidance] [--md FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1] / "tests"))

import bench_engine as be  # noqa: E402  (Vocab, engine adapters, pct, fmt)
import json_schema_corpus_lib as lib  # noqa: E402  (corpus loading and sampling)


class Acc:
    def __init__(self):
        self.compile_ms: list[float] = []
        self.fill_us: list[float] = []
        self.violations = 0


def run_schema(engines, vocab, schema, docs, accs, order: int, lazy: bool = False) -> None:
    for e in be.rotated(engines, order):
        a = accs[e.name]
        e.clear()
        gc.collect()
        t0 = time.perf_counter()
        compiled = e.compile_schema(schema, lazy=lazy)
        a.compile_ms.append(1000 * (time.perf_counter() - t0))
        mask = be.new_mask(vocab)
        for toks in docs:
            m = e.matcher(compiled)
            for tok in toks + [vocab.eos_ids[0]]:
                t0 = time.perf_counter()
                e.fill(m, mask)
                a.fill_us.append(1e6 * (time.perf_counter() - t0))
                allowed = (int(mask[0, tok >> 5]) >> (tok & 31)) & 1
                if not allowed or not e.accept(m, tok):
                    a.violations += 1
                    break


def stats_row(name: str, a: Acc, ref: Acc | None) -> list[str]:
    if not a.fill_us:
        return [name] + ["n/a"] * 7
    c50 = be.pct(a.compile_ms, 50)
    f50, f99, fmax = be.pct(a.fill_us, 50), be.pct(a.fill_us, 99), max(a.fill_us)
    row = [name, be.fmt(c50, 2), be.fmt(max(a.compile_ms), 1), be.fmt(f50, 1), be.fmt(f99, 1), be.fmt(fmax, 0),
           str(a.violations)]
    if ref is not None and ref.fill_us and ref is not a:
        row.append(f"{c50 / be.pct(ref.compile_ms, 50):.2f} / {f50 / be.pct(ref.fill_us, 50):.2f} / "
                   f"{f99 / be.pct(ref.fill_us, 99):.2f}")
    else:
        row.append("1.00" if ref is a else "–")
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-category", type=int, default=5)
    ap.add_argument("--instances", type=int, default=2, help="valid instances replayed per schema")
    ap.add_argument("--engines", default="xg2_jax,xgrammar,llguidance")
    ap.add_argument("--vocab", type=Path, default=lib.VOCAB)
    ap.add_argument("--md", type=Path)
    ap.add_argument("--lazy", action="store_true",
                    help="compile lazily (xg2_jax lazy=True, xgrammar dynamic compilation): compile time is "
                         "the time to a usable matcher, and the first fills pay for the masks")
    a = ap.parse_args()
    vocab = be.Vocab(a.vocab)
    engines, notes = be.load_engines(vocab, 1, a.engines.split(","))
    names = [e.name for e in engines]
    head = ["engine", "compile ms p50", "compile ms max", "mask µs p50", "mask µs p99", "mask µs max", "viol",
            "ratio vs xg2_jax (compile / mask p50 / p99)"]
    out = [f"# JSON Schema benchmark ({platform.machine()}, {vocab.name}, {vocab.size} tokens, "
           f"{'lazy' if a.lazy else 'eager'} compile)", "",
           "Engines: " + "; ".join(notes), ""]
    totals = {n: Acc() for n in names}
    for cat, entries in lib.jsb_categories().items():
        n = len(entries)
        # Walk the category evenly until per_category schemas that every engine compiles.
        stride = max(1, n // max(1, a.per_category * 3))
        picked, skipped = [], 0
        for i in range(0, n, stride):
            e = entries[i]
            docs = [d for d, valid in lib.jsb_tests(e) if valid][: a.instances]
            if not docs or lib.large_bound(e["data"]["schema"]) is not None:
                continue
            if all(eng.supports(e["data"]["schema"]) for eng in engines):
                picked.append((e, docs))
            else:
                skipped += 1
            if len(picked) >= a.per_category:
                break
        accs = {nm: Acc() for nm in names}
        for k, (e, docs) in enumerate(picked):
            toks = [vocab.tokenize(json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")) for d in docs]
            run_schema(engines, vocab, e["data"]["schema"], toks, accs, k, lazy=a.lazy)
        for nm in names:
            totals[nm].compile_ms += accs[nm].compile_ms
            totals[nm].fill_us += accs[nm].fill_us
            totals[nm].violations += accs[nm].violations
        be.log(f"{cat}: {len(picked)} schemas ({skipped} skipped: not every engine compiles them)")
        out += [f"## {cat} ({len(picked)} schemas, {sum(len(x.fill_us) for x in accs.values()) // max(1, len(names))} "
                f"tokens each)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        ref = accs.get("xg2_jax")
        out += ["| " + " | ".join(stats_row(nm, accs[nm], ref)) + " |" for nm in names]
        out.append("")
    out += ["## all categories", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(stats_row(nm, totals[nm], totals.get("xg2_jax"))) + " |" for nm in names]
    text = "\n".join(out)
    print(text)
    if a.md:
        a.md.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
