"""Parses a generated turn into an OpenAI-style assistant message by following the structural
tag the output was constrained by.

The parser walks the same format tree the grammar was built from (no per-model regexes):
constant strings and tag boundaries are matched literally, free text extends to the first
marker that ends it (a tag's end, a trigger, an excluded string: the same rule the grammar
enforces), JSON arguments are decoded with :mod:`json`, XML-style arguments by their
style's markers. A tag whose content holds a :class:`~xg2_jax.JSONSchemaFormat` is a tool
call (its tool is the one named in the tag's begin, among ``tools``); a tag around free text
that ends with ``</think>`` (or a Harmony analysis message) is reasoning; all other text is
content.

Example:
    >>> from xg2_jax import get_model_structural_tag
    >>> tools = [{"type": "function", "function": {"name": "get_weather",
    ...           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    >>> tag = get_model_structural_tag("qwen3", tools, reasoning=True)
    >>> text = ('<think>\\nrain?\\n</think>\\n\\n<tool_call>\\n{"name": "get_weather", '
    ...         '"arguments": {"city": "Paris"}}\\n</tool_call>')
    >>> msg = parse_structured_output(text, tag, tools=tools)
    >>> msg["reasoning_content"], msg["tool_calls"][0]["function"]
    ('rain?', {'name': 'get_weather', 'arguments': '{"city": "Paris"}'})
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any, Callable, Iterator, Optional, Union

from xg2_jax._src.errors import OutputParseError
from xg2_jax._src.output_parser_xml import parse_xml_arguments
from xg2_jax._src.structural_tag import StructuralTag, format_from_dict

__all__ = ["OutputParseError", "parse_structured_output"]

_MAX_STEPS = 200_000
_REGEX_SPAN = 512
# Reasoning blocks of the built-in formats: <think>..</think> (and </mm:think>), Harmony's
# analysis channel, Gemma 4's thought channel, Cohere's <|START_THINKING|>.
_REASONING_WORDS = ("think", "thought", "analysis")
# Cohere's text blocks: Command A Reasoning (Melody's cmd5 renderer) wraps a turn's text in
# <|START_TEXT|>, Command A's template in <|START_RESPONSE|>; the message is the text inside,
# as Melody's own parser returns it. The tag keeps the block as free text (as xgrammar's), so
# it is taken off here.
_TEXT_BLOCKS = (("<|START_TEXT|>", "<|END_TEXT|>"), ("<|START_RESPONSE|>", "<|END_RESPONSE|>"))
_WS = " \t\n\r"


@dataclasses.dataclass
class _Call:
    name: Optional[str]
    arguments: Any


# Events: ("text", str) | ("reasoning", str) | ("call", _Call)
Match = tuple[int, tuple]


class _Parser:
    def __init__(self, text: str, tools: list[dict], token_text: Callable[[Any], str]):
        self.text, self.tools, self.token_text = text, tools, token_text
        self.steps = 0

    def tick(self) -> None:
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise OutputParseError("the output is too ambiguous to parse within the step limit")

    # ------------------------------------------------------------------ free text
    def _text_ends(self, pos: int, stops: tuple, max_chars: Optional[int]) -> Iterator[int]:
        """Ends of free text from ``pos``: every position up to the first stop marker
        (shortest first)."""
        limit = len(self.text)
        for s in stops:
            if s:
                i = self.text.find(s, pos)
                if i >= 0:
                    limit = min(limit, i)
        if max_chars is not None:
            limit = min(limit, pos + max_chars)
        for end in range(pos, limit + 1):
            self.tick()
            yield end

    # ------------------------------------------------------------------ formats
    def match(self, fmt: Any, pos: int, follow: tuple) -> Iterator[Match]:
        """Every way ``fmt`` matches from ``pos``: ``(end, events)``. ``follow`` holds the
        strings that may end free text here (the enclosing tag's end)."""
        self.tick()
        kind = fmt.type
        handler = getattr(self, "_m_" + kind, None)
        if handler is None:
            raise OutputParseError(f"format type {kind!r} cannot be parsed")
        yield from handler(fmt, pos, follow)

    def _literal(self, s: str, pos: int) -> Iterator[Match]:
        if self.text.startswith(s, pos):
            yield pos + len(s), ()

    def _m_const_string(self, fmt, pos, follow):
        yield from self._literal(fmt.value, pos)

    def _m_token(self, fmt, pos, follow):
        yield from self._literal(self.token_text(fmt.token), pos)

    def _m_any_text(self, fmt, pos, follow):
        for end in self._text_ends(pos, tuple(fmt.excludes) + follow, fmt.max_chars):
            yield end, (("text", self.text[pos:end]),)

    def _m_any_tokens(self, fmt, pos, follow):
        for end in self._text_ends(pos, follow, None):
            yield end, (("text", self.text[pos:end]),)

    _m_exclude_token = _m_any_tokens
    _m_grammar = _m_any_tokens

    def _m_regex(self, fmt, pos, follow):
        pattern = re.compile(fmt.pattern)
        for end in range(pos, min(len(self.text), pos + _REGEX_SPAN) + 1):
            self.tick()
            if pattern.fullmatch(self.text, pos, end):  # structure (ids, blank lines), not text
                yield end, ()

    def _m_json_schema(self, fmt, pos, follow):
        if fmt.style != "json":
            yield from self._xml_arguments(fmt, pos, follow)
            return
        start = pos
        while start < len(self.text) and self.text[start] in _WS:
            start += 1
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, start)
        except json.JSONDecodeError:
            return
        yield end, (("json", value),)
        trail = end
        while trail < len(self.text) and self.text[trail] in _WS:
            trail += 1
        if trail != end:
            yield trail, (("json", value),)

    def _xml_arguments(self, fmt, pos, follow):
        for end, value in parse_xml_arguments(self.text, pos, fmt.style, fmt.json_schema,
                                              follow):
            self.tick()
            yield end, (("json", value),)

    def _m_sequence(self, fmt, pos, follow):
        yield from self._seq(list(fmt.elements), pos, follow)

    def _seq(self, elements: list, pos: int, follow: tuple) -> Iterator[Match]:
        if not elements:
            yield pos, ()
            return
        head, rest = elements[0], elements[1:]
        head_follow = _first_strings(rest[0]) if rest else follow
        for mid, ev in self.match(head, pos, head_follow):
            for end, ev2 in self._seq(rest, mid, follow):
                yield end, ev + ev2

    def _m_or(self, fmt, pos, follow):
        for e in fmt.elements:
            yield from self.match(e, pos, follow)

    def _m_optional(self, fmt, pos, follow):
        yield from self.match(fmt.content, pos, follow)
        yield pos, ()

    def _repeat(self, content, pos, follow, lo: int, hi: Optional[int]) -> Iterator[Match]:
        if hi is None or hi > 0:
            for mid, ev in self.match(content, pos, follow):
                if mid == pos:
                    continue
                for end, ev2 in self._repeat(content, mid, follow, max(lo - 1, 0),
                                             None if hi is None else hi - 1):
                    yield end, ev + ev2
        if lo == 0:
            yield pos, ()

    def _m_star(self, fmt, pos, follow):
        yield from self._repeat(fmt.content, pos, follow, 0, None)

    def _m_plus(self, fmt, pos, follow):
        yield from self._repeat(fmt.content, pos, follow, 1, None)

    def _m_repeat(self, fmt, pos, follow):
        yield from self._repeat(fmt.content, pos, follow, fmt.min,
                                None if fmt.max < 0 else fmt.max)

    def _m_tag(self, fmt, pos, follow):
        begin = fmt.begin if isinstance(fmt.begin, str) else self.token_text(fmt.begin.token)
        ends = _tag_ends(fmt, self.token_text)
        if not self.text.startswith(begin, pos):
            return
        for mid, ev in self.match(fmt.content, pos + len(begin), ends):
            for end_str in ends:
                if self.text.startswith(end_str, mid):
                    yield mid + len(end_str), (self._classify(fmt, begin, end_str, ev),)

    def _m_tags_with_separator(self, fmt, pos, follow):
        def rest(p, count):
            if not (fmt.stop_after_first and count):
                for tag in fmt.tags:
                    start = p
                    if count:
                        if not self.text.startswith(fmt.separator, p):
                            continue
                        start = p + len(fmt.separator)
                    for mid, ev in self.match(tag, start, follow):
                        for end, ev2 in rest(mid, count + 1):
                            yield end, ev + ev2
            if count or not fmt.at_least_one:
                yield p, ()

        yield from rest(pos, 0)

    def _triggered(self, pos, follow, triggers, starts, excludes, at_least_one, stop_after_first):
        """Free text with tags each starting at a trigger. ``starts(p)`` yields the matches
        of a tag (or a dispatch continuation) at a trigger occurrence ``p``."""
        def rest(p, count):
            stops = tuple(triggers) + tuple(excludes) + follow
            done = stop_after_first and count
            for end in self._text_ends(p, stops if not done else follow, None):
                text_ev = (("text", self.text[p:end]),) if end > p else ()
                at_trigger = any(self.text.startswith(t, end) for t in triggers)
                if at_trigger and not done:
                    for mid, ev in starts(end):
                        for fin, ev2 in rest(mid, count + 1):
                            yield fin, text_ev + ev + ev2
                if count or not at_least_one:
                    yield end, text_ev

        yield from rest(pos, 0)

    def _m_triggered_tags(self, fmt, pos, follow):
        def starts(p):
            for tag in fmt.tags:
                yield from self.match(tag, p, follow)

        yield from self._triggered(pos, follow, fmt.triggers, starts, fmt.excludes,
                                   fmt.at_least_one, fmt.stop_after_first)

    def _m_token_triggered_tags(self, fmt, pos, follow):
        triggers = [self.token_text(t) for t in fmt.trigger_tokens]

        def starts(p):
            for tag in fmt.tags:
                yield from self.match(tag, p, follow)

        yield from self._triggered(pos, follow, triggers, starts, (), fmt.at_least_one,
                                   fmt.stop_after_first)

    def _m_dispatch(self, fmt, pos, follow):
        triggers = [t for t, _ in fmt.rules]

        def starts(p):
            for trigger, cont in fmt.rules:
                if self.text.startswith(trigger, p):
                    yield from self.match(cont, p + len(trigger), follow)

        yield from self._triggered(pos, follow, triggers, starts, fmt.excludes, False,
                                   not fmt.loop)

    # ------------------------------------------------------------------ events
    def _classify(self, fmt, begin: str, end: str, events: tuple):
        values = [e[1] for e in events if e[0] == "json"]
        if values:
            return ("call", _Call(self._tool_name(begin, fmt), values[0]))
        text = "".join(e[1] for e in events if e[0] in ("text", "reasoning"))
        lead = "".join(_first_strings(fmt.content))
        if any(w in (begin + lead + end).lower() for w in _REASONING_WORDS):
            return ("reasoning", text)
        return ("group", events)

    def _tool_name(self, begin: str, fmt) -> Optional[str]:
        """The tool whose name the tag's literal text holds (its begin, or a constant before
        the arguments, as Gemma's ``call:NAME`` and Cohere's ``name="NAME"``)."""
        schemas = _json_schemas(fmt.content)
        literal = begin + "\0".join(_literals(fmt.content))
        named = [t for t in self.tools if t["name"] in literal]
        if len(named) > 1:  # names that contain one another: the schema decides, then length
            exact = [t for t in named if t.get("parameters") in schemas] or named
            named = sorted(exact, key=lambda t: -len(t["name"]))
        return named[0]["name"] if named else None


