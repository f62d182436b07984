#!/usr/bin/env python3
"""MaskBench over the shared JSONSchemaBench corpus: correctness and mask timing of xg2_jax
(default mode and eager), xgrammar and llguidance side by side in one process, Llama-3
vocabulary.

Per schema and engine: compile (strict_mode=False; xg2_jax also any_order=True, the
validation semantics of the corpus), then every test instance replayed token by token (greedy
tokenization of ``json.dumps(instance, ensure_ascii=False)``, then the end-of-sequence token):
the mask is filled before each token and the token must be allowed and accepted. A valid
instance is accepted when every token is; an invalid one is rejected at the first token that
is not. A schema passes when it compiles and every instance is judged right.

Columns (the GRID / MaskBench table): passing, compile errors, schemas with a valid instance
rejected, schemas with an invalid instance accepted (instance counts in parentheses); time to
first mask = compile + first fill (p50 / p99 over schemas; with --prefill-ms a sleep between
them stands for the model's prefill and is not counted, else a background build gets no
head start); time between masks = every later fill (p50 / p90 /
p99 / p99.9 / max). Engines alternate per schema (rotating order).

Each worker process runs a stream of schemas; one that exceeds --timeout (any engine) is
killed, the engine that hung is charged a compile error ("timeout") and a fresh worker
continues with the next schema.

    /work/venv-jsb-peers/bin/python benchmarks/maskbench.py --sample 20
    ... --limit 500 --engines xg2,xg2-eager,llguidance --json out.json
    ... --tools50       # also the 50-tool structural tag of ../shared/bench (time to first mask)
    ... --stream run.jsonl             # append results as they come; rerun to resume
    ... --report a.jsonl b.jsonl       # the table of saved runs (engines of one schema merged)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(ROOT / "tests"))

import json_schema_corpus_lib as lib  # noqa: E402  (corpus loading and sampling)

ENGINES = ("xg2", "xg2-eager", "xgrammar", "llguidance")


# ------------------------------------------------------------------------------ engines

class Xg2Engine:
    def __init__(self, vocab, name: str, lazy):
        import xg2_jax as xg

        self.xg, self.name, self.lazy = xg, name, lazy
        self.version = xg.__version__
        self.compiler = xg.GrammarCompiler(vocab.xg2_tokenizer, cache_enabled=False)

    def reset(self):
        self.xg.clear_cross_grammar_cache()  # no head start from the engine run before

    def compile(self, schema):
        kw = {} if self.lazy is None else {"lazy": self.lazy}
        return self.compiler.compile_json_schema(schema, strict_mode=False, any_order=True, **kw)

    def matcher(self, compiled):
        return self.xg.GrammarMatcher(compiled)

    def fill(self, m, mask):
        m.fill_next_token_bitmask(mask, 0)

    def accept(self, m, tok):
        return m.accept_token(tok)


class PeerEngine:
    """xgrammar or llguidance through benchmarks/bench_engine.py's adapters."""

    def __init__(self, adapter):
        self.inner, self.name, self.version = adapter, adapter.name, adapter.version

    def reset(self):
        pass

    def compile(self, schema):
        return self.inner.compile_schema(schema)

    def matcher(self, compiled):
        return self.inner.matcher(compiled)

    def fill(self, m, mask):
        self.inner.fill(m, mask)

    def accept(self, m, tok):
        return self.inner.accept(m, tok)


def make_engine(name: str, vocab):
    import bench_engine as be

    modes = {"xg2": None, "xg2-eager": False, "xg2-lazy": True}
    if name in modes:
        return Xg2Engine(vocab, name, modes[name])
    if name == "xgrammar":
        return PeerEngine(be.Xgrammar(vocab, 1))
    if name == "llguidance":
        return PeerEngine(be.LLGuidance(vocab, 1))
    raise SystemExit(f"unknown engine {name!r}")


# ------------------------------------------------------------------------------ worker

def judge(engine, compiled, toks, eos, mask, word_bit, fills: list) -> bool:
    """Replays one token stream; True when every token was allowed and accepted. Appends
    the fill times (µs) to ``fills``."""
    m = engine.matcher(compiled)
    for tok in toks + [eos]:
        t0 = time.perf_counter()
        engine.fill(m, mask)
        fills.append((time.perf_counter() - t0) * 1e6)
        word, bit = word_bit(tok)
        if not (int(mask[0, word]) >> bit) & 1:
            return False
        if not engine.accept(m, tok):
            return False
    return True


