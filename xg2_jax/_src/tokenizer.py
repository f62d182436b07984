"""Tokenizer vocabularies: decoded token bytes, special and stop tokens.

`TokenizerInfo` follows xgrammar's API: build it from a token list, from a vocabulary file of
the project's data format, from a Hugging Face ``tokenizer.json``, or from a ``tokenizers`` /
``transformers`` tokenizer object. The heavy lifting (decoding, trie) is native.

Example:
    >>> info = TokenizerInfo(["a", "b", "Ġa", "<|endoftext|>"], VocabType.BYTE_LEVEL)
    >>> info.decoded_vocab[2]
    b' a'
    >>> info.stop_token_ids
    [3]
"""

from __future__ import annotations

import enum
import gzip
import json
import operator
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from xg2_jax import _core
from xg2_jax._src import serialization_json, vocab_metadata
from xg2_jax._src.errors import TokenizerError, XG2Error

__all__ = ["TokenizerInfo", "VocabType"]

_SPACE_MARK = "\u2581"

PathLike = Union[str, "os.PathLike[str]"]


class VocabType(enum.IntEnum):
    """How the token strings of a vocabulary encode bytes.

    RAW: the string is the token's UTF-8 text. BYTE_FALLBACK (SentencePiece): ``"▁"`` is a
    space and ``"<0xNN>"`` is one raw byte. BYTE_LEVEL (GPT-2 BPE): each character stands for one
    byte through the GPT-2 byte alphabet (``"Ġ"`` is a space, ``"Ċ"`` a newline).
    """

    RAW = 0
    BYTE_FALLBACK = 1
    BYTE_LEVEL = 2


_VOCAB_TYPE_NAMES = {
    "raw": VocabType.RAW,
    "byte_fallback": VocabType.BYTE_FALLBACK,
    "byte_level": VocabType.BYTE_LEVEL,
}


def _vocab_type(value: Any) -> VocabType:
    if isinstance(value, str):
        try:
            return _VOCAB_TYPE_NAMES[value.lower()]
        except KeyError:
            raise TokenizerError(
                f"unknown vocab_type {value!r}; expected one of {sorted(_VOCAB_TYPE_NAMES)}"
            ) from None
    try:
        return VocabType(value)
    except (ValueError, TypeError):
        raise TokenizerError(f"unknown vocab_type {value!r}") from None


def _id_list(value: Any, what: str) -> list[int]:
    if value is None:
        return []
    if isinstance(value, bool):
        raise TokenizerError(f"{what} must be an int or a sequence of ints, got {value!r}")
    try:
        return [operator.index(value)]
    except TypeError:
        pass
    try:
        return [operator.index(v) for v in value]
    except TypeError:
        raise TokenizerError(
            f"{what} must be an int or a sequence of ints, got {value!r}"
        ) from None


