"""xgrammar's deprecated structural-tag form: ``StructuralTagItem(begin, schema, end)`` items and
a list of triggers, as ``Grammar.from_structural_tag(tags, triggers)`` and
``GrammarCompiler.compile_structural_tag(tags, triggers)`` take them.

The pair means free text in which a trigger starts one of the tags whose begin starts with it:
a ``triggered_tags`` format whose tags hold JSON Schema contents.

Example:
    >>> import warnings
    >>> item = StructuralTagItem(begin="<f>", schema={"type": "integer"}, end="</f>")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     tag = legacy_structural_tag([item], ["<f"])
    >>> tag["format"]["type"]
    'triggered_tags'
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

__all__ = ["StructuralTagItem", "legacy_structural_tag"]


@dataclass(frozen=True, kw_only=True)
class StructuralTagItem:
    """Deprecated (xgrammar's too): one tag of the legacy form.

    Args:
        begin: the tag's begin string (it starts with one of the triggers).
        schema: its content's JSON Schema: a dict, JSON text, or a pydantic model class.
        end: the tag's end string.
    """

    begin: str
    schema: Any
    end: str

    @property
    def schema_(self) -> Any:
        """xgrammar's field name for ``schema``."""
        return self.schema


def _schema_dict(schema: Any, where: str) -> Any:
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}.schema: not JSON ({e})") from None
    if isinstance(schema, (dict, bool)):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):
        return schema.model_json_schema()
    raise ValueError(f"{where}.schema must be a dict, JSON text or a pydantic model class, "
                     f"got {type(schema).__name__}")


def legacy_structural_tag(tags: list, triggers: list) -> dict:
    """The structural tag of the legacy ``(tags, triggers)`` form (and a DeprecationWarning,
    as xgrammar).

    Args:
        tags: :class:`StructuralTagItem` objects (or dicts with begin, schema, end).
        triggers: the strings that start a tag in free text.

    Returns:
        ``{"type": "structural_tag", "format": {"type": "triggered_tags", ...}}``.

    Raises:
        ValueError: a malformed item or trigger list.
    """
    warnings.warn("from_structural_tag(tags, triggers) is deprecated: build a StructuralTag "
                  "(e.g. TriggeredTagsFormat) instead", DeprecationWarning, stacklevel=3)
    if not isinstance(tags, (list, tuple)) or not isinstance(triggers, (list, tuple)):
        raise ValueError("the legacy form is from_structural_tag(tags: list[StructuralTagItem], "
                         "triggers: list[str])")
    out = []
    for i, tag in enumerate(tags):
        if isinstance(tag, dict):
            tag = StructuralTagItem(begin=tag.get("begin"), schema=tag.get("schema"),
                                    end=tag.get("end"))
        if not isinstance(tag, StructuralTagItem) or not isinstance(tag.begin, str) \
                or not isinstance(tag.end, str):
            raise ValueError(f"tags[{i}] must be a StructuralTagItem(begin=str, schema=..., end=str)")
        out.append({"type": "tag", "begin": tag.begin, "end": tag.end,
                    "content": {"type": "json_schema",
                                "json_schema": _schema_dict(tag.schema, f"tags[{i}]")}})
    return {"type": "structural_tag",
            "format": {"type": "triggered_tags", "triggers": list(triggers), "tags": out}}
