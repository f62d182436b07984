"""`xg2-jax generate` end to end with the tiny model shipped in the package: a JSON Schema (the
output validates), a regex (the output matches fully), structural tags when available, and
bad input (non-zero exit, a one-line message naming the problem)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("flax.nnx")
import xg2_jax  # noqa: E402
from xg2_jax._src.cli import main  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 30},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"type": "string", "maxLength": 30},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
    },
    "required": ["name", "age", "city", "tags"],
    "additionalProperties": False,
}
needs_structural_tags = pytest.mark.skipif(
    not hasattr(xg2_jax.Grammar, "from_structural_tag"),
    reason="xg2_jax.Grammar.from_structural_tag is not in this build")


def run_cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    # Import xg2_jax as this process does (installed, or the caller's PYTHONPATH), from a
    # neutral cwd: the checkout's sources have no compiled extension in a CI install.
    return subprocess.run([sys.executable, "-m", "xg2_jax", "generate", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ), cwd=tempfile.gettempdir())


def test_generate_json_schema_output_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema_file = tmp_path / "person.json"
    schema_file.write_text(json.dumps(SCHEMA))
    proc = run_cli("--json-schema", str(schema_file), "--prompt", "Describe a person as JSON.")
    assert proc.returncode == 0, proc.stderr
    jsonschema.validate(json.loads(proc.stdout), SCHEMA)
    assert "tokens/s" in proc.stderr and "mask fill" in proc.stderr


def test_generate_regex_output_matches_fully():
    pattern = r"[A-Z][a-z]{2,9} [A-Z][a-z]{2,9}, [0-9]{2}"
    proc = run_cli("--regex", pattern, "--prompt", "Name and age:", "--temperature", "0.8",
                   "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch(pattern, proc.stdout.rstrip("\n")), proc.stdout


def test_generate_reports_missing_model_directory(tmp_path):
    proc = run_cli("--model", str(tmp_path / "nope"), "--regex", "[a-z]+")
    assert proc.returncode != 0
    assert "nope: not a model directory" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args,message", [
    (["--json-schema", '{"type": "objec'], "--json-schema: not JSON: line 1 column 10"),
    (["--json-schema", "/missing/schema.json"], "/missing/schema.json: no such file"),
    (["--regex", "a", "--temperature", "0.5", "--top-p", "5"], "--top-p must be in (0, 1]"),
    (["--regex", "a", "--max-whitespace", "3"], "--max-whitespace needs --whitespace any"),
    (["--json-schema", '{"type": "array", "uniqueItems": true}'], "uniqueItems"),
    (["--regex", "(a)\\1"], "Backreference"),
    (["--ebnf", 'root ::= "a\n'], "1:10"),
    (["--ebnf-file", "/nonexistent/grammar.ebnf"], "No such file"),
    (["--regex", "a", "--max-new-tokens", "0"], "--max-new-tokens"),
    (["--regex", "a", "--greedy", "--temperature", "0.5"], "--temperature"),
    (["--regex", "a", "--model-format", "qwen3"], "--tools and --model-format go together"),
    (["--structural-tag", '{"type": "structural_tag", "format": {"type": "nope"}}'], "format"),
    (["--tools", "[]", "--model-format", "no-such-format"], "no-such-format"),
])
def test_generate_reports_bad_input(capsys, args, message):
    assert main(["generate", *args]) != 0
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and err.count("\n") == 1


def test_generate_needs_a_structure(capsys):
    with pytest.raises(SystemExit) as e:
        main(["generate", "--prompt", "hi"])
    assert e.value.code != 0
    assert "one of the arguments" in capsys.readouterr().err


@needs_structural_tags
def test_generate_structural_tag(tmp_path):
    tag = {"type": "structural_tag", "format": {
        "type": "tag", "begin": "<tool_call>\n",
        "content": {"type": "json_schema", "json_schema": {
            "type": "object", "properties": {"name": {"const": "get_weather"},
                                             "arguments": {"type": "object", "properties": {
                                                 "location": {"type": "string", "maxLength": 20}},
                                                 "required": ["location"]}},
            "required": ["name", "arguments"]}},
        "end": "\n</tool_call>"}}
    proc = run_cli("--structural-tag", json.dumps(tag), "--prompt", "Call get_weather.")
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout.rstrip("\n")
    assert body.startswith("<tool_call>\n") and body.endswith("\n</tool_call>")
    call = json.loads(body[len("<tool_call>\n"):-len("\n</tool_call>")])
    assert call["name"] == "get_weather" and isinstance(call["arguments"]["location"], str)


@needs_structural_tags
def test_generate_tools_needs_model_format(tmp_path, capsys):
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {"name": "f", "parameters": {}}}]))
    assert main(["generate", "--tools", str(tools)]) != 0
    assert "--tools and --model-format go together" in capsys.readouterr().err


def _weather_tools_file(tmp_path):
    """A tools file with one get_weather function (a bounded location string)."""
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"location": {"type": "string", "maxLength": 20}},
        "required": ["location"], "additionalProperties": False}}}]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    return path


@needs_structural_tags
def test_generate_tool_call_in_model_format(tmp_path):
    """qwen3's format with a required call and no reasoning block: every <tool_call> holds
    JSON that names the tool, with arguments that follow its schema."""
    path = _weather_tools_file(tmp_path)
    proc = run_cli("--tools", str(path), "--model-format", "qwen3", "--tool-choice", "required",
                   "--reasoning", "off", "--prompt", "What is the weather in Paris?")
    assert proc.returncode == 0, proc.stderr
    calls = re.findall(r"<tool_call>\n(.*?)\n</tool_call>", proc.stdout, re.S)
    assert calls, proc.stdout
    for call in map(json.loads, calls):
        assert call["name"] == "get_weather" and isinstance(call["arguments"]["location"], str)


@needs_structural_tags
def test_generate_tools_default_reasoning_with_the_shipped_model(tmp_path):
    """Without --reasoning, the shipped model (not trained to reason) gets no think block and
    ends its call well within the budget."""
    path = _weather_tools_file(tmp_path)
    proc = run_cli("--tools", str(path), "--model-format", "qwen3", "--tool-choice", "required",
                   "--prompt", "What is the weather in Paris?", "--max-new-tokens", "96")
    assert proc.returncode == 0, proc.stderr
    assert "<think>" not in proc.stdout and "<tool_call>" in proc.stdout


def test_version_and_format_list(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("xg2-jax ")
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for name in ("qwen3", "llama3", "harmony", "mistral", "deepseek_r1"):
        assert name in help_text


def _byte_level_tokenizer_json(eos: str) -> dict:
    """A byte-level BPE tokenizer.json with one token per byte (GPT-2's byte-to-char map)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    vocab = {chars[b]: b for b in range(256)}
    return {"version": "1.0", "added_tokens": [{"id": 256, "content": eos, "special": True,
                                                "single_word": False, "lstrip": False,
                                                "rstrip": False, "normalized": False}],
            "normalizer": None, "post_processor": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": []}}


@pytest.mark.parametrize("family", ["qwen2-qkv-bias-tied", "gpt2"])
def test_generate_with_local_hf_checkpoint(tmp_path, family):
    """--model DIR: a random checkpoint with its tokenizer.json; the regex holds."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("safetensors")
    from test_models import FAMILIES, _hf_tensors, write_checkpoint

    cfg, sharded = FAMILIES[family]
    cfg = {**cfg, "vocab_size": 257, "eos_token_id": 256}
    path = write_checkpoint(tmp_path / family, cfg, _hf_tensors(cfg, np.random.default_rng(0)),
                            sharded=sharded)
    (path / "tokenizer.json").write_text(json.dumps(_byte_level_tokenizer_json("<|end|>")))
    proc = run_cli("--model", str(path), "--regex", "[ab]{3}-[0-9]", "--prompt", "go: ",
                   "--max-new-tokens", "10")
    assert proc.returncode == 0, proc.stderr
    assert re.fullmatch("[ab]{3}-[0-9]", proc.stdout.rstrip("\n")), proc.stdout
