"""The grammar side of one speculative decoding step in vLLM's structured-output manager,
per request: ``xg2_jax``'s backend grammar against vLLM's ``xgrammar`` one.

A step with ``k`` drafts makes, per request, the calls vLLM 0.32 makes (scheduler and
``StructuredOutputManager``): ``validate_tokens(drafts)``; then, for the bitmask, ``k + 1``
``fill_bitmask`` rows with ``is_terminated`` + ``accept_tokens([draft])`` between them and one
``rollback(k)``; then ``accept_tokens`` of the accepted drafts and the bonus token. The tokens
are a valid JSON document (the person schema) tokenized by the tiny test model's tokenizer, so
every draft is accepted (the common case in the integration tests); the document repeats with a
``reset`` between copies. Needs vLLM and xgrammar (the venv of ``.ci/vllm_integration.sh``).

Usage: ``python benchmarks/bench_vllm_spec_step.py [--drafts 3] [--repeat 200]``; prints a
table of microseconds per step (median over repeats of whole documents).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PERSON = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer", "minimum": 0},
                                           "city": {"type": "string"}},
          "required": ["name", "age", "city"]}
DOCUMENT = '{"name": "Quinn Lee", "age": 33, "city": "Boston, Massachusetts"}'


def grammars(model_dir: str, drafts: int):
    """{backend name: a fresh-grammar factory} over the model's tokenizer."""
    import torch  # noqa: F401 - vLLM's grammars take torch bitmasks
    import xgrammar as xgr
    from transformers import AutoTokenizer
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions
    from vllm.v1.structured_output.backend_xgrammar import XgrammarGrammar

    from xg2_jax._src.serving import RequestGrammar
    from xg2_jax.integrations import vllm as adapter

    tok = AutoTokenizer.from_pretrained(model_dir)
    vocab = len(tok)
    ours = adapter.compiler_for(tok, vocab)
    compiled = adapter._compile(ours, StructuredOutputOptions.JSON, json.dumps(PERSON), None)
    xcompiled = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tok, vocab_size=vocab)
                                    ).compile_json_schema(json.dumps(PERSON))
    stops = {tok.eos_token_id}

    def make_ours():
        return adapter.Xg2JaxGrammar(RequestGrammar(compiled, stop_token_ids=stops))

    def make_xgrammar():
        return XgrammarGrammar(vocab_size=vocab, ctx=xcompiled, matcher=xgr.GrammarMatcher(
            xcompiled, override_stop_tokens=list(stops), max_rollback_tokens=drafts))

    tokens = tok(DOCUMENT)["input_ids"] + [tok.eos_token_id]
    return {"xg2_jax": make_ours, "xgrammar": make_xgrammar}, tokens, vocab


def fill(grammar, bitmask, row: int) -> None:
    """The manager's ``_fill_bitmasks``: a terminated grammar's row is all ones."""
    if grammar.is_terminated():
        bitmask[row].fill_(-1)
    else:
        grammar.fill_bitmask(bitmask, row)


def one_document(grammar, tokens: list[int], bitmask, drafts: int) -> int:
    """Runs the document through speculative steps; returns the number of steps."""
    grammar.reset()
    pos, steps = 0, 0
    while pos < len(tokens) and not grammar.is_terminated():
        draft = tokens[pos:pos + drafts]
        valid = grammar.validate_tokens(draft)
        advanced = 0
        for row, token in enumerate(valid):
            fill(grammar, bitmask, row)
            if not grammar.is_terminated() and grammar.accept_tokens("r", [token]):
                advanced += 1
        fill(grammar, bitmask, len(valid))
        if advanced:
            grammar.rollback(advanced)
        accepted = tokens[pos:pos + len(valid) + 1]
        grammar.accept_tokens("r", accepted)
        pos += len(accepted)
        steps += 1
    return steps


def measure(make, tokens, vocab: int, drafts: int, repeat: int) -> float:
    import torch

    bitmask = torch.full((drafts + 1, (vocab + 31) // 32), -1, dtype=torch.int32)
    grammar = make()
    one_document(grammar, tokens, bitmask, drafts)  # warm caches
    per_step = []
    for _ in range(repeat):
        start = time.perf_counter()
        steps = one_document(grammar, tokens, bitmask, drafts)
        per_step.append((time.perf_counter() - start) / steps)
    return float(np.median(per_step)) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drafts", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "tools"))
    import make_vllm_test_model

    with tempfile.TemporaryDirectory() as tmp:
        model = str(make_vllm_test_model.write_model(Path(tmp) / "model"))
        makers, tokens, vocab = grammars(model, args.drafts)
        rows = [(name, measure(make, tokens, vocab, args.drafts, args.repeat))
                for _ in range(2) for name, make in makers.items()]  # interleaved, twice
    print(f"vLLM 0.32 speculative step, grammar side, {args.drafts} drafts all accepted, "
          f"person schema, {len(tokens)} tokens per document, vocab {vocab}; median of "
          f"{args.repeat} documents, each backend measured twice, interleaved")
    print("| backend | µs per step (run 1) | µs per step (run 2) |")
    print("|---|---:|---:|")
    for name in makers:
        a, b = (us for n, us in rows if n == name)
        print(f"| {name} | {a:.1f} | {b:.1f} |")


if __name__ == "__main__":
    main()
