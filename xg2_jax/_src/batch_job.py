"""Request lines of a JSONL batch job: parsing, structures and output lines.

An input line (OpenAI-like)::

    {"id", "messages" | "prompt", "response_format", "tools", "tool_choice", "model_format",
     "reasoning", "parallel_tool_calls", "max_tokens", "temperature", "top_p", "seed"}

``response_format``: ``{"type": "json_schema", "json_schema": {"name", "schema"}}``,
``{"type": "json_object"}``, ``{"type": "text"}``, ``{"type": "regex", "pattern"}``,
``{"type": "grammar", "grammar"}`` (EBNF), ``{"type": "structural_tag", ...}`` (a structural
tag, e.g. ``{"type": "structural_tag", "format": {...}}``). ``tools`` with ``model_format``
constrain the turn to that model's tool-call syntax.

An output line::

    {"id", "text", "message", "finish_reason": "stop" | "length" | "error", "error",
     "usage": {"prompt_tokens", "completion_tokens"}, "timing": {"ttft_ms", "compile_ms"}}

Example:
    >>> spec = parse_request_line('{"id": "a", "prompt": "x", "max_tokens": 4}', 0)
    >>> spec.id, spec.max_tokens, spec.structure_kind
    ('a', 4, None)
    >>> parse_request_line('{"id": 1, "promt": "x"}', 3)
    Traceback (most recent call last):
    ...
    xg2_jax._src.batch_job.RequestLineError: line 4: unknown key(s) 'promt' (known: ...)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Optional

from xg2_jax._src.errors import XG2Error
from xg2_jax._src.grammar import Grammar

__all__ = ["RequestLineError", "RequestSpec", "WhitespaceConfig", "output_line",
           "parse_request_line"]

KNOWN_KEYS = ("id", "messages", "prompt", "response_format", "tools", "tool_choice",
              "model_format", "reasoning", "parallel_tool_calls", "max_tokens", "temperature",
              "top_p", "seed")
RESPONSE_FORMATS = ("text", "json_object", "json_schema", "regex", "grammar", "structural_tag")


class RequestLineError(XG2Error, ValueError):
    """An input line is not a valid request (the message names the line and the key)."""


@dataclasses.dataclass(frozen=True)
class WhitespaceConfig:
    """Whitespace of generated JSON: ``compact`` writes ``json.dumps`` style (one space after
    ``,`` and ``:``); ``any`` allows any whitespace, at most ``max_run`` characters in a row
    (None: unbounded)."""

    mode: str = "compact"
    max_run: Optional[int] = None

    def json_options(self) -> dict:
        if self.mode == "compact":
            return {"any_whitespace": False}
        return {"any_whitespace": True, "max_whitespace_cnt": self.max_run}


@dataclasses.dataclass
class RequestSpec:
    """A parsed input line."""

    line: int
    id: Any
    messages: Optional[list] = None
    prompt: Optional[str] = None
    response_format: Optional[dict] = None
    tools: Optional[list] = None
    tool_choice: Any = "auto"
    model_format: Optional[str] = None
    reasoning: Any = None
    parallel_tool_calls: bool = True
    max_tokens: Optional[int] = None
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    _tag: Optional[tuple] = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def structure_kind(self) -> Optional[str]:
        if self.tools and self.model_format:
            return "tools"
        fmt = (self.response_format or {}).get("type")
        return None if fmt in (None, "text") else fmt

    def structural_tag(self, default_reasoning: Any) -> Optional[Any]:
        """The structural tag of a tools or structural-tag request (what its output is
        parsed by), else None; built once per request (the grammar and the parse share it)."""
        if self._tag is None:
            self._tag = (self._build_structural_tag(default_reasoning),)
        return self._tag[0]

    def _build_structural_tag(self, default_reasoning: Any) -> Optional[Any]:
        kind = self.structure_kind
        if kind == "tools":
            from xg2_jax._src.model_formats import get_model_structural_tag

            reasoning = default_reasoning if self.reasoning is None else self.reasoning
            try:
                return get_model_structural_tag(self.model_format, self.tools, self.tool_choice,
                                                reasoning, self.parallel_tool_calls)
            except ValueError as e:
                raise RequestLineError(f"line {self.line + 1}: tools/model_format: {e}") from None
        if kind == "structural_tag":
            return self.response_format
        return None

    def grammar_factory(self, *, tokenizer_info, whitespace: WhitespaceConfig,
                        default_reasoning: Any) -> Optional[Callable[[], Grammar]]:
        """A zero-argument function building the request's grammar (run on the compile
        worker), or None for an unconstrained request."""
        kind = self.structure_kind
        if kind is None:
            return None
        rf = self.response_format or {}
        if kind in ("tools", "structural_tag"):
            tag = self.structural_tag(default_reasoning)
            return lambda: Grammar.from_structural_tag(tag, tokenizer_info=tokenizer_info)
        if kind == "json_object":
            return lambda: Grammar.from_json_schema({"type": "object"}, strict_mode=False,
                                                    **whitespace.json_options())
        if kind == "json_schema":
            js = rf.get("json_schema")
            if not isinstance(js, dict) or "schema" not in js:
                raise RequestLineError(f"line {self.line + 1}: response_format.json_schema "
                                       "needs {'name', 'schema'}")
            schema, strict = js["schema"], js.get("strict", True) is not False
            return lambda: Grammar.from_json_schema(schema, strict_mode=strict,
                                                    **whitespace.json_options())
        if kind == "regex":
            pattern = rf.get("pattern")
            if not isinstance(pattern, str):
                raise RequestLineError(f"line {self.line + 1}: response_format.pattern must be "
                                       "a string")
            return lambda: Grammar.from_regex(pattern)
        grammar = rf.get("grammar")
        if not isinstance(grammar, str):
            raise RequestLineError(f"line {self.line + 1}: response_format.grammar must be a "
                                   "string (EBNF)")
        return lambda: Grammar.from_ebnf(grammar)


def _check(cond: bool, line: int, message: str) -> None:
    if not cond:
        raise RequestLineError(f"line {line + 1}: {message}")


def parse_request_line(text: str, line: int) -> RequestSpec:
    """Parses one JSONL input line (``line`` is 0-based; messages say ``line N`` 1-based).

    Raises:
        RequestLineError: invalid JSON, unknown keys, or a value of the wrong type.
    """
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise RequestLineError(f"line {line + 1}: not JSON: column {e.colno}: {e.msg}") from None
    _check(isinstance(obj, dict), line, "expected a JSON object")
    unknown = sorted(set(obj) - set(KNOWN_KEYS))
    _check(not unknown, line, f"unknown key(s) {', '.join(map(repr, unknown))} (known: "
                              f"{', '.join(KNOWN_KEYS)})")
    spec = RequestSpec(line=line, id=obj.get("id", line))
    _check(("messages" in obj) != ("prompt" in obj), line, "give exactly one of 'messages' and "
                                                           "'prompt'")
    if "messages" in obj:
        msgs = obj["messages"]
        _check(isinstance(msgs, list) and msgs and all(isinstance(m, dict) and "role" in m
                                                       for m in msgs),
               line, "'messages' must be a non-empty list of {'role', 'content'} objects")
        spec.messages = msgs
    else:
        _check(isinstance(obj["prompt"], str), line, "'prompt' must be a string")
        spec.prompt = obj["prompt"]
    rf = obj.get("response_format")
    if rf is not None:
        _check(isinstance(rf, dict) and rf.get("type") in RESPONSE_FORMATS, line,
               f"response_format.type must be one of {', '.join(RESPONSE_FORMATS)}")
        spec.response_format = rf
    if obj.get("tools") is not None:
        _check(isinstance(obj["tools"], list), line, "'tools' must be a list")
        spec.tools = obj["tools"]
        spec.model_format = obj.get("model_format")
        _check(isinstance(spec.model_format, str), line,
               "'tools' needs 'model_format' (the model's tool-call syntax, e.g. qwen3)")
        _check(rf is None or rf.get("type") == "text", line,
               "'tools' and a constraining 'response_format' do not go together")
    spec.tool_choice = obj.get("tool_choice", "auto")
    spec.reasoning = obj.get("reasoning")
    spec.parallel_tool_calls = bool(obj.get("parallel_tool_calls", True))
    if obj.get("max_tokens") is not None:
        _check(isinstance(obj["max_tokens"], int) and obj["max_tokens"] >= 1, line,
               "'max_tokens' must be a positive integer")
        spec.max_tokens = obj["max_tokens"]
    for key, lo, hi in (("temperature", 0.0, 100.0), ("top_p", 1e-9, 1.0)):
        if obj.get(key) is not None:
            v = obj[key]
            _check(isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi,
                   line, f"'{key}' must be a number in [{lo:g}, {hi:g}]")
            setattr(spec, key, float(v))
    if obj.get("seed") is not None:
        _check(isinstance(obj["seed"], int), line, "'seed' must be an integer")
        spec.seed = obj["seed"]
    return spec


def output_line(*, id: Any, text: str = "", message: Optional[dict] = None,
                finish_reason: str = "error", error: Optional[str] = None,
                prompt_tokens: int = 0, completion_tokens: int = 0, ttft_ms: float = 0.0,
                compile_ms: float = 0.0) -> str:
    """One JSONL output line."""
    return json.dumps({
        "id": id, "text": text, "message": message, "finish_reason": finish_reason,
        "error": error,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        "timing": {"ttft_ms": round(ttft_ms, 3), "compile_ms": round(compile_ms, 3)},
    }, ensure_ascii=False)
