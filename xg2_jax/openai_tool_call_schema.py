"""OpenAI Chat Completions tool declarations under xgrammar's module name
(``xgrammar.openai_tool_call_schema``): :class:`FunctionToolParam` (with its
:class:`FunctionDefinition`) and :class:`BuiltinToolParam`, as frozen dataclasses."""

from xg2_jax._src.tool_params import (
    BuiltinToolParam,
    FunctionDefinition,
    FunctionToolParam,
    ToolParam,
)

__all__ = ["BuiltinToolParam", "FunctionDefinition", "FunctionToolParam", "ToolParam"]
