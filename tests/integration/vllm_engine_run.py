"""One vLLM engine over the integration request set, in a process of its own.

``python vllm_engine_run.py MODEL_DIR BACKEND SPECULATIVE OUT.json`` runs every request of
:func:`request_specs` once (greedy) through an offline ``LLM`` and writes ``{name: [text,
finish_reason]}``; for ``xg2_jax`` it also sends a request whose schema does not compile,
records the error, and checks that the next request is served. Each engine gets a fresh
process: vLLM 0.32 patches kernels by scanning ``sys.modules``, which fails once numba (the
n-gram drafter) is loaded and a second engine starts in the same process.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
PROMPT = "Describe a person as JSON.\n"
PERSON = {"type": "object", "properties": {"name": {"type": "string"},
                                           "age": {"type": "integer", "minimum": 0},
                                           "city": {"type": "string"}},
          "required": ["name", "age", "city"]}
REGEX = r"[A-Z][a-z]{2,9}, [0-9]{2}"
CHOICES = ["Paris", "London", "Tokyo"]
EBNF = 'root ::= "{" ws "\\"ok\\": " ("true" | "false") ws "}"\nws ::= [ ]?'
TAG = {"type": "structural_tag", "format": {
    "type": "triggered_tags", "triggers": ["<tool_call>"], "at_least_one": True,
    "stop_after_first": True,
    "tags": [{"type": "tag", "begin": "<tool_call>",
              "content": {"type": "json_schema", "json_schema": PERSON},
              "end": "</tool_call>"}]}}
BAD_SCHEMA = {"type": "object", "properties": {"a": {"type": "strin"}}, "required": ["a"]}
MAX_TOKENS = 96
PROMPTS = {"tag": 'Call the tool: <tool_call>{"name": "x"} as JSON.\n'}


# JSONSchemaBench schemas that vLLM's xgrammar backend accepts and that the tiny model
# completes within MAX_TOKENS under greedy decoding through vLLM; on most others it emits
# whitespace until the length limit, with every backend alike.
CORPUS_FILES = ("Github_easy---o10059.json", "Github_easy---o10091.json")


def corpus_schemas() -> list[dict]:
    """The :data:`CORPUS_FILES` schemas (all accepted by vLLM's xgrammar backend too)."""
    from vllm.v1.structured_output.backend_xgrammar import (
        has_xgrammar_unsupported_json_features,
    )

    found = {}
    with gzip.open(DATA / "jsonschemabench" / "Github_easy.jsonl.gz", "rt",
                   encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["file"] in CORPUS_FILES:
                found[record["file"]] = record["data"]["schema"]
    schemas = [found[name] for name in CORPUS_FILES]
    assert not any(has_xgrammar_unsupported_json_features(s) for s in schemas)
    return schemas


def request_specs() -> list[tuple[str, dict | None]]:
    """(name, StructuredOutputsParams kwargs or None): a mixed batch, in this order."""
    reqs = [("person", dict(json=PERSON)), ("plain", None), ("regex", dict(regex=REGEX)),
            ("choice", dict(choice=CHOICES)), ("ebnf", dict(grammar=EBNF)),
            ("json_object", dict(json_object=True)), ("plain2", None),
            ("tag", dict(structural_tag=json.dumps(TAG)))]
    reqs += [(f"corpus{i}", dict(json=s)) for i, s in enumerate(corpus_schemas())]
    return reqs


def make_llm(model_dir: str, backend: str, speculative: bool, **overrides):
    from vllm import LLM

    import xg2_jax.integrations.vllm  # noqa: F401 - registers the backend name

    spec = ({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3,
             "prompt_lookup_min": 1} if speculative else None)
    options = dict(model=model_dir, dtype="float32", max_model_len=512, enforce_eager=True,
                   seed=0, max_num_seqs=16, distributed_executor_backend="uni",
                   structured_outputs_config={"backend": backend}, speculative_config=spec)
    options.update(overrides)
    return LLM(**options)


def sampling(kwargs, max_tokens: int = MAX_TOKENS):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    so = StructuredOutputsParams(**kwargs) if kwargs else None
    return SamplingParams(temperature=0.0, max_tokens=max_tokens, structured_outputs=so)


def run(model_dir: str, backend: str, speculative: bool) -> dict:
    llm = make_llm(model_dir, backend, speculative)
    reqs = request_specs()
    outs = llm.generate([PROMPTS.get(name, PROMPT) for name, _ in reqs],
                        [sampling(kw) for _, kw in reqs], use_tqdm=False)
    result = {name: [o.outputs[0].text, o.outputs[0].finish_reason]
              for (name, _), o in zip(reqs, outs)}
    if backend == "xg2_jax":
        try:
            llm.generate([PROMPT], [sampling(dict(json=BAD_SCHEMA))], use_tqdm=False)
            result["_bad"] = None
        except Exception as error:  # noqa: BLE001 - the test reads the message
            result["_bad"] = f"{type(error).__name__}: {error}"
        after = llm.generate([PROMPT], [sampling(dict(json=PERSON))], use_tqdm=False)
        result["_after_bad"] = [after[0].outputs[0].text, after[0].outputs[0].finish_reason]
    return result


if __name__ == "__main__":
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    model, backend, speculative, out = sys.argv[1:5]
    Path(out).write_text(json.dumps(run(model, backend, speculative == "1")))
