"""Flax NNX models and Hugging Face-layout loaders: random tiny checkpoints written with
safetensors (single file and sharded), loaded, and compared against a plain numpy forward pass
that follows the Hugging Face definitions; KV-cache decoding against the full forward; typed
errors for broken checkpoints."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax.nnx")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
import jax.numpy as jnp  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import models  # noqa: E402

VOCAB = 61
TOKENS = np.array([[3, 17, 42, 5, 60, 0, 9], [1, 2, 3, 4, 5, 6, 7]], dtype=np.int32)

# model family -> (config.json, sharded checkpoint?)
FAMILIES = {
    "llama3-gqa-untied": ({
        "model_type": "llama", "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": False,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 16},
        "eos_token_id": 60}, False),
    "llama-linear-rope": ({
        "model_type": "llama", "vocab_size": VOCAB, "hidden_size": 16, "intermediate_size": 24,
        "num_hidden_layers": 1, "num_attention_heads": 2, "rope_scaling":
            {"type": "linear", "factor": 2.0}, "attention_bias": True}, False),
    "qwen2-qkv-bias-tied": ({
        "model_type": "qwen2", "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 40,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
        "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True}, True),
    "qwen3-qk-norm": ({
        "model_type": "qwen3", "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 40,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 12, "rms_norm_eps": 1e-6, "tie_word_embeddings": True}, True),
    "gpt2": ({
        "model_type": "gpt2", "vocab_size": VOCAB, "n_embd": 32, "n_layer": 2, "n_head": 4,
        "n_positions": 16, "activation_function": "gelu_new"}, False),
}


# ------------------------------------------------------------------------- random checkpoints
def _hf_tensors(cfg: dict, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def w(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ones_ish(n):
        return (1.0 + rng.standard_normal(n) * 0.1).astype(np.float32)

    out = {}
    if cfg["model_type"] == "gpt2":
        d, f = cfg["n_embd"], 4 * cfg["n_embd"]
        out["transformer.wte.weight"] = w(cfg["vocab_size"], d)
        out["transformer.wpe.weight"] = w(cfg["n_positions"], d)
        for i in range(cfg["n_layer"]):
            p = f"transformer.h.{i}"
            for ln in ("ln_1", "ln_2"):
                out[f"{p}.{ln}.weight"], out[f"{p}.{ln}.bias"] = ones_ish(d), w(d, scale=0.05)
            for name, shape in (("attn.c_attn", (d, 3 * d)), ("attn.c_proj", (d, d)),
                                ("mlp.c_fc", (d, f)), ("mlp.c_proj", (f, d))):
                out[f"{p}.{name}.weight"], out[f"{p}.{name}.bias"] = w(*shape), w(shape[1])
            out[f"{p}.attn.bias"] = np.tril(np.ones((16, 16), np.float32))  # HF buffer: ignored
        out["transformer.ln_f.weight"], out["transformer.ln_f.bias"] = ones_ish(d), w(d)
        return out
    d, f = cfg["hidden_size"], cfg["intermediate_size"]
    h, kv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim", d // h)
    qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    out["model.embed_tokens.weight"] = w(cfg["vocab_size"], d)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        out[f"{p}.input_layernorm.weight"] = ones_ish(d)
        out[f"{p}.post_attention_layernorm.weight"] = ones_ish(d)
        for name, rows in (("q_proj", h * hd), ("k_proj", kv * hd), ("v_proj", kv * hd)):
            out[f"{p}.self_attn.{name}.weight"] = w(rows, d)
            if qkv_bias:
                out[f"{p}.self_attn.{name}.bias"] = w(rows)
        out[f"{p}.self_attn.o_proj.weight"] = w(d, h * hd)
        if cfg.get("attention_bias"):
            out[f"{p}.self_attn.o_proj.bias"] = w(d)
        if cfg["model_type"] == "qwen3":
            out[f"{p}.self_attn.q_norm.weight"] = ones_ish(hd)
            out[f"{p}.self_attn.k_norm.weight"] = ones_ish(hd)
        out[f"{p}.mlp.gate_proj.weight"] = w(f, d)
        out[f"{p}.mlp.up_proj.weight"] = w(f, d)
        out[f"{p}.mlp.down_proj.weight"] = w(d, f)
    out["model.norm.weight"] = ones_ish(d)
    if not cfg.get("tie_word_embeddings", False):
        out["lm_head.weight"] = w(cfg["vocab_size"], d)
    return out


def write_checkpoint(directory, cfg: dict, tensors: dict, *, sharded: bool):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(cfg))
    if not sharded:
        safetensors_numpy.save_file(tensors, str(directory / "model.safetensors"))
        return directory
    names = sorted(tensors)
    shards = [names[0::2], names[1::2]]
    weight_map = {}
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        safetensors_numpy.save_file({n: tensors[n] for n in shard}, str(directory / fname))
        weight_map.update({n: fname for n in shard})
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}))
    return directory


# --------------------------------------------------------------------- numpy reference forward
def _rms(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _causal_attention(q, k, v):
    """q (T, H, D), k/v (T, H, D) -> (T, H * D)."""
    t, h, d = q.shape
    scores = np.einsum("thd,shd->hts", q, k) / math.sqrt(d)
    scores = np.where(np.tril(np.ones((t, t), bool)), scores, -np.inf)
    return np.einsum("hts,shd->thd", _softmax(scores), v).reshape(t, h * d)


def _llama_inv_freq(cfg, hd):
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (np.arange(0, hd, 2) / hd))
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "linear":
        return inv / scaling["factor"]
    if kind == "llama3":  # transformers' _compute_llama3_parameters, element by element
        factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for f in inv:
            wavelen = 2 * math.pi / f
            if wavelen < old / hi:
                out.append(f)
            elif wavelen > old / lo:
                out.append(f / factor)
            else:
                s = (old / wavelen - lo) / (hi - lo)
                out.append((1 - s) * f / factor + s * f)
        return np.array(out)
    return inv


def reference_logits(cfg: dict, w: dict, tokens: np.ndarray) -> np.ndarray:
    """Logits (T, V) of one sequence, in float64 numpy, from the HF tensors."""
    t = len(tokens)
    w = {k: v.astype(np.float64) for k, v in w.items()}
    if cfg["model_type"] == "gpt2":
        g = {k.removeprefix("transformer."): v for k, v in w.items()}
        eps, h = 1e-5, cfg["n_head"]

        def ln(x, p):
            m = x.mean(-1, keepdims=True)
            return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * \
                g[f"{p}.weight"] + g[f"{p}.bias"]

        def gelu_new(x):
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

        x = g["wte.weight"][tokens] + g["wpe.weight"][:t]
        for i in range(cfg["n_layer"]):
            p = f"h.{i}"
            qkv = ln(x, f"{p}.ln_1") @ g[f"{p}.attn.c_attn.weight"] + g[f"{p}.attn.c_attn.bias"]
            q, k, v = (a.reshape(t, h, -1) for a in np.split(qkv, 3, axis=-1))
            x = x + _causal_attention(q, k, v) @ g[f"{p}.attn.c_proj.weight"] + \
                g[f"{p}.attn.c_proj.bias"]
            m = gelu_new(ln(x, f"{p}.ln_2") @ g[f"{p}.mlp.c_fc.weight"] + g[f"{p}.mlp.c_fc.bias"])
            x = x + m @ g[f"{p}.mlp.c_proj.weight"] + g[f"{p}.mlp.c_proj.bias"]
        return ln(x, "ln_f") @ g["wte.weight"].T
    d, h = cfg["hidden_size"], cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", h)
    hd = cfg.get("head_dim", d // h)
    eps = cfg.get("rms_norm_eps", 1e-6)
    ang = np.arange(t)[:, None] * _llama_inv_freq(cfg, hd)[None, :]
    cos, sin = (np.concatenate([f(ang)] * 2, axis=-1)[:, None, :] for f in (np.cos, np.sin))

    def rope(x):
        x1, x2 = np.split(x, 2, axis=-1)
        return x * cos + np.concatenate([-x2, x1], axis=-1) * sin

    def lin(x, name):
        y = x @ w[f"{name}.weight"].T
        return y + w[f"{name}.bias"] if f"{name}.bias" in w else y

    x = w["model.embed_tokens.weight"][tokens]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}"
        a = _rms(x, w[f"{p}.input_layernorm.weight"], eps)
        q = lin(a, f"{p}.self_attn.q_proj").reshape(t, h, hd)
        k = lin(a, f"{p}.self_attn.k_proj").reshape(t, kv, hd)
        v = lin(a, f"{p}.self_attn.v_proj").reshape(t, kv, hd)
        if cfg["model_type"] == "qwen3":
            q = _rms(q, w[f"{p}.self_attn.q_norm.weight"], eps)
            k = _rms(k, w[f"{p}.self_attn.k_norm.weight"], eps)
        q, k = rope(q), rope(k)
        k, v = np.repeat(k, h // kv, axis=1), np.repeat(v, h // kv, axis=1)
        x = x + lin(_causal_attention(q, k, v), f"{p}.self_attn.o_proj")
        m = _rms(x, w[f"{p}.post_attention_layernorm.weight"], eps)
        gate = lin(m, f"{p}.mlp.gate_proj")
        x = x + lin(gate / (1 + np.exp(-gate)) * lin(m, f"{p}.mlp.up_proj"), f"{p}.mlp.down_proj")
    x = _rms(x, w["model.norm.weight"], eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ head.T


# ------------------------------------------------------------------------------------ tests
@pytest.fixture(scope="module", params=sorted(FAMILIES))
def checkpoint(request, tmp_path_factory):
    cfg, sharded = FAMILIES[request.param]
    tensors = _hf_tensors(cfg, np.random.default_rng(sorted(FAMILIES).index(request.param)))
    path = write_checkpoint(tmp_path_factory.mktemp(request.param), cfg, tensors,
                            sharded=sharded)
    return cfg, tensors, path


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return models.load_pretrained(checkpoint[2])


def test_full_forward_matches_numpy_reference(checkpoint, loaded):
    cfg, tensors, _ = checkpoint
    logits, cache = loaded.forward(TOKENS, loaded.init_cache(batch_size=2, max_length=12))
    assert logits.shape == (2, TOKENS.shape[1], VOCAB) and cache.length.tolist() == [TOKENS.shape[1]] * len(cache.length)
    for row in range(2):
        want = reference_logits(cfg, tensors, TOKENS[row])
        np.testing.assert_allclose(np.asarray(logits[row]), want, atol=2e-4, rtol=2e-4)


def test_kv_cache_decode_matches_full_forward(loaded):
    """Prefill 3 tokens, then one token per jitted step: every step's logits equal the
    full-sequence forward at that position."""
    full, _ = loaded.forward(TOKENS, loaded.init_cache(batch_size=2, max_length=12))
    step = jax.jit(loaded.step_fn)
    logits, cache = step(loaded.params, loaded.init_cache(batch_size=2, max_length=12),
                         TOKENS[:, :3])
    np.testing.assert_allclose(np.asarray(logits), np.asarray(full[:, 2]), atol=1e-5)
    for t in range(3, TOKENS.shape[1]):
        logits, cache = step(loaded.params, cache, TOKENS[:, t:t + 1])
        assert logits.shape == (2, VOCAB)
        np.testing.assert_allclose(np.asarray(logits), np.asarray(full[:, t]), atol=1e-5)
    assert cache.length.tolist() == [TOKENS.shape[1]] * len(cache.length)


def test_bfloat16_load_is_close(checkpoint, loaded):
    lm16 = models.load_pretrained(checkpoint[2], dtype="bfloat16")
    assert lm16.init_cache(batch_size=1, max_length=4).keys[0].dtype == jnp.bfloat16
    cache = lm16.init_cache(batch_size=2, max_length=12)
    logits16, _ = lm16.step_fn(lm16.params, cache, TOKENS)
    logits32, _ = loaded.step_fn(loaded.params, loaded.init_cache(batch_size=2, max_length=12),
                                 TOKENS)
    assert logits16.dtype == jnp.float32
    assert np.abs(np.asarray(logits16) - np.asarray(logits32)).max() < 0.25


def test_constrained_generate_with_loaded_model(loaded):
    tok = xg.TokenizerInfo([f"<{i}>" if i % 7 else str(i % 10) for i in range(VOCAB)],
                           stop_token_ids=[VOCAB - 1])
    compiled = xg.GrammarCompiler(tok).compile_grammar('root ::= [0-9]{2,4}')
    out = xg.constrained_generate(loaded.step_fn, loaded.params,
                                  loaded.init_cache(batch_size=2, max_length=12), TOKENS[:, :3],
                                  [xg.GrammarMatcher(compiled) for _ in range(2)],
                                  max_new_tokens=6, sampling=xg.SamplingConfig(greedy=True))
    assert not out.errors.any() and out.finished.all()
    for row in range(2):
        text = b"".join(tok.token_bytes(int(t)) for t in out.tokens[row, :out.lengths[row] - 1])
        assert text.isdigit() and 2 <= len(text) <= 4


def test_bfloat16_checkpoint_file(tmp_path):
    """bf16 tensors (read through ml_dtypes) load into a float32 model exactly."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    cfg, _ = FAMILIES["qwen3-qk-norm"]
    tensors = {k: v.astype(ml_dtypes.bfloat16)
               for k, v in _hf_tensors(cfg, np.random.default_rng(5)).items()}
    lm = models.load_pretrained(write_checkpoint(tmp_path, cfg, tensors, sharded=False))
    logits, _ = lm.forward(TOKENS[:1], lm.init_cache(batch_size=1, max_length=8))
    want = reference_logits(cfg, {k: v.astype(np.float32) for k, v in tensors.items()}, TOKENS[0])
    np.testing.assert_allclose(np.asarray(logits[0]), want, atol=2e-4, rtol=2e-4)


