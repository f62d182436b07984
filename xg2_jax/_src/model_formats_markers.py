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

from xg2_jax._src.errors import StructuralTagError
from xg2_jax._src.structural_tag import (
    AnyTextFormat,
    AnyTokensFormat,
    ConstStringFormat,
    DispatchFormat,
    JSONSchemaFormat,
    OptionalFormat,
    OrFormat,
    PlusFormat,
    RepeatFormat,
    SequenceFormat,
    StarFormat,
    StructuralTag,
    TagFormat,
    TagsWithSeparatorFormat,
    TokenFormat,
    TokenTriggeredTagsFormat,
    TriggeredTagsFormat,
)

__all__ = ["bind_marker_tokens", "bind_for_tokenizer", "with_json_options"]

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


def _same(fmt, field: str, value):
    """``fmt`` with ``field`` set to ``value``, or ``fmt`` itself when nothing changed (so a
    subtree without markers stays the same object)."""
    old = getattr(fmt, field)
    if isinstance(value, list):
        unchanged = len(value) == len(old) and all(a is b for a, b in zip(value, old))
    else:
        unchanged = value is old
    return fmt if unchanged else dataclasses.replace(fmt, **{field: value})


def _recurse(fmt, fn, path: str):
    """``fn(child, child_path)`` over the children of a sequence, or or optional / star / plus
    (other formats are returned as they are)."""
    if isinstance(fmt, (SequenceFormat, OrFormat)):
        return _same(fmt, "elements", [fn(e, f"{path}.elements[{i}]")
                                       for i, e in enumerate(fmt.elements)])
    if isinstance(fmt, _CONTAINERS):
        return _same(fmt, "content", fn(fmt.content, f"{path}.content"))
    return fmt


class _Binder:
    def __init__(self, markers):
        # Longest first: a marker that extends another one wins.
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

    def bind(self, fmt, path: str):
        if isinstance(fmt, ConstStringFormat):
            parts = self.split(fmt.value)
            if not parts or (len(parts) == 1 and isinstance(parts[0], ConstStringFormat)):
                return fmt
            return parts[0] if len(parts) == 1 else SequenceFormat(elements=parts)
        if isinstance(fmt, TagFormat):
            return self.tag(fmt, path)
        if isinstance(fmt, TriggeredTagsFormat):
            return self.triggered(fmt, path)
        if isinstance(fmt, TagsWithSeparatorFormat):
            return _same(fmt, "tags", [self.tag(t, f"{path}.tags[{i}]")
                                       for i, t in enumerate(fmt.tags)])
        # A repeat's content is not resolved against the tokenizer: its markers stay text.
        return _recurse(fmt, self.bind, path)

    def _marker_at_end(self, text: str):
        return next((m for m in self.markers if text.endswith(m)), None)

    def tag(self, tag: TagFormat, path: str, *, keep_begin: bool = False,
            begin_marker: str | None = None) -> TagFormat:
        """A leading begin marker and a trailing end marker become tokens; the rest of
        ``begin``/``end`` moves into the content, so the text matched stays the same. Free text
        under an end token becomes token-level, so that token ends it."""
        begin, end, lead, tail = tag.begin, tag.end, [], []
        if isinstance(begin, str) and not keep_begin:
            marker = begin_marker or next((m for m in self.markers if begin.startswith(m)), None)
            if marker is not None:
                lead, begin = self.split(begin[len(marker):]), TokenFormat(token=marker)
        if isinstance(end, (list, tuple)) and any(self._marker_at_end(e) for e in end):
            raise StructuralTagError(
                f"{path}.end: token markers cannot bind a tag whose end is a list of "
                f"alternatives when one of them ends with a marker (got {list(end)!r}); use "
                "one end string or leave the tag unbound")
        end_marker = self._marker_at_end(end) if isinstance(end, str) else None
        if end_marker is not None:
            tail, end = self.split(end[:-len(end_marker)]), TokenFormat(token=end_marker)
        content = self.bind(tag.content, f"{path}.content")
        if end_marker is not None:
            content = self.token_level(content, f"{path}.content")
        if lead or tail:
            content = SequenceFormat(elements=[*lead, content, *tail])
        if begin is tag.begin and end is tag.end and content is tag.content:
            return tag
        return TagFormat(begin=begin, content=content, end=end)

    def triggered(self, fmt: TriggeredTagsFormat, path: str):
        """Dispatch on the marker token when every trigger and tag begins with it."""
        marker = next((m for m in self.markers
                       if all(t.startswith(m) for t in fmt.triggers)
                       and all(isinstance(t.begin, str) and t.begin.startswith(m) for t in fmt.tags)),
                      None)
        if marker is None:
            return _same(fmt, "tags", [self.tag(t, f"{path}.tags[{i}]", keep_begin=True)
                                       for i, t in enumerate(fmt.tags)])
        # The free text of a token-triggered format never holds special tokens but its
        # triggers; string excludes that are not markers cannot be said at the token level.
        return TokenTriggeredTagsFormat(
            trigger_tokens=[marker],
            tags=[self.tag(t, f"{path}.tags[{i}]", begin_marker=marker)
                  for i, t in enumerate(fmt.tags)],
            exclude_tokens=[e for e in fmt.excludes if e in self.markers and e != marker],
            at_least_one=fmt.at_least_one, stop_after_first=fmt.stop_after_first)

    def token_level(self, fmt, path: str):
        """The free text under an end token as token-level formats (nested tags keep theirs)."""
        if isinstance(fmt, AnyTextFormat):
            strays = [e for e in fmt.excludes if e not in self.markers]
            if strays or fmt.max_chars is not None:
                raise StructuralTagError(
                    f"{path}: free text under an end token must be token-level: its excludes "
                    f"must be markers (not {strays!r}) and max_chars unset")
            return AnyTokensFormat(exclude_tokens=list(fmt.excludes), max_tokens=fmt.max_tokens)
        if isinstance(fmt, (TriggeredTagsFormat, RepeatFormat, DispatchFormat)):
            raise StructuralTagError(
                f"{path}: an end token cannot close a {fmt.type} format (Repeat or Dispatch "
                "content, or string-triggered tags, would keep its free text string-level)")
        return _recurse(fmt, self.token_level, path)


