"""JSONSchemaBench coverage per category, xg2-jax beside llguidance's expected results.

    PYTHONPATH=. python3 benchmarks/jsb_coverage.py                  # from the committed ratchets
    PYTHONPATH=. python3 benchmarks/jsb_coverage.py --run --per-category 40   # run a sample now
    PYTHONPATH=. python3 benchmarks/jsb_coverage.py --results FILE.json[.gz]  # any ratchet-format file

Columns, over the schemas of the selection:
  compile  - llguidance: no json_error in json_stats/expected_maskbench.json;
             xg2: status "compiled" (pre-screened skipped:large-bound counts as not compiled)
  pass     - the schema compiles and every test instance is handled right (llguidance: {}),
  inst     - xg2 instances handled right / instances of compiled schemas.
With no argument it reads tests/data/ratchet_jsonschemabench_full.json.gz when present, else the
default sample's tests/data/ratchet_jsonschemabench.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import json_schema_corpus_lib as lib  # noqa: E402


def category_of(file_name: str) -> str:
    return file_name.split("---")[0] if "---" in file_name else file_name.rsplit("_", 1)[0]


def table(results: dict, llg: dict) -> str:
    cats: dict[str, dict] = {}
    for f, r in results.items():
        c = cats.setdefault(category_of(f), {"n": 0, "llg_c": 0, "llg_p": 0, "c": 0, "p": 0, "ok": 0, "inst": 0,
                                             "skip": 0, "llg_known": 0})
        c["n"] += 1
        if f in llg:
            c["llg_known"] += 1
            c["llg_c"] += "json_error" not in llg[f]
            c["llg_p"] += llg[f] == {}
        compiled = r["schema"] == "compiled"
        c["c"] += compiled
        c["skip"] += r["schema"] == "skipped:large-bound"
        if compiled:
            c["p"] += all(lib.passed(s) for s in r["instances"])
            c["ok"] += sum(lib.passed(s) for s in r["instances"])
            c["inst"] += len(r["instances"])
    total = {k: sum(c[k] for c in cats.values()) for k in ("n", "llg_c", "llg_p", "c", "p", "ok", "inst", "skip", "llg_known")}

    def pct(a, b):
        return f"{100.0 * a / b:5.1f}%" if b else "    -"

    lines = [f"| {'category':24} | {'n':>5} | {'llg compile':>11} | {'xg2 compile':>11} | {'llg pass':>8} | {'xg2 pass':>8} | "
             f"{'xg2 inst':>15} | {'skipped':>7} |",
             "|" + "---|" * 8]
    for name, c in sorted(cats.items()) + [("TOTAL", total)]:
        lines.append(f"| {name:24} | {c['n']:5d} | {pct(c['llg_c'], c['llg_known']):>11} | {pct(c['c'], c['n']):>11} | "
                     f"{pct(c['llg_p'], c['llg_known']):>8} | {pct(c['p'], c['n']):>8} | "
                     f"{c['ok']:6d}/{c['inst']:<6d}{'':2} | {c['skip']:7d} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path)
    ap.add_argument("--run", action="store_true", help="run the selection now instead of reading results")
    ap.add_argument("--per-category", type=int, default=6, help="with --run; 0 = every schema")
    ap.add_argument("--save", type=Path, help="with --run: write the results (ratchet format)")
    a = ap.parse_args()
    if a.run:
        cats = lib.jsb_categories()
        entries = [e for es in cats.values() for e in es] if a.per_category == 0 else lib.jsb_sample(cats, a.per_category)
        runner = lib.Runner()
        t0 = time.perf_counter()
        results = {e["file"]: runner.run_case(e["data"]["schema"], lib.jsb_tests(e)) for e in entries}
        print(f"ran {len(results)} schemas in {time.perf_counter() - t0:.1f} s")
        if a.save:
            lib.write_ratchet(a.save, results)
    else:
        path = a.results
        if path is None:
            full = ROOT / "tests" / "data" / "ratchet_jsonschemabench_full.json.gz"
            path = full if full.exists() else ROOT / "tests" / "data" / "ratchet_jsonschemabench.json"
        results = lib.load_ratchet(path)
        print(f"results: {path} ({len(results)} schemas)")
    print(table(results, lib.llguidance_maskbench()))
    s = lib.summarize(results)
    print(f"instances: {s['instances']}")
    print(f"not compiled: {s['not_compiled']}")


if __name__ == "__main__":
    main()