def _first_strings(fmt: Any) -> tuple:
    """Literal strings a format can start with (what ends the free text before it)."""
    kind = fmt.type
    if kind == "const_string":
        return (fmt.value,) if fmt.value else ()
    if kind == "tag":
        return (fmt.begin,) if isinstance(fmt.begin, str) and fmt.begin else ()
    if kind == "sequence" and fmt.elements:
        return _first_strings(fmt.elements[0])
    if kind == "or":
        return tuple(s for e in fmt.elements for s in _first_strings(e))
    if kind in ("triggered_tags",):
        return tuple(fmt.triggers)
    return ()


def _literals(fmt: Any) -> list:
    """Constant strings of a format tree outside its JSON values."""
    if fmt.type == "const_string":
        return [fmt.value]
    if fmt.type == "json_schema":
        return []
    return [s for c in _children(fmt) for s in _literals(c)]


def _tag_ends(fmt, token_text) -> tuple:
    end = fmt.end
    if isinstance(end, str):
        return (end,)
    if isinstance(end, (list, tuple)):
        return tuple(end)
    return (token_text(end.token),)


def _children(fmt: Any) -> list:
    """The sub-formats of a format node (its ``content`` and ``elements``)."""
    out = []
    for attr in ("content", "elements"):
        child = getattr(fmt, attr, None)
        for c in (child if isinstance(child, (list, tuple)) else [child]):
            if c is not None and hasattr(c, "type"):
                out.append(c)
    return out


