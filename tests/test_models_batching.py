"""Batches of prompts of different lengths: every row gets the logits it gets alone, in
prefill (right-padded chunks with ``num_tokens``) and decode (per-row cache lengths), for every
model family; Hugging Face transformers (random tiny configs, no download) is the oracle where
installed. Also the loader and model bugs a check against transformers found, one test each."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax.nnx")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
import jax.numpy as jnp  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import models  # noqa: E402

VOCAB = 97
# config.json of each family (transformers' names); small, random weights
FAMILIES = {
    "llama": {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": 32,
              "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
              "tie_word_embeddings": False, "hidden_act": "silu"},
    "qwen2": {"model_type": "qwen2", "vocab_size": VOCAB, "hidden_size": 32,
              "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 1, "max_position_embeddings": 64,
              "tie_word_embeddings": True, "use_sliding_window": False},
    "qwen3": {"model_type": "qwen3", "vocab_size": VOCAB, "hidden_size": 32,
              "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 12, "max_position_embeddings": 64,
              "tie_word_embeddings": False},
    "mistral": {"model_type": "mistral", "vocab_size": VOCAB, "hidden_size": 32,
                "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "max_position_embeddings": 64, "sliding_window": None,
                "tie_word_embeddings": False},
    "gpt2": {"model_type": "gpt2", "vocab_size": VOCAB, "n_embd": 32, "n_layer": 2,
             "n_head": 4, "n_positions": 64},
    "gpt2-untied": {"model_type": "gpt2", "vocab_size": VOCAB, "n_embd": 32, "n_layer": 2,
                    "n_head": 4, "n_positions": 64, "tie_word_embeddings": False},
}
PROMPTS = [[5, 17, 42, 8, 60, 3, 9, 11, 2], [1, 2, 3], [77, 15, 4, 4, 90, 31]]
MAX_LEN = 32


def _random_checkpoint(cfg: dict, directory, seed: int):
    """Random weights in transformers' tensor names, written as safetensors."""
    abstract = models.config_from_hf(cfg)
    cls = models.Gpt2LMHeadModel if cfg["model_type"] == "gpt2" else models.LlamaForCausalLM
    from flax import nnx

    module = cls(abstract, rngs=nnx.Rngs(seed))
    state = nnx.to_pure_dict(nnx.state(module))
    plan = (models.gpt2.gpt2_tensor_plan(abstract) if cfg["model_type"] == "gpt2"
            else models.llama.llama_tensor_plan(abstract))
    rng = np.random.default_rng(seed)
    tensors = {}
    for name, path, transpose in plan:
        value = state
        for k in path:
            value = value[k]
        arr = np.asarray(value, np.float32)
        if arr.ndim == 1:  # norms and biases: not all ones/zeros
            arr = arr + rng.standard_normal(arr.shape).astype(np.float32) * 0.1
        tensors[name] = np.ascontiguousarray(arr.T if transpose else arr)
    directory.mkdir(parents=True, exist_ok=True)
    safetensors_numpy.save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text(json.dumps(cfg))
    return directory


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request, tmp_path_factory):
    cfg = FAMILIES[request.param]
    path = _random_checkpoint(cfg, tmp_path_factory.mktemp(request.param),
                              sorted(FAMILIES).index(request.param))
    return request.param, cfg, path, models.load_pretrained(path)


def _padded(prompts):
    width = max(map(len, prompts))
    tokens = np.zeros((len(prompts), width), np.int32)
    for i, p in enumerate(prompts):
        tokens[i, :len(p)] = p
    return tokens, np.array([len(p) for p in prompts], np.int32)


def _alone(lm, prompt, extra=()):
    """Logits of every position of ``prompt`` (then each of ``extra`` fed one at a time)."""
    module = lm.module()
    cache = lm.init_cache(batch_size=1, max_length=MAX_LEN)
    logits, cache = module(jnp.array([prompt]), cache)
    rows = [np.asarray(logits[0])]
    for t in extra:
        logits, cache = module(jnp.array([[t]]), cache)
        rows.append(np.asarray(logits[0]))
    return np.concatenate(rows)


def test_padded_prefill_and_decode_equal_single_rows(family):
    _, _, _, lm = family
    module = lm.module()
    tokens, counts = _padded(PROMPTS)
    cache = lm.init_cache(batch_size=len(PROMPTS), max_length=MAX_LEN)
    logits, cache = module(jnp.asarray(tokens), cache, num_tokens=counts)
    assert cache.length.tolist() == counts.tolist()
    extra = [[7, 8], [9, 10], [11, 12]]
    decoded = []
    for step in range(2):
        feed = jnp.array([[e[step]] for e in extra])
        step_logits, cache = module(feed, cache)
        decoded.append(np.asarray(step_logits[:, 0]))
    for i, p in enumerate(PROMPTS):
        want = _alone(lm, p, extra[i])
        np.testing.assert_allclose(np.asarray(logits[i, :len(p)]), want[:len(p)], atol=2e-5)
        for step in range(2):
            np.testing.assert_allclose(decoded[step][i], want[len(p) + step], atol=2e-5)


def test_step_fn_last_only_takes_each_rows_last_real_token(family):
    _, _, _, lm = family
    tokens, counts = _padded(PROMPTS)
    cache = lm.init_cache(batch_size=len(PROMPTS), max_length=MAX_LEN)
    logits, _ = jax.jit(lm.step_fn)(lm.params, cache, tokens, counts)
    for i, p in enumerate(PROMPTS):
        np.testing.assert_allclose(np.asarray(logits[i]), _alone(lm, p)[-1], atol=2e-5)