def bind_marker_tokens(fmt, markers):
    """``fmt`` with the ``markers`` in tag begins/ends, triggers and const strings matched as
    their special tokens (compile with the model's tokenizer).

    Args:
        fmt: a format tree.
        markers: marker strings that are single special tokens of the model's tokenizer.

    Returns:
        The rewritten tree (markers inside JSON schemas and free text stay text; free text
        under an end token becomes :class:`AnyTokensFormat`, so that token ends it).

    Raises:
        StructuralTagError: (a ValueError) an end token over free text whose excludes are not
            markers or that has ``max_chars``, over a repeat, dispatch or string-triggered
            format, or a list of end alternatives one of which ends with a marker.
    """
    return _Binder(markers).bind(fmt, "format")


def bind_for_tokenizer(structural_tag, tokenizer_info):
    """A :class:`StructuralTag` whose ``marker_tokens`` are resolved: those ``tokenizer_info``
    has as special tokens (which are never text) bound as tokens, the rest left as text.

    Args:
        structural_tag: a :class:`StructuralTag` (other inputs are returned as they are).
        tokenizer_info: the compiling tokenizer, or None (every marker stays text).

    Returns:
        ``structural_tag`` without ``marker_tokens``, its format bound where that applies.

    Example:
        >>> from xg2_jax import TokenizerInfo
        >>> from xg2_jax._src.structural_tag import StructuralTag, TagFormat, AnyTextFormat
        >>> tag = StructuralTag(format=TagFormat(begin="<t>", content=AnyTextFormat(), end="</t>"),
        ...                     marker_tokens=("<t>",))
        >>> bind_for_tokenizer(tag, None).format.begin
        '<t>'
        >>> tok = TokenizerInfo(["a", "<t>", "</s>"], stop_token_ids=[2], special_token_ids=[1])
        >>> bind_for_tokenizer(tag, tok).format.begin
        TokenFormat(token='<t>')
    """
    if not isinstance(structural_tag, StructuralTag) or not structural_tag.marker_tokens:
        return structural_tag
    markers: list = []
    if tokenizer_info is not None:
        vocab = tokenizer_info.decoded_vocab
        control = (*tokenizer_info.special_token_ids, *tokenizer_info.stop_token_ids)
        special = {vocab[i] for i in control if 0 <= i < len(vocab)}
        markers = [m for m in structural_tag.marker_tokens if m.encode("utf-8") in special]
    fmt = bind_marker_tokens(structural_tag.format, markers) if markers else structural_tag.format
    return StructuralTag(format=fmt)
