"""The dynamic agentic workload through the continuous-batching loop, with the mask engine
swapped: xg2-jax, xgrammar, llguidance, and no mask at all (unconstrained).

Every request brings its own structure, as in XGrammar-2's agentic setting: half are tool
calls in the Qwen3 format, each with its own BFCL tool set (5 to 50 tools), half are JSON
Schema requests from JSONSchemaBench. Prompts are rendered with the shipped tiny model's chat
template; the model is the shipped tiny Llama (GPT-2 vocabulary). Only the engine behind
:class:`xg2_jax.BatchGenerator`'s compile and mask fill changes between rows of the table;
the loop, model, prompts and sampling (greedy) are the same. Reported per engine and slot
count: tokens/s, TTFT p50/p99 (admission to the first token on the host; the grammar compiles
on a worker while the prefill runs), compile time p50 (on the worker), host time per step
(accept, retire, admit, fill; excluding the device wait), process CPU time per generated token.

Two unconstrained baselines: ``none`` runs every request to its token budget; ``none=xg2``
runs each request for exactly as many tokens as its xg2-jax output had (the same prompts and
the same device work), so ``vs none=`` is the cost of the constraint itself. Constrained
requests end early (the grammar ends), which frees slots mid-run: more admissions per token
and a draining batch at the end cost ``none=xg2`` ~15% against ``none`` by themselves.
``xg2-jax`` uses the loop's own compiler (:func:`xg2_jax._src.continuous.loop_compiler`:
lazy when the model runs on the host CPU, whose cores the forward pass needs); ``xg2-bg``
uses the default compile mode, whose background mask build competes with the forward pass
for those cores here (on an accelerator it runs on idle host cores). ``--repeat N`` runs
N interleaved passes and reports the median pass of each engine (a load change hits every
engine alike).

Run (peers in their own venv, xg2-jax installed there beside them)::

    /work/venv-bench/bin/python benchmarks/bench_batching.py --slots 1,16,64 --requests 64

Without xgrammar/llguidance installed those rows are skipped.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import xg2_jax as xg
from xg2_jax import models
from xg2_jax._src.continuous import MaskEngine, loop_compiler

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "tests"))

TRIGGER = "<tool_call>"
BEGIN = '<tool_call>\n{{"name": "{name}", "arguments": '
END = "}\n</tool_call>"


# ------------------------------------------------------------------------------ workload
def workload(n: int, seed: int, tok_info) -> list[dict]:
    """``n`` request specs: tool sets (5 to 50 BFCL tools) and JSONSchemaBench schemas."""
    from bfcl_lib import load_tool_set
    from json_schema_corpus_lib import jsb_categories, jsb_sample, large_bound

    rng = random.Random(seed)
    pool = load_tool_set(400, validate=False).tools
    schemas = []
    for entry in jsb_sample(jsb_categories(), per_category=12):
        schema = entry["data"]["schema"]
        schema = json.loads(schema) if isinstance(schema, str) else schema
        if large_bound(schema) is None:
            try:
                xg.Grammar.from_json_schema(schema, any_whitespace=False)
            except xg.XG2Error:
                continue
            schemas.append(schema)
    specs = []
    for i in range(n):
        context = " Context:" + " please" * rng.randint(0, 120)  # prompts of 8 to ~130 tokens
        if i % 2 == 0:
            tools = rng.sample(pool, rng.randint(5, 50))
            specs.append({"kind": "tool_tags", "user": "Use a tool to answer the question."
                          + context, "tools": [t["function"] for t in tools]})
        else:
            specs.append({"kind": "json_schema", "user": "Answer with a JSON object." + context,
                          "schema": schemas[(i // 2) % len(schemas)]})
    return specs


def tool_tag(spec) -> dict:
    tags = [{"type": "tag", "begin": BEGIN.format(name=t["name"]),
             "content": {"type": "json_schema", "json_schema": t["parameters"]}, "end": END}
            for t in spec["tools"]]
    return {"type": "structural_tag", "format": {
        "type": "triggered_tags", "triggers": [TRIGGER], "tags": tags, "at_least_one": True,
        "stop_after_first": False}}


# ------------------------------------------------------------------------------ engines
class Xg2Engine(MaskEngine):
    name = "xg2-jax"

    def compile(self, spec):
        if spec["kind"] == "json_schema":
            grammar = xg.Grammar.from_json_schema(spec["schema"], any_whitespace=False)
        else:
            grammar = xg.Grammar.from_structural_tag(tool_tag(spec))
        return super().compile(grammar)


class XgrammarEngine:
    """xgrammar 0.2.9 behind the loop: its compiler, matchers and mask fill (torch views of
    the loop's numpy buffer)."""

    name = "xgrammar"

    def __init__(self, vocab: dict):
        import torch
        import xgrammar

        self.torch, self.xgr = torch, xgrammar
        enc = list(vocab["tokens"])
        for i in vocab["special_ids"]:
            enc[i] = ""
        info = xgrammar.TokenizerInfo(enc, vocab_type=xgrammar.VocabType.BYTE_LEVEL,
                                      vocab_size=len(enc), stop_token_ids=vocab["eos_ids"])
        self.compiler = xgrammar.GrammarCompiler(info)
        self.batch = getattr(xgrammar, "BatchGrammarMatcher", None)
        self.batch = self.batch() if self.batch is not None else None

    def compile(self, spec):
        if spec["kind"] == "json_schema":
            compiled = self.compiler.compile_json_schema(json.dumps(spec["schema"]),
                                                         any_whitespace=False)
        else:
            compiled = self.compiler.compile_structural_tag(json.dumps(tool_tag(spec)))
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matchers, buf, rows):
        view = self.torch.from_numpy(buf)
        if self.batch is not None:
            self.batch.batch_fill_next_token_bitmask(matchers, view, rows)
            return
        for m, r in zip(matchers, rows):
            m.fill_next_token_bitmask(view, r)


