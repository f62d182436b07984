"""`xg2-jax batch` end to end on the shipped model: a JSONL file with every response_format
kind, tools in a model format, and bad lines; outputs follow the input order, validate, and
bad lines come back as error lines without stopping the job."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("flax.nnx")
pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
jsonschema = pytest.importorskip("jsonschema")

from xg2_jax._src.cli import main  # noqa: E402

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 30},
                                           "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
    "required": ["city"], "additionalProperties": False}}}]
LINES = [
    {"id": "schema", "messages": [{"role": "user", "content": "Describe a person as JSON."}],
     "response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": PERSON}},
     "max_tokens": 80},
    {"id": "tools", "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
     "tools": WEATHER, "tool_choice": "required", "model_format": "qwen3", "max_tokens": 80},
    {"id": "regex", "prompt": "Code:", "response_format": {"type": "regex",
                                                           "pattern": "[A-Z]{3}-[0-9]{3}"}},
    "{not json",
    {"id": "typo", "promt": "x"},
    {"id": "bad-schema", "prompt": "x", "response_format": {
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nope"}}}},
    {"id": "bad-format", "prompt": "x", "tools": WEATHER, "model_format": "nope"},
    {"id": "object", "prompt": "Return JSON.\n", "response_format": {"type": "json_object"},
     "max_tokens": 80},
    {"id": "grammar", "prompt": "x", "response_format": {"type": "grammar",
                                                         "grammar": 'root ::= "yes" | "no"'}},
    {"id": "free", "prompt": "Return JSON.\n", "max_tokens": 5, "temperature": 0.7, "seed": 1},
]


def _write(tmp_path, lines) -> str:
    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(ln if isinstance(ln, str) else json.dumps(ln) for ln in lines)
                    + "\n")
    return str(path)


def test_batch_job_end_to_end(tmp_path):
    out = tmp_path / "results.jsonl"
    proc = subprocess.run([sys.executable, "-m", "xg2_jax", "batch", "--input",
                           _write(tmp_path, LINES), "--output", str(out), "--batch-size", "4"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ),
                          cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    assert "10 requests" in proc.stderr and "tokens/s" in proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == ["schema", "tools", "regex", 3, "typo", "bad-schema",
                                          "bad-format", "object", "grammar", "free"]
    by_id = {r["id"]: r for r in results}
    for rid in ("schema", "tools", "regex", "object", "grammar"):
        assert by_id[rid]["finish_reason"] == "stop", by_id[rid]
    jsonschema.validate(json.loads(by_id["schema"]["text"]), PERSON)
    assert by_id["schema"]["message"]["content"] == by_id["schema"]["text"]
    assert re.fullmatch(r"[A-Z]{3}-[0-9]{3}", by_id["regex"]["text"])
    assert isinstance(json.loads(by_id["object"]["text"]), dict)
    assert by_id["grammar"]["text"] in ("yes", "no")
    call = by_id["tools"]["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    jsonschema.validate(json.loads(call["function"]["arguments"]),
                        WEATHER[0]["function"]["parameters"])
    assert by_id["free"]["finish_reason"] == "length"
    assert by_id["free"]["usage"]["completion_tokens"] == 5
    for rid, message in ((3, "line 4: not JSON"), ("typo", "unknown key(s) 'promt'"),
                         ("bad-schema", "unknown type 'nope'"), ("bad-format", "'nope'")):
        assert by_id[rid]["finish_reason"] == "error" and message in by_id[rid]["error"]
        assert by_id[rid]["message"] is None
    assert by_id["schema"]["usage"]["prompt_tokens"] > 0
    assert by_id["schema"]["timing"]["ttft_ms"] > 0


@pytest.mark.parametrize("args,message", [
    (["--input", "/missing/requests.jsonl"], "/missing/requests.jsonl: no such file"),
    (["--batch-size", "0"], "--batch-size"),
    (["--max-length", "100000"], "exceeds the model's 1024 positions"),
])
def test_batch_job_errors(tmp_path, capsys, args, message):
    base = {"--input": _write(tmp_path, LINES[:1]), "--output": str(tmp_path / "o.jsonl")}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    argv = ["batch", "--no-progress"] + [x for kv in base.items() for x in kv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
