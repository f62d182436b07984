#!/usr/bin/env python3
"""Structural-tag benchmark: compile time and per-token mask fill time, xg2_jax beside xgrammar
on the same structural tags, vocabulary and token streams.

Workloads (each one structural tag plus the turns that the tag must accept):

    bfcl10, bfcl50, bfcl200   10/50/200 BFCL functions (tests/bfcl_lib.py) in the Qwen3
                              triggered_tags format (get_model_structural_tag("qwen3", tools,
                              reasoning=False)); turns: a line of text, then the corpus answer
                              calls of one BFCL entry (parallel calls included)
    deepseek                  DeepSeek-V3.2 DSML format (prefilled reasoning, then text and a
                              <｜DSML｜function_calls> block) over the 10-tool BFCL set
    harmony                   gpt-oss Harmony (analysis message, then one
                              commentary to=functions.NAME call) over the 10-tool BFCL set
    gemma                     Gemma 4 (thought channel, then <|tool_call>call:NAME{...} calls in
                              the gemma argument style) over the 10-tool BFCL set, markers as
                              text (token_markers=False) so every vocabulary can spell them
    deepseek_v4_1             DeepSeek-V4.1 DSML (deepseek_v4_1_xml) over the 10-tool BFCL set
    gemma4_tokens             Gemma 4 as on its own vocabulary: markers as their special tokens
                              (the default token_markers), reasoning and text as token-level
                              regions; turns tokenized with the specials as their ids. Needs
                              --vocab .../gemma4.json.gz (not in the default list)

Both engines get the JSON envelope from xg2_jax.get_model_structural_tag (pure Python). The
turns are tokenized greedily, an end-of-sequence token is appended, and the streams are
replayed in lock-step with benchmarks/bench_native.py's harness (fills timed one call at a
time, masks compared with xgrammar's). Compile time is cold (cache cleared), median of 3.

If this xg2_jax has no native structural tags yet (GrammarCompiler.compile_structural_tag),
only xgrammar rows are printed. xgrammar needs torch: run with the peers venv, e.g.

    PYTHONPATH=$PWD /work/.venv-peers/bin/python benchmarks/bench_structural_tag.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "tests")]

import bench_native as bn  # noqa: E402
import bfcl_lib  # noqa: E402
import model_format_cases as cases  # noqa: E402

from xg2_jax import get_model_structural_tag  # noqa: E402

REFERENCE = bn.REFERENCE


class TagWorkload(bn.Workload):
    """A structural tag (the JSON envelope) and the turns to replay."""

    def __init__(self, name: str, title: str, tag, docs: list[str], *, specials: bool = False):
        super().__init__(name, title, None, docs)
        self.tag_json = tag.to_json()
        self.specials = specials  # special-token strings in the turns are their ids

    def tokenize(self, vocab: bn.Vocab) -> list[list[int]]:
        if not self.specials:
            return [vocab.tokenize(d.encode("utf-8")) for d in self.docs]
        names = {vocab.encoded[i]: i for i in reversed(vocab.special_ids)}  # lowest id wins
        return [cases.tokenize_with_specials(d, names, vocab.tokenize) for d in self.docs]


class TagEngine(bn.Engine):
    """bench_native's engine adapter, compiling structural tags."""

    def supports_tags(self) -> bool:
        return hasattr(self.mod.GrammarCompiler, "compile_structural_tag")

    def compile(self, workload: TagWorkload):
        return self.compiler.compile_structural_tag(workload.tag_json)


def load_engines(spec: str | None) -> tuple[list[TagEngine], list[str]]:
    names = [s.strip() for s in spec.split(",") if s.strip()] if spec else list(bn.KNOWN_ENGINES)
    engines, notes = [], []
    for name in names:
        try:
            engine = TagEngine(name)
        except Exception as exc:         # ImportError, or a broken torch under xgrammar
            notes.append(f"{name} not importable ({type(exc).__name__}: {exc}); skipped")
            continue
        if not engine.supports_tags():
            notes.append(f"{name} {engine.version()} has no GrammarCompiler."
                         "compile_structural_tag yet; skipped")
            continue
        engines.append(engine)
    if not engines:
        raise SystemExit("no engine with structural tags: " + "; ".join(notes))
    return engines, notes


