"""One vLLM engine over the integration request set, in a process of its own.

``python vllm_engine_run.py MODEL_DIR BACKEND SPECULATIVE OUT.json [mixed|reasoning]`` runs
every request of :func:`request_specs` (``mixed``, the default) or :func:`reasoning_specs`
(``reasoning``: an engine with vLLM's ``deepseek_r1`` reasoning parser) once (greedy) through
an offline ``LLM`` and writes ``{name: [text, finish_reason, token_ids]}``; in the mixed set,
for ``xg2_jax``, it also sends a request whose schema does not compile, records the error, and
checks that the next request is served. Each engine gets a fresh
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

# Reasoning: a prompt that opens a think block (the grammar waits for ``</think>``) and one
# that already closed it (the parser finds the end in the prompt: constrained from the start).
THINK_OPEN = PROMPT + "<think>"
THINK_CLOSED = PROMPT + "<think>A person.</think>"
THINK_END = "</think>"
THINK_END_AT = 8  # output position where think_end.ForceThinkEnd makes the model close it
OPEN_TOKENS = 24  # the never-closed requests: long enough to leave any grammar's language


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


def reasoning_specs(speculative: bool) -> list[tuple[str, str, dict | None, dict]]:
    """(name, prompt, StructuredOutputsParams kwargs or None, SamplingParams overrides).

    ``think_json`` / ``think_ref`` (same prompt, forced ``</think>`` at :data:`THINK_END_AT`,
    the latter unconstrained) need the logits processor, which vLLM refuses together with
    speculation, so only the plain engine runs them.
    """
    force = dict(extra_args={"think_end_at": THINK_END_AT})
    specs = [("think_open_regex", THINK_OPEN, dict(regex=REGEX), dict(max_tokens=OPEN_TOKENS)),
             ("think_open_ref", THINK_OPEN, None, dict(max_tokens=OPEN_TOKENS)),
             ("think_closed", THINK_CLOSED, dict(json=PERSON), {}),
             ("think_closed_choice", THINK_CLOSED, dict(choice=CHOICES), {}),
             ("plain_after_closed", THINK_CLOSED, None, dict(max_tokens=OPEN_TOKENS))]
    if not speculative:
        specs += [("think_json", THINK_OPEN, dict(json=PERSON), force),
                  ("think_ref", THINK_OPEN, None, dict(force, max_tokens=THINK_END_AT + 8))]
    return specs


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


def sampling(kwargs, max_tokens: int = MAX_TOKENS, **overrides):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    so = StructuredOutputsParams(**kwargs) if kwargs else None
    options = dict(temperature=0.0, max_tokens=max_tokens, structured_outputs=so)
    options.update(overrides)
    return SamplingParams(**options)


def _record(out) -> list:
    return [out.outputs[0].text, out.outputs[0].finish_reason, list(out.outputs[0].token_ids)]


def run_reasoning(model_dir: str, backend: str, speculative: bool) -> dict:
    """The :func:`reasoning_specs` set through an engine with the ``deepseek_r1`` parser."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # think_end, for vLLM to load
    extra = {} if speculative else dict(logits_processors=["think_end:ForceThinkEnd"])
    llm = make_llm(model_dir, backend, speculative, reasoning_parser="deepseek_r1", **extra)
    end_id = llm.get_tokenizer().convert_tokens_to_ids(THINK_END)
    reqs = reasoning_specs(speculative)
    params = []
    for _, _, kwargs, overrides in reqs:
        if "extra_args" in overrides:
            overrides = dict(overrides, extra_args=dict(overrides["extra_args"],
                                                        think_end_id=end_id))
        params.append(sampling(kwargs, **overrides))
    outs = llm.generate([prompt for _, prompt, _, _ in reqs], params, use_tqdm=False)
    result = {name: _record(o) for (name, _, _, _), o in zip(reqs, outs)}
    result["_think_end_id"] = end_id
    return result


def run(model_dir: str, backend: str, speculative: bool) -> dict:
    llm = make_llm(model_dir, backend, speculative)
    reqs = request_specs()
    outs = llm.generate([PROMPTS.get(name, PROMPT) for name, _ in reqs],
                        [sampling(kw) for _, kw in reqs], use_tqdm=False)
    result = {name: _record(o) for (name, _), o in zip(reqs, outs)}
    if backend == "xg2_jax":
        try:
            llm.generate([PROMPT], [sampling(dict(json=BAD_SCHEMA))], use_tqdm=False)
            result["_bad"] = None
        except Exception as error:  # noqa: BLE001 - the test reads the message
            result["_bad"] = f"{type(error).__name__}: {error}"
        after = llm.generate([PROMPT], [sampling(dict(json=PERSON))], use_tqdm=False)
        result["_after_bad"] = _record(after[0])
    return result


if __name__ == "__main__":
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    model, backend, speculative, out = sys.argv[1:5]
    which = run_reasoning if sys.argv[5:6] == ["reasoning"] else run
    Path(out).write_text(json.dumps(which(model, backend, speculative == "1")))
