"""Typed builders for the Structural Tag DSL.

A structural tag describes an LLM output as a tree of *formats*: literal strings, JSON values
that follow a schema, free text, tags (``begin content end``), free text that switches into a
tag when a trigger string appears, and so on. The wire form is the JSON envelope
``{"type": "structural_tag", "format": {...}}`` with the same field names as xgrammar's
structural tags; :meth:`GrammarCompiler.compile_structural_tag` takes that envelope as a ``str``
or ``dict``. The classes here only build it: every class is a frozen, keyword-only dataclass
with ``to_dict()`` and ``to_json()``, and checks the obvious Python-side type errors
(a ``str`` where a list is expected, a ``bool`` where an ``int`` is expected, ...). The native
compiler validates the semantics and reports errors with a path into the tree.

Example:
    >>> from xg2_jax import StructuralTag, TriggeredTagsFormat, TagFormat, JSONSchemaFormat
    >>> tag = StructuralTag(format=TriggeredTagsFormat(
    ...     triggers=["<tool_call>"],
    ...     tags=[TagFormat(begin='<tool_call>{"name": "f", "arguments": ',
    ...                     content=JSONSchemaFormat(json_schema={"type": "object"}),
    ...                     end="}</tool_call>")]))
    >>> tag.to_dict()["format"]["type"]
    'triggered_tags'

Nested ``content``/``elements`` may also be plain ``dict`` formats; they are passed through
as they are.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Union

from xg2_jax._src.pydantic_names import PydanticNames
from xg2_jax._src.structural_tag_checks import (
    FieldList,
    _check_bool,
    _check_int,
    _check_str,
    _check_str_list,
    _check_token_list,
    _fail,
)

__all__ = ["AnyTextFormat", "AnyTokensFormat", "ConstStringFormat", "DispatchFormat",
           "ExcludeTokenFormat", "Format", "GrammarFormat", "JSONSchemaFormat", "OptionalFormat",
           "OrFormat", "PlusFormat", "QwenXMLParameterFormat", "RegexFormat", "RepeatFormat",
           "SequenceFormat", "StarFormat", "StructuralTag", "TagFormat",
           "TagsWithSeparatorFormat", "TokenFormat", "TokenTriggeredTagsFormat",
           "TriggeredTagsFormat", "format_from_dict"]

JSON_SCHEMA_STYLES = ("json", "gemma", "cohere_xml", "minimax_m3_xml", "qwen_xml", "minimax_xml",
                      "deepseek_xml", "deepseek_v4_1_xml", "glm_xml", "kimi_k3_xml")


def _check_format(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, (_FormatBase, dict)):
        _fail(owner, name, "a format object or dict", value)


def _check_format_list(owner: str, name: str, value: Any) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        _fail(owner, name, "a list of formats", value)
    for item in value:
        _check_format(owner, f"{name}[]", item)
    return FieldList(value)


def _to_plain(value: Any) -> Any:
    """Recursively turns builders, tuples and nested containers into JSON-ready values."""
    if isinstance(value, _FormatBase):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_plain(v) for k, v in value.items()}
    return value


class _FormatBase(PydanticNames):
    """Shared ``to_dict``/``to_json`` for the format dataclasses."""

    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The format as a JSON-ready ``dict`` (``{"type": ..., <fields>}``).

        Returns:
            A new dict; nested formats are converted too.
        """
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = _to_plain(getattr(self, f.name))
        return out

    def to_json(self, **json_kwargs: Any) -> str:
        """The format as JSON text (``json.dumps`` of :meth:`to_dict`)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, **json_kwargs)

    _from_plain = classmethod(lambda cls, data: format_from_dict(data))  # PydanticNames' reader


# --------------------------------------------------------------------------------------------
# Leaf formats
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class ConstStringFormat(_FormatBase):
    """Exactly the string ``value``.

    Example:
        >>> ConstStringFormat(value="</think>").to_dict()
        {'type': 'const_string', 'value': '</think>'}
    """

    type: ClassVar[str] = "const_string"
    value: str

    def __post_init__(self) -> None:
        _check_str("ConstStringFormat", "value", self.value)


@dataclass(frozen=True, kw_only=True)
class JSONSchemaFormat(_FormatBase):
    """A value that follows ``json_schema``, written in ``style``.

    Args:
        json_schema: a JSON Schema (dict, or ``True``/``False``).
        style: ``"json"`` (plain JSON), ``"gemma"`` (Gemma 4's tool-call arguments:
            ``{key:<|"|>text<|"|>,n:1}``, bare keys in the template's sorted order, raw strings
            between ``<|"|>`` delimiters), ``"cohere_xml"`` (Cohere's nested value nodes
            ``<cofl:value name="k" type="raw|json|dict|list">v</cofl:value>``),
            ``"minimax_m3_xml"`` (MiniMax-M3's nested tags ``]<]minimax[>[<k>v]<]minimax[>[</k>``,
            list items as ``<item>`` tags), or an XML
            parameter style of a model family:
            ``"qwen_xml"`` (``<parameter=k>v</parameter>``), ``"minimax_xml"``
            (``<parameter name="k">v</parameter>``), ``"deepseek_xml"`` (DSML
            ``<｜DSML｜parameter name="k" string="true|false">v</｜DSML｜parameter>``),
            ``"deepseek_v4_1_xml"`` (the same with a space after each ``｜DSML｜``),
            ``"glm_xml"`` (``<arg_key>k</arg_key><arg_value>v</arg_value>``), ``"kimi_k3_xml"``
            (``<|open|>argument key="k" type="string"<|sep|>v<|close|>argument<|sep|>``, the
            type attribute pinned to the property's type; numbers are ``"number"``).
        any_order: object properties may come in any order (required ones still appear
            once each).
        max_whitespace_cnt: at most this many consecutive whitespace characters (None: no
            limit).
        excludes: substrings that must not occur in string values or property names
            (xgrammar's field; refused with the ``cohere_xml`` and ``minimax_m3_xml`` styles).

    Example:
        >>> JSONSchemaFormat(json_schema={"type": "integer"}).to_dict()["style"]
        'json'
    """

    type: ClassVar[str] = "json_schema"
    json_schema: Union[dict, bool]
    style: str = "json"
    any_order: bool = False
    max_whitespace_cnt: int | None = None
    excludes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.json_schema, (dict, bool)):
            _fail("JSONSchemaFormat", "json_schema", "dict or bool", self.json_schema)
        _check_str("JSONSchemaFormat", "style", self.style)
        if self.style not in JSON_SCHEMA_STYLES:
            raise ValueError(f"JSONSchemaFormat.style: {self.style!r} is not one of "
                             f"{', '.join(JSON_SCHEMA_STYLES)}")
        _check_bool("JSONSchemaFormat", "any_order", self.any_order)
        _check_int("JSONSchemaFormat", "max_whitespace_cnt", self.max_whitespace_cnt,
                   optional=True)
        object.__setattr__(self, "excludes", _check_str_list("JSONSchemaFormat", "excludes",
                                                             self.excludes))

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        for key, default in (("any_order", False), ("max_whitespace_cnt", None), ("excludes", [])):
            if out[key] == default:
                del out[key]                # left out: the default
        return out


@dataclass(frozen=True, kw_only=True)
class QwenXMLParameterFormat(_FormatBase):
    """Deprecated (xgrammar's wire type ``qwen_xml_parameter``): Qwen's XML tool-call
    parameters ``<parameter=k>v</parameter>`` for ``json_schema``; the same language as
    ``JSONSchemaFormat(json_schema=..., style="qwen_xml")``, which new code should use. Kept so
    serialized structural tags of this type still load.

    Example:
        >>> QwenXMLParameterFormat(json_schema={"type": "object"}).to_dict()["type"]
        'qwen_xml_parameter'
    """

    type: ClassVar[str] = "qwen_xml_parameter"
    json_schema: Union[dict, bool]

    def __post_init__(self) -> None:
        if not isinstance(self.json_schema, (dict, bool)):
            _fail("QwenXMLParameterFormat", "json_schema", "dict or bool", self.json_schema)


@dataclass(frozen=True, kw_only=True)
class GrammarFormat(_FormatBase):
    """Text that matches ``grammar``: EBNF (rule ``root`` is the start) or, with
    ``syntax="lark"``, a Lark grammar (rule ``start``; ``<special tokens>`` need a compiler's
    tokenizer, as in ``GrammarCompiler.compile_structural_tag``).

    Example:
        >>> GrammarFormat(grammar='root ::= "yes" | "no"').type
        'grammar'
        >>> GrammarFormat(grammar='start: "yes" | "no"', syntax="lark").to_dict()["syntax"]
        'lark'
    """

    type: ClassVar[str] = "grammar"
    grammar: str
    syntax: str = "ebnf"

    def __post_init__(self) -> None:
        _check_str("GrammarFormat", "grammar", self.grammar)
        _check_str("GrammarFormat", "syntax", self.syntax)
        if self.syntax not in ("ebnf", "lark"):
            raise ValueError(f"GrammarFormat.syntax must be \"ebnf\" or \"lark\", got {self.syntax!r}")

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if out["syntax"] == "ebnf":
            del out["syntax"]               # absent means EBNF
        return out


@dataclass(frozen=True, kw_only=True)
class RegexFormat(_FormatBase):
    """Text that matches the regular expression ``pattern`` (whole match).

    Example:
        >>> RegexFormat(pattern=r"\\d+").to_dict()
        {'type': 'regex', 'pattern': '\\\\d+'}
    """

    type: ClassVar[str] = "regex"
    pattern: str

    def __post_init__(self) -> None:
        _check_str("RegexFormat", "pattern", self.pattern)


@dataclass(frozen=True, kw_only=True)
class AnyTextFormat(_FormatBase):
    """Any text that contains none of ``excludes``, at most ``max_chars`` characters.

    Inside a tag, the text ends where the tag's end string begins.

    Example:
        >>> AnyTextFormat(excludes=["<think>"]).to_dict()
        {'type': 'any_text', 'excludes': ['<think>']}
    """

    type: ClassVar[str] = "any_text"
    excludes: tuple[str, ...] = ()
    max_chars: int | None = None
    max_tokens: int | None = None   # xgrammar's token budget: the text ends when it is spent

    def __post_init__(self) -> None:
        object.__setattr__(self, "excludes", _check_str_list("AnyTextFormat", "excludes",
                                                             self.excludes))
        _check_int("AnyTextFormat", "max_chars", self.max_chars, optional=True)
        _check_int("AnyTextFormat", "max_tokens", self.max_tokens, optional=True)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        for key in ("max_chars", "max_tokens"):
            if out[key] is None:
                del out[key]                # absent means unbounded
        return out


@dataclass(frozen=True, kw_only=True)
class TokenFormat(_FormatBase):
    """Exactly one token, by id (``int``) or by its token string (``str``).

    Example:
        >>> TokenFormat(token="<|eot_id|>").to_dict()
        {'type': 'token', 'token': '<|eot_id|>'}
    """

    type: ClassVar[str] = "token"
    token: Union[int, str]

    def __post_init__(self) -> None:
        if isinstance(self.token, bool) or not isinstance(self.token, (int, str)):
            _fail("TokenFormat", "token", "int or str", self.token)


@dataclass(frozen=True, kw_only=True)
class ExcludeTokenFormat(_FormatBase):
    """Exactly one token that is not in ``exclude_tokens`` (ids or token strings).

    Example:
        >>> ExcludeTokenFormat(exclude_tokens=[128009]).type
        'exclude_token'
    """

    type: ClassVar[str] = "exclude_token"
    exclude_tokens: tuple[Union[int, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude_tokens", _check_token_list(
            "ExcludeTokenFormat", "exclude_tokens", self.exclude_tokens))


@dataclass(frozen=True, kw_only=True)
class AnyTokensFormat(_FormatBase):
    """Zero or more tokens (at most ``max_tokens``), none of them in ``exclude_tokens`` (ids or
    token strings). Tokens are matched by id; inside a tag whose end is a token, that token ends
    the run.

    Example:
        >>> AnyTokensFormat(exclude_tokens=["<|eot_id|>"]).type
        'any_tokens'
    """

    type: ClassVar[str] = "any_tokens"
    exclude_tokens: tuple[Union[int, str], ...] = ()
    max_tokens: int | None = None   # at most this many tokens (None: unbounded)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude_tokens", _check_token_list(
            "AnyTokensFormat", "exclude_tokens", self.exclude_tokens))
        _check_int("AnyTokensFormat", "max_tokens", self.max_tokens, optional=True)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if out["max_tokens"] is None:
            del out["max_tokens"]           # absent means unbounded
        return out


# --------------------------------------------------------------------------------------------
# Combinators
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class SequenceFormat(_FormatBase):
    """The ``elements`` one after another.

    Example:
        >>> SequenceFormat(elements=[ConstStringFormat(value="a"),
        ...                          ConstStringFormat(value="b")]).type
        'sequence'
    """

    type: ClassVar[str] = "sequence"
    elements: tuple[Any, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "elements", _check_format_list("SequenceFormat", "elements",
                                                                self.elements))


@dataclass(frozen=True, kw_only=True)
class OrFormat(_FormatBase):
    """One of the ``elements``.

    Example:
        >>> OrFormat(elements=[ConstStringFormat(value="yes"),
        ...                    ConstStringFormat(value="no")]).type
        'or'
    """

    type: ClassVar[str] = "or"
    elements: tuple[Any, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "elements", _check_format_list("OrFormat", "elements",
                                                                self.elements))


@dataclass(frozen=True, kw_only=True)
class OptionalFormat(_FormatBase):
    """``content`` zero or one time.

    Example:
        >>> OptionalFormat(content=ConstStringFormat(value="\\n")).type
        'optional'
    """

    type: ClassVar[str] = "optional"
    content: Any

    def __post_init__(self) -> None:
        _check_format("OptionalFormat", "content", self.content)


@dataclass(frozen=True, kw_only=True)
class StarFormat(_FormatBase):
    """``content`` zero or more times.

    Example:
        >>> StarFormat(content=RegexFormat(pattern="[a-z]")).type
        'star'
    """

    type: ClassVar[str] = "star"
    content: Any

    def __post_init__(self) -> None:
        _check_format("StarFormat", "content", self.content)


@dataclass(frozen=True, kw_only=True)
class PlusFormat(_FormatBase):
    """``content`` one or more times.

    Example:
        >>> PlusFormat(content=RegexFormat(pattern="[a-z]")).type
        'plus'
    """

    type: ClassVar[str] = "plus"
    content: Any

    def __post_init__(self) -> None:
        _check_format("PlusFormat", "content", self.content)


@dataclass(frozen=True, kw_only=True)
class RepeatFormat(_FormatBase):
    """``content`` between ``min`` and ``max`` times (``max=-1``: no upper bound).

    Example:
        >>> RepeatFormat(content=ConstStringFormat(value="a"), min=1, max=3).to_dict()["max"]
        3
    """

    type: ClassVar[str] = "repeat"
    content: Any
    min: int
    max: int

    def __post_init__(self) -> None:
        _check_format("RepeatFormat", "content", self.content)
        _check_int("RepeatFormat", "min", self.min)
        _check_int("RepeatFormat", "max", self.max)


@dataclass(frozen=True, kw_only=True)
class TagFormat(_FormatBase):
    """``begin``, then ``content``, then ``end`` (one string, or any one of a list).

    ``begin``/``end`` may be a :class:`TokenFormat` (one special token) where the format
    that holds the tag allows it (:class:`TokenTriggeredTagsFormat`).

    Example:
        >>> TagFormat(begin="<think>", content=AnyTextFormat(), end="</think>").to_dict()["end"]
        '</think>'
    """

    type: ClassVar[str] = "tag"
    begin: Union[str, TokenFormat]
    content: Any
    end: Union[str, tuple[str, ...], TokenFormat]

    def __post_init__(self) -> None:
        if not isinstance(self.begin, (str, TokenFormat)):
            _fail("TagFormat", "begin", "str or TokenFormat", self.begin)
        _check_format("TagFormat", "content", self.content)
        if isinstance(self.end, (list, tuple)):
            object.__setattr__(self, "end", FieldList(self.end))
        if isinstance(self.end, tuple):
            _check_str_list("TagFormat", "end", self.end)
        elif not isinstance(self.end, (str, TokenFormat)):
            _fail("TagFormat", "end", "str, list of str or TokenFormat", self.end)


def _check_tags(owner: str, value: Any) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        _fail(owner, "tags", "a list of TagFormat", value)
    for item in value:
        if not isinstance(item, (TagFormat, dict)):
            _fail(owner, "tags[]", "TagFormat or dict", item)
    return FieldList(value)


@dataclass(frozen=True, kw_only=True)
class TriggeredTagsFormat(_FormatBase):
    """Free text; when one of ``triggers`` appears, the output continues with a tag whose
    ``begin`` starts with that trigger, then free text again.

    Args:
        triggers: strings that start a tag (each tag's ``begin`` starts with one of them).
        tags: the tags.
        at_least_one: at least one tag must appear.
        stop_after_first: the format ends right after the first tag.
        excludes: strings that must not appear in the free text.

    Example:
        >>> TriggeredTagsFormat(triggers=["<f="], tags=[
        ...     TagFormat(begin="<f=a>", content=AnyTextFormat(), end="</f>")]).type
        'triggered_tags'
    """

    type: ClassVar[str] = "triggered_tags"
    triggers: tuple[str, ...]
    tags: tuple[TagFormat, ...]
    at_least_one: bool = False
    stop_after_first: bool = False
    excludes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        owner = "TriggeredTagsFormat"
        object.__setattr__(self, "triggers", _check_str_list(owner, "triggers", self.triggers))
        object.__setattr__(self, "tags", _check_tags(owner, self.tags))
        _check_bool(owner, "at_least_one", self.at_least_one)
        _check_bool(owner, "stop_after_first", self.stop_after_first)
        object.__setattr__(self, "excludes", _check_str_list(owner, "excludes", self.excludes))


@dataclass(frozen=True, kw_only=True)
class TagsWithSeparatorFormat(_FormatBase):
    """Zero or more of ``tags`` separated by ``separator``, and no other text.

    Example:
        >>> TagsWithSeparatorFormat(tags=[TagFormat(begin="<a>", content=AnyTextFormat(),
        ...                                          end="</a>")], separator="\\n").type
        'tags_with_separator'
    """

    type: ClassVar[str] = "tags_with_separator"
    tags: tuple[TagFormat, ...]
    separator: str
    at_least_one: bool = False
    stop_after_first: bool = False

    def __post_init__(self) -> None:
        owner = "TagsWithSeparatorFormat"
        object.__setattr__(self, "tags", _check_tags(owner, self.tags))
        _check_str(owner, "separator", self.separator)
        _check_bool(owner, "at_least_one", self.at_least_one)
        _check_bool(owner, "stop_after_first", self.stop_after_first)


@dataclass(frozen=True, kw_only=True)
class DispatchFormat(_FormatBase):
    """Free text; when a rule's pattern string appears, its format must follow.

    Args:
        rules: ``(pattern, format)`` pairs.
        loop: go back to free text after a dispatched format (else the format ends).
        excludes: strings that must not appear in the free text.

    Example:
        >>> DispatchFormat(rules=[("<calc>", RegexFormat(pattern="[0-9+]+</calc>"))]).type
        'dispatch'
    """

    type: ClassVar[str] = "dispatch"
    rules: tuple[tuple[str, Any], ...]
    loop: bool = True
    excludes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        owner = "DispatchFormat"
        if not isinstance(self.rules, (list, tuple)):
            _fail(owner, "rules", "a list of (pattern, format) pairs", self.rules)
        rules = []
        for rule in self.rules:
            if not isinstance(rule, (list, tuple)) or len(rule) != 2:
                _fail(owner, "rules[]", "a (pattern, format) pair", rule)
            _check_str(owner, "rules[][0]", rule[0])
            _check_format(owner, "rules[][1]", rule[1])
            rules.append((rule[0], rule[1]))
        object.__setattr__(self, "rules", tuple(rules))
        _check_bool(owner, "loop", self.loop)
        object.__setattr__(self, "excludes", _check_str_list(owner, "excludes", self.excludes))


@dataclass(frozen=True, kw_only=True)
class TokenTriggeredTagsFormat(_FormatBase):
    """Any tokens; when one of ``trigger_tokens`` is sampled, a tag whose ``begin`` is that
    token (a :class:`TokenFormat`) follows.

    Example:
        >>> TokenTriggeredTagsFormat(trigger_tokens=["[TOOL_CALLS]"], tags=[TagFormat(
        ...     begin=TokenFormat(token="[TOOL_CALLS]"), content=AnyTextFormat(),
        ...     end="</s>")]).type
        'token_triggered_tags'
    """

    type: ClassVar[str] = "token_triggered_tags"
    trigger_tokens: tuple[Union[int, str], ...]
    tags: tuple[TagFormat, ...]
    exclude_tokens: tuple[Union[int, str], ...] = ()
    at_least_one: bool = False
    stop_after_first: bool = False

    def __post_init__(self) -> None:
        owner = "TokenTriggeredTagsFormat"
        object.__setattr__(self, "trigger_tokens", _check_token_list(
            owner, "trigger_tokens", self.trigger_tokens))
        object.__setattr__(self, "tags", _check_tags(owner, self.tags))
        object.__setattr__(self, "exclude_tokens", _check_token_list(
            owner, "exclude_tokens", self.exclude_tokens))
        _check_bool(owner, "at_least_one", self.at_least_one)
        _check_bool(owner, "stop_after_first", self.stop_after_first)


Format = Union[
    ConstStringFormat, JSONSchemaFormat, QwenXMLParameterFormat, GrammarFormat, RegexFormat,
    AnyTextFormat, TokenFormat, ExcludeTokenFormat, AnyTokensFormat, SequenceFormat, OrFormat, OptionalFormat, StarFormat,
    PlusFormat, RepeatFormat, TagFormat, TriggeredTagsFormat, TagsWithSeparatorFormat,
    DispatchFormat, TokenTriggeredTagsFormat,
]
"""Any one of the format classes."""

_FORMAT_CLASSES: dict[str, type] = {cls.type: cls for cls in Format.__args__}  # type: ignore[attr-defined]
_NESTED_ONE = {"content"}
_NESTED_MANY = {"elements", "tags"}


def format_from_dict(data: dict) -> Format:
    """Builds the format object for a format ``dict`` (the inverse of ``to_dict``).

    Args:
        data: ``{"type": ..., <fields>}``, nested formats as dicts.

    Returns:
        The matching format class instance.

    Raises:
        ValueError: unknown ``type``. TypeError: missing/unexpected fields or wrong types.

    Example:
        >>> format_from_dict({"type": "const_string", "value": "x"})
        ConstStringFormat(value='x')
    """
    if not isinstance(data, dict):
        _fail("format", "", "dict", data)
    kind = data.get("type")
    cls = _FORMAT_CLASSES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown structural tag format type {kind!r}; known: "
                         f"{', '.join(sorted(_FORMAT_CLASSES))}")
    kwargs = {}
    for key, value in data.items():
        if key == "type":
            continue
        if key in _NESTED_ONE or (key in ("begin", "end") and isinstance(value, dict)):
            value = format_from_dict(value)
        elif key in _NESTED_MANY:  # a tag list's items may leave out "type": "tag"
            value = [format_from_dict({"type": "tag", **v} if key == "tags" and isinstance(v, dict) else v)
                     for v in value]
        elif key == "rules":
            value = [(pattern, format_from_dict(fmt)) for pattern, fmt in value]
        kwargs[key] = value
    return cls(**kwargs)


@dataclass(frozen=True, kw_only=True)
class StructuralTag(PydanticNames):
    """The envelope ``{"type": "structural_tag", "format": ...}`` that compilers accept.

    ``marker_tokens`` (xg2-jax's; Gemma 4's built-in tag sets it): marker strings a compile binds
    by id where its tokenizer has them as special tokens; elsewhere they stay text.

    Example:
        >>> StructuralTag(format=ConstStringFormat(value="hi")).to_json()
        '{"type": "structural_tag", "format": {"type": "const_string", "value": "hi"}}'
    """

    format: Any
    marker_tokens: tuple = ()
    type: ClassVar[str] = "structural_tag"

    def __post_init__(self) -> None:
        _check_format("StructuralTag", "format", self.format)
        object.__setattr__(self, "marker_tokens",
                           _check_str_list("StructuralTag", "marker_tokens", self.marker_tokens))

    def to_dict(self) -> dict[str, Any]:
        """The envelope as a JSON-ready ``dict``."""
        markers = {"marker_tokens": list(self.marker_tokens)} if self.marker_tokens else {}
        return {"type": "structural_tag", "format": _to_plain(self.format), **markers}

    def to_json(self, **json_kwargs: Any) -> str:
        """The envelope as JSON text."""
        return json.dumps(self.to_dict(), ensure_ascii=False, **json_kwargs)

    @classmethod
    def from_dict(cls, data: Union[dict, str]) -> "StructuralTag":
        """Parses an envelope (``dict`` or JSON text) into typed format objects.

        Raises:
            ValueError: not a ``structural_tag`` envelope, or an unknown format type.
        """
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict) or data.get("type") != "structural_tag" or "format" not in data:
            raise ValueError('expected {"type": "structural_tag", "format": {...}}')
        return cls(format=format_from_dict(data["format"]), marker_tokens=data.get("marker_tokens", ()))
    _from_plain = from_dict  # PydanticNames' reader