def worker(engine_names: list[str], prefill_ms: float) -> None:
    import bench_engine as be

    from xg2_jax import XG2Error, greedy_tokenize

    vocab = be.Vocab(lib.VOCAB)
    engines = [make_engine(n, vocab) for n in engine_names]
    print(json.dumps({"versions": {e.name: e.version for e in engines}}), flush=True)
    eos = vocab.eos_ids[0]
    mask = be.new_mask(vocab)

    def word_bit(tok):
        return tok // 32, tok % 32

    for order, line in enumerate(sys.stdin):
        entry = json.loads(line)
        schema = entry["data"]["schema"]
        streams = []
        for data, valid in lib.jsb_tests(entry):
            text = json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass")
            try:
                streams.append((greedy_tokenize(vocab.xg2_tokenizer, text), valid))
            except XG2Error:
                streams.append((None, valid))
        out = {"file": entry["file"], "engines": {}}
        for e in be.rotated(engines, order):
            print(json.dumps({"begin": e.name}), flush=True)
            gc.collect()
            e.reset()
            r = {"status": "compiled", "verdicts": [], "fills": []}
            t0 = time.perf_counter()
            try:
                compiled = e.compile(schema)
            except Exception as exc:  # every engine's error types: a compile error
                r["status"] = "error:" + type(exc).__name__
                out["engines"][e.name] = r
                continue
            compile_us = (time.perf_counter() - t0) * 1e6
            if prefill_ms:
                time.sleep(prefill_ms / 1000.0)  # the model's prefill (not counted)
            first = True
            for toks, valid in streams:
                if toks is None:
                    r["verdicts"].append("untokenizable")
                    continue
                fills: list[float] = []
                ok = judge(e, compiled, toks, eos, mask, word_bit, fills)
                if first and fills:
                    r["ttfm_us"] = compile_us + fills[0]
                    fills = fills[1:]
                    first = False
                r["fills"].extend(round(f, 2) for f in fills)
                r["verdicts"].append(("valid:" if valid else "invalid:") + ("accepted" if ok else "rejected"))
            r.setdefault("ttfm_us", compile_us)
            del compiled
            out["engines"][e.name] = r
        print(json.dumps(out), flush=True)


# ------------------------------------------------------------------------------ driver

def run_all(entries: list[dict], engine_names: list[str], timeout: float, prefill_ms: float,
            stream: Path | None = None) -> tuple[dict, dict]:
    """Every entry through worker processes; with stream, each schema's result is appended
    to that JSON-lines file as it comes (a long run can be stopped and resumed)."""
    sink = stream.open("a") if stream else None
    cmd = [sys.executable, str(HERE), "--worker", "--engines", ",".join(engine_names), "--prefill-ms", str(prefill_ms)]
    # The worker finds xg2_jax as this process does: the repository root on its path would
    # shadow an installed (non-editable) package with the source folder, which has no build.
    env = dict(os.environ)
    results: dict[str, dict] = {}
    versions: dict[str, str] = {}
    proc = None
    t_start = time.perf_counter()
    for i, e in enumerate(entries):
        if proc is None:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True, env=env)
            versions.update(json.loads(proc.stdout.readline())["versions"])
        proc.stdin.write(json.dumps(e) + "\n")
        proc.stdin.flush()
        running = None
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], timeout)
            line = proc.stdout.readline() if ready else ""
            if not line:  # timeout or crash: the running engine gets a compile error
                proc.kill()
                proc.wait()
                proc = None
                r = results.setdefault(e["file"], {"file": e["file"], "engines": {}})
                if running:
                    r["engines"][running] = {"status": "error:timeout" if not ready else "error:crash",
                                             "verdicts": [], "fills": []}
                break
            msg = json.loads(line)
            if "begin" in msg:
                running = msg["begin"]
                continue
            results[e["file"]] = msg
            break
        if sink and e["file"] in results:
            sink.write(json.dumps(results[e["file"]]) + "\n")
            sink.flush()
        if (i + 1) % 25 == 0:
            print(f"  {i + 1}/{len(entries)} schemas, {time.perf_counter() - t_start:.0f} s", file=sys.stderr,
                  flush=True)
    if proc is not None:
        proc.stdin.close()
        proc.wait()
    if sink:
        sink.close()
    return results, versions


