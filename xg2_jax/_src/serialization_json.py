"""The JSON form of TokenizerInfo, Grammar and CompiledGrammar (xgrammar's
``serialize_json`` / ``deserialize_json``), beside the binary form of ``CompiledGrammar``.

Every document is an object with ``"__VERSION__"`` (:data:`SERIALIZATION_VERSION`) and
``"type"``. A grammar is stored as its EBNF text (the printer's output parses back to the
same grammar) and root rule; a tokenizer as its decoded token bytes (each byte one code point
U+0000..U+00FF), special and stop ids; a compiled grammar as its grammar plus a digest of the
vocabulary it was compiled for (loading recompiles, as the binary form does).

Reading checks everything: invalid JSON (or JSON nested deeper than ``max_recursion_depth``)
raises :class:`InvalidJSONError`, another version
:class:`DeserializeVersionError`, a missing, ill-typed or inconsistent field (a grammar that
does not parse, another vocabulary) :class:`DeserializeFormatError` naming the field.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any

from xg2_jax import _core
from xg2_jax._src.errors import (
    DeserializeFormatError,
    DeserializeVersionError,
    GrammarError,
    InvalidJSONError,
    TokenizerError,
)

__all__ = ["SERIALIZATION_VERSION", "compiled_from_json", "compiled_to_json", "grammar_from_json",
           "grammar_to_json", "tokenizer_from_json", "tokenizer_to_json"]

SERIALIZATION_VERSION = "xg2-jax-json-1"


def _document(kind: str, fields: dict) -> str:
    return json.dumps({"__VERSION__": SERIALIZATION_VERSION, "type": kind, **fields},
                      ensure_ascii=True, separators=(",", ":"))


def load_object(text: Any, kind: str) -> dict:
    """The JSON object in ``text``.

    Args:
        text: JSON text (str or bytes).
        kind: what the text is, for the messages.

    Returns:
        The decoded object.

    Raises:
        InvalidJSONError: not str or bytes, or not valid JSON.
        DeserializeFormatError: valid JSON that is not an object.
    """
    if not isinstance(text, (str, bytes, bytearray)):
        raise InvalidJSONError(f"{kind} JSON must be str or bytes; got {type(text).__name__}")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidJSONError(f"{kind} JSON is not valid JSON: {exc}") from None
    if isinstance(doc, (dict, list)):
        _check_nesting(doc, kind)
    if not isinstance(doc, dict):
        raise DeserializeFormatError(f"{kind} JSON must be an object; got {type(doc).__name__}")
    return doc


def _check_nesting(doc: Any, kind: str) -> None:
    """Refuses JSON nested deeper than the front ends' limit (``max_recursion_depth``), as the
    native JSON reader does. The walk is iterative: only containers are visited."""
    limit = int(_core.max_nesting_depth())
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            raise InvalidJSONError(
                f"{kind} JSON is not valid JSON: Maximum recursion depth exceeded: JSON nesting "
                f"deeper than {limit} levels (limit max_nesting_depth={limit}, see "
                "xg2_jax.set_limits)")
        items = value.values() if isinstance(value, dict) else value
        stack.extend((item, depth + 1) for item in items if isinstance(item, (dict, list)))


def _read(text: Any, kind: str) -> dict:
    """The checked top-level object of a ``kind`` document."""
    doc = load_object(text, kind)
    version = doc.get("__VERSION__")
    if version != SERIALIZATION_VERSION:
        raise DeserializeVersionError(f"{kind} JSON has __VERSION__ {version!r}; this version "
                                      f"reads {SERIALIZATION_VERSION!r}")
    if doc.get("type") != kind:
        raise DeserializeFormatError(f"JSON holds a {doc.get('type')!r}, not a {kind!r}")
    _only_known_fields(doc, _FIELDS[kind], kind)
    return doc


_FIELDS = {
    "TokenizerInfo": {"vocab_type", "vocab_size", "decoded_vocab", "special_token_ids", "stop_token_ids",
                      "add_prefix_space"},
    "Grammar": {"root_rule_name", "ebnf"},
    "CompiledGrammar": {"grammar", "vocabulary_digest", "vocab_size"},
}


def _only_known_fields(doc: dict, known: set, where: str) -> None:
    """A field the writer never writes is a corrupted (or foreign) document."""
    unknown = sorted(set(doc) - known - {"__VERSION__", "type"})
    if unknown:
        raise DeserializeFormatError(f"{where} has unknown field(s) {', '.join(map(repr, unknown))}")


def _field(doc: dict, name: str, kind: type, where: str) -> Any:
    value = doc.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DeserializeFormatError(f"{where}.{name} must be a {kind.__name__}; got "
                                     f"{type(value).__name__}")
    return value


def _int_list(doc: dict, name: str, where: str) -> list[int]:
    values = _field(doc, name, list, where)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise DeserializeFormatError(f"{where}.{name} must be a list of integers")
    return values


def tokenizer_to_json(info) -> str:
    """The JSON document of a :class:`TokenizerInfo`."""
    return _document("TokenizerInfo", {
        "vocab_type": info.vocab_type.name,
        "vocab_size": info.vocab_size,
        "decoded_vocab": [token.decode("latin-1") for token in info.decoded_vocab],
        "special_token_ids": info.special_token_ids,
        "stop_token_ids": info.stop_token_ids,
        "add_prefix_space": info.add_prefix_space,
    })


def tokenizer_from_json(text: Any, TokenizerInfo, VocabType):  # noqa: N803 - the classes
    """The ``TokenizerInfo`` of a document written by :func:`tokenizer_to_json` (the classes
    are passed in: this module sits below them in the import graph)."""
    where = "TokenizerInfo"
    doc = _read(text, where)
    vocab_type = _field(doc, "vocab_type", str, where)
    if vocab_type not in VocabType.__members__:
        raise DeserializeFormatError(f"{where}.vocab_type {vocab_type!r} is not a VocabType")
    tokens = _field(doc, "decoded_vocab", list, where)
    try:
        decoded = [token.encode("latin-1") for token in tokens]
    except (AttributeError, UnicodeEncodeError):
        raise DeserializeFormatError(f"{where}.decoded_vocab must be strings of code points "
                                     "U+0000..U+00FF (one per byte)") from None
    stops = _int_list(doc, "stop_token_ids", where)
    try:
        info = TokenizerInfo(
            decoded, VocabType.RAW, vocab_size=_field(doc, "vocab_size", int, where),
            stop_token_ids=stops, special_token_ids=_int_list(doc, "special_token_ids", where),
            add_prefix_space=_field(doc, "add_prefix_space", bool, where))
    except TokenizerError as exc:
        raise DeserializeFormatError(f"{where}: {exc}") from None
    if info.stop_token_ids != stops:
        raise DeserializeFormatError(f"{where}.stop_token_ids {stops} do not match the "
                                     f"vocabulary (read as {info.stop_token_ids})")
    info._declared_vocab_type = VocabType[vocab_type]
    return info


def _grammar_fields(grammar) -> dict:
    ebnf = grammar.to_ebnf()
    # The root rule prints first, as `name ::=` or `name[attributes] ::=`.
    return {"root_rule_name": ebnf.split("::=", 1)[0].split("[", 1)[0].strip(), "ebnf": ebnf}


def _grammar_from_fields(doc: dict, where: str, from_ebnf):
    _only_known_fields(doc, _FIELDS["Grammar"], where)
    ebnf = _field(doc, "ebnf", str, where)
    root = _field(doc, "root_rule_name", str, where)
    try:
        return from_ebnf(ebnf, root_rule_name=root)
    except GrammarError as exc:
        raise DeserializeFormatError(f"{where}.ebnf does not parse: {exc}") from None


def grammar_to_json(grammar) -> str:
    """The JSON document of a :class:`Grammar`."""
    return _document("Grammar", _grammar_fields(grammar))


def grammar_from_json(text: Any, from_ebnf):
    """The grammar of a document written by :func:`grammar_to_json`, parsed by
    ``from_ebnf(text, root_rule_name=...)``."""
    return _grammar_from_fields(_read(text, "Grammar"), "Grammar", from_ebnf)


def _vocabulary_digest(info) -> str:
    """A digest of what masks depend on: the decoded token bytes, special and stop ids and
    the vocabulary size (not the vocab type, so a vocabulary read back from JSON, which is
    rebuilt from its decoded bytes, matches the one it was written from)."""
    digest = hashlib.sha256()
    digest.update(struct.pack("<q", info.vocab_size))
    tokens = info.decoded_vocab
    digest.update(struct.pack(f"<{len(tokens)}q", *map(len, tokens)))
    digest.update(b"".join(tokens))
    for ids in (info.special_token_ids, info.stop_token_ids):
        digest.update(struct.pack(f"<q{len(ids)}q", len(ids), *ids))
    return digest.hexdigest()


def compiled_to_json(compiled) -> str:
    """The JSON document of a :class:`CompiledGrammar` (without its vocabulary, which is
    identified by fingerprint)."""
    info = compiled.tokenizer_info
    return _document("CompiledGrammar", {
        "grammar": _grammar_fields(compiled.grammar),
        "vocabulary_digest": _vocabulary_digest(info),
        "vocab_size": info.vocab_size,
    })


def compiled_from_json(text: Any, tokenizer_info, from_ebnf, compile_grammar):
    """Recompiles a document written by :func:`compiled_to_json` with
    ``compile_grammar(grammar)``, for ``tokenizer_info``, which must be the vocabulary it was
    written for."""
    where = "CompiledGrammar"
    doc = _read(text, where)
    grammar = _grammar_from_fields(_field(doc, "grammar", dict, where), where + ".grammar",
                                   from_ebnf)
    digest = _field(doc, "vocabulary_digest", str, where)
    vocab_size = _field(doc, "vocab_size", int, where)
    if vocab_size != tokenizer_info.vocab_size or digest != _vocabulary_digest(tokenizer_info):
        raise DeserializeFormatError(
            f"{where} was compiled for another vocabulary (vocab_size {vocab_size}, digest "
            f"{digest[:16]}...; this one: {tokenizer_info.vocab_size}, "
            f"{_vocabulary_digest(tokenizer_info)[:16]}...)")
    return compile_grammar(grammar)
