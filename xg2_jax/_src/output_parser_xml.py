"""XML-style tool arguments back to JSON: the inverse of the parameter styles of
:class:`~xg2_jax.JSONSchemaFormat` (``native/src/frontends/structural_tag_xml.cc`` writes
the grammar for the same markers).

Each parameter is ``BEGIN(name) value END``; a plain string parameter's value is raw text
(one newline on each side, which the templates add, is dropped), a parameter with fixed
string choices is the choice, a value of a type other than string is JSON, and one that may
be either is JSON when it reads as a non-string JSON value, else raw text (as the templates
write a str raw and anything else as JSON). DeepSeek's DSML says which in its
``string`` attribute: ``"true"`` is the raw text as it stands, ``"false"`` JSON.

Example:
    >>> schema = {"type": "object", "properties": {"city": {"type": "string"},
    ...                                            "days": {"type": "integer"}}}
    >>> text = "<parameter=city>\\nParis\\n</parameter>\\n<parameter=days>\\n3\\n</parameter>\\n"
    >>> [v for _, v in parse_xml_arguments(text, 0, "qwen_xml", schema, ())][-1]
    {'city': 'Paris', 'days': 3}
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator, Optional

from xg2_jax._src.errors import OutputParseError

__all__ = ["parse_xml_arguments", "XML_STYLES"]

_BAR = "\uff5c"  # the full-width bar of DeepSeek's DSML markers
# style -> (regex of a parameter's begin marker, capturing the name; its end marker)
XML_STYLES = {
    "qwen_xml": (re.compile(r"<parameter=([^>\n]*)>"), "</parameter>"),
    "minimax_xml": (re.compile(r'<parameter name="([^"]*)">'), "</parameter>"),
    "deepseek_xml": (re.compile(f'<{_BAR}DSML{_BAR}parameter name="([^"]*)" string="(true|false)">'),
                     f"</{_BAR}DSML{_BAR}parameter>"),
    "glm_xml": (re.compile(r"<arg_key>([^<]*)</arg_key>\s*<arg_value>"), "</arg_value>"),
    "deepseek_v4_1_xml": (re.compile(f'<{_BAR}DSML{_BAR} parameter name="([^"]*)" '
                                     'string="(true|false)">'),
                          f"</{_BAR}DSML{_BAR} parameter>"),
    "kimi_k3_xml": (re.compile(r'<parameter name="([^"]*)"[^>]*>'), "</parameter>"),
}
_WS = " \t\n\r"


def _is_plain_string(prop: Any) -> bool:
    return isinstance(prop, dict) and prop.get("type") == "string" and not (
        "enum" in prop or "const" in prop)


def _string_choices(prop: Any) -> bool:
    if not isinstance(prop, dict):
        return False
    values = prop.get("enum", [prop["const"]] if "const" in prop else None)
    return isinstance(values, list) and bool(values) and all(isinstance(v, str) for v in values)


def _resolved(prop: Any, schema: Any) -> Any:
    """``prop`` through its chain of local ``$ref``s (``#/$defs/...``, ``#/definitions/...``)."""
    seen = set()
    while isinstance(prop, dict) and isinstance(prop.get("$ref"), str) and prop["$ref"] not in seen:
        seen.add(prop["$ref"])
        head, _, name = prop["$ref"].rpartition("/")
        defs = schema.get(head[2:]) if isinstance(schema, dict) and head in ("#/$defs", "#/definitions") else None
        if not isinstance(defs, dict) or name not in defs:
            break
        prop = defs[name]
    return prop


def _value(raw: str, prop: Any, schema: Any = None) -> Any:
    prop = _resolved(prop, schema)
    if _is_plain_string(prop):
        if raw.startswith("\n"):
            raw = raw[1:]
        return raw[:-1] if raw.endswith("\n") else raw
    if _string_choices(prop):
        return raw.strip("\n")
    if isinstance(prop, dict) and prop.get("type") not in (None, "string") and not isinstance(
            prop.get("type"), list):
        return json.loads(raw.strip(_WS))
    # A schema that may take strings beside other values (a union, a type list, no type): the
    # templates write a str raw and anything else as JSON, so JSON text other than a string
    # is that value, and the rest the raw string.
    try:
        value = json.loads(raw.strip(_WS))
    except json.JSONDecodeError:
        value = raw
    types = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(value, str) or (isinstance(types, list) and not _json_types(value) & set(types)):
        return _value(raw, {"type": "string"})
    return value


def _json_types(value: Any) -> set:
    """The JSON Schema type names a non-string JSON value has."""
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, (int, float)):
        return {"number", "integer"} if float(value).is_integer() else {"number"}
    return {"null"} if value is None else {"array"} if isinstance(value, list) else {"object"}


