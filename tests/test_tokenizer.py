"""Tests of TokenizerInfo: real vocabularies from shared/data/vocab, tokenizer.json loading,
Hugging Face objects, and bad input."""

from __future__ import annotations

import functools
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from xg2_jax._src.errors import TokenizerError, XG2Error
from xg2_jax._src.tokenizer import TokenizerInfo, VocabType

VOCABS = ["gpt2", "llama3", "qwen3", "tekken_240911", "llama2", "mistral_v3_spm", "gemma4"]


# ------------------------------------------------------------------------------ reference decode
def _gpt2_unicode_to_byte() -> dict[str, int]:
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {chr(b): b for b in printable}
    n = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + n)] = b
            n += 1
    return table


U2B = _gpt2_unicode_to_byte()


def ref_decode(token: str, vocab_type: str) -> bytes:
    """The decode of shared/data/vocab/tools/verify_vocab.py for one normal token."""
    if vocab_type == "byte_level":
        return bytes(U2B[c] for c in token) if all(c in U2B for c in token) else token.encode()
    if vocab_type == "byte_fallback":
        m = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", token)
        return bytes([int(m.group(1), 16)]) if m else token.replace("\u2581", " ").encode()
    return token.encode()


@functools.lru_cache(maxsize=None)
def load_raw(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def load_info(path: Path) -> TokenizerInfo:
    return TokenizerInfo.from_vocab_file(path)


@pytest.fixture(params=VOCABS)
def vocab(request, shared_data):
    path = shared_data / "vocab" / f"{request.param}.json.gz"
    if not path.exists():
        pytest.skip(f"missing {path}")
    return request.param, load_raw(path), load_info(path)


# --------------------------------------------------------------------------- real vocabularies
def test_vocab_file_loads(vocab):
    name, raw, info = vocab
    n = len(raw["tokens"])
    assert info.vocab_size == n == info.num_tokens
    assert info.vocab_type == VocabType[raw["vocab_type"].upper()]
    assert sorted(info.stop_token_ids) == sorted(raw["eos_ids"])
    # Special ids are the file's special ids plus the stop tokens (all listed there anyway).
    assert info.special_token_ids == sorted(set(raw["special_ids"]) | set(raw["eos_ids"]))
    decoded = info.decoded_vocab
    assert len(decoded) == n
    special = set(info.special_token_ids)
    for i, tok in enumerate(raw["tokens"]):
        expected = tok.encode() if i in special else ref_decode(tok, raw["vocab_type"])
        assert decoded[i] == expected, (name, i, tok)
    assert info.token_bytes(n - 1) == decoded[n - 1]
    assert decoded is info.decoded_vocab  # cached
    stats = info._handle.trie_stats()
    # Normal tokens holding byte 0xFF or 0xFE are left out of the trie (no UTF-8 text contains
    # them; they lead the virtual strings of token-level grammars).
    holding_ff = sum(1 for i in range(n) if i not in special and (b"\xff" in decoded[i] or b"\xfe" in decoded[i]))
    assert stats["num_normal_tokens"] == n - len(special) - holding_ff
    assert stats["num_nodes"] > stats["num_normal_tokens"] // 2


def test_reference_tokenizations_round_trip(shared_data):
    cases = load_raw(shared_data / "vocab" / "tokenize_cases.json.gz")["vocabs"]
    assert set(cases) <= set(VOCABS)
    for name, entry in cases.items():
        info = load_info(shared_data / "vocab" / f"{name}.json.gz")
        decoded = info.decoded_vocab
        assert entry["cases"]
        for case in entry["cases"]:
            got = b"".join(decoded[i] for i in case["ids"])
            want = case["text"].encode()
            if info.vocab_type == VocabType.BYTE_FALLBACK and got != want and got == b" " + want:
                got = want  # SentencePiece dummy prefix
            assert got == want, (name, case["text"][:40])


def test_stop_tokens_detected_by_name(vocab):
    name, raw, _ = vocab
    info = TokenizerInfo(raw["tokens"], raw["vocab_type"], special_token_ids=raw["special_ids"])
    assert sorted(info.stop_token_ids) == sorted(raw["eos_ids"])


def test_stop_detection_without_special_ids(shared_data):
    raw = load_raw(shared_data / "vocab" / "llama3.json.gz")
    info = TokenizerInfo(raw["tokens"], VocabType.BYTE_LEVEL)
    assert info.stop_token_ids == [128001, 128009]
    assert info.special_token_ids == []  # stop ids are listed as stop ids only, as xgrammar
    assert not {128001, 128009} & set(info.text_token_table()[0].values())  # still never text
    assert info.decoded_vocab[128009] == b"<|eot_id|>"


def test_vocab_size_larger_than_token_list(shared_data):
    path = shared_data / "vocab" / "qwen3.json.gz"
    base = load_info(path)
    info = TokenizerInfo.from_vocab_file(path, vocab_size=151936)
    assert info.vocab_size == 151936
    assert info.num_tokens == len(info.decoded_vocab) == 151669
    assert info.special_token_ids == base.special_token_ids
    assert info.token_bytes(151935) == b""
    assert info._handle.is_special(151800)
    assert not info._handle.is_special(9707)
    assert info.token_bytes(9707) == b"Hello"
    assert info.fingerprint != base.fingerprint
    with pytest.raises(IndexError):
        info.token_bytes(151936)
    with pytest.raises(TokenizerError, match="151000"):
        TokenizerInfo.from_vocab_file(path, vocab_size=151000)


def test_fingerprint_is_stable(shared_data):
    raw = load_raw(shared_data / "vocab" / "llama2.json.gz")
    a = TokenizerInfo(raw["tokens"], "byte_fallback", special_token_ids=raw["special_ids"])
    b = TokenizerInfo(list(raw["tokens"]), VocabType.BYTE_FALLBACK,
                      special_token_ids=raw["special_ids"], stop_token_ids=raw["eos_ids"])
    c = TokenizerInfo(raw["tokens"], VocabType.RAW, special_token_ids=raw["special_ids"])
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != c.fingerprint
    assert 0 <= a.fingerprint < 2**64


# ----------------------------------------------------------------------------------- small vocabs
def test_small_vocab_and_empty_strings():
    info = TokenizerInfo(["a", "", "\u0120b", "<|endoftext|>", "a"], VocabType.BYTE_LEVEL,
                         vocab_size=8)
    assert info.decoded_vocab == [b"a", b"", b" b", b"<|endoftext|>", b"a"]
    assert info.stop_token_ids == [3]
    assert info.special_token_ids == [1]  # the empty token; the stop token is a stop id only
    assert info.vocab_size == 8 and info.num_tokens == 5
    assert info._handle.trie_stats()["num_normal_tokens"] == 3  # the stop token is not text
    assert "BYTE_LEVEL" in repr(info)


def test_byte_fallback_and_raw_decoding():
    info = TokenizerInfo(["<s>", "</s>", "\u2581hi", "<0x0A>", "<0xff>", "<0xZZ>", "x\u2581"],
                         VocabType.BYTE_FALLBACK, special_token_ids=[0])
    assert info.decoded_vocab == [b"<s>", b"</s>", b" hi", b"\n", b"\xff", b"<0xZZ>", b"x "]
    assert info.stop_token_ids == [1]
    raw = TokenizerInfo(["\u2581hi", b"\xff\xfe", "<0x0A>"], VocabType.RAW, stop_token_ids=1)
    assert raw.decoded_vocab == ["\u2581hi".encode(), b"\xff\xfe", b"<0x0A>"]
    assert raw.stop_token_ids == [1] and raw.special_token_ids == []


def test_explicit_ids_and_add_prefix_space():
    info = TokenizerInfo(["a", "b", "c"], stop_token_ids=[2, 2], special_token_ids=(0,),
                         add_prefix_space=True)
    assert info.stop_token_ids == [2]
    assert info.special_token_ids == [0]
    both = TokenizerInfo(["a", "b", "c"], stop_token_ids=[2], special_token_ids=[0, 2])
    assert both.special_token_ids == [0, 2] and both.stop_token_ids == [2]
    assert info.add_prefix_space is True
    assert info.vocab_type is VocabType.RAW


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(stop_token_ids=[3]), "3"),
        (dict(special_token_ids=[-1]), "-1"),
        (dict(stop_token_ids=[99], vocab_size=10), "99"),
        (dict(vocab_size=2), "2"),
        (dict(vocab_size="big"), "vocab_size"),
        (dict(stop_token_ids="x"), "stop_token_ids"),
        (dict(vocab_type=7), "7"),
        (dict(vocab_type="bpe"), "bpe"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"vocab_type": VocabType.RAW, **kwargs}
    with pytest.raises(TokenizerError, match=match):
        TokenizerInfo(["a", "b", "c"], **args)


