# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/xg2-jax/xg2-jax/blob/main/notebooks/quickstart.ipynb)
#
# # xg2-jax quickstart: JSON Schema constrained generation
#
# The tiny Llama-architecture model shipped in the package (2 layers, GPT-2 vocabulary, 1.1 MB)
# generates a JSON document that must follow a JSON Schema. At every step the C++ engine
# fills a packed bitmask of the tokens that keep the output inside the schema, and JAX applies
# it to the logits. Everything runs offline on CPU, GPU or TPU.

# %%
# On Colab, install the package (builds the native extension: a few minutes). Elsewhere, e.g.
# in CI, it is already installed and this cell does nothing.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "xg2-jax[notebooks] @ git+https://github.com/xg2-jax/xg2-jax"

# %% [markdown]
# ## The model and its vocabulary
#
# `models.default_model_path()` is the shipped model; its vocabulary is the GPT-2 one shipped
# next to it (`xg2_jax/data/gpt2.json.gz`). The tiny model was trained on text split by greedy
# longest match over that vocabulary, so prompts are tokenized the same way here.

# %%
import json
import time
from importlib import resources

import jax
import numpy as np

import xg2_jax as xg
from xg2_jax import models

lm = models.load_pretrained(models.default_model_path())
with resources.as_file(resources.files("xg2_jax") / "data" / "gpt2.json.gz") as vocab_path:
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path, vocab_size=lm.config.vocab_size)
BOS = 50256  # <|endoftext|>: the model's bos and eos
print(lm.config.model_type, lm.config.num_hidden_layers, "layers; vocab", tok.vocab_size,
      "; stop tokens", tok.stop_token_ids, "; backend", jax.default_backend())


def encode(text: str) -> list[int]:
    """bos + greedy longest-match tokens (how the tiny model was trained: 'instruction\\n')."""
    return [BOS] + xg.greedy_tokenize(tok, text + "\n")


def decode(ids) -> str:
    stops = set(tok.stop_token_ids)
    return b"".join(tok.token_bytes(int(t)) for t in ids if int(t) not in stops).decode()


# %% [markdown]
# ## Compile a JSON Schema

# %%
schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "city": {"type": "string"},
        "active": {"type": "boolean"},
    },
    "required": ["name", "age", "city", "active"],
}
t0 = time.perf_counter()
compiled = xg.GrammarCompiler(tok).compile_json_schema(schema)
print(f"compiled in {1e3 * (time.perf_counter() - t0):.1f} ms")

# %% [markdown]
# ## Generate
#
# `constrained_generate` runs the decoding loop: the model step is dispatched to the device,
# and the next mask is filled on the host meanwhile. A `BatchGrammarMatcher` subclass records
# how long each mask fill takes.

# %%
class TimedBatchMatcher(xg.BatchGrammarMatcher):
    """Records the host time of every mask fill."""

    def __init__(self):
        super().__init__()
        self.fill_us = []

    def batch_fill_next_token_bitmask(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = super().batch_fill_next_token_bitmask(*args, **kwargs)
        self.fill_us.append(1e6 * (time.perf_counter() - t0))
        return out


prompt = np.array([encode("Describe a person as JSON.")], dtype=np.int32)
max_new_tokens = 48


def generate(batch_matcher=None):
    cache = lm.init_cache(batch_size=1, max_length=prompt.shape[1] + max_new_tokens)
    return xg.constrained_generate(lm.step_fn, lm.params, cache, prompt,
                                   [xg.GrammarMatcher(compiled)],
                                   max_new_tokens=max_new_tokens,
                                   sampling=xg.SamplingConfig(greedy=True),
                                   batch_matcher=batch_matcher,
                                   stop_token_ids=tok.stop_token_ids)


generate()  # compiles the prefill and decode steps (jit warm-up)
timed = TimedBatchMatcher()
t0 = time.perf_counter()
out = generate(timed)
elapsed = time.perf_counter() - t0
n = int(out.lengths[0])
tokens = out.tokens[0, :n].tolist()
text = decode(tokens)
print(text)
print(f"{n} tokens in {elapsed:.2f} s; finished={bool(out.finished[0])}, "
      f"errors={bool(out.errors[0])}")

# %% [markdown]
# ## Validate the output with `jsonschema`

# %%
import jsonschema

document = json.loads(text)
jsonschema.validate(document, schema)
print("valid:", document)

# %% [markdown]
# ## The token mask at each step
#
# Replay the generated tokens through a fresh matcher and count the allowed tokens before
# each one: inside a string almost everything is allowed, between fields very little. Bit
# `t % 32` of word `t // 32` of a mask row says whether token `t` is allowed.

# %%
matcher = xg.GrammarMatcher(compiled)
bitmask = xg.allocate_token_bitmask(1, tok.vocab_size)
allowed_per_step, masks = [], []
for t in tokens:
    matcher.fill_next_token_bitmask(bitmask)
    masks.append(bitmask.copy())
    allowed_per_step.append(np.flatnonzero(xg.bitmask_to_bool(bitmask[0], tok.vocab_size)))
    assert matcher.accept_token(t)
counts = [len(a) for a in allowed_per_step]
print("allowed tokens per step:", counts)

# The first narrow choice right after free text (the end of the first string value).
k = next((i for i in range(1, n) if 1 < counts[i] <= 20 and counts[i - 1] > 1000), 1)
allowed = allowed_per_step[k]
print(f"after {decode(tokens[:k])!r}: {len(allowed)} of {tok.vocab_size} tokens allowed:")
print([tok.token_bytes(int(t)).decode(errors="replace") for t in allowed[:20]])
print("the model chose", repr(tok.token_bytes(tokens[k]).decode()))

# %% [markdown]
# On the device, `apply_token_bitmask` (jittable) sets the disallowed logits to `-inf`:

# %%
logits = jax.numpy.zeros((1, tok.vocab_size))
masked = xg.apply_token_bitmask(logits, jax.device_put(masks[k]))
print(f"step {k}: mask {masks[k].shape} int32 ->", int(jax.numpy.isfinite(masked).sum()),
      "finite logits")

# %% [markdown]
# ## Mask fill time per step

# %%
fill_us = np.array(timed.fill_us)
print(f"{len(fill_us)} fills: median {np.median(fill_us):.1f} µs, max {fill_us.max():.1f} µs")
try:
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: skipping the plot (pip install matplotlib)")
else:
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar(np.arange(len(fill_us)), fill_us)
    ax.set_xlabel("decoding step")
    ax.set_ylabel("mask fill (µs)")
    ax.set_title("host time to fill the token mask, per step")
    plt.show()
