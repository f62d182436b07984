"""The same requests through vLLM (CPU build) with the structured-output backends xg2_jax,
xgrammar and guidance, with and without n-gram speculative decoding: engine throughput and
time to first token.

Each configuration runs in a process of its own (a fresh engine; vLLM 0.32 cannot start a
second engine in a process once the n-gram drafter's numba is loaded). The model is the tiny
Llama of ``tools/make_vllm_test_model.py`` (so the grammar work is a large share of each step,
the worst case for a backend); the workload is a mixed batch of JSON Schemas from
JSONSchemaBench (Github_easy, each with a distinct schema, so every request compiles), a fixed
person schema, regexes, choices, an EBNF grammar and unconstrained rows, all greedy, after a
warm-up batch. The configurations run interleaved (every backend once per round, with and
without speculation) for ``--rounds`` rounds, so a loaded machine slows all alike; each round
is a row. Needs vLLM: ``python benchmarks/bench_vllm.py`` in the venv of
``.ci/vllm_integration.sh``.

Usage: ``python benchmarks/bench_vllm.py [--requests 48] [--max-tokens 64] [--rounds 2]
[--backends xg2_jax,xgrammar,guidance]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
PROMPT = "Describe a person as JSON.\n"
PERSON = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer", "minimum": 0},
                                           "city": {"type": "string"}},
          "required": ["name", "age", "city"]}


def corpus_schemas(count: int) -> list[dict]:
    """Distinct small object schemas from JSONSchemaBench Github_easy that every backend takes."""
    from vllm.v1.structured_output.backend_guidance import has_guidance_unsupported_json_features
    from vllm.v1.structured_output.backend_xgrammar import has_xgrammar_unsupported_json_features

    out, seen = [], set()
    with gzip.open(DATA / "jsonschemabench" / "Github_easy.jsonl.gz", "rt",
                   encoding="utf-8") as f:
        for line in f:
            schema = json.loads(line)["data"]["schema"]
            text = json.dumps(schema, sort_keys=True)
            if (len(text) < 800 and schema.get("type") == "object" and text not in seen
                    and "format" not in text and "$ref" not in text
                    and not has_xgrammar_unsupported_json_features(schema)
                    and not has_guidance_unsupported_json_features(schema)):
                seen.add(text)
                out.append(schema)
            if len(out) == count:
                break
    return out


def workload(n: int) -> list[dict | None]:
    kinds = [dict(json=PERSON), dict(regex=r"[A-Z][a-z]{2,9}, [0-9]{2}"),
             dict(choice=["Paris", "London", "Tokyo"]),
             dict(grammar='root ::= "{" "\\"ok\\": " ("true" | "false") "}"'), None]
    schemas = corpus_schemas(n)
    reqs = []
    for i in range(n):
        reqs.append(dict(json=schemas[i % len(schemas)]) if i % 2 == 0 else kinds[i % len(kinds)])
    return reqs


def worker(model_dir: str, backend: str, speculative: bool, n: int, max_tokens: int) -> dict:
    if backend == "xg2_jax":
        import xg2_jax.integrations.vllm  # noqa: F401 - registers the backend name
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    spec = ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3,
             "prompt_lookup_min": 1} if speculative else None)
    llm = LLM(model=model_dir, dtype="float32", max_model_len=512, enforce_eager=True, seed=0,
              max_num_seqs=64, distributed_executor_backend="uni", disable_log_stats=False,
              structured_outputs_config={"backend": backend}, speculative_config=spec)

    def params(kw):
        so = StructuredOutputsParams(**kw) if kw else None
        return SamplingParams(temperature=0.0, max_tokens=max_tokens, structured_outputs=so)

    warm = [dict(json=PERSON), dict(regex="[0-9]+"), None]
    llm.generate([PROMPT] * len(warm), [params(k) for k in warm], use_tqdm=False)
    reqs = workload(n)
    start = time.perf_counter()
    outs = llm.generate([PROMPT] * len(reqs), [params(k) for k in reqs], use_tqdm=False)
    wall = time.perf_counter() - start
    ttft = [o.metrics.first_token_latency for o in outs if getattr(o, "metrics", None)]
    if len(ttft) != len(outs):
        raise RuntimeError(f"only {len(ttft)} of {len(outs)} outputs carry metrics")
    tokens = sum(len(o.outputs[0].token_ids) for o in outs)
    stopped = sum(o.outputs[0].finish_reason == "stop" for o in outs)
    return dict(wall_s=wall, tokens=tokens, ttft_s=ttft, stopped=stopped, requests=len(outs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--backends", default="xg2_jax,xgrammar,guidance")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--worker", nargs=3, metavar=("MODEL", "BACKEND", "SPEC"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        model, backend, spec = args.worker
        result = worker(model, backend, spec == "1", args.requests, args.max_tokens)
        Path(args.out).write_text(json.dumps(result))
        return
    sys.path.insert(0, str(REPO / "tools"))
    import make_vllm_test_model

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = str(make_vllm_test_model.write_model(Path(tmp) / "model"))
        for round_index in range(1, args.rounds + 1):
            for spec in ("0", "1"):
                for backend in args.backends.split(","):
                    result = run_worker(args, Path(tmp), model, backend, spec)
                    if result is not None:
                        rows.append((round_index, backend, spec == "1", result))
    print(f"vLLM CPU, tiny Llama (tools/make_vllm_test_model.py), {args.requests} mixed requests, "
          f"max_tokens {args.max_tokens}, greedy; n-gram: 3 draft tokens; {args.rounds} rounds, "
          f"configurations interleaved in each")
    print("| n-gram | backend | round | finished | output tokens | wall s | tokens/s | "
          "TTFT ms p50 | p99 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for round_index, backend, spec, r in sorted(rows, key=lambda row: (row[2], row[1], row[0])):
        t = np.array(r["ttft_s"]) * 1e3
        print(f"| {'yes' if spec else 'no'} | {backend} | {round_index} | "
              f"{r['stopped']}/{r['requests']} | {r['tokens']} | {r['wall_s']:.2f} | "
              f"{r['tokens'] / r['wall_s']:.0f} | {np.median(t):.0f} | "
              f"{np.percentile(t, 99):.0f} |")


def run_worker(args, tmp: Path, model: str, backend: str, spec: str) -> dict | None:
    """One configuration in a fresh process; None (reported on stderr) if it failed."""
    out = tmp / f"{backend}-{spec}.json"
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_KVCACHE_SPACE="1")
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", model, backend, spec, "--out", str(out),
         "--requests", str(args.requests), "--max-tokens", str(args.max_tokens)],
        env=env, capture_output=True, text=True)
    if proc.returncode:
        print(f"{backend} spec={spec} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return json.loads(out.read_text())

if __name__ == "__main__":
    main()
