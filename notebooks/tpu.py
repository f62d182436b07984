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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/xg2-jax/xg2-jax/blob/main/notebooks/tpu.ipynb)
#
# # Running on a TPU runtime
#
# On Colab choose *Runtime > Change runtime type > TPU*. The same code runs on CPU and GPU:
# the grammar engine runs on the host, only the masks travel to the devices. Cells tagged
# `tpu-only` need a TPU (CI, on CPU, skips them); the others run anywhere, and on a CPU runtime
# the host is split into 8 virtual devices so that the sharding cells have a mesh to shard
# over.

# %%
# On Colab, install the package (builds the native extension: a few minutes). Elsewhere, e.g.
# in CI, it is already installed and this cell does nothing. Colab's TPU runtime ships jax[tpu].
import sys

if "google.colab" in sys.modules:
    # %pip install -q "xg2-jax[notebooks] @ git+https://github.com/xg2-jax/xg2-jax"

# %%
import os

# Before jax starts: 8 virtual CPU devices (only affects the CPU platform, not a TPU or GPU).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

# %% [markdown]
# ## Backend detection

# %%
import jax

backend = jax.default_backend()
devices = jax.devices()
print(f"backend {backend}: {len(devices)} {devices[0].device_kind} device(s), "
      f"{jax.process_count()} process(es)")
for d in devices[:8]:
    print(" ", d)
ON_TPU = backend == "tpu"

# %% tags=["tpu-only"]
assert ON_TPU, "this cell needs a TPU runtime"
print("TPU cores:", jax.device_count(), "| local:", jax.local_device_count(),
      "| kind:", devices[0].device_kind)

# %% [markdown]
# ## The model, a batch of prompts and a grammar per row

# %%
import time
from importlib import resources

import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import xg2_jax as xg
from xg2_jax import models

lm = models.load_pretrained(models.default_model_path())
with resources.as_file(resources.files("xg2_jax") / "data" / "gpt2.json.gz") as vocab_path:
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path, vocab_size=lm.config.vocab_size)
STOP = tok.stop_token_ids[0]
table = tok.text_token_table()[0]

compiler = xg.GrammarCompiler(tok)
grammars = [
    compiler.compile_json_schema({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]},
        any_whitespace=False),
    compiler.compile_json_schema({"type": "object", "properties": {
        "product": {"type": "string"}, "price": {"type": "number"}},
        "required": ["product", "price"]}, any_whitespace=False),
    compiler.compile_grammar(xg.Grammar.from_regex(r'\{"city": "[A-Z][a-z]{2,12}"\}')),
    compiler.compile_grammar(xg.Grammar.builtin_json_grammar()),
]
n_dev = len(devices)
B = max(8, n_dev) // n_dev * n_dev  # a batch the mesh divides
# One prompt for every row ("JSON:" is one line of the tiny model's training format); the rows
# differ by grammar.
prompt = np.array([[STOP, table[b"JSON"], table[b":"], table[b"\n"]]] * B, dtype=np.int32)
MAX_NEW = 24


def run(mesh=None):
    """Constrained greedy decoding of the batch; with a mesh, everything batch-sharded."""
    cache = lm.init_cache(batch_size=B, max_length=prompt.shape[1] + MAX_NEW)
    params, sharding = lm.params, None
    if mesh is not None:
        sharding = xg.mask_sharding(mesh)  # PartitionSpec("data", None)
        rows = NamedSharding(mesh, PartitionSpec("data"))
        replicated = NamedSharding(mesh, PartitionSpec())
        cache = jax.tree.map(lambda a: jax.device_put(a, rows if a.ndim else replicated), cache)
        params = jax.device_put(params, replicated)
    matchers = [xg.GrammarMatcher(grammars[i % len(grammars)]) for i in range(B)]
    return xg.constrained_generate(lm.step_fn, params, cache, prompt, matchers,
                                   max_new_tokens=MAX_NEW,
                                   sampling=xg.SamplingConfig(greedy=True),
                                   stop_token_ids=tok.stop_token_ids, mask_sharding=sharding)


def texts(out):
    return [b"".join(tok.token_bytes(int(t)) for t in out.tokens[i, :out.lengths[i]]
                     if t != STOP).decode(errors="replace") for i in range(B)]


# %% [markdown]
# ## Batch-sharded masks on a mesh
#
# `mask_sharding(mesh)` places the packed (B, W) masks with their rows split over the `data`
# axis: each device receives only its rows' words. `put_masks(masks, mask_sharding(mesh))`
# transfers a host array that way, and `make_global_masks` assembles the rows that each host
# filled (multi-host).

# %%
mesh = Mesh(np.array(devices), ("data",))
masks = xg.allocate_token_bitmask(B, tok.vocab_size)
for i in range(B):
    xg.GrammarMatcher(grammars[i % len(grammars)]).fill_next_token_bitmask(masks, i)
on_mesh = xg.put_masks(masks, xg.mask_sharding(mesh))
print("masks", on_mesh.shape, on_mesh.dtype, on_mesh.sharding.spec)
for shard in on_mesh.addressable_shards[:4]:
    print(f"  {shard.device}: rows {shard.index[0]}")
print("global masks (multi-host path, here one host):",
      xg.make_global_masks(masks, mesh).sharding.spec)

# %% [markdown]
# ## Constrained decoding with sharded masks equals the single-device run

# %%
t0 = time.perf_counter()
single = run()
t1 = time.perf_counter()
sharded = run(mesh)
t2 = time.perf_counter()
for i, text in enumerate(texts(sharded)):
    print(f"row {i}: {text}")
assert (single.tokens == sharded.tokens).all() and sharded.finished.all()
print(f"same tokens; single device {t1 - t0:.1f} s, {n_dev} devices {t2 - t1:.1f} s "
      "(jit included)")

# %% [markdown]
# ## On the TPU: bfloat16 weights and the steady-state speed

# %% tags=["tpu-only"]
lm = models.load_pretrained(models.default_model_path(), dtype="bfloat16")
run(mesh)  # compile
t0 = time.perf_counter()
out = run(mesh)
elapsed = time.perf_counter() - t0
print(f"bfloat16 on {n_dev} TPU cores: {int(out.lengths.sum())} tokens in {elapsed:.2f} s "
      f"({out.lengths.sum() / elapsed:.0f} tokens/s over the batch)")
print(texts(out)[0])
