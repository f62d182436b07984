"""Python-side type checks of the structural-tag builders (the native compiler checks the
semantics): each raises ``TypeError`` naming the class, the field and the value."""

from __future__ import annotations

from typing import Any, Union


class FieldList(tuple):
    """An immutable list field of a format: a tuple (the formats are frozen and hashable) that
    also equals a list of the same items, as xgrammar's list fields do.

    Example:
        >>> FieldList(["<a>", "<b>"]) == ["<a>", "<b>"], FieldList(["<a>"]) == ("<a>",)
        (True, True)
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return list(self) == other
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__


def _fail(owner: str, name: str, expected: str, value: Any) -> None:
    raise TypeError(f"{owner}.{name}: expected {expected}, "
                    f"got {type(value).__name__} {value!r:.80}")


def _check_str(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, str):
        _fail(owner, name, "str", value)


def _check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        _fail(owner, name, "bool", value)


def _check_int(owner: str, name: str, value: Any, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(owner, name, "int" + (" or None" if optional else ""), value)


def _check_str_list(owner: str, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        _fail(owner, name, "a list of str", value)
    for item in value:
        if not isinstance(item, str):
            _fail(owner, f"{name}[]", "str", item)
    return FieldList(value)


def _check_token_list(owner: str, name: str, value: Any) -> tuple[Union[int, str], ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        _fail(owner, name, "a list of token ids (int) or token strings (str)", value)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            _fail(owner, f"{name}[]", "int or str", item)
    return FieldList(value)