def parse_xml_arguments(text: str, pos: int, style: str, schema: Any, follow: tuple
                        ) -> Iterator[tuple[int, dict]]:
    """Every way XML-style parameters start at ``pos``: ``(end, arguments so far)`` after
    each parameter (and after none), shortest first.

    Args:
        text: the whole output.
        pos: where the parameters begin.
        style: one of :data:`XML_STYLES`.
        schema: the tool's parameters schema (to tell raw strings from JSON values).
        follow: unused (the markers delimit every value).

    Raises:
        ValueError: an unknown style (from the parser: OutputParseError).
    """
    del follow
    if style in _NESTED_STYLES:
        yield from _NESTED_STYLES[style](text, pos, schema)
        return
    if style not in XML_STYLES:
        raise OutputParseError(f"JSON argument style {style!r} cannot be parsed")
    begin_re, end = XML_STYLES[style]
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    # A parameter the schema does not name follows additionalProperties (its grammar does).
    extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
    extra = extra if isinstance(extra, dict) else None
    args: dict = {}
    yield pos, dict(args)
    while True:
        p = pos
        while p < len(text) and text[p] in _WS:
            p += 1
        m = begin_re.match(text, p)
        if m is None:
            return
        close = text.find(end, m.end())
        if close < 0:
            return
        try:
            raw = text[m.end():close]
            if m.re.groups == 2:
                # DSML names the value's kind: string="true" is the raw text itself (DeepSeek's
                # decode_dsml_to_arguments), string="false" JSON.
                args[m.group(1)] = raw if m.group(2) == "true" else json.loads(raw.strip(_WS))
            else:
                args[m.group(1)] = _value(raw, props.get(m.group(1), extra), schema)
        except json.JSONDecodeError:
            return
        pos = close + len(end)
        yield pos, dict(args)
        trail = pos
        while trail < len(text) and text[trail] in _WS:
            trail += 1
        if trail != pos:
            yield trail, dict(args)


# ---------------------------------------------------------------------- nested value styles
GEMMA_QUOTE = '<|"|>'


def _gemma_value(text: str, pos: int) -> tuple[Any, int]:
    """Gemma 4's format_argument: ``<|"|>`` strings, ``{key:value,...}`` with bare keys,
    ``[...]``, JSON literals; no whitespace."""
    if text.startswith(GEMMA_QUOTE, pos):
        close = text.find(GEMMA_QUOTE, pos + len(GEMMA_QUOTE))
        if close < 0:
            raise ValueError("unterminated string")
        return text[pos + len(GEMMA_QUOTE):close], close + len(GEMMA_QUOTE)
    if text.startswith("{", pos):
        out: dict = {}
        pos += 1
        while not text.startswith("}", pos):
            colon = text.find(":", pos)
            if colon < 0:
                raise ValueError("no ':' after a key")
            key = text[pos:colon]
            out[key], pos = _gemma_value(text, colon + 1)
            if text.startswith(",", pos):
                pos += 1
        return out, pos + 1
    if text.startswith("[", pos):
        items = []
        pos += 1
        while not text.startswith("]", pos):
            item, pos = _gemma_value(text, pos)
            items.append(item)
            if text.startswith(",", pos):
                pos += 1
        return items, pos + 1
    value, end = json.JSONDecoder().raw_decode(text, pos)
    return value, end