def test_bad_vocab_types():
    with pytest.raises(TokenizerError):
        TokenizerInfo(["a", 3])
    with pytest.raises(TokenizerError):
        TokenizerInfo("abc")
    with pytest.raises(TokenizerError):
        TokenizerInfo({"a": 0})
    assert issubclass(TokenizerError, ValueError) and issubclass(TokenizerError, XG2Error)


# ------------------------------------------------------------------------------- vocab files
def test_vocab_file_errors(tmp_path):
    with pytest.raises(TokenizerError, match="cannot read"):
        TokenizerInfo.from_vocab_file(tmp_path / "missing.json.gz")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_vocab_file(bad)
    bad_gz = tmp_path / "bad.json.gz"
    bad_gz.write_bytes(b"\x1f\x8b\x08garbage")
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_vocab_file(bad_gz)
    no_tokens = tmp_path / "no_tokens.json"
    no_tokens.write_text(json.dumps({"vocab_type": "raw"}))
    with pytest.raises(TokenizerError, match="tokens"):
        TokenizerInfo.from_vocab_file(no_tokens)
    bad_type = tmp_path / "bad_type.json"
    bad_type.write_text(json.dumps({"vocab_type": "bpe", "tokens": ["a"]}))
    with pytest.raises(TokenizerError, match="bpe"):
        TokenizerInfo.from_vocab_file(bad_type)


