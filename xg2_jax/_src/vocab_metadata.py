"""What a vocabulary says about itself: the byte-level alphabet, the encoding its token
strings show, and xgrammar's metadata JSON (``TokenizerInfo.dump_metadata``).

Vocabulary types are their ints here (0 raw, 1 byte fallback, 2 byte level: ``VocabType``'s
values); :mod:`xg2_jax._src.tokenizer` wraps them.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from xg2_jax._src import serialization_json
from xg2_jax._src.errors import DeserializeFormatError

__all__ = ["BYTE_LEVEL_CHARSET", "detect_vocab_type", "parse_metadata"]

_BYTE_FALLBACK, _BYTE_LEVEL = 1, 2


def _byte_level_charset() -> frozenset[str]:
    """The 256 characters of GPT-2's byte-to-unicode alphabet (``VocabType.BYTE_LEVEL``):
    printable Latin-1 bytes stand for themselves, the other 68 bytes for U+0100 onwards."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    num_shifted = 256 - len(kept)
    return frozenset([chr(b) for b in kept] + [chr(0x100 + i) for i in range(num_shifted)])


BYTE_LEVEL_CHARSET = _byte_level_charset()
# A character outside the byte-level alphabet (searched per token by the C regex engine).
_OUTSIDE_BYTE_LEVEL = re.compile(
    "[^" + "".join(re.escape(c) for c in sorted(BYTE_LEVEL_CHARSET)) + "]")


def detect_vocab_type(vocab: Mapping[str, int]) -> Optional[int]:
    """The encoding a vocabulary's token strings show (1 byte fallback, 2 byte level), or
    None if neither fits.

    Byte fallback: at least 128 of the byte pieces ``"<0x00>"``..``"<0xFF>"``. Byte level:
    at least 128 single-character tokens of the byte-level alphabet and at least 99% of the
    tokens spelled in it (added tokens such as chat markers may not be).

    Args:
        vocab: token string to id.

    Returns:
        1, 2 or None.
    """
    num_byte_pieces = sum(f"<0x{byte:02X}>" in vocab for byte in range(256))
    if num_byte_pieces >= 128:
        return _BYTE_FALLBACK
    if sum(char in vocab for char in BYTE_LEVEL_CHARSET) < 128:
        return None
    num_outside = sum(map(bool, map(_OUTSIDE_BYTE_LEVEL.search, vocab)))
    if len(vocab) - num_outside >= 0.99 * len(vocab):
        return _BYTE_LEVEL
    return None


_METADATA_FIELDS = {"vocab_type": (int, "an int"), "vocab_size": (int, "an int"),
                    "add_prefix_space": (bool, "a bool"), "stop_token_ids": (list, "a list")}


def parse_metadata(metadata: Any) -> dict:
    """The checked fields of a metadata JSON text.

    Args:
        metadata: JSON with ``vocab_type`` (0, 1 or 2), ``vocab_size`` (int),
            ``add_prefix_space`` (bool) and ``stop_token_ids`` (list).

    Returns:
        The four fields.

    Raises:
        InvalidJSONError: not JSON text.
        DeserializeFormatError: not an object, or a field missing or of the wrong type.
    """
    fields = serialization_json.load_object(metadata, "TokenizerInfo metadata")
    for key, (kind, described) in _METADATA_FIELDS.items():
        value = fields.get(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise DeserializeFormatError(f"metadata field '{key}' must be {described}; "
                                         f"got {value!r}")
    if fields["vocab_type"] not in (0, 1, 2):
        raise DeserializeFormatError(f"metadata field 'vocab_type' must be 0, 1 or 2; got "
                                     f"{fields['vocab_type']}")
    return {key: fields[key] for key in _METADATA_FIELDS}
