"""``xg2-jax batch``: a JSONL file of requests through continuous batching.

Every line is one request with its own prompt (``messages`` rendered with the model's chat
template, or a raw ``prompt``) and structure (see :mod:`xg2_jax._src.batch_job`); output
lines follow the input order. A bad line (invalid JSON, unknown keys, a structure that does
not compile, a prompt too long) gets an output line with the error and the job goes on.
A progress bar on stderr counts requests and tokens/s; a summary ends the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

from xg2_jax._src.batch_job import (
    RequestLineError,
    RequestSpec,
    WhitespaceConfig,
    output_line,
    parse_request_line,
)
from xg2_jax._src.errors import XG2Error

__all__ = ["add_batch_parser", "run_batch"]

DEFAULT_MAX_TOKENS = 256


def add_batch_parser(sub) -> None:
    p = sub.add_parser("batch", help="run a JSONL file of requests (each with its own prompt "
                                     "and structure) through continuous batching")
    p.add_argument("--input", required=True, help="requests, one JSON object per line")
    p.add_argument("--output", required=True, help="results, one JSON object per line "
                                                   "(input order)")
    p.add_argument("--model", help="local Hugging Face-layout model directory (config.json, "
                                   "weights, tokenizer.json, chat template); default: the "
                                   "shipped tiny model")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default=None)
    p.add_argument("--batch-size", type=int, default=16,
                   help="slots decoded together (default 16)")
    p.add_argument("--max-length", type=int, default=None,
                   help="cache positions per slot: prompt + generated (default: the model's "
                        "positions, at most 2048)")
    p.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS,
                   help=f"budget of lines without max_tokens (default {DEFAULT_MAX_TOKENS})")
    add_whitespace_options(p)
    p.add_argument("--reasoning", default=None, choices=("required", "optional", "off"),
                   help="reasoning block of tools requests without 'reasoning' (default: off "
                        "with the shipped model, required otherwise)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_batch)


def add_whitespace_options(p: argparse.ArgumentParser) -> None:
    """``--whitespace`` / ``--max-whitespace`` (shared with ``generate``)."""
    p.add_argument("--whitespace", choices=("compact", "any"), default="compact",
                   help="JSON output whitespace: compact (json.dumps style, the default: a "
                        "small model cannot pad the output with blanks) or any")
    p.add_argument("--max-whitespace", type=int, default=None,
                   help="with --whitespace any: longest whitespace run (default unbounded)")


def whitespace_config(args: argparse.Namespace) -> WhitespaceConfig:
    if args.max_whitespace is not None and (args.whitespace != "any" or args.max_whitespace < 0):
        raise XG2Error("--max-whitespace needs --whitespace any and a count >= 0")
    return WhitespaceConfig(args.whitespace, args.max_whitespace)


class _Job:
    """The model, its prompt pipeline, and each line's request and parse."""

    def __init__(self, args: argparse.Namespace):
        from xg2_jax import models
        from xg2_jax._src.chat_template import ChatTemplate, ModelTokenizer

        self.path = Path(args.model) if args.model else models.default_model_path()
        self.is_default = args.model is None
        self.lm = models.load_pretrained(self.path, dtype=args.dtype)
        cfg = self.lm.config
        self.tokenizer_info = models.load_tokenizer_info(self.path, vocab_size=cfg.vocab_size)
        self.tokenizer = ModelTokenizer.from_model_dir(self.path)
        try:
            self.template: Optional[ChatTemplate] = ChatTemplate.from_model_dir(self.path)
        except FileNotFoundError:
            self.template = None  # 'messages' lines then fail alone
        self.whitespace = whitespace_config(args)
        reasoning = args.reasoning or ("off" if self.is_default else "required")
        self.reasoning = {"required": True, "optional": "optional", "off": False}[reasoning]
        self.max_tokens = args.max_tokens
        self.stops = set(self.tokenizer_info.stop_token_ids)

    def prompt_ids(self, spec: RequestSpec) -> list[int]:
        if spec.messages is None:
            return self.tokenizer.encode(spec.prompt)
        if self.template is None:
            raise RequestLineError(f"line {spec.line + 1}: the model has no chat template; "
                                   "give 'prompt' instead of 'messages'")
        text = self.template.render(spec.messages, tools=spec.tools)
        return self.tokenizer.encode(text)

    def request(self, spec: RequestSpec):
        from xg2_jax._src.continuous import Request

        grammar = spec.grammar_factory(tokenizer_info=self.tokenizer_info,
                                       whitespace=self.whitespace,
                                       default_reasoning=self.reasoning)
        return Request(self.prompt_ids(spec), grammar=grammar,
                       max_tokens=spec.max_tokens or self.max_tokens,
                       temperature=spec.temperature, top_p=spec.top_p, seed=spec.seed,
                       id=spec.id)

    def result_line(self, spec: RequestSpec, out) -> str:
        from xg2_jax._src.output_parser import OutputParseError, parse_structured_output

        body = [t for t in out.tokens if not (out.finish_reason == "stop" and t in self.stops)]
        text = self.tokenizer.decode(body)
        message: dict = {"role": "assistant", "content": text}
        tag = spec.structural_tag(self.reasoning) if out.finish_reason != "error" else None
        if tag is not None:
            try:
                message = parse_structured_output(text, tag, tools=spec.tools)
            except OutputParseError:
                message = {"role": "assistant", "content": text, "tool_calls": []}
        return output_line(id=spec.id, text=text,
                           message=None if out.finish_reason == "error" else message,
                           finish_reason=out.finish_reason, error=out.error,
                           prompt_tokens=out.prompt_tokens, completion_tokens=len(out.tokens),
                           ttft_ms=out.ttft_s * 1e3, compile_ms=out.compile_s * 1e3)


