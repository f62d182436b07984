#!/usr/bin/env python3
"""Performance-engine benchmark: compile latency, cross-grammar pool, lazy compile, bound
scaling, batch fills and draft trees, with xgrammar and llguidance beside xg2_jax.

Sections (all on the Llama-3 vocabulary, one process, engines alternated per measurement):

    a  tool requests: each request is a random 20-of-200 BFCL tool subset compiled as one JSON
       schema (anyOf over {"name": const, "arguments": parameters}); per-request compile time
       cold (caches cleared before each request) and warm (caches kept), and our cross-grammar
       pool's bytes/entries as requests accumulate;
    b  lazy compile: time for compile(lazy=True) to return, the first mask after it, and the
       first mask after precompute_async() overlapped with a simulated 20 ms prefill;
    c  bound scaling: {"type":"array","items":{"type":"integer"},"maxItems":B} and
       {"type":"string","maxLength":B}: compile ms and mask µs along one valid instance;
    d  batch fill of 1/16/64/256 matchers at varied states, 1 and 2 threads, vs a Python loop;
    e  draft trees of 8/32/64 nodes (random valid continuations): traverse_draft_tree cost.

xgrammar (0.2.x, needs torch) and llguidance are optional: an engine that cannot be imported is
skipped with a note. See benchmarks/README.md ("bench_engine.py").

    PYTHONPATH=. .venv-peers/bin/python benchmarks/bench_engine.py [--quick] [--md FILE]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
DATA = HERE.parents[2] / "shared" / "data"
BFCL_FILES = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json",
              "BFCL_v4_live_simple.json", "BFCL_v4_live_multiple.json")
BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def pct(values, q: float) -> float:
    """The q-th percentile (nearest rank) of a non-empty sequence."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def fmt(x, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.{digits}f}"


# ======================================================================================
# Vocabulary shared by every engine
# ======================================================================================
class Vocab:
    def __init__(self, path: Path):
        import xg2_jax as xg

        raw = path.read_bytes()
        data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        self.path = path
        self.name = data.get("name", path.name)
        self.vocab_type = data["vocab_type"]
        self.encoded = list(data["tokens"])
        self.size = len(self.encoded)
        self.special_ids = sorted(set(data.get("special_ids") or []))
        self.eos_ids = list(data.get("eos_ids") or [])
        t0 = time.perf_counter()
        self.xg2_tokenizer = xg.TokenizerInfo.from_vocab_file(path)
        self.xg2_setup_s = time.perf_counter() - t0
        self.decoded = [bytes(b) for b in self.xg2_tokenizer.decoded_vocab]
        self.memo: dict[bytes, list[int]] = {}

    def tokenize(self, data: bytes) -> list[int]:
        """Greedy longest match over the decoded bytes of the non-special tokens (memoized)."""
        from xg2_jax import XG2Error, greedy_tokenize

        hit = self.memo.get(data)
        if hit is None:
            try:
                hit = self.memo[data] = greedy_tokenize(self.xg2_tokenizer, data)
            except XG2Error as exc:
                raise SystemExit(f"{exc} ({self.name})") from None
        return hit


# ======================================================================================
# Engines
# ======================================================================================
class XgrammarApi:
    """Matcher calls of the engines with xgrammar's Python API; ``self.mod`` is the module."""

    mod = None
    batchers: dict[int, object]

    def matcher(self, compiled):
        return self.mod.GrammarMatcher(compiled)

    def fill(self, m, mask, index: int = 0) -> None:
        m.fill_next_token_bitmask(mask, index)

    def accept(self, m, tok: int) -> bool:
        return m.accept_token(tok)

    def rollback(self, m, n: int) -> None:
        m.rollback(n)

    def batch_fill(self, matchers, mask, threads: int) -> None:
        b = self.batchers.get(threads)
        if b is None:
            b = self.batchers[threads] = self.mod.BatchGrammarMatcher(threads)
        b.batch_fill_next_token_bitmask(matchers, mask)