def test_raw_vocab_file(tmp_path):
    path = tmp_path / "raw.json"
    path.write_text(json.dumps({"vocab_type": "raw", "tokens": ["<eos>", "x", "\u2581y"],
                                "special_ids": [0], "eos_ids": [0]}))
    info = TokenizerInfo.from_vocab_file(path, vocab_size=4)
    assert info.vocab_type == VocabType.RAW
    assert info.decoded_vocab == [b"<eos>", b"x", "\u2581y".encode()]
    assert info.stop_token_ids == [0] and info.vocab_size == 4


# ---------------------------------------------------------------------------- tokenizer.json
BPE_JSON = {
    "version": "1.0",
    "added_tokens": [
        {"id": 6, "content": "<|endoftext|>", "special": True, "normalized": False},
        {"id": 7, "content": "<tool>", "special": False, "normalized": False},
    ],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
    "model": {
        "type": "BPE",
        "byte_fallback": False,
        "vocab": {"a": 0, "b": 1, "\u0120": 2, "ab": 3, "\u0120a": 4, "\u010a": 5},
        "merges": [["a", "b"], ["\u0120", "a"]],
    },
}

UNIGRAM_JSON = {
    "version": "1.0",
    "added_tokens": [
        {"id": 0, "content": "<unk>", "special": True},
        {"id": 1, "content": "<s>", "special": True},
        {"id": 2, "content": "</s>", "special": True},
    ],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    ]},
    "pre_tokenizer": None,
    "decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0},
    ]},
    "model": {
        "type": "Unigram", "unk_id": 0, "byte_fallback": True,
        "vocab": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0], ["<0x0A>", 0.0],
                  ["\u2581hello", -1.0], ["\u2581", -2.0], ["world", -3.0]],
    },
}


def test_tokenizer_json_bpe_byte_level(tmp_path):
    (tmp_path / "tokenizer.json").write_text(json.dumps(BPE_JSON), encoding="utf-8")
    for source in (tmp_path / "tokenizer.json", tmp_path, str(tmp_path)):
        info = TokenizerInfo.from_huggingface(source)
        assert info.vocab_type == VocabType.BYTE_LEVEL
        assert info.decoded_vocab == [b"a", b"b", b" ", b"ab", b" a", b"\n",
                                      b"<|endoftext|>", b"<tool>"]
        assert info.special_token_ids == [6] and info.stop_token_ids == [6]
        assert info.add_prefix_space is False
    info = TokenizerInfo.from_tokenizer_json(tmp_path, vocab_size=16, stop_token_ids=[6, 15])
    assert info.vocab_size == 16 and info.stop_token_ids == [6, 15]


def test_tokenizer_json_unigram_byte_fallback(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(UNIGRAM_JSON), encoding="utf-8")
    info = TokenizerInfo.from_tokenizer_json(path)
    assert info.vocab_type == VocabType.BYTE_FALLBACK
    assert info.add_prefix_space is True
    assert info.decoded_vocab == [b"<unk>", b"<s>", b"</s>", b"\n", b" hello", b" ", b"world"]
    assert info.special_token_ids == [0, 1, 2] and info.stop_token_ids == [2]


def test_tokenizer_json_raw_and_holes(tmp_path):
    data = {"model": {"type": "WordLevel", "vocab": {"hi": 0, "there": 2}, "unk_token": "hi"},
            "added_tokens": [{"id": 4, "content": "<eos>", "special": True}]}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(data))
    info = TokenizerInfo.from_tokenizer_json(path)
    assert info.vocab_type == VocabType.RAW
    assert info.decoded_vocab == [b"hi", b"", b"there", b"", b"<eos>"]
    assert info.special_token_ids == [1, 3, 4] and info.stop_token_ids == [4]