def load_stream(paths: list[Path]) -> dict:
    """Results saved by --stream runs, engines of one schema merged (runs of different
    engines over the same schemas combine; for one engine, later lines win)."""
    results: dict[str, dict] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                results.setdefault(row["file"], {"file": row["file"], "engines": {}})["engines"].update(row["engines"])
    return results


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def aggregate(rows: list[dict], name: str) -> dict:
    a = {"n": 0, "pass": 0, "cerr": 0, "vrej": 0, "iacc": 0, "vrej_i": 0, "iacc_i": 0, "ttfm": [], "fills": []}
    for row in rows:
        r = row["engines"].get(name)
        a["n"] += 1
        if r is None or r["status"] != "compiled":
            a["cerr"] += 1
            continue
        v = r["verdicts"]
        vr = sum(x == "valid:rejected" for x in v)
        ia = sum(x == "invalid:accepted" for x in v)
        a["vrej"] += vr > 0
        a["iacc"] += ia > 0
        a["vrej_i"] += vr
        a["iacc_i"] += ia
        a["pass"] += vr == 0 and ia == 0
        a["ttfm"].append(r["ttfm_us"])
        a["fills"].extend(r["fills"])
    return a


def fmt_us(x: float) -> str:
    if x != x:
        return "-"
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"


def table(results: dict, engine_names: list[str], by_category: bool) -> str:
    rows = list(results.values())
    lines = []
    head = (f"| {'engine':10} | {'passing':>15} | {'compile err':>11} | {'valid rej':>10} | {'invalid acc':>11} | "
            f"{'TTFM p50':>8} | {'TTFM p99':>8} | {'TBM p50':>7} | {'p90':>6} | {'p99':>6} | {'p99.9':>7} | "
            f"{'max':>8} |")
    lines += [head, "|" + "---|" * 12]
    for name in engine_names:
        a = aggregate(rows, name)
        f = a["fills"]
        lines.append(
            f"| {name:10} | {a['pass']:6d} ({100.0 * a['pass'] / max(a['n'], 1):5.1f}%) | {a['cerr']:11d} | "
            f"{a['vrej']:4d} ({a['vrej_i']:3d}) | {a['iacc']:5d} ({a['iacc_i']:3d}) | "
            f"{fmt_us(pct(a['ttfm'], 50)):>8} | {fmt_us(pct(a['ttfm'], 99)):>8} | {fmt_us(pct(f, 50)):>7} | "
            f"{fmt_us(pct(f, 90)):>6} | {fmt_us(pct(f, 99)):>6} | {fmt_us(pct(f, 99.9)):>7} | "
            f"{fmt_us(max(f) if f else float('nan')):>8} |")
    if by_category:
        cats: dict[str, list[dict]] = {}
        for row in rows:
            cats.setdefault(category_of(row["file"]), []).append(row)
        lines += ["", f"| {'category':22} | {'n':>5} | " + " | ".join(f"{n + ' pass/err/vr/ia':>26}"
                                                                     for n in engine_names) + " |",
                  "|" + "---|" * (2 + len(engine_names))]
        for cat, crow in sorted(cats.items()):
            cells = []
            for name in engine_names:
                a = aggregate(crow, name)
                cells.append(f"{a['pass']:>8}/{a['cerr']:>4}/{a['vrej']:>3}/{a['iacc']:>3} "
                             f"p50 {fmt_us(pct(a['fills'], 50)):>5}")
            lines.append(f"| {cat:22} | {len(crow):5d} | " + " | ".join(f"{c:>26}" for c in cells) + " |")
    return "\n".join(lines)


def category_of(file_name: str) -> str:
    return file_name.split("---")[0] if "---" in file_name else file_name.rsplit("_", 1)[0]


# ------------------------------------------------------------------------------ 50 tools