def _json_schemas(fmt: Any) -> list:
    if fmt.type == "json_schema":
        return [fmt.json_schema]
    return [s for c in _children(fmt) for s in _json_schemas(c)]


def _flatten(events: tuple, out: list) -> None:
    for e in events:
        if e[0] == "group":
            _flatten(e[1], out)
        else:
            out.append(e)


def _tools_list(tools: Any) -> list[dict]:
    out = []
    for t in tools or []:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out.append({"name": fn["name"], "parameters": fn.get("parameters")})
    return out


def _call_id(index: int, name: str, arguments: str) -> str:
    digest = hashlib.sha1(f"{index}:{name}:{arguments}".encode()).hexdigest()[:12]
    return f"call_{index}_{digest}"


def _unwrap_text_block(content: str) -> str:
    for opener, closer in _TEXT_BLOCKS:
        if content.startswith(opener) and content.endswith(closer) and content.count(opener) == 1:
            return content[len(opener):len(content) - len(closer)].strip()
    return content


def parse_structured_output(text: str, structural_tag: Union[StructuralTag, dict, Any], *,
                            tools: Any = None,
                            token_text: Optional[Callable[[Any], str]] = None) -> dict:
    """The OpenAI-style assistant message of ``text`` generated under ``structural_tag``.

    Args:
        text: the generated text (special tokens decoded as their text).
        structural_tag: the :class:`~xg2_jax.StructuralTag` (or its dict, or a format
            object) the generation was constrained by.
        tools: the request's tools (OpenAI shape), to name the calls.
        token_text: maps a token (id or string) of a token-level format to its text
            (default: strings as themselves).

    Returns:
        ``{"role": "assistant", "content": str | None, "reasoning_content": str | None,
        "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]}``;
        ``arguments`` is a JSON string; whitespace around content and reasoning is stripped;
        when the tag has neither calls nor reasoning in ``text``, the whole text is content.

    Raises:
        OutputParseError: ``text`` does not follow the tag (e.g. cut by the token budget).

    Example: see the module docstring.
    """
    fmt = structural_tag
    if isinstance(fmt, dict):
        fmt = format_from_dict(fmt["format"] if fmt.get("type") == "structural_tag" else fmt)
    elif isinstance(fmt, StructuralTag):
        fmt = fmt.format
    if isinstance(fmt, dict):
        fmt = format_from_dict(fmt)
    parser = _Parser(text, _tools_list(tools), token_text or (lambda t: str(t)))
    for end, events in parser.match(fmt, 0, ()):
        if end == len(text):
            break
    else:
        raise OutputParseError("the output does not follow its structural tag (cut by the "
                               "token budget, or generated under another structure)")
    flat: list = []
    _flatten(events, flat)
    content = "".join(e[1] for e in flat if e[0] == "text").strip()
    reasoning = "".join(e[1] for e in flat if e[0] == "reasoning").strip()
    if not any(e[0] in ("call", "reasoning") for e in flat):
        content = text.strip()  # a structure without calls or reasoning: the text is content
    content = _unwrap_text_block(content)
    calls = []
    for e in flat:
        if e[0] == "call" and e[1].name is not None:
            args = json.dumps(e[1].arguments, ensure_ascii=False)
            calls.append({"id": _call_id(len(calls), e[1].name, args), "type": "function",
                          "function": {"name": e[1].name, "arguments": args}})
    return {"role": "assistant", "content": content or None,
            "reasoning_content": reasoning or None, "tool_calls": calls}
