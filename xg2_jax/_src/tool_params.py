"""OpenAI Chat Completions tool declarations as typed objects, and the model-independent
tool / ``tool_choice`` handling (xgrammar 0.2.9's ``openai_tool_call_schema`` module and
``normalize_tool_choice``).

The classes are frozen keyword dataclasses (xg2-jax does not depend on pydantic): build them
with keywords, read their fields, and ``to_dict()`` gives the OpenAI JSON shape that
:func:`xg2_jax.get_model_structural_tag` takes (it also takes the objects themselves).

Example:
    >>> tool = FunctionToolParam(function={"name": "f", "parameters": {"type": "object"}})
    >>> tool.function.name, tool.to_dict()["type"]
    ('f', 'function')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Union

__all__ = ["BuiltinToolParam", "FunctionDefinition", "FunctionToolParam", "ToolParam",
           "normalize_tool_choice", "tool_to_dict"]


def _drop_none(fields: dict) -> dict:
    return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class FunctionDefinition:
    """A function: its name, description and JSON Schema of its arguments (``None``: the
    arguments are unconstrained)."""

    name: str
    description: Optional[str] = None
    parameters: Optional[dict] = None
    strict: Optional[bool] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"FunctionDefinition.name must be a non-empty str, got {self.name!r}")
        if self.parameters is not None and not isinstance(self.parameters, dict):
            raise ValueError("FunctionDefinition.parameters must be a JSON Schema object (dict) "
                             f"or None, got {type(self.parameters).__name__}")

    def to_dict(self) -> dict:
        """The OpenAI ``function`` object (unset fields left out)."""
        return _drop_none(dataclasses.asdict(self))


@dataclass(frozen=True, kw_only=True)
class FunctionToolParam:
    """``{"type": "function", "function": {...}}``; ``function`` may be given as a dict."""

    function: FunctionDefinition
    type: str = "function"

    def __post_init__(self) -> None:
        if self.type != "function":
            raise ValueError(f"FunctionToolParam.type must be 'function', got {self.type!r}")
        if isinstance(self.function, dict):
            object.__setattr__(self, "function", FunctionDefinition(**self.function))
        elif not isinstance(self.function, FunctionDefinition):
            raise ValueError("FunctionToolParam.function must be a FunctionDefinition or dict")

    def to_dict(self) -> dict:
        """The OpenAI tool object."""
        return {"type": "function", "function": self.function.to_dict()}


@dataclass(frozen=True, kw_only=True)
class BuiltinToolParam:
    """A builtin (hosted) tool: its provider ``type``, the ``name`` the model writes (default:
    ``type``) and the JSON Schema of its arguments."""

    type: str
    name: Optional[str] = None
    parameters: Optional[dict] = None

    def __post_init__(self) -> None:
        if not isinstance(self.type, str) or not self.type or self.type == "function":
            raise ValueError("BuiltinToolParam.type must be a non-empty str other than "
                             f"'function', got {self.type!r}")
        if self.name is None:
            object.__setattr__(self, "name", self.type)

    def to_dict(self) -> dict:
        """The tool object (unset fields left out)."""
        return _drop_none(dataclasses.asdict(self))


ToolParam = Union[FunctionToolParam, BuiltinToolParam]


def _tool_param(tool: Any, i: int) -> ToolParam:
    if isinstance(tool, (FunctionToolParam, BuiltinToolParam)):
        return tool
    if not isinstance(tool, dict):
        raise ValueError(f"tools[{i}] must be a dict or a tool object, got {type(tool).__name__}")
    try:
        if tool.get("type", "function") == "function":
            extra = set(tool) - {"type", "function"}
            if extra or not isinstance(tool.get("function"), dict):
                raise ValueError("a function tool is {'type': 'function', 'function': {...}}")
            return FunctionToolParam(function=tool["function"])
        return BuiltinToolParam(**tool)
    except TypeError as e:      # unknown keys
        raise ValueError(f"tools[{i}]: {e}") from None
    except ValueError as e:
        raise ValueError(f"tools[{i}]: {e}") from None


def tool_to_dict(tool: Any) -> Any:
    """A tool object as its dict (anything else unchanged)."""
    return tool.to_dict() if isinstance(tool, (FunctionToolParam, BuiltinToolParam)) else tool


def _allowed(functions: list, builtins: list, allowed: Any) -> tuple[list, list, str]:
    if not isinstance(allowed, dict) or allowed.get("mode") not in ("auto", "required") \
            or not isinstance(allowed.get("tools"), list):
        raise ValueError("allowed_tools must be {'mode': 'auto' | 'required', 'tools': [...]}")
    names, types = set(), set()
    for ref in allowed["tools"]:
        if not isinstance(ref, dict) or not isinstance(ref.get("type"), str):
            raise ValueError(f"allowed_tools.tools: a tool reference needs a 'type', got {ref!r}")
        if ref["type"] != "function":
            types.add(ref["type"])
        elif not isinstance(ref.get("function"), dict) or "name" not in ref["function"]:
            raise ValueError("Allowed function tool references must include 'function'.")
        else:
            names.add(ref["function"]["name"])
    missing = names - {t.function.name for t in functions}
    if missing:
        raise ValueError(f"Allowed function tools are not found in the tools list: {missing}.")
    missing = types - {t.type for t in builtins}
    if missing:
        raise ValueError(f"Allowed builtin tools are not found in the tools list: {missing}.")
    return ([t for t in functions if t.function.name in names],
            [t for t in builtins if t.type in types], allowed["mode"])


def _apply_choice(functions: list, builtins: list, choice: Any) -> tuple[list, list, str]:
    if choice is None or choice in ("auto", "required"):
        return functions, builtins, choice or "auto"
    if choice == "none":        # auto with no tools: text only
        return [], [], "auto"
    if not isinstance(choice, dict) or not isinstance(choice.get("type"), str):
        raise ValueError(f"unknown tool_choice {choice!r}; expected 'auto', 'required', 'none' "
                         "or a tool-choice object")
    if choice["type"] == "allowed_tools":
        return _allowed(functions, builtins, choice.get("allowed_tools"))
    if choice["type"] == "function":
        function = choice.get("function")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError("a named tool_choice is {'type': 'function', 'function': "
                             "{'name': ...}}")
        named = [t for t in functions if t.function.name == function["name"]]
        if not named:
            raise ValueError(f"The tool with name '{function['name']}' is not found in the "
                             "tools list.")
        return named, [], "forced"
    matched = [t for t in builtins if t.type == choice["type"]]
    if len(matched) != 1:
        raise ValueError("Builtin tool choice must match exactly one builtin tool, "
                         f"got {len(matched)} matches.")
    return [], matched, "forced"


def normalize_tool_choice(tools: Optional[list] = None, tool_choice: Any = "auto"
                          ) -> tuple[list[FunctionToolParam], list[BuiltinToolParam], str]:
    """Splits the tools into function and builtin tools and applies ``tool_choice``.

    Args:
        tools: tool dicts or objects (``None``: no tools).
        tool_choice: ``"auto"`` (or ``None``), ``"required"``, ``"none"``, a named function
            ``{"type": "function", "function": {"name": ...}}``, a builtin type
            ``{"type": T}`` or ``{"type": "allowed_tools", "allowed_tools": {...}}``.

    Returns:
        ``(function tools, builtin tools, choice)`` with choice ``"auto"``, ``"required"``
        or ``"forced"`` (exactly one tool left); ``"none"`` gives no tools and ``"auto"``.

    Raises:
        ValueError: a malformed tool or choice, a named or allowed tool that is not in
            ``tools``, ``"required"`` with no tools left.

    Example:
        >>> f, b, c = normalize_tool_choice([{"type": "function", "function": {"name": "f"}}],
        ...                                 {"type": "function", "function": {"name": "f"}})
        >>> [t.function.name for t in f], b, c
        (['f'], [], 'forced')
    """
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise ValueError("The 'tools' argument must be a list.")
    params = [_tool_param(tool, i) for i, tool in enumerate(tools)]
    functions = [t for t in params if isinstance(t, FunctionToolParam)]
    builtins = [t for t in params if isinstance(t, BuiltinToolParam)]
    functions, builtins, choice = _apply_choice(functions, builtins, tool_choice)
    if choice == "required" and not functions and not builtins:
        raise ValueError("The 'tools' list is empty, which is not allowed when 'tool_choice' "
                         "is 'required'.")
    return functions, builtins, choice
