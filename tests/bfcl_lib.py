"""BFCL (Berkeley Function Calling Leaderboard) function definitions as OpenAI tools with JSON
Schema parameters, tool sets of a given size, and the valid calls of the corpus answers.

Data: ``shared/data/bfcl`` (see its README). BFCL parameters are not JSON Schema: types are
``dict`` (object), ``float`` (number), ``tuple`` (array), ``any`` (no constraint) and a few
Java-style names; ``optional`` is a non-standard flag. :func:`bfcl_to_json_schema` maps them.
Answers (``possible_answer/*``) list, per argument, the accepted values; ``""`` stands for
"omitted". :func:`answer_calls` picks one accepted value per argument.

Used by tests/test_bfcl_tools.py and benchmarks/bench_structural_tag.py.

Example:
    >>> bfcl_to_json_schema({"type": "dict", "properties": {"x": {"type": "float"}}})
    {'type': 'object', 'properties': {'x': {'type': 'number'}}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BFCL_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "bfcl"

# Python and "live" categories: their answers are JSON values (the Java and JavaScript ones
# are source-code strings, not values of the declared types).
CORPUS_FILES = (
    "BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json", "BFCL_v4_live_simple.json", "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel.json", "BFCL_v4_live_parallel_multiple.json",
)

TYPE_MAP = {
    "dict": "object", "float": "number", "tuple": "array", "double": "number",
    "long": "integer", "String": "string", "char": "string", "Boolean": "boolean",
    "Array": "array", "ArrayList": "array", "HashMap": "object",
}
DROPPED_KEYS = {"optional"}          # BFCL-only flags, not JSON Schema keywords


def bfcl_to_json_schema(node: Any) -> Any:
    """One BFCL parameter schema as JSON Schema (a new object; the input is not changed).

    Args:
        node: a BFCL ``parameters`` object or any schema inside it.

    Returns:
        The JSON Schema: types mapped through :data:`TYPE_MAP`, ``any`` and ``""`` types
        removed (no constraint), ``optional`` dropped, nested schemas converted.
    """
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in DROPPED_KEYS:
            continue
        if key == "type":
            if value in ("any", ""):
                continue
            out["type"] = TYPE_MAP.get(value, value)
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {k: bfcl_to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = bfcl_to_json_schema(value)
        else:
            out[key] = value
    return out


def bfcl_tool(function: dict) -> dict:
    """A BFCL function definition as an OpenAI tool ``{"type": "function", "function": ...}``."""
    return {"type": "function", "function": {
        "name": function["name"], "description": function.get("description", ""),
        "parameters": bfcl_to_json_schema(function.get("parameters") or {"type": "dict"})}}


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _pick(value: Any) -> tuple[bool, Any]:
    """One accepted value from a BFCL answer list: (present, value); "" means omitted."""
    options = value if isinstance(value, list) else [value]
    for option in options:
        if option == "":
            continue
        return True, _pick_nested(option)
    return False, None


def _pick_nested(value: Any) -> Any:
    if isinstance(value, dict):          # nested object: each field is again a list of options
        out = {}
        for key, options in value.items():
            present, chosen = _pick(options)
            if present:
                out[key] = chosen
        return out
    return value


def answer_calls(ground_truth: list[dict]) -> list[tuple[str, dict]]:
    """The calls of one BFCL answer: the first accepted value per argument (an argument whose
    only option is "" is omitted).

    Example:
        >>> answer_calls([{"f": {"a": [1, 2], "b": ["", "x"]}}])
        [('f', {'a': 1, 'b': 'x'})]
    """
    calls = []
    for call in ground_truth:
        (name, args), = call.items()
        present_args = {}
        for key, options in args.items():
            present, chosen = _pick(options)
            if present:
                present_args[key] = chosen
        calls.append((name, present_args))
    return calls


@dataclass
class ToolSet:
    """``tools`` (OpenAI shape, distinct names) and ``calls``: one list of calls per corpus
    entry whose functions are all in the set (the entry's valid answer)."""

    tools: list[dict]
    calls: list[list[tuple[str, dict]]]


def load_tool_set(size: int, data_dir: Path = BFCL_DIR, *, validate: bool = True) -> ToolSet:
    """The first ``size`` distinct functions of the corpus, with the answers that use them.

    Entries are taken from the corpus files in turn (one entry of each file, then the next);
    an entry is taken whole (all its functions) or not at all,
    and a name already taken by another definition skips the entry.

    Args:
        size: number of tools wanted.
        data_dir: the BFCL folder.
        validate: keep only the answer calls whose arguments validate against the converted
            schema with no additional properties (``jsonschema``; a few BFCL answers do not
            match their own definitions), with the arguments in the schema's property order.

    Returns:
        The tool set (fewer tools when the corpus runs out).
    """
    tools: dict[str, dict] = {}
    calls: list[list[tuple[str, dict]]] = []
    for entry, ground_truth in _interleaved_entries(data_dir):
        defs = {f["name"]: bfcl_tool(f) for f in entry["function"]}
        fresh = [n for n in defs if n not in tools]
        clash = any(n in tools and tools[n] != defs[n] for n in defs)
        if clash or len(tools) + len(fresh) > size:
            continue
        for name in fresh:
            tools[name] = defs[name]
        if ground_truth is not None:
            entry_calls = answer_calls(ground_truth)
            if all(name in tools for name, _ in entry_calls):
                calls.append(entry_calls)
        if len(tools) >= size:
            break
    if validate:
        calls = _valid_calls(tools, calls)
    return ToolSet(list(tools.values()), calls)


def _interleaved_entries(data_dir: Path):
    """(entry, ground truth or None) from all corpus files, one file after the other in turn,
    so that every tool set mixes simple, multiple and parallel entries."""
    streams = []
    for file_name in CORPUS_FILES:
        answers = {a["id"]: a["ground_truth"]
                   for a in _read_jsonl(data_dir / "possible_answer" / file_name)}
        streams.append([(e, answers.get(e["id"])) for e in _read_jsonl(data_dir / file_name)])
    for i in range(max(len(s) for s in streams)):
        for stream in streams:
            if i < len(stream):
                yield stream[i]


def _valid_calls(tools: dict[str, dict], calls: list) -> list:
    import jsonschema

    validators = {n: jsonschema.Draft202012Validator(closed_schema(t["function"]["parameters"]))
                  for n, t in tools.items()}
    return [[(name, in_schema_order(args, tools[name]["function"]["parameters"]))
             for name, args in entry] for entry in calls
            if all(validators[name].is_valid(args) for name, args in entry)]


def closed_schema(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists properties
    and does not say otherwise (what a constrained decoder enforces by default); an object
    with ``required`` but no ``properties`` accepts nothing."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("required") and "properties" not in out:
        # required names with no properties: engines disagree on what that allows; make it
        # unsatisfiable here so that such calls are left out
        out["properties"] = {}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: closed_schema(v) for k, v in out["properties"].items()}
        out.setdefault("additionalProperties", False)
    if isinstance(out.get("items"), dict):
        out["items"] = closed_schema(out["items"])
    return out


def in_schema_order(value: Any, schema: Any) -> Any:
    """``value`` with object keys in the order the schema declares its properties (the order a
    model following the schema writes them); nested objects and arrays too."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        props = schema["properties"]
        ordered = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: in_schema_order(value[k], props.get(k)) for k in ordered}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [in_schema_order(v, schema["items"]) for v in value]
    return value


def render_qwen3_calls(calls: list[tuple[str, dict]]) -> str:
    """The calls as Qwen3 writes them (``<tool_call>\\n{json}\\n</tool_call>`` per call)."""
    return "\n".join("<tool_call>\n" + json.dumps({"name": n, "arguments": a}, ensure_ascii=False)
                     + "\n</tool_call>" for n, a in calls)