class _LlgMatcher:
    def __init__(self, m):
        self.m = m

    def accept_token(self, t):
        return self.m.consume_token(t) and not self.m.is_error()

    def is_terminated(self):
        return self.m.is_stopped()


class LlguidanceEngine:
    """llguidance behind the loop: LLMatcher per request (a template deep-copied), masks
    written straight into the loop's buffer rows."""

    name = "llguidance"

    def __init__(self, vocab: dict, tok_info):
        import llguidance

        self.llg = llguidance
        decoded = list(tok_info.decoded_vocab)
        for i in vocab["special_ids"]:
            decoded[i] = b"\xff" + vocab["tokens"][i].encode()
        memo: dict = {}

        class _Tok:
            tokens = decoded
            eos_token_id = vocab["eos_ids"][0]
            bos_token_id = None
            special_token_ids = sorted(vocab["special_ids"])

            def __call__(self, s):
                b = s if isinstance(s, bytes) else s.encode()
                if b not in memo:
                    memo[b] = xg.greedy_tokenize(tok_info, b)
                return memo[b]

        self.tok = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Tok()),
                                          n_vocab=len(decoded), eos_token=vocab["eos_ids"])

    def compile(self, spec):
        llg = self.llg
        compact = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
        if spec["kind"] == "json_schema":
            grammar = llg.LLMatcher.grammar_from_json_schema(spec["schema"], overrides=compact)
        else:
            tags = [llg.StructTag(trigger=TRIGGER, begin=BEGIN.format(name=t["name"]),
                                  grammar=t["parameters"], end=END) for t in spec["tools"]]
            grammar = llg.StructTag.to_grammar(tags, assume_special=False)
        m = llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error()[:200])
        return _LlgMatcher(m)

    def fill(self, matchers, buf, rows):
        stride = buf.strides[0]
        base = buf.ctypes.data
        for m, r in zip(matchers, rows):
            m.m.unsafe_compute_mask_ptr(base + r * stride, stride)


