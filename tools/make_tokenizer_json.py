"""Writes the shipped tiny model's ``tokenizer.json`` (GPT-2 byte-level BPE) from llama.cpp's
``ggml-vocab-gpt-2.gguf``, the file the shipped vocabulary (``xg2_jax/data/gpt2.json.gz``)
was taken from, which also carries the BPE merges.

The GGUF file is in the ``llama-cpp-python==0.3.36`` sdist on PyPI
(``vendor/llama.cpp/models/ggml-vocab-gpt-2.gguf``); the script reads the GGUF key/value
header itself (no extra package) and checks the tokens against the shipped vocabulary and the
tokenizer against llama.cpp's test cases (``.gguf.inp`` / ``.gguf.out`` beside it).

Usage:
    python tools/make_tokenizer_json.py PATH/ggml-vocab-gpt-2.gguf xg2_jax/data/tiny_llama_json
"""

from __future__ import annotations

import argparse
import gzip
import json
import struct
from pathlib import Path

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _read_value(f, kind: int):
    if kind == _STRING:
        (n,) = struct.unpack("<Q", f.read(8))
        return f.read(n).decode("utf-8")
    if kind == _ARRAY:
        item_kind, n = struct.unpack("<IQ", f.read(12))
        return [_read_value(f, item_kind) for _ in range(n)]
    fmt = _SCALARS[kind]
    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]


def read_gguf_metadata(path: Path) -> dict:
    """The key/value metadata of a GGUF file (version 2 or 3)."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        version, _tensors, kv_count = struct.unpack("<IQQ", f.read(20))
        if version < 2:
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        meta = {}
        for _ in range(kv_count):
            (n,) = struct.unpack("<Q", f.read(8))
            key = f.read(n).decode("utf-8")
            (kind,) = struct.unpack("<I", f.read(4))
            meta[key] = _read_value(f, kind)
        return meta


def byte_level_bpe_json(vocab: dict, merges: list, added_tokens: list) -> dict:
    """A Hugging Face ``tokenizer.json`` for a GPT-2-style byte-level BPE (byte-level
    pre-tokenizer, post-processor and decoder). Shared with tools/make_vllm_test_model.py."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added_tokens,
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": {**byte_level, "add_prefix_space": True, "trim_offsets": False},
        "decoder": {**byte_level, "add_prefix_space": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def tokenizer_json(meta: dict) -> dict:
    """GPT-2's ``tokenizer.json`` from the GGUF metadata (its end-of-text token special)."""
    tokens = meta["tokenizer.ggml.tokens"]
    eos = tokens[meta["tokenizer.ggml.eos_token_id"]]
    added = [{"id": tokens.index(eos), "content": eos, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": True, "special": True}]
    return byte_level_bpe_json({t: i for i, t in enumerate(tokens)},
                               meta["tokenizer.ggml.merges"], added)


def check(tok_json: dict, gguf: Path, shipped_vocab: Path) -> None:
    """Tokens equal the shipped vocabulary's; encodings equal llama.cpp's test cases."""
    from tokenizers import Tokenizer

    shipped = json.loads(gzip.open(shipped_vocab).read())["tokens"]
    vocab = tok_json["model"]["vocab"]
    if sorted(vocab, key=vocab.get) != shipped:
        raise SystemExit("the GGUF tokens differ from the shipped vocabulary")
    tok = Tokenizer.from_str(json.dumps(tok_json))
    inp, out = gguf.with_suffix(".gguf.inp"), gguf.with_suffix(".gguf.out")
    if inp.exists() and out.exists():
        sep = "\n__ggml_vocab_test__\n"
        # .inp: texts between separators; .out: one line of ids per text.
        texts = inp.read_text(encoding="utf-8").split(sep)
        want = out.read_text(encoding="utf-8").split("\n")
        for text, ids in zip(texts, want):
            got = tok.encode(text, add_special_tokens=False).ids
            if got != [int(i) for i in ids.split()]:
                raise SystemExit(f"encoding of {text!r} differs from llama.cpp's: {got}")
        print(f"{len(texts)} llama.cpp test cases encode identically")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("gguf", type=Path)
    ap.add_argument("model_dir", type=Path)
    args = ap.parse_args()
    tok_json = tokenizer_json(read_gguf_metadata(args.gguf))
    root = Path(__file__).resolve().parents[1]
    check(tok_json, args.gguf, root / "xg2_jax" / "data" / "gpt2.json.gz")
    out = args.model_dir / "tokenizer.json"
    out.write_text(json.dumps(tok_json, ensure_ascii=False, separators=(",", ":")),
                   encoding="utf-8")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
