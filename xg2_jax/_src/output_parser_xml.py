"""XML-style tool arguments back to JSON: the inverse of the parameter styles of
:class:`~xg2_jax.JSONSchemaFormat` (``native/src/frontends/structural_tag_xml.cc`` writes
the grammar for the same markers).

Each parameter is ``BEGIN(name) value END``; a plain string parameter's value is raw text
(one newline on each side, which the templates add, is dropped), a parameter with fixed
string choices is the choice, any other value is JSON.

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
from typing import Any, Iterator

__all__ = ["parse_xml_arguments", "XML_STYLES"]

_BAR = "\uff5c"  # the full-width bar of DeepSeek's DSML markers
# style -> (regex of a parameter's begin marker, capturing the name; its end marker)
XML_STYLES = {
    "qwen_xml": (re.compile(r"<parameter=([^>\n]*)>"), "</parameter>"),
    "minimax_xml": (re.compile(r'<parameter name="([^"]*)">'), "</parameter>"),
    "deepseek_xml": (re.compile(f'<{_BAR}DSML{_BAR}parameter name="([^"]*)" string="(?:true|false)">'),
                     f"</{_BAR}DSML{_BAR}parameter>"),
    "glm_xml": (re.compile(r"<arg_key>([^<]*)</arg_key>\s*<arg_value>"), "</arg_value>"),
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


def _value(raw: str, prop: Any) -> Any:
    if _is_plain_string(prop):
        if raw.startswith("\n"):
            raw = raw[1:]
        return raw[:-1] if raw.endswith("\n") else raw
    if _string_choices(prop):
        return raw.strip("\n")
    return json.loads(raw.strip(_WS))


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
    if style not in XML_STYLES:
        from xg2_jax._src.output_parser import OutputParseError

        raise OutputParseError(f"JSON argument style {style!r} cannot be parsed")
    begin_re, end = XML_STYLES[style]
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
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
            args[m.group(1)] = _value(text[m.end():close], props.get(m.group(1)))
        except json.JSONDecodeError:
            return
        pos = close + len(end)
        yield pos, dict(args)
        trail = pos
        while trail < len(text) and text[trail] in _WS:
            trail += 1
        if trail != pos:
            yield trail, dict(args)