class TokenizerInfo:
    """A tokenizer vocabulary as the grammar engine sees it: the bytes of every token, which
    tokens are special (never text) and which end generation.

    Args:
        encoded_vocab: token strings indexed by id, exactly as the tokenizer writes them (``str``,
            or ``bytes`` taken as the string's UTF-8). An empty string marks a special token.
        vocab_type: how the strings encode bytes (`VocabType`, its int value or its lowercase
            name, e.g. ``"byte_level"``).
        vocab_size: the model's logits width; may exceed ``len(encoded_vocab)`` (the extra
            padding ids are never allowed). ``None``: ``len(encoded_vocab)``.
        stop_token_ids: ids that end generation (an int or a sequence). ``None`` or empty:
            detected from well-known names (``</s>``, ``<|endoftext|>``, ``<|eot_id|>``,
            ``<|im_end|>``, ``<eos>``, ``<end_of_turn>``, ...), preferring special tokens.
        special_token_ids: control tokens that are never plain text. Empty strings are
            special too; stop tokens are never text either, but are listed as stop ids only.
        add_prefix_space: whether the tokenizer prepends a space to the text it encodes
            (SentencePiece's dummy prefix).

    Raises:
        TokenizerError: an id out of range, ``vocab_size`` below the number of tokens, a token
            that is neither ``str`` nor ``bytes``, or an unknown vocab type.

    Example:
        >>> info = TokenizerInfo(["<s>", "</s>", "▁hi", "<0x0A>"], VocabType.BYTE_FALLBACK,
        ...                      vocab_size=8, special_token_ids=[0])
        >>> info.decoded_vocab[2:], info.stop_token_ids
        ([b' hi', b'\\n'], [1])
    """

    def __init__(
        self,
        encoded_vocab: Sequence[Union[str, bytes]],
        vocab_type: Union[VocabType, int, str] = VocabType.RAW,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Union[int, Sequence[int], None] = None,
        special_token_ids: Sequence[int] | None = None,
        add_prefix_space: bool = False,
    ) -> None:
        vtype = _vocab_type(vocab_type)
        if isinstance(encoded_vocab, (str, bytes, Mapping)) or not isinstance(
            encoded_vocab, Iterable
        ):
            raise TokenizerError(
                "encoded_vocab must be a sequence of token strings, "
                f"got {type(encoded_vocab).__name__}"
            )
        if not isinstance(encoded_vocab, (list, tuple)):
            encoded_vocab = list(encoded_vocab)
        if vocab_size is None:
            size = 0
        else:
            try:
                size = operator.index(vocab_size)
            except TypeError:
                raise TokenizerError(f"vocab_size must be an int, got {vocab_size!r}") from None
            if size <= 0 and len(encoded_vocab) > 0:
                raise TokenizerError(f"vocab_size must be positive, got {size}")
        stops = _id_list(stop_token_ids, "stop_token_ids")
        specials = _id_list(special_token_ids, "special_token_ids")
        try:
            self._handle = _core.TokenizerInfo(
                encoded_vocab, int(vtype), size, stops, specials, bool(add_prefix_space)
            )
        except (TokenizerError, MemoryError):
            raise
        except Exception as exc:  # the core's error for a bad vocabulary, whatever its class
            raise TokenizerError(str(exc)) from exc
        self._decoded_vocab: list[bytes] | None = None
        self._text_token_table: tuple[dict[bytes, int], int] | None = None
        # deserialize_json rebuilds from decoded bytes (VocabType.RAW) and keeps the type
        # the vocabulary was read with.
        self._declared_vocab_type: VocabType | None = None

    # ----------------------------------------------------------------------------- properties
    @property
    def vocab_type(self) -> VocabType:
        """How the token strings encode bytes."""
        if self._declared_vocab_type is not None:
            return self._declared_vocab_type
        return VocabType(self._handle.vocab_type)

    @property
    def vocab_size(self) -> int:
        """The model's vocabulary (logits) width, at least `num_tokens`."""
        return self._handle.vocab_size

    @property
    def num_tokens(self) -> int:
        """The number of token strings (ids ``num_tokens .. vocab_size - 1`` are padding)."""
        return self._handle.num_tokens

    @property
    def stop_token_ids(self) -> list[int]:
        """Ids that end generation (given, or detected from well-known names)."""
        return list(self._handle.stop_token_ids)

    @property
    def special_token_ids(self) -> list[int]:
        """Sorted ids below `num_tokens` that are control tokens: the given special ids and the
        tokens whose string is empty (as xgrammar). Stop tokens, never text either, are listed
        in :attr:`stop_token_ids` unless given as special too."""
        return list(self._handle.special_token_ids)

    @property
    def add_prefix_space(self) -> bool:
        """Whether the tokenizer prepends a space to the text it encodes."""
        return self._handle.add_prefix_space

    @property
    def decoded_vocab(self) -> list[bytes]:
        """The bytes of every token, indexed by id (special tokens: their text in UTF-8)."""
        if self._decoded_vocab is None:
            self._decoded_vocab = self._handle.decoded_vocab()
        return self._decoded_vocab

    def text_token_table(self) -> tuple[dict[bytes, int], int]:
        """``(bytes -> first token id, longest token)`` over the normal tokens, built once.

        Used for greedy longest-match tokenization of known text (see
        :func:`greedy_tokenize`).
        """
        if self._text_token_table is None:
            special = set(self.special_token_ids) | set(self.stop_token_ids)
            by_bytes: dict[bytes, int] = {}
            for i, b in enumerate(self.decoded_vocab):
                if b and i not in special:
                    by_bytes.setdefault(b, i)
            self._text_token_table = (by_bytes, max((len(b) for b in by_bytes), default=1))
        return self._text_token_table

    @property
    def fingerprint(self) -> int:
        """A 64-bit hash of the decoded vocabulary, its special and stop flags and vocab size."""
        return self._handle.fingerprint

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (``b""`` for a padding id).

        Raises:
            IndexError: ``token_id`` is outside ``[0, vocab_size)``.
        """
        return self._handle.token_bytes(token_id)

    def dump_metadata(self) -> str:
        """The vocabulary's settings as compact JSON (xgrammar's metadata string): together
        with the encoded vocabulary they rebuild it (:meth:`from_vocab_and_metadata`).

        Returns:
            ``{"add_prefix_space":...,"stop_token_ids":[...],"vocab_size":...,"vocab_type":...}``
            with ``vocab_type`` as its int value.

        Example:
            >>> TokenizerInfo(["a", "</s>"]).dump_metadata()
            '{"add_prefix_space":false,"stop_token_ids":[1],"vocab_size":2,"vocab_type":0}'
        """
        return json.dumps({"vocab_type": int(self.vocab_type), "vocab_size": self.vocab_size,
                           "add_prefix_space": self.add_prefix_space,
                           "stop_token_ids": self.stop_token_ids},
                          sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_vocab_and_metadata(encoded_vocab: Sequence[Union[str, bytes]],
                                metadata: Union[str, bytes]) -> "TokenizerInfo":
        """A vocabulary from its encoded tokens and the JSON of :meth:`dump_metadata`.

        Args:
            encoded_vocab: the tokens as the tokenizer writes them.
            metadata: JSON with ``vocab_type`` (0, 1 or 2), ``vocab_size`` (int),
                ``add_prefix_space`` (bool) and ``stop_token_ids`` (list of ints).

        Returns:
            The vocabulary.

        Raises:
            InvalidJSONError: ``metadata`` is not JSON text.
            DeserializeFormatError: not an object, or a field missing or of the wrong type
                (named).
            TokenizerError: a stop token id out of range.

        Example:
            >>> info = TokenizerInfo.from_vocab_and_metadata(
            ...     ["a", "b"], '{"vocab_type":0,"vocab_size":4,"add_prefix_space":false,'
            ...     '"stop_token_ids":[1]}')
            >>> info.vocab_size, info.stop_token_ids
            (4, [1])
        """
        fields = vocab_metadata.parse_metadata(metadata)
        return TokenizerInfo(encoded_vocab, VocabType(fields["vocab_type"]),
                             vocab_size=fields["vocab_size"],
                             stop_token_ids=fields["stop_token_ids"],
                             add_prefix_space=fields["add_prefix_space"])

    def serialize_json(self) -> str:
        """This vocabulary as a JSON document (decoded token bytes, special and stop ids).

        Example:
            >>> info = TokenizerInfo(["a", "b", "</s>"])
            >>> again = TokenizerInfo.deserialize_json(info.serialize_json())
            >>> again.decoded_vocab == info.decoded_vocab, again.stop_token_ids
            (True, [2])
        """
        return serialization_json.tokenizer_to_json(self)

    @staticmethod
    def deserialize_json(json_string: Union[str, bytes]) -> "TokenizerInfo":
        """Reads a document written by :meth:`serialize_json`.

        Raises:
            InvalidJSONError: not JSON. DeserializeVersionError: another serialization
                version. DeserializeFormatError: a missing, ill-typed or inconsistent field.
        """
        return serialization_json.tokenizer_from_json(json_string, TokenizerInfo, VocabType)

    def __repr__(self) -> str:
        return (
            f"TokenizerInfo(vocab_type={self.vocab_type.name}, vocab_size={self.vocab_size}, "
            f"num_tokens={self.num_tokens}, stop_token_ids={self.stop_token_ids}, "
            f"special={len(self._handle.special_token_ids)})"
        )

    @staticmethod
    def _detect_vocab_type_from_vocab(vocab: Mapping[str, int]) -> VocabType | None:
        """The encoding a vocabulary's own token strings show, or None if neither byte
        encoding fits (xgrammar's detection; the rules are
        :func:`xg2_jax._src.vocab_metadata.detect_vocab_type`'s).

        Args:
            vocab: token string to id.

        Returns:
            ``VocabType.BYTE_FALLBACK``, ``VocabType.BYTE_LEVEL`` or None.

        Example:
            >>> TokenizerInfo._detect_vocab_type_from_vocab({"hello": 0, "##ing": 1}) is None
            True
        """
        code = vocab_metadata.detect_vocab_type(vocab)
        return None if code is None else VocabType(code)

    # --------------------------------------------------------------------------- constructors
    @classmethod
    def from_vocab_file(cls, path: PathLike, *, vocab_size: int | None = None) -> "TokenizerInfo":
        """Loads a vocabulary in the project's data format.

        The file (``.json`` or gzip-compressed ``.json.gz``) holds one object with ``tokens``
        (token strings by id), ``vocab_type`` (``"byte_level"``, ``"byte_fallback"`` or
        ``"raw"``), and optionally ``special_ids`` and ``eos_ids``.

        Args:
            path: the file.
            vocab_size: the model's logits width if larger than the token list.

        Returns:
            The `TokenizerInfo`; ``eos_ids`` become the stop tokens.

        Raises:
            TokenizerError: the file is missing, not JSON, or lacks a token list.

        Example:
            >>> path = "shared/data/vocab/llama3.json.gz"
            >>> info = TokenizerInfo.from_vocab_file(path)  # doctest: +SKIP
            >>> info.stop_token_ids  # doctest: +SKIP
            [128001, 128009]
        """
        data = _read_json(Path(path))
        if not isinstance(data, dict) or not isinstance(data.get("tokens"), list):
            raise TokenizerError(f"{path}: expected a JSON object with a 'tokens' list")
        if "vocab_type" not in data:
            raise TokenizerError(f"{path}: missing 'vocab_type'")
        return cls(
            data["tokens"],
            _vocab_type(data["vocab_type"]),
            vocab_size=vocab_size,
            stop_token_ids=data.get("eos_ids") or None,
            special_token_ids=data.get("special_ids") or None,
            add_prefix_space=bool(data.get("add_prefix_space", False)),
        )

    @classmethod
    def from_tokenizer_json(
        cls,
        path: PathLike,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Union[int, Sequence[int], None] = None,
    ) -> "TokenizerInfo":
        """Loads a Hugging Face ``tokenizer.json`` (or a directory that contains one).

        BPE, WordPiece, WordLevel and Unigram models are read; ``added_tokens`` marked
        ``special`` are special tokens. The vocab type comes from the decoder and
        pre-tokenizer: ByteLevel gives BYTE_LEVEL; ByteFallback, Metaspace, a ``"▁"`` Replace or
        ``model.byte_fallback`` give BYTE_FALLBACK; anything else RAW.

        Args:
            path: ``tokenizer.json`` or its directory.
            vocab_size: the model's logits width if larger than the vocabulary.
            stop_token_ids: stop tokens; ``None`` detects them from well-known names.

        Returns:
            The `TokenizerInfo`.

        Raises:
            TokenizerError: the file is missing, not JSON, or has no vocabulary.

        Example:
            >>> info = TokenizerInfo.from_tokenizer_json(  # doctest: +SKIP
            ...     "Qwen3-0.6B/tokenizer.json", vocab_size=151936)
        """
        p = Path(path)
        if p.is_dir():
            p = p / "tokenizer.json"
        data = _read_json(p)
        try:
            return cls._from_tokenizer_dict(
                data, str(p), vocab_size=vocab_size, stop_token_ids=stop_token_ids
            )
        except (TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
            # A structurally malformed file (a field of the wrong type or shape).
            raise TokenizerError(f"{p}: malformed tokenizer.json: {type(exc).__name__}: {exc}") from None

    @classmethod
    def from_huggingface(
        cls,
        tokenizer: Any,
        *,
        vocab_size: int | None = None,
        stop_token_ids: Union[int, Sequence[int], None] = None,
    ) -> "TokenizerInfo":
        """Builds the vocabulary of a Hugging Face tokenizer.

        Args:
            tokenizer: a ``tokenizers.Tokenizer``; a ``transformers`` tokenizer (fast ones are
                read through ``backend_tokenizer``, slow ones through ``get_vocab()``); or a
                path to a ``tokenizer.json`` file or to a directory holding one.
            vocab_size: the model's logits width (e.g. ``model.config.vocab_size``) when it is
                larger than the tokenizer's vocabulary.
            stop_token_ids: stop tokens. ``None``: the tokenizer's ``eos_token_id`` when it has
                one, else detected from well-known names.

        Returns:
            The `TokenizerInfo`.

        Raises:
            TokenizerError: the object is not a tokenizer this function understands, or its
                vocabulary is malformed.

        Example:
            >>> from transformers import AutoTokenizer  # doctest: +SKIP
            >>> tok = AutoTokenizer.from_pretrained("gpt2")  # doctest: +SKIP
            >>> info = TokenizerInfo.from_huggingface(tok, vocab_size=50304)  # doctest: +SKIP
        """
        if isinstance(tokenizer, (str, os.PathLike)):
            return cls.from_tokenizer_json(
                tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids
            )
        extra_special: list[int] = []
        if hasattr(tokenizer, "all_special_ids") or hasattr(tokenizer, "eos_token_id"):
            # transformers PreTrainedTokenizer(Fast): its own notion of special and eos tokens.
            extra_special = [i for i in (getattr(tokenizer, "all_special_ids", None) or [])
                             if isinstance(i, int)]
            if stop_token_ids is None:
                eos = getattr(tokenizer, "eos_token_id", None)
                if isinstance(eos, int):
                    stop_token_ids = [eos]
                elif isinstance(eos, (list, tuple)) and eos:
                    stop_token_ids = list(eos)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None and callable(getattr(tokenizer, "to_str", None)):
            backend = tokenizer
        if backend is not None:
            try:
                data = json.loads(backend.to_str())
            except (ValueError, TypeError) as exc:
                raise TokenizerError(f"cannot serialize the tokenizer: {exc}") from exc
            return cls._from_tokenizer_dict(
                data, type(tokenizer).__name__, vocab_size=vocab_size,
                stop_token_ids=stop_token_ids, extra_special=extra_special,
            )
        if callable(getattr(tokenizer, "get_vocab", None)):
            return cls._from_slow_tokenizer(
                tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids,
                extra_special=extra_special,
            )
        raise TokenizerError(
            f"cannot read a vocabulary from {type(tokenizer).__name__}: expected a "
            "tokenizers.Tokenizer, a transformers tokenizer, or a path to tokenizer.json"
        )

    # ----------------------------------------------------------------------------- internals
    @classmethod
    def _from_tokenizer_dict(
        cls,
        data: Any,
        where: str,
        *,
        vocab_size: int | None,
        stop_token_ids: Union[int, Sequence[int], None],
        extra_special: Iterable[int] = (),
    ) -> "TokenizerInfo":
        if not isinstance(data, dict):
            raise TokenizerError(f"{where}: expected a JSON object")
        model = data.get("model")
        if not isinstance(model, dict):
            raise TokenizerError(f"{where}: no 'model' section")
        entries = _model_vocab(model, where)
        special: set[int] = set(extra_special)
        added = data.get("added_tokens") or []
        if not isinstance(added, list):
            raise TokenizerError(f"{where}: 'added_tokens' must be a list")
        for tok in added:
            if not isinstance(tok, dict) or not isinstance(tok.get("content"), str):
                raise TokenizerError(f"{where}: malformed added token {tok!r}")
            tid = _check_id(tok.get("id"), where)
            entries.append((tok["content"], tid))
            if tok.get("special", False):
                special.add(tid)
        if not entries:
            raise TokenizerError(f"{where}: the vocabulary is empty")
        tokens = [""] * (max(tid for _, tid in entries) + 1)
        for text, tid in entries:
            tokens[tid] = text
        vtype, prefix = _detect_vocab_type(data, model)
        return cls(
            tokens, vtype, vocab_size=vocab_size, stop_token_ids=stop_token_ids,
            special_token_ids=sorted(i for i in special if 0 <= i < len(tokens)),
            add_prefix_space=prefix,
        )

    @classmethod
    def _from_slow_tokenizer(
        cls,
        tokenizer: Any,
        *,
        vocab_size: int | None,
        stop_token_ids: Union[int, Sequence[int], None],
        extra_special: Iterable[int],
    ) -> "TokenizerInfo":
        vocab = tokenizer.get_vocab()
        if not isinstance(vocab, dict) or not vocab:
            raise TokenizerError("get_vocab() returned no vocabulary")
        entries = [(str(t), _check_id(i, "get_vocab()")) for t, i in vocab.items()]
        tokens = [""] * (max(i for _, i in entries) + 1)
        for text, tid in entries:
            tokens[tid] = text
        if hasattr(tokenizer, "sp_model") or "<0x0A>" in vocab:
            vtype, prefix = VocabType.BYTE_FALLBACK, True
        elif "\u010a" in vocab or "\u0120" in vocab:  # "Ċ" (newline) or "Ġ" (space)
            vtype, prefix = VocabType.BYTE_LEVEL, False
        else:
            vtype, prefix = VocabType.RAW, False
        prefix = bool(getattr(tokenizer, "add_prefix_space", prefix))
        return cls(
            tokens, vtype, vocab_size=vocab_size, stop_token_ids=stop_token_ids,
            special_token_ids=sorted(i for i in set(extra_special) if 0 <= i < len(tokens)),
            add_prefix_space=prefix,
        )


def _read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenizerError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError, ValueError) as exc:  # gzip errors, JSON/UTF-8 decode errors
        raise TokenizerError(f"{path}: not a valid JSON vocabulary file: {exc}") from exc
    except RecursionError:
        raise TokenizerError(f"{path}: JSON nested too deeply") from None


# Far above any real vocabulary (Gemma's 262,144); larger ids would only allocate memory.
MAX_TOKEN_ID = 1 << 24


def _check_id(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TokenizerError(f"{where}: bad token id {value!r}")
    if value >= MAX_TOKEN_ID:
        raise TokenizerError(f"{where}: token id {value} exceeds the supported maximum {MAX_TOKEN_ID - 1}")
    return value


def _model_vocab(model: dict, where: str) -> list[tuple[str, int]]:
    vocab = model.get("vocab")
    if isinstance(vocab, dict):  # BPE, WordPiece, WordLevel: {token: id}
        out = []
        for text, tid in vocab.items():
            out.append((text, _check_id(tid, where)))
        return out
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...], id = position
        out = []
        for i, entry in enumerate(vocab):
            if isinstance(entry, (list, tuple)) and entry and isinstance(entry[0], str):
                out.append((entry[0], i))
            elif isinstance(entry, str):
                out.append((entry, i))
            else:
                raise TokenizerError(f"{where}: malformed vocabulary entry {i}: {entry!r}")
        return out
    raise TokenizerError(f"{where}: the model ({model.get('type', '?')}) has no vocabulary")


def _components(node: Any) -> list[dict]:
    """The node and, for Sequence nodes, its parts (recursively)."""
    if not isinstance(node, dict):
        return []
    out = [node]
    for key in ("decoders", "pretokenizers", "normalizers", "pre_tokenizers"):
        parts = node.get(key) or []
        if not isinstance(parts, list):
            raise TokenizerError(f"tokenizer.json: '{key}' must be a list, not {type(parts).__name__}")
        for child in parts:
            if not isinstance(child, dict):
                raise TokenizerError(f"tokenizer.json: the parts of '{key}' must be objects, "
                                     f"not {type(child).__name__}")
            out.extend(_components(child))
    return out


def _detect_vocab_type(data: dict, model: dict) -> tuple[VocabType, bool]:
    decoders = _components(data.get("decoder"))
    pre = _components(data.get("pre_tokenizer"))
    normalizers = _components(data.get("normalizer"))
    types = {d.get("type") for d in decoders + pre}

    prefix = False
    for node in pre:
        if node.get("type") == "Metaspace":
            if node.get("add_prefix_space") or node.get("prepend_scheme") in ("always", "first"):
                prefix = True
        if node.get("type") == "ByteLevel" and node.get("add_prefix_space"):
            prefix = True
    for node in normalizers:
        if node.get("type") == "Prepend" and node.get("prepend") == _SPACE_MARK:
            prefix = True

    if "ByteLevel" in types:
        return VocabType.BYTE_LEVEL, prefix
    replaces_mark = any(
        d.get("type") == "Replace" and (d.get("pattern") or {}).get("String") == _SPACE_MARK
        for d in decoders
    )
    byte_fallback = bool(model.get("byte_fallback"))
    if byte_fallback or replaces_mark or types & {"ByteFallback", "Metaspace"}:
        return VocabType.BYTE_FALLBACK, prefix
    return VocabType.RAW, prefix


def greedy_tokenize(tokenizer_info: "TokenizerInfo", data: Union[bytes, str]) -> list[int]:
    """Splits ``data`` into token ids by greedy longest match over the decoded vocabulary.

    Not a model's BPE; good enough to drive a matcher along a known text (and how the
    shipped tiny model's training data was tokenized).

    Args:
        tokenizer_info: the vocabulary.
        data: the text (``str`` is encoded as UTF-8).

    Returns:
        The token ids.

    Raises:
        XG2Error: a byte no token starts with.

    Example:
        >>> tok = TokenizerInfo(["a", "ab", "b"])
        >>> greedy_tokenize(tok, b"abb")
        [1, 2]
    """
    if isinstance(data, str):
        data = data.encode()
    by_bytes, longest = tokenizer_info.text_token_table()
    ids, pos = [], 0
    while pos < len(data):
        for size in range(min(longest, len(data) - pos), 0, -1):
            tid = by_bytes.get(data[pos:pos + size])
            if tid is not None:
                ids.append(tid)
                pos += size
                break
        else:
            raise XG2Error(f"byte {data[pos]:#04x} at offset {pos} has no token in the vocabulary")
    return ids