@pytest.mark.parametrize(
    "content",
    [
        "{broken",
        json.dumps([1, 2]),
        json.dumps({"added_tokens": []}),
        json.dumps({"model": {"type": "BPE"}}),
        json.dumps({"model": {"type": "BPE", "vocab": {}}}),
        json.dumps({"model": {"type": "BPE", "vocab": {"a": -1}}}),
        json.dumps({"model": {"type": "Unigram", "vocab": [[3, 0.0]]}}),
        json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": [{"id": 1}]}),
    ],
)
def test_tokenizer_json_errors(tmp_path, content):
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_tokenizer_json(path)


def test_from_huggingface_errors(tmp_path):
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_huggingface(tmp_path)  # directory without tokenizer.json
    with pytest.raises(TokenizerError):
        TokenizerInfo.from_huggingface(object())


class _FakeBackend:
    def __init__(self, data):
        self._data = data

    def to_str(self):
        return json.dumps(self._data)


class _FakeFastTokenizer:
    """Duck-typed transformers PreTrainedTokenizerFast."""

    def __init__(self, data, eos_token_id, all_special_ids):
        self.backend_tokenizer = _FakeBackend(data)
        self.eos_token_id = eos_token_id
        self.all_special_ids = all_special_ids


class _FakeSlowTokenizer:
    """Duck-typed slow transformers tokenizer (SentencePiece-like)."""

    eos_token_id = 2
    all_special_ids = [0, 1, 2]

    def get_vocab(self):
        return {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "\u2581hi": 4}


def test_from_huggingface_transformers_like():
    fast = _FakeFastTokenizer(BPE_JSON, eos_token_id=6, all_special_ids=[6, 7])
    info = TokenizerInfo.from_huggingface(fast, vocab_size=10)
    assert info.stop_token_ids == [6]
    assert info.special_token_ids == [6, 7]
    assert info.vocab_size == 10 and info.vocab_type == VocabType.BYTE_LEVEL
    slow = TokenizerInfo.from_huggingface(_FakeSlowTokenizer())
    assert slow.vocab_type == VocabType.BYTE_FALLBACK and slow.add_prefix_space
    assert slow.decoded_vocab == [b"<unk>", b"<s>", b"</s>", b"\n", b" hi"]
    assert slow.stop_token_ids == [2] and slow.special_token_ids == [0, 1, 2]


def test_from_tokenizers_object():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    tok = tokenizers.Tokenizer(models.BPE(
        vocab={"a": 0, "b": 1, "\u0120": 2, "ab": 3, "\u0120a": 4, "\u0120ab": 5},
        merges=[("a", "b"), ("\u0120", "a"), ("\u0120a", "b")],
    ))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    info = TokenizerInfo.from_huggingface(tok)
    assert info.vocab_type == VocabType.BYTE_LEVEL
    assert info.stop_token_ids == [6] and info.special_token_ids == [6]
    for text in ["ab a", "a ab b", "ab ab"]:
        ids = tok.encode(text).ids
        assert b"".join(info.decoded_vocab[i] for i in ids) == text.encode()

    uni = tokenizers.Tokenizer(models.Unigram(
        [("<unk>", 0.0), ("</s>", 0.0), ("<0x0A>", 0.0), ("\u2581hello", -1.0),
         ("\u2581", -2.0), ("h", -3.0), ("e", -3.0), ("l", -3.0), ("o", -3.0)],
        unk_id=0, byte_fallback=True))
    uni.normalizer = normalizers.Replace(" ", "\u2581")
    uni.pre_tokenizer = pre_tokenizers.Metaspace()
    uni.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    uni.add_special_tokens(["<unk>", "</s>"])
    info = TokenizerInfo.from_huggingface(uni)
    assert info.vocab_type == VocabType.BYTE_FALLBACK and info.add_prefix_space
    assert info.stop_token_ids == [1]
    for text in ["hello\nhello", "hello hello", "oh\n"]:
        ids = uni.encode(text).ids
        assert b"".join(info.decoded_vocab[i] for i in ids) == b" " + text.encode()


def test_optional_dependencies_not_imported(tmp_path):
    code = (
        "import sys, xg2_jax._src.tokenizer\n"
        "bad = [m for m in ('tokenizers', 'transformers', 'torch') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    # cwd elsewhere: the source tree (without the built extension) must not shadow the install
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