class Xg2(XgrammarApi):
    name = "xg2_jax"

    def __init__(self, vocab: Vocab, threads: int):
        import xg2_jax as xg

        self.xg = self.mod = xg
        self.version = xg.__version__
        self.tok = vocab.xg2_tokenizer
        self.compiler = xg.GrammarCompiler(self.tok, max_threads=threads)
        self.batchers: dict[int, object] = {}

    def supports(self, schema) -> bool:
        try:
            self.xg.Grammar.from_json_schema(schema, strict_mode=False)
            return True
        except self.xg.XG2Error:
            return False

    def compile_schema(self, schema, lazy: bool = False):
        return self.compiler.compile_json_schema(schema, strict_mode=False, lazy=lazy)

    def compile_json(self):
        return self.compiler.compile_builtin_json_grammar()

    def clear(self) -> None:
        self.compiler.clear_cache()          # also empties the cross-grammar pool

    def draft_tree(self, m, tree, mask) -> None:
        self.xg.traverse_draft_tree(m, tree["tokens"], mask, parents=tree["parents"])


class Xgrammar(XgrammarApi):
    name = "xgrammar"

    def __init__(self, vocab: Vocab, threads: int):
        from importlib.metadata import version

        import xgrammar as xgr

        self.xgr = self.mod = xgr
        self.version = version("xgrammar")
        enc = list(vocab.encoded)
        for i in vocab.special_ids:            # empty token = special: never allowed as text
            enc[i] = ""
        self.tok = xgr.TokenizerInfo(enc, vocab_type=getattr(xgr.VocabType, vocab.vocab_type.upper()),
                                     vocab_size=vocab.size, stop_token_ids=list(vocab.eos_ids))
        self.compiler = xgr.GrammarCompiler(self.tok, max_threads=threads)
        self.dyn = xgr.GrammarCompiler(self.tok, max_threads=threads,
                                       enable_dynamic_compilation=True)
        self.batchers: dict[int, object] = {}

    def supports(self, schema) -> bool:
        try:
            self.xgr.Grammar.from_json_schema(json.dumps(schema), strict_mode=False)
            return True
        except Exception:
            return False

    def compile_schema(self, schema, lazy: bool = False):
        c = self.dyn if lazy else self.compiler
        return c.compile_json_schema(json.dumps(schema), strict_mode=False)

    def compile_json(self):
        return self.compiler.compile_builtin_json_grammar()

    def clear(self) -> None:
        self.compiler.clear_cache()
        self.dyn.clear_cache()

    def draft_tree(self, m, tree, mask) -> None:
        t = tree.get("torch")
        if t is None:
            import torch

            t = tree["torch"] = (torch.from_numpy(tree["first_child"]),
                                 torch.from_numpy(tree["next_sibling"]),
                                 torch.from_numpy(tree["tokens"]))
        m.traverse_draft_tree(t[0], t[1], t[2], tree.setdefault("tmask", _torch_view(mask)))


def _torch_view(mask):
    import torch

    return torch.from_numpy(mask)


class LLGuidance:
    name = "llguidance"

    def __init__(self, vocab: Vocab, threads: int):
        import llguidance as llg
        import llguidance.numpy as llgnp

        self.llg, self.llgnp = llg, llgnp
        self.version = llg.__version__
        toks = list(vocab.decoded)
        for i in vocab.special_ids:            # llguidance's special-token marker
            toks[i] = b"\xff" + vocab.encoded[i].encode("utf-8", "replace")

        class Wrapped:
            tokens = toks
            eos_token_id = vocab.eos_ids[0]
            bos_token_id = None
            special_token_ids = list(vocab.special_ids)

            def __call__(self, s):
                return vocab.tokenize(s if isinstance(s, bytes) else s.encode("utf-8"))

        self.tok = llg.LLTokenizer(llg.TokenizerWrapper(Wrapped()), n_vocab=vocab.size,
                                   eos_token=list(vocab.eos_ids))
        self.executors: dict[int, object] = {}

    def supports(self, schema) -> bool:
        try:
            g = self.llg.LLMatcher.grammar_from_json_schema(schema)
            is_error, _ = self.llg.LLMatcher.validate_grammar_with_warnings(g, self.tok)
            return not is_error
        except Exception:
            return False

    def compile_schema(self, schema, lazy: bool = False):
        g = self.llg.LLMatcher.grammar_from_json_schema(schema)
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error()[:200])
        return m                               # template matcher, copied by matcher()

    def compile_json(self):
        return self.compile_schema({"type": ["object", "array"]})

    def clear(self) -> None:
        pass                                   # no compile cache

    def matcher(self, compiled):
        return compiled.deep_copy()

    def fill(self, m, mask, index: int = 0) -> None:
        row = mask[index]
        m.unsafe_compute_mask_ptr(row.ctypes.data, row.nbytes)

    def accept(self, m, tok: int) -> bool:
        return m.consume_token(tok) and not m.is_error()

    def rollback(self, m, n: int) -> None:
        m.rollback(n)

    def batch_fill(self, matchers, mask, threads: int) -> None:
        ex = self.executors.get(threads)
        if ex is None:
            ex = self.executors[threads] = self.llg.LLExecutor(threads)
        self.llgnp.fill_next_token_bitmask_par(ex, [(m, i) for i, m in enumerate(matchers)], mask)

    draft_tree = None                          # no tree API (only linear draft chains)


