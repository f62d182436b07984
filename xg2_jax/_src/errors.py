"""Typed exceptions raised by xg2-jax.

Every error names what was wrong and where (line:col for grammar text, a JSON pointer for
schemas, a path for structural tags). The native core raises these through its exception
translator, so C++ and Python errors look the same to callers.
"""

from __future__ import annotations

__all__ = [
    "XG2Error",
    "GrammarError",
    "GrammarSyntaxError",
    "TokenizerError",
    "InvalidArgumentError",
    "MatcherStateError",
    "LimitExceededError",
    "StructuralTagError",
    "UnsupportedSchemaError",
    "UnsupportedSchemaWarning",
    "ModelError",
    "ModelFileError",
    "MissingTensorError",
    "TensorShapeError",
    "UnsupportedModelError",
    # xgrammar's names (its exceptions are RuntimeErrors; ours are RuntimeErrors too)
    "DeserializeFormatError",
    "DeserializeVersionError",
    "InvalidJSONError",
    "InvalidStructuralTagError",
]


class XG2Error(Exception):
    """Base class of every error raised by xg2-jax."""


# The input errors derive from ValueError (what they are) and RuntimeError (what xgrammar
# raises for them), so code written for either catches them.
class GrammarError(XG2Error, ValueError, RuntimeError):
    """A grammar, schema or structure is invalid or cannot be compiled."""


class GrammarSyntaxError(GrammarError):
    """Malformed grammar text. ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, line: int = 0, column: int = 0):
        super().__init__(message)
        self.line = line
        self.column = column


class TokenizerError(XG2Error, ValueError, RuntimeError):
    """A tokenizer vocabulary could not be read or is malformed (bad ids, bad file, ...)."""


class InvalidArgumentError(XG2Error, ValueError, RuntimeError):
    """An argument is out of range or has the wrong shape, dtype or device."""


class MatcherStateError(XG2Error, RuntimeError):
    """A matcher was misused (rollback past its history, use from two threads at once).

    The matcher is left unchanged and usable.
    """


class LimitExceededError(XG2Error, ValueError, RuntimeError):
    """A configured limit (automaton size, nesting depth, ...) was exceeded."""


class StructuralTagError(GrammarError):
    """An invalid structural tag. The message reads ``Invalid structural tag error: PATH:
    REASON``: xgrammar's prefix, then the path of the offending field (e.g.
    ``format.elements[1].tags[3].begin``) and the reason."""

    PREFIX = "Invalid structural tag error: "

    def __init__(self, message: str = "", *args):
        # Added here, where every structural tag error is built (the core raises through this
        # class), so no raise site can forget it; a message that has it already keeps one.
        if not message.startswith(self.PREFIX):
            message = self.PREFIX + message
        super().__init__(message, *args)


InvalidStructuralTagError = StructuralTagError
"""xgrammar's name of :class:`StructuralTagError`."""


class InvalidJSONError(InvalidArgumentError):
    """Serialized data (``deserialize_json``) or a JSON argument is not valid JSON."""


class DeserializeFormatError(InvalidArgumentError):
    """Serialized data is valid JSON but not what ``deserialize_json`` expects (missing or
    ill-typed fields, a corrupted grammar, another vocabulary); the message names the field."""


class DeserializeVersionError(DeserializeFormatError):
    """Serialized data was written by another serialization version."""


class UnsupportedSchemaError(GrammarError):
    """A JSON Schema keyword cannot be enforced; the message names it and its JSON pointer."""


class UnsupportedSchemaWarning(UserWarning):
    """Emitted (with on_unsupported="warn") for each JSON Schema keyword that was not enforced."""


class ModelError(XG2Error):
    """A model checkpoint could not be loaded (base class of the model loading errors)."""


class ModelFileError(ModelError, FileNotFoundError):
    """A checkpoint file (config.json, safetensors shard, tokenizer) is missing or unreadable;
    the message names the file."""


class MissingTensorError(ModelError, ValueError):
    """Tensors the model needs are absent from the checkpoint; ``names`` lists them."""

    def __init__(self, message: str, names: tuple = ()):
        super().__init__(message)
        self.names = tuple(names)


class TensorShapeError(ModelError, ValueError):
    """A checkpoint tensor has the wrong shape; the message names it, expected and got."""


class UnsupportedModelError(ModelError, ValueError):
    """The config asks for an architecture or option the models do not implement."""


class CacheOverflowError(ModelError, ValueError):
    """Tokens would be written past the end of the model's KV cache (their logits would be
    wrong): size the cache for the prompt plus every generated token."""


class OutputParseError(XG2Error, ValueError):
    """A generated text does not follow the structural tag it is parsed by (e.g. cut by the
    token budget)."""


class UnusedTensorWarning(UserWarning):
    """A checkpoint holds tensors the model does not read (the message names them): the
    config may not describe the checkpoint (e.g. an untied head in a tied config)."""


def _register_with_core() -> None:
    """Hands the classes to the native module, which raises its typed errors as them."""
    from xg2_jax import _core

    _core._set_error_classes({cls.__name__: cls for cls in (
        XG2Error, GrammarError, GrammarSyntaxError, TokenizerError, MatcherStateError,
        InvalidArgumentError, LimitExceededError, StructuralTagError, UnsupportedSchemaError)})


_register_with_core()