def bfcl_workload(size: int, n_docs: int) -> TagWorkload:
    tools = bfcl_lib.load_tool_set(size)
    docs = ["I'll look this up with the tools.\n" + bfcl_lib.render_qwen3_calls(c)
            for c in tools.calls[:n_docs]]
    tag = get_model_structural_tag("qwen3", tools.tools, reasoning=False)
    return TagWorkload(f"bfcl{size}", f"Qwen3 triggered_tags, {size} BFCL tools", tag, docs)


def deepseek_workload(n_docs: int) -> TagWorkload:
    tools = bfcl_lib.load_tool_set(10)
    render = cases.RENDERERS["deepseek_v3.2"]
    docs = [render.think(cases.REASONING) + "Let me call the tools." + render.calls(c)
            for c in tools.calls[:n_docs]]
    tag = get_model_structural_tag("deepseek_v3.2", tools.tools)
    return TagWorkload("deepseek", "DeepSeek-V3.2 DSML (deepseek_xml), 10 BFCL tools", tag,
                       docs)


def harmony_workload(n_docs: int) -> TagWorkload:
    tools = bfcl_lib.load_tool_set(10)
    render = cases.RENDERERS["harmony"]
    docs = [render.think(cases.REASONING) + render.calls(c[:1]) for c in tools.calls[:n_docs]]
    tag = get_model_structural_tag("harmony", tools.tools)
    return TagWorkload("harmony", "gpt-oss Harmony channels, 10 BFCL tools", tag, docs)


def gemma_workload(n_docs: int) -> TagWorkload:
    tools = bfcl_lib.load_tool_set(10)
    render = cases.RENDERERS["gemma_4"]
    docs = [render.think(cases.REASONING) + "Let me call the tools." + render.calls(c)
            for c in tools.calls[:n_docs]]
    tag = get_model_structural_tag("gemma_4", tools.tools, token_markers=False)
    return TagWorkload("gemma", "Gemma 4 (gemma argument style), 10 BFCL tools", tag, docs)


def gemma4_tokens_workload(n_docs: int, vocab: bn.Vocab) -> TagWorkload:
    if "<|tool_call>" not in vocab.encoded:
        raise SystemExit("gemma4_tokens needs Gemma 4's vocabulary (--vocab .../gemma4.json.gz)")
    tools = bfcl_lib.load_tool_set(10)
    render = cases.RENDERERS["gemma_4"]
    docs = [render.think(cases.REASONING) + "Let me call the tools." + render.calls(c)
            for c in tools.calls[:n_docs]]
    tag = get_model_structural_tag("gemma_4", tools.tools)
    return TagWorkload("gemma4_tokens", "Gemma 4 on its vocabulary, markers as tokens, 10 BFCL "
                       "tools", tag, docs, specials=True)


