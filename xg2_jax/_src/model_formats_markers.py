"""Rewrites of a built-in model format tree: marker strings bound as their special tokens
(``token_markers``) and the JSON options applied to every tool-argument schema.

Both are pure functions from a format tree to a new tree of the same plain formats, so an
output parser still walks tags, sequences and token-triggered tags.

Example:
    >>> from xg2_jax._src.structural_tag import TagFormat, AnyTextFormat
    >>> tag = TagFormat(begin="<think>", content=AnyTextFormat(), end="</think>")
    >>> bind_marker_tokens(tag, ["<think>", "</think>"]).begin
    TokenFormat(token='<think>')
"""

from __future__ import annotations

import dataclasses

from xg2_jax._src.structural_tag import (
    ConstStringFormat,
    JSONSchemaFormat,
    OptionalFormat,
    OrFormat,
    PlusFormat,
    SequenceFormat,
    StarFormat,
    TagFormat,
    TagsWithSeparatorFormat,
    TokenFormat,
    TokenTriggeredTagsFormat,
    TriggeredTagsFormat,
)

__all__ = ["bind_marker_tokens", "with_json_options"]

_CONTAINERS = (OptionalFormat, StarFormat, PlusFormat)


def with_json_options(fmt, *, any_order: bool, max_whitespace_cnt: int | None,
                      keep_excludes: bool = True):
    """``fmt`` with ``any_order`` and ``max_whitespace_cnt`` set on every
    :class:`JSONSchemaFormat` in it, and their ``excludes`` dropped unless ``keep_excludes``."""
    if not any_order and max_whitespace_cnt is None and keep_excludes:
        return fmt
    if isinstance(fmt, JSONSchemaFormat):
        return dataclasses.replace(fmt, any_order=any_order, max_whitespace_cnt=max_whitespace_cnt,
                                   excludes=fmt.excludes if keep_excludes else ())
    return _map_children(fmt, lambda child: with_json_options(
        child, any_order=any_order, max_whitespace_cnt=max_whitespace_cnt,
        keep_excludes=keep_excludes))


def _map_children(fmt, fn):
    if isinstance(fmt, (SequenceFormat, OrFormat)):
        return dataclasses.replace(fmt, elements=[fn(e) for e in fmt.elements])
    if isinstance(fmt, (*_CONTAINERS, TagFormat)):
        return dataclasses.replace(fmt, content=fn(fmt.content))
    if isinstance(fmt, (TriggeredTagsFormat, TagsWithSeparatorFormat, TokenTriggeredTagsFormat)):
        return dataclasses.replace(fmt, tags=[fn(t) for t in fmt.tags])
    return fmt


class _Binder:
    def __init__(self, markers):
        self.markers = sorted({m for m in markers if m}, key=len, reverse=True)

    def split(self, text: str) -> list:
        """``text`` as const strings and marker tokens, in order."""
        parts: list = []
        while text:
            hits = [(text.find(m), m) for m in self.markers if m in text]
            if not hits:
                parts.append(ConstStringFormat(value=text))
                break
            index, marker = min(hits, key=lambda h: (h[0], -len(h[1])))
            if index:
                parts.append(ConstStringFormat(value=text[:index]))
            parts.append(TokenFormat(token=marker))
            text = text[index + len(marker):]
        return parts

    def bind(self, fmt):
        if isinstance(fmt, ConstStringFormat):
            parts = self.split(fmt.value)
            return parts[0] if len(parts) == 1 else SequenceFormat(elements=parts) if parts else fmt
        if isinstance(fmt, TagFormat):
            return self.tag(fmt)
        if isinstance(fmt, TriggeredTagsFormat):
            return self.triggered(fmt)
        if isinstance(fmt, TagsWithSeparatorFormat):
            return dataclasses.replace(fmt, tags=[self.tag(t) for t in fmt.tags])
        return _map_children(fmt, self.bind)

    def tag(self, tag: TagFormat, *, keep_begin: bool = False) -> TagFormat:
        """A leading begin marker and a trailing end marker become tokens; the rest of
        ``begin``/``end`` moves into the content, so the text matched stays the same."""
        begin, end, lead, tail = tag.begin, tag.end, [], []
        if isinstance(begin, str) and not keep_begin:
            marker = next((m for m in self.markers if begin.startswith(m)), None)
            if marker is not None:
                lead, begin = self.split(begin[len(marker):]), TokenFormat(token=marker)
        if isinstance(end, str):
            marker = next((m for m in self.markers if end.endswith(m)), None)
            if marker is not None:
                tail, end = self.split(end[:-len(marker)]), TokenFormat(token=marker)
        content = self.bind(tag.content)
        if lead or tail:
            content = SequenceFormat(elements=[*lead, content, *tail])
        return TagFormat(begin=begin, content=content, end=end)

    def triggered(self, fmt: TriggeredTagsFormat):
        """Dispatch on the marker token when every trigger and tag begins with it."""
        marker = next((m for m in self.markers
                       if all(t.startswith(m) for t in fmt.triggers)
                       and all(isinstance(t.begin, str) and t.begin.startswith(m) for t in fmt.tags)),
                      None)
        if marker is None:
            return dataclasses.replace(fmt, tags=[self.tag(t, keep_begin=True) for t in fmt.tags])
        # The free text of a token-triggered format never holds special tokens but its
        # triggers; string excludes that are not markers cannot be said at the token level.
        return TokenTriggeredTagsFormat(
            trigger_tokens=[marker], tags=[self.tag(t) for t in fmt.tags],
            exclude_tokens=[e for e in fmt.excludes if e in self.markers and e != marker],
            at_least_one=fmt.at_least_one, stop_after_first=fmt.stop_after_first)


def bind_marker_tokens(fmt, markers):
    """``fmt`` with the ``markers`` in tag begins/ends, triggers and const strings matched as
    their special tokens (compile with the model's tokenizer).

    Args:
        fmt: a format tree.
        markers: marker strings that are single special tokens of the model's tokenizer.

    Returns:
        The rewritten tree (markers inside JSON schemas and free text stay text).
    """
    return _Binder(markers).bind(fmt)
