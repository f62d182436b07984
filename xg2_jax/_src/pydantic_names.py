"""pydantic's method names over xg2-jax's plain dataclasses.

xgrammar's structural-tag classes are pydantic models, so code written for it calls
``model_dump_json`` / ``model_validate`` on them; xg2-jax's classes are frozen dataclasses with
``to_dict`` and a class-specific reader, and this mixin adds those names on top (no pydantic
dependency).
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union


class PydanticNames:
    """Mixin: ``model_dump``, ``model_dump_json``, ``model_validate``, ``model_validate_json``.

    A class using it has ``to_dict()`` and a classmethod ``_from_plain(data)`` that builds an
    instance from that ``dict`` (raising ``ValueError`` / ``TypeError`` on bad input).
    """

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """Alias of ``to_dict()``."""
        return self.to_dict()  # type: ignore[attr-defined]

    def model_dump_json(self, *, indent: Optional[int] = None, **_: Any) -> str:
        """JSON text of ``to_dict()``, compact unless ``indent`` is given, as pydantic writes it.

        Args:
            indent: spaces per nesting level; None for one compact line.

        Returns:
            Text that ``model_validate_json`` reads back to an equal object.

        Example:
            >>> from xg2_jax.structural_tag import AnyTextFormat
            >>> AnyTextFormat(max_chars=7).model_dump_json()
            '{"type":"any_text","excludes":[],"max_chars":7}'
        """
        separators = (",", ":") if indent is None else (",", ": ")
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent,  # type: ignore[attr-defined]
                          separators=separators)

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """An instance from its ``dict`` (an instance passes through).

        Raises:
            ValueError / TypeError: not this class's data, or bad fields.
        """
        out = data if isinstance(data, cls) else cls._from_plain(data)  # type: ignore[attr-defined]
        if not isinstance(out, cls):
            raise ValueError(f"expected a {cls.__name__}, got a {type(out).__name__}")
        return out

    @classmethod
    def model_validate_json(cls, text: Union[str, bytes]) -> Any:
        """``model_validate`` of JSON text."""
        return cls.model_validate(json.loads(text))