def deepseek_v4_1_workload(n_docs: int) -> TagWorkload:
    tools = bfcl_lib.load_tool_set(10)
    render = cases.RENDERERS["deepseek_v4.1"]
    docs = [render.think(cases.REASONING) + "Let me call the tools." + render.calls(c)
            for c in tools.calls[:n_docs]]
    tag = get_model_structural_tag("deepseek_v4_1", tools.tools)
    return TagWorkload("deepseek_v4_1", "DeepSeek-V4.1 DSML (deepseek_v4_1_xml), 10 BFCL tools",
                       tag, docs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", help="comma list of xg2_jax,xgrammar (default: both, where "
                    "importable and with structural tags)")
    ap.add_argument("--vocab", type=Path, default=bn.DEFAULT_VOCAB,
                    help=f"vocabulary file (default: {bn.DEFAULT_VOCAB})")
    ap.add_argument("--workloads",
                    default="bfcl10,bfcl50,bfcl200,deepseek,harmony,gemma,deepseek_v4_1")
    ap.add_argument("--docs", type=int, help="turns per workload (default 30, --quick 6)")
    ap.add_argument("--repeat", type=int, default=1, help="replay every turn this many times")
    ap.add_argument("--compile-reps", type=int, default=3, help="cold compiles (median)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="GrammarCompiler max_threads for every engine (default: all cores)")
    ap.add_argument("--quick", action="store_true", help="6 turns per workload, 1 compile rep")
    ap.add_argument("--md", type=Path, help="also write the report (markdown) to this file")
    ap.add_argument("--details", action="store_true", help="examples of failures/differences")
    args = ap.parse_args(argv)
    n_docs = args.docs or (6 if args.quick else 30)
    reps = 1 if args.quick else max(1, args.compile_reps)
    t_start = time.perf_counter()

    engines, notes = load_engines(args.engines)
    names = [e.name for e in engines]
    bn.log(f"loading {args.vocab} ...")
    vocab = bn.Vocab(args.vocab)
    builders = {
        "bfcl10": lambda: bfcl_workload(10, n_docs),
        "bfcl50": lambda: bfcl_workload(50, n_docs),
        "bfcl200": lambda: bfcl_workload(200, n_docs),
        "deepseek": lambda: deepseek_workload(n_docs),
        "harmony": lambda: harmony_workload(n_docs),
        "gemma": lambda: gemma_workload(n_docs),
        "deepseek_v4_1": lambda: deepseek_v4_1_workload(n_docs),
        "gemma4_tokens": lambda: gemma4_tokens_workload(n_docs, vocab),
    }
    wanted = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in builders]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {', '.join(builders)}")
    workloads = [builders[w]() for w in wanted]
    for wl in workloads:
        wl.tokens = wl.tokenize(vocab)
    special_strings = any(wl.specials for wl in workloads)
    setup_s = {e.name: e.setup(vocab, args.threads, special_strings=special_strings)
               for e in engines}
    ref = names.index(REFERENCE) if REFERENCE in names and len(names) > 1 else None

    out: list[str] = []

    def emit(line: str = "") -> None:
        out.append(line)
        print(line, flush=True)

    emit("# xg2_jax structural-tag benchmark")
    emit()
    emit(f"- vocab: {vocab.name} ({vocab.size:,} tokens, {vocab.vocab_type}, stop token "
         f"{vocab.eos}) from `{vocab.path}`")
    emit("- engines: " + ", ".join(
        f"{e.name} {e.version()} (vocab setup {setup_s[e.name] * 1000:.0f} ms)" for e in engines))
    emit(f"- GrammarCompiler(max_threads={args.threads}); {os.cpu_count()} CPUs; Python "
         f"{platform.python_version()}; compile cold, median of {reps}; fills timed one call "
         f"at a time, engines in lock-step; repeat {args.repeat}")
    for note in notes:
        emit(f"- note: {note}")
    summary = [["workload", *[f"{n} compile ms" for n in names],
                *[f"{n} fill µs p50 / p99 / max" for n in names]]]
    for wl in workloads:
        nt = sum(len(t) + 1 for t in wl.tokens)
        emit()
        emit(f"## `{wl.name}`: {wl.title}")
        emit(f"{len(wl.docs)} turns, {len(wl.tag_json):,} bytes of structural tag, {nt:,} steps "
             "per engine per repeat")
        emit()
        stats = {n: bn.Stats() for n in names}
        agree = {n: bn.Agreement() for n in names if n != REFERENCE}
        compiled = bn.measure_compile(wl, engines, reps, stats)
        compile_ms = {n: float(np.median(stats[n].compile_s)) * 1000 for n in names}
        bn.replay(wl, engines, compiled, vocab, args.repeat, stats, agree, ref)
        for line in bn.table(names, stats, "compile ms", compile_ms):
            emit(line)
        for line in bn.agreement_lines(agree, args.details) if ref is not None else []:
            emit(line)
        if args.details:
            for n in names:
                for x in stats[n].examples:
                    emit(f"  - {n}: {x}")
        row = [wl.name, *[bn._fmt(compile_ms[n]) for n in names]]
        for n in names:
            s = stats[n]
            row.append(" / ".join(bn._fmt(v) for v in (
                bn._us(s.fill_ns, 50), bn._us(s.fill_ns, 99), max(s.fill_ns) / 1000.0))
                if s.fill_ns else "–")
        summary.append(row)
    emit()
    emit("## Summary")
    emit()
    emit("| " + " | ".join(summary[0]) + " |")
    emit("|" + "---|" * len(summary[0]))
    for row in summary[1:]:
        emit("| " + " | ".join(row) + " |")
    emit()
    emit(f"total {time.perf_counter() - t_start:.1f} s")
    if args.md:
        args.md.write_text("\n".join(out) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
