"""Writes a tiny Hugging Face-format Llama that vLLM's CPU build can serve, for the vLLM tests.

The weights are the shipped ``xg2_jax/data/tiny_llama_json`` model (trained on JSON-like
documents), re-laid for vLLM's CPU attention, which needs a head size of at least 32: every
16-wide head becomes a 32-wide one computing the same function. Query and key dims ``[0, 8)``
and ``[8, 16)`` go to ``[0, 8)`` and ``[16, 24)`` (so Hugging Face's half-split RoPE pairs the
same dims), ``rope_theta`` is squared (the same frequencies over the wider head), queries are
scaled by ``sqrt(32 / 16)`` (the same softmax scale), and the padded dims are zero. Two
tokens, ``<think>`` and ``</think>``, are appended (zero embeddings) for reasoning parsers.

The tokenizer is a byte-level BPE ``tokenizer.json`` over the GPT-2 vocabulary in
``shared/data/vocab/gpt2.json.gz``: that file has no merge list, so each token gets the merge of
two lower-id tokens that spell it (ids are GPT-2's merge order), which gives a consistent BPE.

Usage: ``python tools/make_vllm_test_model.py OUT_DIR [--vocab PATH]`` (numpy, safetensors and
tokenizers; about 10 s).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_tokenizer_json import byte_level_bpe_json  # noqa: E402 - the sibling tool

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "xg2_jax" / "data" / "tiny_llama_json"
DEFAULT_VOCAB = REPO.parent / "shared" / "data" / "vocab" / "gpt2.json.gz"
NEW_HEAD = 32
EXTRA_TOKENS = ["<think>", "</think>"]


def widen_heads(weight: np.ndarray, heads: int, old: int, *, rope: bool,
                scale: float = 1.0) -> np.ndarray:
    """(heads * old, hidden) projection rows -> (heads * NEW_HEAD, hidden)."""
    hidden = weight.shape[1]
    out = np.zeros((heads, NEW_HEAD, hidden), np.float32)
    w = weight.astype(np.float32).reshape(heads, old, hidden) * scale
    half = old // 2
    if rope:
        out[:, :half] = w[:, :half]
        out[:, NEW_HEAD // 2:NEW_HEAD // 2 + half] = w[:, half:]
    else:
        out[:, :old] = w
    return out.reshape(heads * NEW_HEAD, hidden)


def convert_weights(cfg: dict, weights: dict) -> tuple[dict, dict]:
    heads, kv, old = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    out = {}
    for name, value in weights.items():
        value = value.astype(np.float32)
        if name.endswith("q_proj.weight"):
            value = widen_heads(value, heads, old, rope=True, scale=math.sqrt(NEW_HEAD / old))
        elif name.endswith("k_proj.weight"):
            value = widen_heads(value, kv, old, rope=True)
        elif name.endswith("v_proj.weight"):
            value = widen_heads(value, kv, old, rope=False)
        elif name.endswith("o_proj.weight"):  # columns follow v's layout
            value = widen_heads(value.T, heads, old, rope=False).T
        elif name == "model.embed_tokens.weight":
            value = np.concatenate([value, np.zeros((len(EXTRA_TOKENS), value.shape[1]),
                                                    np.float32)])
        out[name] = np.ascontiguousarray(value)
    new_cfg = dict(cfg, head_dim=NEW_HEAD, rope_theta=float(cfg["rope_theta"]) ** 2,
                   vocab_size=cfg["vocab_size"] + len(EXTRA_TOKENS), torch_dtype="float32")
    return new_cfg, out


def bpe_merges(tokens: list[str], special: set[int]) -> list[tuple[str, str]]:
    """One merge per multi-symbol token: the split into two lower-id tokens whose later part
    is oldest, in id order."""
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []
    for i, tok in enumerate(tokens):
        if i in special or len(tok) < 2:
            continue
        best = None
        for cut in range(1, len(tok)):
            a, b = ids.get(tok[:cut]), ids.get(tok[cut:])
            if a is not None and b is not None and a < i and b < i:
                rank = max(a, b)
                if best is None or rank < best[0]:
                    best = (rank, tok[:cut], tok[cut:])
        if best is not None:
            merges.append((best[1], best[2]))
    return merges


def tokenizer_json(vocab: dict) -> dict:
    tokens = vocab["tokens"]
    special = set(vocab["special_ids"])
    table = {t: i for i, t in enumerate(tokens)}
    added = [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True} for i in sorted(special)]
    for k, text in enumerate(EXTRA_TOKENS):
        added.append({"id": len(tokens) + k, "content": text, "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": False, "special": False})
        table[text] = len(tokens) + k
    return byte_level_bpe_json(table, [[a, b] for a, b in bpe_merges(tokens, special)], added)


def write_model(out_dir: Path, vocab_path: Path = DEFAULT_VOCAB) -> Path:
    """Writes config.json, model.safetensors, tokenizer.json and tokenizer_config.json."""
    from safetensors.numpy import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = json.loads((SOURCE / "config.json").read_text())
    with np.load(SOURCE / "model.npz") as z:
        weights = {k: z[k] for k in z.files}
    new_cfg, new_weights = convert_weights(cfg, weights)
    (out_dir / "config.json").write_text(json.dumps(new_cfg, indent=2))
    save_file(new_weights, str(out_dir / "model.safetensors"))
    with gzip.open(vocab_path, "rt", encoding="utf-8") as f:
        vocab = json.load(f)
    (out_dir / "tokenizer.json").write_text(json.dumps(tokenizer_json(vocab)))
    eos = vocab["tokens"][vocab["eos_ids"][0]]
    (out_dir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": eos, "eos_token": eos,
        "unk_token": eos, "model_max_length": new_cfg["max_position_embeddings"],
        "add_bos_token": False, "clean_up_tokenization_spaces": False}))
    (out_dir / "generation_config.json").write_text(json.dumps({
        "bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]}))
    return out_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--vocab", type=Path, default=DEFAULT_VOCAB)
    args = parser.parse_args()
    print(write_model(args.out_dir, args.vocab))


if __name__ == "__main__":
    main()