# ------------------------------------------------------------------------------ the loop
def run(lm, tok_info, prompts, specs, engine, slots: int, max_tokens) -> dict:
    """One pass of the workload; ``max_tokens`` is one budget or a budget per request."""
    budgets = max_tokens if isinstance(max_tokens, list) else [max_tokens] * len(prompts)
    # Unconstrained rows ignore the stop token: every row of a baseline runs its budget.
    reqs = [xg.Request(p, grammar=None if engine is None else (lambda s=s: s),
                       max_tokens=n, stop_token_ids=[] if engine is None else None)
            for p, s, n in zip(prompts, specs, budgets)]
    # The loop calls the structure function, then engine.compile on its result.
    gen = xg.BatchGenerator(lm, tok_info, num_slots=slots, max_length=1024,
                            engine=engine if engine is not None else None)
    for r in reqs:
        gen.submit(r)
    t0, cpu0 = time.perf_counter(), time.process_time()
    outs = list(gen.run())
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    gen.close()
    tokens = sum(len(o.tokens) for o in outs)
    ttft = [o.ttft_s * 1e3 for o in outs if o.tokens]
    comp = [o.compile_s * 1e3 for o in outs if o.finish_reason != "error"]
    return {"tokens_s": tokens / elapsed, "cpu_ms_token": 1e3 * cpu / max(tokens, 1), "ttft_p50": float(np.percentile(ttft, 50)),
            "ttft_p99": float(np.percentile(ttft, 99)),
            "compile_p50": statistics.median(comp) if comp else 0.0,
            "host_ms_step": 1e3 * gen.stats["host_s"] / max(gen.stats["steps"], 1),
            "steps": gen.stats["steps"], "tokens": tokens,
            "lengths": [max(len(o.tokens), 1) for o in sorted(outs, key=lambda o: o.index)],
            "errors": sum(o.finish_reason == "error" for o in outs),
            "stopped": sum(o.finish_reason == "stop" for o in outs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--slots", default="1,16,64")
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--engines", default="none,xg2-jax,xgrammar,llguidance")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1, help="interleaved passes per slot count")
    args = ap.parse_args()

    path = models.default_model_path()
    lm = models.load_pretrained(path)
    tok_info = models.load_tokenizer_info(path, vocab_size=lm.config.vocab_size)
    vocab = json.loads(gzip.open(ROOT / "xg2_jax" / "data" / "gpt2.json.gz").read())
    template, tokenizer = xg.ChatTemplate.from_model_dir(path), xg.ModelTokenizer.from_model_dir(path)
    specs = workload(args.requests, args.seed, tok_info)
    prompts = [tokenizer.encode(template.render([{"role": "user", "content": s["user"]}],
                                                tools=s.get("tools"))) for s in specs]
    factories = {"none": lambda: None,
                 "xg2-jax": lambda: Xg2Engine(loop_compiler(tok_info)),
                 "xg2-bg": lambda: Xg2Engine(xg.GrammarCompiler(tok_info)),
                 "xgrammar": lambda: XgrammarEngine(vocab),
                 "llguidance": lambda: LlguidanceEngine(vocab, tok_info)}
    engines = {}
    for name in args.engines.split(","):
        try:
            factories[name]()
            engines[name] = factories[name]
        except ImportError as e:
            print(f"# {name}: skipped ({e})", file=sys.stderr)
    # Warm-up: every prefill bucket and the decode step of every slot count, compiled once.
    for slots in map(int, args.slots.split(",")):
        run(lm, tok_info, prompts, specs, None, slots, 2)

    print(f"# {args.requests} requests (half Qwen3 tool calls with 5-50 BFCL tools each, half "
          f"JSONSchemaBench schemas), max {args.max_tokens} tokens, greedy, shipped tiny model, "
          f"jax {__import__('jax').__version__} on {__import__('jax').devices()[0].platform}; "
          f"median of {args.repeat} interleaved passes")
    print("# none: every request runs max tokens; none=xg2: each request runs as many tokens "
          "as its xg2-jax output (the same device work, so 'vs none=' is the masking cost)")
    print(f"{'engine':<11} {'slots':>5} {'tok/s':>8} {'vs none':>8} {'vs none=':>8} "
          f"{'TTFT p50':>9} {'TTFT p99':>9} {'compile p50':>11} {'host ms/step':>12} "
          f"{'cpu ms/tok':>10} {'steps':>6} {'stop':>5} {'err':>4}")
    for slots in map(int, args.slots.split(",")):
        passes: dict = collections.defaultdict(list)
        for _ in range(args.repeat):  # interleaved: a load change hits every engine alike
            for name, make in engines.items():
                # A fresh engine per run: every run compiles its grammars cold (no compiled-
                # grammar cache carried over; xg2-jax's cross-grammar cache is cleared too).
                xg.clear_cross_grammar_cache()
                passes[name].append(run(lm, tok_info, prompts, specs, make(), slots,
                                        args.max_tokens))
                if name == "xg2-jax":
                    lengths = passes[name][-1]["lengths"]
                    passes["none=xg2"].append(run(lm, tok_info, prompts, specs, None, slots,
                                                  lengths))
        rows = {name: _median_pass(runs) for name, runs in passes.items()}
        for name, r in rows.items():
            ratios = [f"{r['tokens_s'] / rows[b]['tokens_s']:.3f}" if b in rows else "-"
                      for b in ("none", "none=xg2")]
            print(f"{name:<11} {slots:>5} {r['tokens_s']:>8.1f} {ratios[0]:>8} {ratios[1]:>8} "
                  f"{r['ttft_p50']:>9.1f} {r['ttft_p99']:>9.1f} {r['compile_p50']:>11.2f} "
                  f"{r['host_ms_step']:>12.3f} {r['cpu_ms_token']:>10.2f} {r['steps']:>6} {r['stopped']:>5} "
                  f"{r['errors']:>4}", flush=True)


def _median_pass(runs: list) -> dict:
    """The pass with the median tokens/s (its other columns come from that same pass)."""
    return sorted(runs, key=lambda r: r["tokens_s"])[len(runs) // 2]


if __name__ == "__main__":
    main()