# ------------------------------------------------------------------------------------ errors
@pytest.fixture()
def small_llama(tmp_path):
    cfg, _ = FAMILIES["qwen2-qkv-bias-tied"]
    tensors = _hf_tensors(cfg, np.random.default_rng(0))
    return cfg, tensors, tmp_path / "m"


def test_missing_tensor_is_named(small_llama):
    cfg, tensors, path = small_llama
    del tensors["model.layers.1.self_attn.k_proj.bias"]
    write_checkpoint(path, cfg, tensors, sharded=True)
    with pytest.raises(xg.MissingTensorError, match=r"model\.layers\.1\.self_attn\.k_proj\.bias") as e:
        models.load_pretrained(path)
    assert e.value.names == ("model.layers.1.self_attn.k_proj.bias",)


def test_untied_model_needs_lm_head(small_llama):
    cfg, tensors, path = small_llama
    write_checkpoint(path, {**cfg, "tie_word_embeddings": False}, tensors, sharded=False)
    with pytest.raises(xg.MissingTensorError, match="lm_head.weight"):
        models.load_pretrained(path)


def test_shape_mismatch_names_tensor_and_shapes(small_llama):
    cfg, tensors, path = small_llama
    tensors["model.layers.0.mlp.up_proj.weight"] = np.zeros((41, 32), np.float32)
    write_checkpoint(path, cfg, tensors, sharded=False)
    with pytest.raises(xg.TensorShapeError,
                       match=r"'model\.layers\.0\.mlp\.up_proj\.weight' has shape \[41, 32\], "
                             r"expected \[40, 32\]"):
        models.load_pretrained(path)