def tools50(engine_names: list[str], reps: int, vocab_path: Path, step_ms: float = 0.0) -> str:
    """Time to first mask (compile + first fill) of the 50-tool structural tag of
    ../shared/bench/workloads.py: xg2_jax default mode and eager, llguidance and xgrammar,
    interleaved (engine order rotated every repetition) in this one process, every compile
    cold. The first repetition also replays the workload's turns right after the compile
    (fills of steps 1-8 and later ones; the default mode's background build runs meanwhile).
    step_ms models the decode loop's forward pass: an idle wait before each of the first 8
    fills of the first turn (a device step, during which the host builds masks); 0 replays
    the turns back to back, so every "later" fill lands within milliseconds of the compile.
    The default mode's background mask build is cancelled and joined before the next engine
    runs, so it never overlaps another engine's timing."""
    import bench_engine as be

    sys.path.insert(0, str(ROOT.parent / "shared" / "bench"))
    import workloads

    item = next(i for i in workloads.build(groups=["tools_tag"]) if i["name"] == "tools_tag_50")
    spec = item["spec"]
    vocab = be.Vocab(vocab_path)
    import xg2_jax as xg

    tags = [{"type": "tag", "begin": spec["begin"].format(name=t["name"]),
             "content": {"type": "json_schema", "json_schema": t["parameters"]}, "end": spec["end"]}
            for t in spec["tools"]]
    st = {"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": [spec["trigger"]],
                                               "tags": tags, "at_least_one": False, "stop_after_first": False}}
    st_json = json.dumps(st)
    streams = [vocab.tokenize(s.encode("utf-8")) + [vocab.eos_ids[0]] for s in item["instances"]]
    mask = be.new_mask(vocab)

    # Each engine: reset() (empties its caches, untimed), compile(), matcher(compiled), fill(m),
    # accept(m, tok) and drain(compiled) (stops background work, untimed).
    engines: dict[str, dict] = {}
    if "xg2" in engine_names or "xg2-eager" in engine_names:
        comp = xg.GrammarCompiler(vocab.xg2_tokenizer, cache_enabled=False)

        def xg2_engine(lazy):
            def compile_():
                kw = {} if lazy is None else {"lazy": lazy}
                return comp.compile_structural_tag(st_json, **kw)

            def drain(cg):
                bg = getattr(cg, "_background", None)
                if bg is not None:
                    bg.cancel()
                    bg.wait()

            # cold: nothing pooled from the compile before (emptied before the clock starts)
            return dict(reset=xg.clear_cross_grammar_cache, compile=compile_, matcher=xg.GrammarMatcher,
                        fill=lambda m: m.fill_next_token_bitmask(mask, 0), accept=lambda m, t: m.accept_token(t),
                        drain=drain)

        for name, lazy in (("xg2", None), ("xg2-eager", False)):
            if name in engine_names:
                engines[name] = xg2_engine(lazy)
    if "llguidance" in engine_names:
        llg = be.LLGuidance(vocab, 1)

        def llg_compile():
            ltags = [llg.llg.StructTag(trigger=spec["trigger"], begin=spec["begin"].format(name=t["name"]),
                                       grammar=t["parameters"], end=spec["end"]) for t in spec["tools"]]
            g = llg.llg.StructTag.to_grammar(ltags, assume_special=False)
            return llg.llg.LLMatcher(llg.tok, g, log_level=0)

        engines["llguidance"] = dict(reset=lambda: None, compile=llg_compile, matcher=lambda c: c.deep_copy(),
                                     fill=lambda m: llg.fill(m, mask), accept=llg.accept, drain=lambda c: None)
    if "xgrammar" in engine_names:
        xgr = be.Xgrammar(vocab, 1)
        xgr_tag = json.dumps({"type": "structural_tag", "format": st["format"]})

        def xgr_compile():
            return xgr.compiler.compile_structural_tag(xgr_tag)

        engines["xgrammar"] = dict(reset=xgr.clear, compile=xgr_compile, matcher=xgr.matcher, fill=lambda m: xgr.fill(m, mask),
                                   accept=xgr.accept, drain=lambda c: None)

    names = list(engines)
    ttfm = {n: [] for n in names}
    early = {n: [] for n in names}
    late = {n: [] for n in names}
    for rep in range(reps):
        for k in range(len(names)):
            name = names[(rep + k) % len(names)]
            e = engines[name]
            e["reset"]()
            gc.collect()
            t0 = time.perf_counter()
            cg = e["compile"]()
            m = e["matcher"](cg)
            e["fill"](m)
            ttfm[name].append((time.perf_counter() - t0) * 1e3)
            if rep == 0:
                for turn, toks in enumerate(streams):
                    m = e["matcher"](cg)
                    for step, tok in enumerate(toks):
                        if turn == 0 and step < 8 and step_ms > 0:
                            time.sleep(step_ms / 1e3)
                        t0 = time.perf_counter()
                        e["fill"](m)
                        (early if step < 8 else late)[name].append((time.perf_counter() - t0) * 1e6)
                        if not e["accept"](m, tok):
                            raise SystemExit(f"{name}: tools_tag_50 turn rejected")
            e["drain"](cg)
            del cg, m
    out = [f"| {'engine':12} | {'TTFM ms p50':>11} | {'p90':>7} | {'fill µs p50 (steps 1-8)':>24} | "
           f"{'fill µs p50 (later)':>19} | {'p99 (later)':>11} |", "|" + "---|" * 6]
    for n in names:
        out.append(f"| {n:12} | {pct(ttfm[n], 50):11.1f} | {pct(ttfm[n], 90):7.1f} | {fmt_us(pct(early[n], 50)):>24} | "
                   f"{fmt_us(pct(late[n], 50)):>19} | {fmt_us(pct(late[n], 99)):>11} |")
    return "\n".join(out)