def test_greedy_tokens_of_a_padded_batch_equal_single_rows(family):
    _, _, _, lm = family
    tok = xg.TokenizerInfo([f"t{i}" for i in range(VOCAB)], stop_token_ids=[0])
    reqs = [xg.Request(p, max_tokens=6, stop_token_ids=[]) for p in PROMPTS]
    batch = xg.generate_requests(lm, tok, reqs, num_slots=3, max_length=MAX_LEN)
    for r, out in zip(reqs, batch):
        alone = xg.generate_requests(lm, tok, [r], num_slots=1, max_length=MAX_LEN)[0]
        assert out.tokens == alone.tokens and len(out.tokens) == 6


# ----------------------------------------------------------------- transformers as the oracle
def _hf_model(cfg: dict, path):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype="float32")
    return model.eval()


def test_logits_equal_transformers(family):
    name, cfg, path, lm = family
    import_torch = pytest.importorskip("torch")
    hf = _hf_model(cfg, path)
    tokens, counts = _padded(PROMPTS)
    cache = lm.init_cache(batch_size=len(PROMPTS), max_length=MAX_LEN)
    ours, _ = lm.module()(jnp.asarray(tokens), cache, num_tokens=counts)
    for i, p in enumerate(PROMPTS):
        with import_torch.no_grad():
            want = hf(import_torch.tensor([p])).logits[0].numpy()
        np.testing.assert_allclose(np.asarray(ours[i, :len(p)]), want, atol=1e-4,
                                   err_msg=f"{name} row {i}")


# ----------------------------------------------------------------- bugs found by that check
def test_gpt2_untied_head_is_used(tmp_path):
    cfg = FAMILIES["gpt2-untied"]
    path = _random_checkpoint(cfg, tmp_path / "m", 3)
    lm = models.load_pretrained(path)
    assert lm.module().lm_head is not None
    head = safetensors_numpy.load_file(str(path / "model.safetensors"))["lm_head.weight"]
    assert not np.allclose(head, np.asarray(lm.params["wte"][...]))


@pytest.mark.parametrize("change,message", [
    ({"model_type": "llama", "hidden_act": "gelu"}, "hidden_act 'gelu'"),
    ({"model_type": "gpt2", "scale_attn_by_inverse_layer_idx": True},
     "scale_attn_by_inverse_layer_idx"),
    ({"model_type": "gpt2", "scale_attn_weights": False}, "scale_attn_weights"),
])
def test_unimplemented_options_raise(change, message):
    base = dict(FAMILIES["llama" if change["model_type"] == "llama" else "gpt2"])
    base.update(change)
    with pytest.raises(xg.UnsupportedModelError, match=message):
        models.config_from_hf(base)


def test_truncated_safetensors_names_the_file(tmp_path):
    path = _random_checkpoint(FAMILIES["llama"], tmp_path / "m", 1)
    f = path / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(xg.ModelError, match=r"model\.safetensors: truncated"):
        models.load_pretrained(path)


def test_token_ids_outside_the_vocabulary_raise(family):
    _, _, _, lm = family
    cache = lm.init_cache(batch_size=1, max_length=MAX_LEN)
    for bad in (VOCAB, -1):
        with pytest.raises(xg.InvalidArgumentError, match="outside the model's vocabulary"):
            lm.module()(jnp.array([[1, bad]]), cache)
    tok = xg.TokenizerInfo([f"t{i}" for i in range(VOCAB)], stop_token_ids=[0])
    out = xg.generate_requests(lm, tok, [xg.Request([1, VOCAB + 5], max_tokens=2)],
                               num_slots=1, max_length=MAX_LEN)[0]
    assert out.finish_reason == "error" and "token ids" in out.error


def test_decoding_past_the_cache_raises(family):
    _, _, _, lm = family
    module = lm.module()
    cache = lm.init_cache(batch_size=1, max_length=4)
    _, cache = module(jnp.array([[1, 2, 3, 4]]), cache)
    with pytest.raises(xg.CacheOverflowError, match="holds 4"):
        module(jnp.array([[5]]), cache)
    tok = xg.TokenizerInfo([f"t{i}" for i in range(VOCAB)], stop_token_ids=[0])
    outs = xg.generate_requests(lm, tok, [xg.Request([1] * 6, max_tokens=50, stop_token_ids=[]),
                                          xg.Request([1] * 8, max_tokens=5)],
                                num_slots=2, max_length=8)
    assert outs[0].finish_reason == "length" and len(outs[0].tokens) == 2  # cut to fit
    assert outs[1].finish_reason == "error" and "holds 8" in outs[1].error


def test_unused_checkpoint_tensors_are_warned_about(tmp_path):
    cfg = dict(FAMILIES["qwen2"])  # tied: lm_head.weight is not read
    path = _random_checkpoint(cfg, tmp_path / "m", 2)
    tensors = safetensors_numpy.load_file(str(path / "model.safetensors"))
    tensors["lm_head.weight"] = np.ones((VOCAB, 32), np.float32)
    tensors["model.layers.0.extra.weight"] = np.ones(3, np.float32)
    safetensors_numpy.save_file(tensors, str(path / "model.safetensors"))
    with pytest.warns(xg.UnusedTensorWarning, match="lm_head.weight.*tie_word_embeddings"):
        models.load_pretrained(path)
    # a saved copy of the tied head (equal to the embedding) is not warned about
    tensors.pop("model.layers.0.extra.weight")
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    safetensors_numpy.save_file(tensors, str(path / "model.safetensors"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        models.load_pretrained(path)