@pytest.mark.parametrize("change,error,message", [
    ({"model_type": "mamba"}, xg.UnsupportedModelError, "model_type 'mamba'"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, xg.UnsupportedModelError, "yarn"),
    ({"hidden_size": None}, xg.UnsupportedModelError, "hidden_size"),
])
def test_bad_config(small_llama, change, error, message):
    cfg, tensors, path = small_llama
    cfg = {k: v for k, v in {**cfg, **change}.items() if v is not None}
    write_checkpoint(path, cfg, tensors, sharded=False)
    with pytest.raises(error, match=message):
        models.load_pretrained(path)


def test_missing_files(small_llama):
    cfg, tensors, path = small_llama
    with pytest.raises(xg.ModelFileError, match="not a model directory"):
        models.load_pretrained(path)
    path.mkdir()
    with pytest.raises(xg.ModelFileError, match="config.json"):
        models.load_pretrained(path)
    write_checkpoint(path, cfg, tensors, sharded=True)
    (path / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(xg.ModelFileError, match="model-00002-of-00002.safetensors"):
        models.load_pretrained(path)
    with pytest.raises(xg.ModelFileError, match="tokenizer.json"):
        models.load_tokenizer_info(path)
    assert issubclass(xg.ModelFileError, (xg.XG2Error, OSError))


def test_tokenizer_info_from_model_directory(tmp_path):
    vocab = {"a": 0, "b": 1, "ab": 2, "\u0120": 3}
    (tmp_path / "config.json").write_text(json.dumps({"eos_token_id": 4}))
    (tmp_path / "tokenizer.json").write_text(json.dumps({
        "model": {"type": "BPE", "vocab": vocab, "merges": ["a b"]},
        "decoder": {"type": "ByteLevel"},
        "added_tokens": [{"id": 4, "content": "<|end|>", "special": True}]}))
    tok = models.load_tokenizer_info(tmp_path, vocab_size=8)
    assert tok.vocab_size == 8 and tok.stop_token_ids == [4]
    assert tok.token_bytes(3) == b" "


def test_default_model_loads():
    lm = models.load_pretrained(models.default_model_path())
    assert isinstance(lm.config, models.LlamaConfig) and lm.config.tie_word_embeddings
    logits, _ = lm.step_fn(lm.params, lm.init_cache(batch_size=1, max_length=4),
                           jnp.array([[90, 1]], jnp.int32))
    assert logits.shape == (1, 50257) and bool(jnp.isfinite(logits).all())