def load_engines(vocab: Vocab, threads: int, wanted: list[str]) -> tuple[list, list[str]]:
    engines, notes = [], []
    for cls in (Xg2, Xgrammar, LLGuidance):
        if cls.name not in wanted:
            continue
        try:
            t0 = time.perf_counter()
            e = cls(vocab, threads)
            setup = time.perf_counter() - t0 + (vocab.xg2_setup_s if cls is Xg2 else 0.0)
            notes.append(f"{e.name} {e.version} (vocab setup {1000 * setup:.0f} ms)")
            engines.append(e)
        except Exception as exc:
            if cls is Xg2:
                raise
            log(f"note: {cls.name} skipped ({type(exc).__name__}: {exc})")
            notes.append(f"{cls.name}: skipped ({type(exc).__name__})")
    return engines, notes


def rotated(engines: list, k: int) -> list:
    k %= len(engines)
    return engines[k:] + engines[:k]


def new_mask(vocab: Vocab, rows: int = 1) -> np.ndarray:
    return np.full((rows, (vocab.size + 31) // 32), -1, dtype=np.int32)


def timed_calls(fn, reps: int, scale: float = 1.0) -> list[float]:
    """Wall time of each of reps calls of fn(), in seconds times scale."""
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * scale)
    return ts


def allowed(mask_row: np.ndarray, size: int) -> np.ndarray:
    bits = np.unpackbits(mask_row.view(np.uint8), bitorder="little")[:size]
    return bits.astype(bool)


# ======================================================================================
# (a) BFCL tool requests
# ======================================================================================
def bfcl_to_json_schema(node, closed: bool):
    """BFCL parameter types to JSON Schema: dict->object, float->number, tuple->array, any->{}."""
    if isinstance(node, list):
        return [bfcl_to_json_schema(x, closed) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            if value == "any":
                continue
            out["type"] = BFCL_TYPES.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: bfcl_to_json_schema(v, closed) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            out[key] = bfcl_to_json_schema(value, closed)
        else:
            out[key] = value                 # enum, default, required, description, ...
    if closed and out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def tool_entry(name: str, params) -> dict:
    return {"type": "object", "properties": {"name": {"const": name}, "arguments": params},
            "required": ["name", "arguments"]}


def load_tools(engines: list, n_tools: int, seed: int, closed: bool):
    """n_tools distinct BFCL tools (seeded order) that every engine supports; + dropped counts."""
    seen: dict[str, dict] = {}
    for f in BFCL_FILES:
        path = DATA / "bfcl" / f
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                for fn in json.loads(line).get("function", []):
                    seen.setdefault(fn["name"], fn)
    names = sorted(seen)
    random.Random(seed).shuffle(names)
    tools, dropped = [], {e.name: 0 for e in engines}
    for name in names:
        if len(tools) >= n_tools:
            break
        params = bfcl_to_json_schema(seen[name]["parameters"], closed)
        schema = {"anyOf": [tool_entry(name, params)]}
        bad = [e.name for e in engines if not e.supports(schema)]
        for b in bad:
            dropped[b] += 1
        if not bad:
            tools.append((name, params))
    return tools, dropped


def section_tools(engines, vocab, args, emit):
    n_req = 20 if args.quick else args.requests
    tools, dropped = load_tools(engines, 200, args.seed, not args.open_objects)
    rng = random.Random(args.seed + 1)
    requests = [sorted(rng.sample(range(len(tools)), 20)) for _ in range(n_req)]
    schemas = [{"anyOf": [tool_entry(*tools[i]) for i in req]} for req in requests]
    mask = new_mask(vocab)
    res = {mode: {e.name: ([], []) for e in engines} for mode in ("cold", "warm")}
    checkpoints = sorted({max(1, n_req // 4), max(1, n_req // 2), n_req})
    pool_rows = []
    xg2 = engines[0]
    for mode in ("cold", "warm"):
        for e in engines:
            e.clear()
        seen_tools: set[int] = set()
        log(f"[a] {mode}: {n_req} requests ...")
        for r, schema in enumerate(schemas):
            if mode == "cold" and r % args.cold_every:
                continue
            for e in rotated(engines, r):
                if mode == "cold":
                    e.clear()
                gc.collect()
                t0 = time.perf_counter()
                compiled = e.compile_schema(schema)
                t1 = time.perf_counter()
                m = e.matcher(compiled)
                e.fill(m, mask)
                t2 = time.perf_counter()
                res[mode][e.name][0].append((t1 - t0) * 1e3)
                res[mode][e.name][1].append((t2 - t0) * 1e3)
                del compiled, m
            seen_tools.update(requests[r])
            if mode == "warm" and r + 1 in checkpoints:
                s = xg2.xg.cross_grammar_cache_stats()
                pool_rows.append((r + 1, len(seen_tools), s["entries"], s["bytes"], s["hits"],
                                  s["misses"], s["evictions"]))
    n_cold = len(range(0, n_req, args.cold_every))
    emit(f"## (a) tool requests: {n_req} requests of 20 tools out of {len(tools)} BFCL tools")
    emit()
    emit(f"Cold: every {args.cold_every}th request ({n_cold} requests), all caches (and our pool) "
         f"cleared before each compile. Warm: all {n_req} requests in order, caches kept from the "
         "first request on.")
    emit()
    drop = ", ".join(f"{k} {v}" for k, v in dropped.items())
    objects = ("open (no additionalProperties)" if args.open_objects
               else "closed (additionalProperties: false added to every object)")
    emit(f"Tools dropped because an engine refused them (then dropped for all): {drop}. "
         f"Objects {objects}; "
         "compile_json_schema(strict_mode=False), default whitespace. "
         "TTFM = compile + new matcher + first mask.")
    emit()
    emit("| engine | cold compile ms p50 | cold p99 | cold TTFM p50 | warm compile ms p50 | "
         "warm p99 | warm TTFM p50 | warm/cold p50 |")
    emit("|---|---:|---:|---:|---:|---:|---:|---:|")
    for e in engines:
        c, ct = res["cold"][e.name]
        w, wt = res["warm"][e.name]
        emit(f"| {e.name} | {fmt(statistics.median(c))} | {fmt(pct(c, 99))} | "
             f"{fmt(statistics.median(ct))} | {fmt(statistics.median(w))} | {fmt(pct(w, 99))} | "
             f"{fmt(statistics.median(wt))} | {statistics.median(w) / statistics.median(c):.2f} |")
    emit()
    emit("xg2_jax cross-grammar pool during the warm run:")
    emit()
    emit("| after requests | distinct tools seen | pool entries | pool MB | hits | misses | evictions |")
    emit("|---:|---:|---:|---:|---:|---:|---:|")
    for n, t, ent, b, h, mi, ev in pool_rows:
        emit(f"| {n} | {t} | {ent:,} | {b / 2**20:.1f} | {h:,} | {mi:,} | {ev} |")
    emit()
    last_quarter = [x for x in res["warm"]["xg2_jax"][0][n_req * 3 // 4:]]
    emit(f"xg2_jax warm compile over the last quarter of the requests (all tools already seen): "
         f"p50 {fmt(statistics.median(last_quarter))} ms.")
    emit()
    return schemas


# ======================================================================================
# (b) lazy compile and first mask
# ======================================================================================
def section_lazy(engines, vocab, args, emit, schemas):
    reps = 3 if args.quick else 5
    mask = new_mask(vocab)
    rows: dict[str, dict[str, list]] = {}

    def add(label, key, v):
        rows.setdefault(label, {}).setdefault(key, []).append(v)

    log(f"[b] lazy compile, {reps} schemas ...")
    for r in range(reps):
        schema = schemas[r % len(schemas)]
        for e in rotated(engines, r):
            modes = {"xg2_jax": ("eager", "lazy", "lazy+precompute"),
                     "xgrammar": ("eager", "lazy")}.get(e.name, ("lazy",))
            for mode in modes:
                e.clear()
                gc.collect()
                label = {("xgrammar", "lazy"): "xgrammar (enable_dynamic_compilation)",
                         ("llguidance", "lazy"): "llguidance (always lazy)"}.get(
                    (e.name, mode), f"{e.name} {mode}")
                t0 = time.perf_counter()
                compiled = e.compile_schema(schema, lazy=mode != "eager")
                t1 = time.perf_counter()
                sleep_s = 0.0
                if mode == "lazy+precompute":
                    handle = compiled.precompute_async()
                    time.sleep(0.020)            # simulated prefill
                    sleep_s = 0.020
                    add(label, "done_at_fill", float(handle.done()))
                m = e.matcher(compiled)
                t2 = time.perf_counter()
                e.fill(m, mask)
                t3 = time.perf_counter()
                add(label, "compile", (t1 - t0) * 1e3)
                add(label, "fill", (t3 - t2) * 1e3)
                add(label, "ttfm", (t3 - t0 - sleep_s) * 1e3)
                if mode == "lazy+precompute":
                    handle.wait()
                del compiled, m
    emit(f"## (b) lazy compile and first mask ({reps} of the tool-request schemas of (a), cold)")
    emit()
    emit("| engine / mode | compile returns, ms p50 | first fill ms p50 | TTFM ms p50 (excl. prefill) | "
         "TTFM max |")
    emit("|---|---:|---:|---:|---:|")
    for label, d in rows.items():
        emit(f"| {label} | {fmt(statistics.median(d['compile']))} | {fmt(statistics.median(d['fill']), 2)} | "
             f"{fmt(statistics.median(d['ttfm']))} | {fmt(max(d['ttfm']))} |")
    emit()
    emit("lazy+precompute: compile(lazy=True), precompute_async(), sleep 20 ms (the prefill), new "
         "matcher, first fill; TTFM leaves out the 20 ms. " + "".join(
             f"Precompute finished within the 20 ms in {sum(d['done_at_fill']):.0f} of {len(d['done_at_fill'])} runs."
             for d in rows.values() if "done_at_fill" in d))
    emit()


# ======================================================================================
# (c) bound scaling
# ======================================================================================
def walk_fill_times(e, compiled, tokens, eos, vocab, reps: int) -> tuple[list[float], int]:
    mask = new_mask(vocab)
    times, bad = [], 0
    for _ in range(reps):
        m = e.matcher(compiled)
        for tok in tokens + [eos]:
            t0 = time.perf_counter_ns()
            e.fill(m, mask)
            times.append((time.perf_counter_ns() - t0) / 1e3)
            if not allowed(mask[0], vocab.size)[tok] or not e.accept(m, tok):
                bad += 1
                break
    return times, bad


def section_bounds(engines, vocab, args, emit):
    creps = 1 if args.quick else 3
    wreps = 5 if args.quick else 20
    eos = vocab.eos_ids[0]
    cases = []
    for b in (10, 1000, 100000, 1000000):
        cases.append(("array", b, {"type": "array", "items": {"type": "integer"}, "maxItems": b},
                      json.dumps([12, -3, 456, 7, 89])))
    for b in (10, 1000, 100000):
        cases.append(("string", b, {"type": "string", "maxLength": b}, json.dumps("quick fox!")))
    results = {}
    log(f"[c] bound scaling, {len(cases)} schemas ...")
    for k, (kind, b, schema, inst) in enumerate(cases):
        tokens = vocab.tokenize(inst.encode())
        for e in rotated(engines, k):
            comp = []
            for _ in range(creps):
                e.clear()
                gc.collect()
                t0 = time.perf_counter()
                compiled = e.compile_schema(schema)
                comp.append((time.perf_counter() - t0) * 1e3)
            gc.disable()
            times, bad = walk_fill_times(e, compiled, tokens, eos, vocab, wreps)
            gc.enable()
            results[(kind, b, e.name)] = (statistics.median(comp), statistics.fmean(times),
                                          pct(times, 99), bad)
    emit("## (c) bound scaling (same valid instance for every bound)")
    emit()
    emit(f"Instances: array `[12, -3, 456, 7, 89]`, string `\"quick fox!\"` (10 characters, so it is "
         f"valid under every bound including 10). Compile cold, median of {creps}; mask µs over "
         f"{wreps} walks (fresh matcher each) including the stop-token step. Ratios vs B=10.")
    emit()
    emit("| schema | B | engine | compile ms | ×B=10 | mask mean µs | mask p99 µs | mean ×B=10 | rejected |")
    emit("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for kind, b, _, _ in cases:
        for e in engines:
            c, mean, p99, bad = results[(kind, b, e.name)]
            c0, mean0, _, _ = results[(kind, 10, e.name)]
            emit(f"| {kind} | {b:,} | {e.name} | {fmt(c)} | {c / c0:.2f} | {fmt(mean)} | {fmt(p99)} | "
                 f"{mean / mean0:.2f} | {bad} |")
    emit()


# ======================================================================================
# (d) batch fill, (e) draft trees: matchers at varied states of any-JSON
# ======================================================================================
WORDS = ["alpha", "beta", "value", "naïve", "東京", "🚀", "a \"quote\"", "x" * 12, "", "line\nbreak"]
KEYS = ["id", "name", "items", "meta", "tags", "count", "enabled", "ratio", "owner"]


def random_json(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth < 3 and r < 0.3:
        return {rng.choice(KEYS) + str(i): random_json(rng, depth + 1) for i in range(rng.randint(1, 4))}
    if depth < 3 and r < 0.45:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    r = rng.random()
    if r < 0.4:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
    if r < 0.8:
        return rng.choice([rng.randint(-10**6, 10**6), round(rng.uniform(-1e3, 1e3), 3)])
    return rng.choice([True, False, None])


def json_docs(vocab: Vocab, n: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        obj = {k: random_json(rng, 1) for k in rng.sample(KEYS, rng.randint(2, 5))}
        text = json.dumps(obj, ensure_ascii=False, indent=rng.choice([None, 2]))
        docs.append(vocab.tokenize(text.encode()))
    return docs


def make_states(engines, compiled, docs, n: int, rng: random.Random):
    """n matcher tuples (one per engine) at the same random prefix of a document."""
    out = []
    while len(out) < n:
        doc = docs[len(out) % len(docs)]
        k = rng.randrange(len(doc))
        ms = [e.matcher(compiled[e.name]) for e in engines]
        if all(e.accept(m, t) for e, m in zip(engines, ms) for t in doc[:k]):
            out.append((ms, doc[:k]))
    return out


def section_batch(engines, vocab, args, emit, compiled, docs):
    iters = 5 if args.quick else 15
    rng = random.Random(args.seed + 3)
    res = {}
    log("[d] batch fill ...")
    for rows in (1, 16, 64, 256):
        states = make_states(engines, compiled, docs, rows, rng)
        mask = new_mask(vocab, rows)
        for j, e in enumerate(rotated(engines, rows)):
            idx = engines.index(e)
            ms = [s[0][idx] for s in states]
            runs = {"loop": lambda: [e.fill(m, mask, i) for i, m in enumerate(ms)],
                    "t1": lambda: e.batch_fill(ms, mask, 1),
                    "t2": lambda: e.batch_fill(ms, mask, 2)}
            for key, fn in runs.items():
                fn()                                  # warm-up (lazy engines build here)
                gc.disable()
                ts = timed_calls(fn, iters)
                gc.enable()
                res[(rows, e.name, key)] = rows / statistics.median(ts)
    emit("## (d) batch fill (any-JSON grammar, matchers at random prefixes of generated documents)")
    emit()
    emit(f"Masks per second (rows / median call time over {iters} calls after one warm-up call). "
         "`loop` = Python loop of single fill_next_token_bitmask calls; `batch tN` = "
         "batch_fill_next_token_bitmask with max_threads=N (llguidance: LLExecutor(N) + "
         "fill_next_token_bitmask_par). Each engine uses its own builtin JSON grammar "
         "(xg2_jax: any JSON value; xgrammar: builtin; llguidance: {\"type\": [\"object\", \"array\"]}).")
    emit()
    emit("| rows | engine | loop masks/s | batch t1 masks/s | batch t2 masks/s | t1 / loop | t2 / t1 |")
    emit("|---:|---|---:|---:|---:|---:|---:|")
    for rows in (1, 16, 64, 256):
        for e in engines:
            lp, t1, t2 = (res[(rows, e.name, k)] for k in ("loop", "t1", "t2"))
            emit(f"| {rows} | {e.name} | {lp:,.0f} | {t1:,.0f} | {t2:,.0f} | {t1 / lp:.2f} | {t2 / t1:.2f} |")
    emit()


def build_tree(engines, compiled, prefix, n: int, rng: random.Random, vocab: Vocab):
    """A random draft tree of n nodes whose tokens every tree-capable engine accepts."""
    ms = [e.matcher(compiled[e.name]) for e in engines]
    for e, m in zip(engines, ms):
        for t in prefix:
            assert e.accept(m, t)
    stops = set(vocab.eos_ids)
    parents, tokens, paths = [-1], [prefix[-1] if prefix else 0], [[]]
    mask = new_mask(vocab)
    while len(tokens) < n:
        p = rng.randrange(len(tokens))
        path = paths[p]
        ok = None
        for e, m in zip(engines, ms):
            for t in path:
                e.accept(m, t)
            e.fill(m, mask)
            a = allowed(mask[0], vocab.size)
            ok = a if ok is None else ok & a
            if path:
                e.rollback(m, len(path))
        cand = [t for t in np.flatnonzero(ok).tolist() if t not in stops]
        if not cand:
            continue
        t = rng.choice(cand)
        parents.append(p)
        tokens.append(t)
        paths.append(path + [t])
    first_child = np.full(n, -1, dtype=np.int64)
    next_sibling = np.full(n, -1, dtype=np.int64)
    last_child = {}
    for i in range(1, n):
        p = parents[i]
        if p in last_child:
            next_sibling[last_child[p]] = i
        else:
            first_child[p] = i
        last_child[p] = i
    return {"tokens": np.array(tokens, dtype=np.int64), "parents": np.array(parents, dtype=np.int64),
            "first_child": first_child, "next_sibling": next_sibling}


def section_draft(engines, vocab, args, emit, compiled, docs):
    tree_engines = [e for e in engines if e.draft_tree is not None]
    n_trees = 4 if args.quick else 8
    reps = 3 if args.quick else 7
    rng = random.Random(args.seed + 4)
    res = {}
    log("[e] draft trees ...")
    for n in (8, 32, 64):
        per = {e.name: [] for e in tree_engines}
        for k in range(n_trees):
            doc = docs[k % len(docs)]
            prefix = doc[:rng.randrange(1, len(doc))]
            tree = build_tree(tree_engines, compiled, prefix, n, rng, vocab)
            mask = new_mask(vocab, n)
            for e in rotated(tree_engines, k):
                m = e.matcher(compiled[e.name])
                for t in prefix:
                    e.accept(m, t)
                e.draft_tree(m, tree, mask)           # warm-up
                if e.name == "xg2_jax":
                    v = e.xg.traverse_draft_tree(m, tree["tokens"], mask, parents=tree["parents"])
                    assert v.all(), "a generated draft node was rejected"
                ts = timed_calls(lambda: e.draft_tree(m, tree, mask), reps, 1e3)
                per[e.name].append(statistics.median(ts))
        for e in tree_engines:
            res[(n, e.name)] = per[e.name]
    emit("## (e) draft trees (any-JSON grammar; random trees of tokens valid in every engine)")
    emit()
    emit(f"{n_trees} trees per size, each rooted at a random prefix of a generated document; per tree the "
         f"median of {reps} traverse_draft_tree calls (xgrammar: GrammarMatcher.traverse_draft_tree "
         "with first-child / next-sibling tensors). llguidance: n/a (draft chains only).")
    emit()
    emit("| nodes | engine | ms per tree p50 | ms per tree max | µs per node p50 |")
    emit("|---:|---|---:|---:|---:|")
    for n in (8, 32, 64):
        for e in tree_engines:
            v = res[(n, e.name)]
            emit(f"| {n} | {e.name} | {fmt(statistics.median(v), 2)} | {fmt(max(v), 2)} | "
                 f"{fmt(statistics.median(v) * 1000 / n)} |")
    emit()


# ======================================================================================
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests/repetitions (~1 min)")
    ap.add_argument("--md", type=Path, help="also write the report (markdown) to this file")
    ap.add_argument("--sections", default="a,b,c,d,e", help="comma list of a,b,c,d,e")
    ap.add_argument("--engines", default="xg2_jax,xgrammar,llguidance")
    ap.add_argument("--requests", type=int, default=100, help="tool requests in (a)")
    ap.add_argument("--cold-every", type=int, default=4,
                    help="(a): measure cold compiles on every Nth request (1: all; default 4)")
    ap.add_argument("--open-objects", action="store_true",
                    help="(a): leave BFCL objects open (no additionalProperties: false); "
                         "compiles are 10-20x slower for every eager engine")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="GrammarCompiler max_threads for every engine (default: all cores)")
    ap.add_argument("--vocab", type=Path, default=DATA / "vocab" / "llama3.json.gz")
    ap.add_argument("--seed", type=int, default=20261130)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    wanted = [s.strip() for s in args.engines.split(",") if s.strip()]
    if "xg2_jax" not in wanted:
        raise SystemExit("xg2_jax must be one of the engines")
    log(f"loading {args.vocab} ...")
    vocab = Vocab(args.vocab)
    engines, notes = load_engines(vocab, args.threads, wanted)

    out: list[str] = []

    def emit(line: str = "") -> None:
        out.append(line)
        print(line, flush=True)

    import xg2_jax as xg

    pool_limit = xg.cross_grammar_cache_stats()["limit_bytes"]
    emit("# xg2_jax performance-engine benchmark")
    emit()
    emit(f"- vocab: {vocab.name} ({vocab.size:,} tokens, {vocab.vocab_type}) from `{args.vocab}`")
    emit("- engines: " + "; ".join(notes))
    emit(f"- GrammarCompiler(max_threads={args.threads}) for every engine; {os.cpu_count()} CPUs; "
         f"Python {platform.python_version()}; numpy {np.__version__}; load average "
         f"{os.getloadavg()[0]:.1f} at start; cross-grammar pool limit {pool_limit / 2**20:.0f} MB"
         + ("; --quick" if args.quick else ""))
    emit()
    schemas = None
    if "a" in sections or "b" in sections:
        if "a" in sections:
            schemas = section_tools(engines, vocab, args, emit)
        else:
            tools, _ = load_tools(engines, 200, args.seed, not args.open_objects)
            rng = random.Random(args.seed + 1)
            schemas = [{"anyOf": [tool_entry(*tools[i]) for i in sorted(rng.sample(range(len(tools)), 20))]}
                       for _ in range(5)]
    if "b" in sections:
        section_lazy(engines, vocab, args, emit, schemas)
    if "c" in sections:
        section_bounds(engines, vocab, args, emit)
    if "d" in sections or "e" in sections:
        for e in engines:
            e.clear()
        compiled = {e.name: e.compile_json() for e in engines}
        docs = json_docs(vocab, 24, args.seed + 2)
        if "d" in sections:
            section_batch(engines, vocab, args, emit, compiled, docs)
        if "e" in sections:
            section_draft(engines, vocab, args, emit, compiled, docs)
    emit(f"Total run {time.perf_counter() - t_start:.0f} s; load average {os.getloadavg()[0]:.1f} at the end. "
         "Shared machine, nothing pinned: compare ratios within one report.")
    if args.md:
        args.md.write_text("\n".join(out) + "\n", encoding="utf-8")
        log(f"wrote {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