def _gemma_arguments(text: str, pos: int, schema: Any):
    try:
        value, end = _gemma_value(text, pos)
    except (ValueError, IndexError):
        return
    yield end, value


_COHERE_OPEN = re.compile(r'<cofl:value(?: name="([^"]*)")? type="(raw|dict|list|json)">')
_COHERE_CLOSE = "</cofl:value>"


def _cohere_node(text: str, pos: int) -> tuple[Optional[str], Any, int]:
    m = _COHERE_OPEN.match(text, pos)
    if m is None:
        raise ValueError("no value node")
    name, kind, pos = m.group(1), m.group(2), m.end()
    if kind in ("raw", "json"):
        close = text.find(_COHERE_CLOSE, pos)
        if close < 0:
            raise ValueError("unterminated value")
        raw = text[pos:close]
        return name, raw if kind == "raw" else json.loads(raw), close + len(_COHERE_CLOSE)
    children = []
    while not text.startswith(_COHERE_CLOSE, pos):
        child_name, child, pos = _cohere_node(text, pos)
        children.append((child_name, child))
    value = dict(children) if kind == "dict" else [c for _, c in children]
    return name, value, pos + len(_COHERE_CLOSE)


def _cohere_arguments(text: str, pos: int, schema: Any):
    args: dict = {}
    yield pos, dict(args)
    while True:
        try:
            name, value, pos = _cohere_node(text, pos)
        except (ValueError, json.JSONDecodeError):
            return
        args[name] = value
        yield pos, dict(args)


M3_MARK = "]<]minimax[>["
_M3_OPEN = re.compile(re.escape(M3_MARK) + r"<([^>/]+)>")


def _m3_node(text: str, pos: int, schema: Any) -> tuple[str, Any, int]:
    """MiniMax-M3's to_xml: ``MARK<key>value MARK</key>``; objects nest tags, lists nest
    ``<item>`` tags, leaves are raw strings or bare JSON (the schema tells which)."""
    m = _M3_OPEN.match(text, pos)
    if m is None:
        raise ValueError("no tag")
    key, pos = m.group(1), m.end()
    close = f"{M3_MARK}</{key}>"
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind in ("object", "array") or (kind is None and _M3_OPEN.match(text, pos)):
        children = []
        while not text.startswith(close, pos):
            sub = {}
            if isinstance(schema, dict):
                sub = (schema.get("items") if kind == "array" else
                       schema.get("properties", {}).get(_M3_OPEN.match(text, pos).group(1)
                                                        if _M3_OPEN.match(text, pos) else ""))
            child_key, child, pos = _m3_node(text, pos, sub or {})
            children.append((child_key, child))
        value = [c for _, c in children] if kind == "array" or (
            kind is None and children and all(k == "item" for k, _ in children)) \
            else dict(children)
        return key, value, pos + len(close)
    end = text.find(close, pos)
    if end < 0:
        raise ValueError("unterminated tag")
    raw = text[pos:end]
    return key, raw if kind == "string" else _json_or_raw(raw), end + len(close)


def _json_or_raw(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _m3_arguments(text: str, pos: int, schema: Any):
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    args: dict = {}
    yield pos, dict(args)
    while True:
        m = _M3_OPEN.match(text, pos)
        if m is None:
            return
        try:
            key, value, pos = _m3_node(text, pos, props.get(m.group(1), {}))
        except (ValueError, AttributeError):
            return
        args[key] = value
        yield pos, dict(args)


_NESTED_STYLES = {"gemma": _gemma_arguments, "cohere_xml": _cohere_arguments,
                  "minimax_m3_xml": _m3_arguments}