class _Progress:
    """tqdm on stderr (requests done, tokens/s), or nothing."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        self.tokens = 0
        self.start = time.perf_counter()
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="req", file=sys.stderr, dynamic_ncols=True)

    def update(self, tokens: int) -> None:
        self.tokens += tokens
        if self.bar is not None:
            rate = self.tokens / max(time.perf_counter() - self.start, 1e-9)
            self.bar.set_postfix_str(f"{rate:.1f} tok/s", refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _read_lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text(encoding="utf-8").splitlines()]
    except FileNotFoundError:
        raise XG2Error(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise XG2Error(f"{path}: not UTF-8 text: {e}") from None


def run_batch(args: argparse.Namespace) -> int:
    """Runs ``xg2-jax batch``; returns 0 (per-request errors are in the output lines), or 2
    for a job-level error (no input file, no model)."""
    if args.batch_size < 1 or args.max_tokens < 1:
        raise XG2Error("--batch-size and --max-tokens must be at least 1")
    lines = _read_lines(Path(args.input))
    out_path = Path(args.output)
    if not out_path.parent.exists():
        raise XG2Error(f"{out_path.parent}: no such directory")
    from xg2_jax._src.continuous import BatchGenerator

    t0 = time.perf_counter()
    job = _Job(args)
    limit = job.lm.config.max_position_embeddings
    max_length = args.max_length or min(limit, 2048)
    if max_length > limit:
        raise XG2Error(f"--max-length {max_length} exceeds the model's {limit} positions")
    gen = BatchGenerator(job.lm, job.tokenizer_info, num_slots=args.batch_size,
                         max_length=max_length)
    t_load = time.perf_counter() - t0

    results: list[Optional[str]] = []
    specs: dict[int, RequestSpec] = {}
    by_request: dict[int, int] = {}  # generator index -> line index
    entries = [(i, ln) for i, ln in enumerate(lines) if ln.strip()]
    prompt_lengths: list[int] = []
    requests: list = []
    for slot, (i, ln) in enumerate(entries):
        results.append(None)
        try:
            spec = parse_request_line(ln, i)
            request = job.request(spec)
        except XG2Error as e:
            rid = _line_id(ln, i)
            results[slot] = output_line(id=rid, error=str(e))
            continue
        specs[slot] = spec
        prompt_lengths.append(len(request.prompt_tokens))
        requests.append((slot, request))
    for slot, request in requests:  # submitted after the warm-up, so queue times start here
        by_request[gen.submit(request)] = slot

    t_jit = gen.warm_up(prompt_lengths)
    progress = _Progress(len(entries), not args.no_progress)
    for slot, r in enumerate(results):
        if r is not None:
            progress.update(0)
    written = 0
    counts = {"stop": 0, "length": 0, "error": sum(r is not None for r in results)}
    tokens = 0
    started = time.perf_counter()
    with open(out_path, "w", encoding="utf-8") as f:
        def flush():
            nonlocal written
            while written < len(results) and results[written] is not None:
                f.write(results[written] + "\n")
                written += 1
            f.flush()

        flush()
        try:
            for out in gen.run():
                slot = by_request[out.index]
                results[slot] = job.result_line(specs[slot], out)
                counts[out.finish_reason] += 1
                tokens += len(out.tokens)
                progress.update(len(out.tokens))
                flush()
        finally:
            gen.close()
            progress.close()
        flush()
    elapsed = time.perf_counter() - started
    host = gen.stats["host_s"]
    print(f"{len(entries)} requests ({counts['stop']} stop, {counts['length']} length, "
          f"{counts['error']} error) in {elapsed:.1f} s: {tokens} tokens, "
          f"{tokens / max(elapsed, 1e-9):.1f} tokens/s, {gen.stats['steps']} steps, host "
          f"{1e3 * host / max(gen.stats['steps'], 1):.2f} ms/step; model "
          f"{job.path.name} loaded in {t_load:.1f} s, jit warm-up {t_jit:.1f} s; wrote "
          f"{out_path}", file=sys.stderr)
    return 0


def _line_id(text: str, line: int) -> Any:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return line
    return obj.get("id", line) if isinstance(obj, dict) else line
