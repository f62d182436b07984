"""The ``xg2-jax`` command line.

``xg2-jax generate`` (the main job, in :mod:`xg2_jax._src.cli_generate`) generates text
constrained by a JSON Schema, grammar, regex or structural tag with a model (by default the
tiny model shipped in the package).

``xg2-jax batch`` (:mod:`xg2_jax._src.cli_batch`) runs a JSONL file of requests, each with
its own prompt and structure, through continuous batching.

``xg2-jax check`` compiles a grammar (EBNF, JSON Schema or regex) against a vocabulary (the GPT-2 vocabulary shipped in
the package by default) and reports compile time, grammar size and, along a sample string,
the number of allowed tokens and the mask time at every step.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from xg2_jax._src.bitmask import allocate_host_bitmask
from xg2_jax._src.cli_batch import add_batch_parser
from xg2_jax._src.cli_generate import add_generate_parser, add_structure_options, build_grammar
from xg2_jax._src.compiler import GrammarCompiler
from xg2_jax._src.errors import GrammarSyntaxError, XG2Error
from xg2_jax._src.matcher import GrammarMatcher
from xg2_jax._src.package_data import default_vocab_path
from xg2_jax._src.tokenizer import TokenizerInfo, greedy_tokenize


def run_check(args: argparse.Namespace) -> int:
    vocab_path = Path(args.vocab) if args.vocab else default_vocab_path()
    t0 = time.perf_counter()
    tok = TokenizerInfo.from_vocab_file(vocab_path)
    t_vocab = time.perf_counter() - t0
    print(f"vocabulary: {vocab_path.name} ({tok.vocab_size} tokens, {tok.vocab_type.name}), "
          f"loaded in {t_vocab * 1e3:.1f} ms")
    if (args.model_format is None) != (args.tools is None):
        raise XG2Error("--tools and --model-format go together")
    grammar = build_grammar(args, tok)
    compiler = GrammarCompiler(tok, cache_enabled=False)
    t0 = time.perf_counter()
    compiled = compiler.compile_grammar(grammar, lazy=args.lazy)
    t_compile = time.perf_counter() - t0
    stats = compiled.mask_cache_stats()
    print(f"compiled in {t_compile * 1e3:.1f} ms ({'lazy' if args.lazy else 'eager'}): "
          f"{grammar._handle.num_rules} rules, {compiled.num_states} automaton states, "
          f"{compiled.num_scannable_states} scannable, {stats['num_entries']} mask entries, "
          f"{compiled.memory_size_bytes / 1024:.1f} KiB")
    if args.sample is None:
        return 0
    data = args.sample.encode("utf-8")
    ids = greedy_tokenize(tok, data)
    matcher = GrammarMatcher(compiled)
    mask = allocate_host_bitmask(1, tok.vocab_size)
    decoded = tok.decoded_vocab
    print(f"\n{'step':>4} {'allowed':>8} {'mask µs':>9}  next token")
    times = []
    for step, tid in enumerate(ids + [None]):
        t0 = time.perf_counter_ns()
        matcher.fill_next_token_bitmask(mask)
        times.append((time.perf_counter_ns() - t0) / 1e3)
        allowed = int(np.unpackbits(mask.view(np.uint8), bitorder="little")[:tok.vocab_size].sum())
        if tid is None:
            done = matcher.is_completed()
            print(f"{step:>4} {allowed:>8} {times[-1]:>9.1f}  <end> (complete: {done})")
            break
        label = repr(decoded[tid].decode("utf-8", errors="backslashreplace"))
        print(f"{step:>4} {allowed:>8} {times[-1]:>9.1f}  {label}")
        if not matcher.accept_token(tid):
            print(f"error: token {label} at step {step} (byte offset "
                  f"{len(b''.join(decoded[i] for i in ids[:step]))}) breaks the grammar",
                  file=sys.stderr)
            return 1
    arr = np.array(times)
    print(f"\nmask time µs: median {np.median(arr):.1f}, p99 {np.percentile(arr, 99):.1f}, "
          f"max {arr.max():.1f} over {len(arr)} steps")
    if not matcher.is_completed():
        print("error: the sample is a valid prefix but not a complete sentence", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    from xg2_jax import __version__

    parser = argparse.ArgumentParser(prog="xg2-jax", description="xg2-jax: constrained decoding for JAX")
    parser.add_argument("--version", action="version", version=f"xg2-jax {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="compile a grammar and trace masks along a sample string")
    add_structure_options(check)
    check.add_argument("--vocab", help="vocabulary file (.json/.json.gz; default: shipped GPT-2)")
    check.add_argument("--sample", help="text to drive the matcher along, token by token")
    check.add_argument("--lazy", action="store_true", help="build token masks on first use")
    check.set_defaults(func=run_check)
    add_generate_parser(sub)
    add_batch_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except GrammarSyntaxError as e:
        where = getattr(args, "ebnf_file", None) or "<grammar>"
        message = str(e)
        if e.line > 0:
            # file:line:col first, as compilers write it; a message that starts with the bare
            # "line:col: " (regex, JSON) drops it, one that words it (EBNF, Lark) keeps it.
            message = message.removeprefix(f"{e.line}:{e.column}: ")
            where = f"{where}:{e.line}:{e.column}"
        print(f"error: {where}: {message}", file=sys.stderr)
        return 2
    except (XG2Error, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
