"""Times every schema of the JSONSchemaBench sample: grammar conversion, compilation (lazy) and
per-instance matching, and names the likely cause of slow ones (largest counted repetition,
schema size).

    PYTHONPATH=. python3 benchmarks/jsb_timing.py [--per-category 6] [--timeout 30]
        [--no-screen] [--top 10] [--json out.json]

Each schema runs in a worker process; one that exceeds --timeout is killed and reported as a
timeout, and a fresh worker takes the next schema. --no-screen compiles the schemas that the
corpus test pre-screens out (skipped:large-bound), which is what makes them visible here.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import json_schema_corpus_lib as lib  # noqa: E402


def bounds_summary(schema) -> str:
    """The largest counted repetitions in the schema, e.g. 'maxLength=5000 maxItems=300'."""
    best: dict[str, float] = {}
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
        elif isinstance(s, dict):
            for k, v in s.items():
                if k in ("enum", "const", "default", "examples"):
                    continue
                if k in lib.COUNT_KEYWORDS and isinstance(v, (int, float)) and not isinstance(v, bool):
                    best[k] = max(best.get(k, 0), v)
                elif k == "pattern" and isinstance(v, str):
                    for m in lib._QUANT.finditer(v):
                        hi = max(int(m.group(1)), int(m.group(2)) if m.group(2) else 0)
                        best["pattern{}"] = max(best.get("pattern{}", 0), hi)
                elif isinstance(v, (dict, list)):
                    stack.append(v)
    return " ".join(f"{k}={v:g}" for k, v in sorted(best.items(), key=lambda kv: -kv[1])[:3])


def worker(no_screen: bool) -> None:
    if no_screen:
        lib.large_bound = lambda schema, limit=0: None
    runner = lib.Runner()
    for line in sys.stdin:
        entry = json.loads(line)
        t0 = time.perf_counter()
        status, cg = runner.compile(entry["data"]["schema"])
        t1 = time.perf_counter()
        inst, worst = [], 0.0
        if cg is not None:
            for data, valid in lib.jsb_tests(entry):
                s = time.perf_counter()
                inst.append(("valid:" if valid else "invalid:") + runner.match(cg, data))
                worst = max(worst, time.perf_counter() - s)
        t2 = time.perf_counter()
        print(json.dumps({"file": entry["file"], "status": status, "compile_s": t1 - t0, "match_s": t2 - t1,
                          "worst_instance_s": worst, "instances": inst}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-category", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--no-screen", action="store_true")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        worker(a.no_screen)
        return
    entries = lib.jsb_sample(lib.jsb_categories(), a.per_category)
    cmd = [sys.executable, __file__, "--worker"] + (["--no-screen"] if a.no_screen else [])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = None
    rows = []
    t_all = time.perf_counter()
    for e in entries:
        if proc is None:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        start = time.perf_counter()
        proc.stdin.write(json.dumps(e) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], a.timeout + 20)  # + worker start-up
        line = proc.stdout.readline() if ready else ""
        if not line:
            proc.kill()
            proc.wait()
            proc = None
            rows.append({"file": e["file"], "status": "timeout", "compile_s": time.perf_counter() - start,
                         "match_s": 0.0, "worst_instance_s": 0.0, "instances": []})
        else:
            rows.append(json.loads(line))
        rows[-1]["cause"] = bounds_summary(e["data"]["schema"])
        rows[-1]["schema_bytes"] = len(json.dumps(e["data"]["schema"]))
        rows[-1]["n_tests"] = len(e["data"].get("tests", []))
    if proc is not None:
        proc.stdin.close()
        proc.wait()
    total = time.perf_counter() - t_all
    rows.sort(key=lambda r: -(r["compile_s"] + r["match_s"]))
    print(f"{len(rows)} schemas in {total:.1f} s (compile {sum(r['compile_s'] for r in rows):.1f} s, "
          f"match {sum(r['match_s'] for r in rows):.1f} s)")
    print(f"{'file':48} {'status':28} {'compile':>8} {'match':>8} {'worst':>7} {'tests':>5} {'bytes':>7}  bounds")
    for r in rows[:a.top]:
        print(f"{r['file'][:48]:48} {r['status'][:28]:28} {r['compile_s']:8.2f} {r['match_s']:8.2f} "
              f"{r['worst_instance_s']:7.2f} {r['n_tests']:5d} {r['schema_bytes']:7d}  {r['cause']}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