# ------------------------------------------------------------------------------ main

def select_entries(sample: int, limit: int) -> list[dict]:
    cats = lib.jsb_categories()
    if sample:
        entries = lib.jsb_sample(cats, sample)
    else:
        entries = lib.jsb_sample(cats, max(len(es) for es in cats.values()))
    return entries[:limit] if limit else entries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma list of " + ", ".join(ENGINES) + ", xg2-lazy")
    ap.add_argument("--sample", type=int, default=0, help="schemas per category (evenly spaced); 0: all")
    ap.add_argument("--limit", type=int, default=0, help="at most this many schemas (round-robin over categories)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per schema and engine step")
    ap.add_argument("--json", type=Path, help="write the per-schema results here")
    ap.add_argument("--prefill-ms", type=float, default=0.0,
                    help="sleep this long between compile and the first fill (a prefill; not in TTFM)")
    ap.add_argument("--no-categories", action="store_true")
    ap.add_argument("--tools50", action="store_true", help="also time the 50-tool structural tag")
    ap.add_argument("--tools50-only", action="store_true")
    ap.add_argument("--tools50-reps", type=int, default=15, help="interleaved cold compiles per engine")
    ap.add_argument("--tools50-step-ms", type=float, default=0.0,
                    help="idle wait (a device step) before each of the first 8 fills of the replay; 0: back to back")
    ap.add_argument("--tools50-vocab", type=Path, default=lib.VOCAB.parent / "qwen3.json.gz",
                    help="vocabulary of the 50-tool timing (default: Qwen3)")
    ap.add_argument("--stream", type=Path,
                    help="append each schema's result to this JSON-lines file; schemas already in it are skipped")
    ap.add_argument("--report", type=Path, nargs="+", help="print the table of saved --stream files; run nothing")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    names = [n.strip() for n in a.engines.split(",") if n.strip()]
    if a.worker:
        worker(names, a.prefill_ms)
        return
    if a.report:
        results = load_stream(a.report)
        seen = {n for r in results.values() for n in r["engines"]}
        print(f"MaskBench (saved): {len(results)} schemas")
        print(table(results, [n for n in names if n in seen], not a.no_categories))
        return
    if not a.tools50_only:
        entries = select_entries(a.sample, a.limit)
        done = load_stream([a.stream]) if a.stream and a.stream.exists() else {}
        done = {f: r for f, r in done.items() if all(n in r["engines"] for n in names)}
        entries = [e for e in entries if e["file"] not in done]
        print(f"MaskBench: {len(entries)} schemas, {sum(len(e['data'].get('tests', [])) for e in entries)} "
              f"instances, engines {', '.join(names)}", flush=True)
        t0 = time.perf_counter()
        results, versions = run_all(entries, names, a.timeout, a.prefill_ms, a.stream)
        results = {**done, **results}
        print(f"ran in {time.perf_counter() - t0:.0f} s; versions: "
              + ", ".join(f"{k} {v}" for k, v in versions.items()))
        print("times in µs; TTFM = compile + first mask; TBM = time between masks; "
              "counts are schemas (instances)")
        print(table(results, names, not a.no_categories))
        if a.json:
            a.json.write_text(json.dumps(results) + "\n")
    if a.tools50 or a.tools50_only:
        print(f"\n50-tool structural tag (../shared/bench/workloads.py tools_tag_50), {a.tools50_vocab.name}, "
              f"{a.tools50_reps} interleaved cold compiles; TTFM = compile + first mask; replay with "
              + (f"{a.tools50_step_ms:g} ms device steps before the first 8 fills:" if a.tools50_step_ms
                 else "the turns back to back:"))
        print(tools50(names, a.tools50_reps, a.tools50_vocab, a.tools50_step_ms))


if __name__ == "__main__":
    main()
