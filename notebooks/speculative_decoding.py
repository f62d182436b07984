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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/xg2-jax/xg2-jax/blob/main/notebooks/speculative_decoding.ipynb)
#
# # Constrained speculative decoding
#
# A drafter proposes a tree of candidate tokens; the target model scores every node in one
# verify pass. Meanwhile the host walks the tree with the grammar matcher and writes one token
# mask per node (`traverse_draft_tree`). On the device the masks are applied to the verify
# logits and the longest valid path is accepted, plus one "bonus" token from the target
# (`speculative_step`). With greedy acceptance the output is exactly that of plain
# constrained greedy decoding.

# %%
# On Colab, install the package (builds the native extension: a few minutes). Elsewhere, e.g.
# in CI, it is already installed and this cell does nothing.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "xg2-jax[notebooks] @ git+https://github.com/xg2-jax/xg2-jax"

# %% [markdown]
# ## The tiny model, a schema, and the plain constrained greedy run

# %%
import time
from importlib import resources

import jax.numpy as jnp
import numpy as np

import xg2_jax as xg
from xg2_jax import models

lm = models.load_pretrained(models.default_model_path())
with resources.as_file(resources.files("xg2_jax") / "data" / "gpt2.json.gz") as vocab_path:
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path, vocab_size=lm.config.vocab_size)
STOP = tok.stop_token_ids[0]  # <|endoftext|>, also the model's bos


def prompt_tokens(instruction: str) -> list[int]:
    """bos, then the instruction line split by greedy longest match (as the model was trained)."""
    return [STOP] + xg.greedy_tokenize(tok, instruction + "\n")


def text_of(ids) -> str:
    return b"".join(tok.token_bytes(int(t)) for t in ids if int(t) != STOP).decode()


schema = {"type": "object",
          "properties": {"product": {"type": "string"}, "price": {"type": "number"},
                         "in_stock": {"type": "boolean"}},
          "required": ["product", "price", "in_stock"]}
compiled = xg.GrammarCompiler(tok).compile_json_schema(schema, any_whitespace=False)
prompt = np.array([prompt_tokens("Describe a product as JSON.")], dtype=np.int32)
MAX_NEW = 40
MAX_LEN = prompt.shape[1] + MAX_NEW + 8

plain = xg.constrained_generate(lm.step_fn, lm.params, lm.init_cache(batch_size=1,
                                                                     max_length=MAX_LEN),
                                prompt, [xg.GrammarMatcher(compiled)], max_new_tokens=MAX_NEW,
                                sampling=xg.SamplingConfig(greedy=True),
                                stop_token_ids=tok.stop_token_ids)
reference = plain.tokens[0, :plain.lengths[0]].tolist()
print(text_of(reference), f"({len(reference)} tokens, one model call each)")

# %% [markdown]
# ## A draft tree and its per-node masks
#
# Node 0 is the root: the last token already accepted (not yet scored by the target).
# `PARENTS[i]` is node `i`'s parent: here a chain of four drafted tokens and a side branch of
# two. Real drafters are small models; this one plays a drafter that has seen a similar
# answer (the plain run's), and the side branch is noise. `traverse_draft_tree` returns
# whether each node's path is valid under the grammar and writes the mask after each node (all
# zero for invalid paths).

# %%
PARENTS = np.array([-1, 0, 1, 2, 3, 0, 5], dtype=np.int32)
N = len(PARENTS)
rng = np.random.default_rng(0)


def draft_tree(root: int, produced: list[int], step: int) -> np.ndarray:
    """Root, a 4-token chain guessed from a similar answer (one guess wrong on odd steps),
    and a 2-token branch of random tokens."""
    guess = (reference + [STOP] * 8)[len(produced):len(produced) + 4]
    if step % 2:
        guess[2] = int(rng.integers(tok.vocab_size))
    noise = rng.integers(tok.vocab_size, size=2).tolist()
    return np.array([[root, *guess, *noise]], dtype=np.int32)


matcher = xg.GrammarMatcher(compiled)
tree = draft_tree(int(prompt[0, -1]), [], 0)
masks = xg.allocate_token_bitmask(N, tok.vocab_size)
valid = xg.traverse_draft_tree(matcher, tree[0], masks, parents=PARENTS)
for i in range(N):
    allowed = int(xg.bitmask_to_bool(masks[i], tok.vocab_size).sum())
    print(f"node {i} (parent {PARENTS[i]:2d}) {tok.token_bytes(int(tree[0, i])).decode()!r:14}"
          f" valid={bool(valid[i])!s:5}  tokens allowed after it: {allowed}")

# %% [markdown]
# ## The verify pass
#
# The target scores every node: the logits of the token after node `i`'s path. Without tree
# attention in the model, this verify function runs each root-to-node path from the KV cache
# (the tree's shape is fixed, so the paths are static and the whole function is one jitted
# call). It also returns the cache after each node, to continue from the accepted one.

# %%
PATHS = []
for i in range(N):
    path, j = [], i
    while j >= 0:
        path.insert(0, j)
        j = PARENTS[j]
    PATHS.append(path)


def verify(params, cache, draft_tokens, parents):
    logits, caches = [], []
    for path in PATHS:
        out, c = lm.step_fn(params, cache, draft_tokens[:, jnp.array(path)])
        logits.append(out)
        caches.append(c)
    return jnp.stack(logits, axis=1), tuple(caches)


# %% [markdown]
# ## Speculative decoding loop

# %%
matcher = xg.GrammarMatcher(compiled)
# Prefill all but the last prompt token: the last one is the first tree's root.
_, cache = lm.step_fn(lm.params, lm.init_cache(batch_size=1, max_length=MAX_LEN),
                      jnp.asarray(prompt[:, :-1]))
root, produced, accepted_per_step = int(prompt[0, -1]), [], []
t0 = time.perf_counter()
for step in range(MAX_NEW):
    tree = draft_tree(root, produced, step)
    res = xg.speculative_step(verify, lm.params, cache, [matcher], tree, PARENTS)
    assert not res.errors[0]
    cache = res.aux[int(res.last_node[0])]
    produced += res.new_tokens[0]
    accepted_per_step.append(int(res.accepted.sum()))
    root = produced[-1]
    if res.finished[0]:
        break
print(text_of(produced))
print(f"{len(produced)} tokens in {len(accepted_per_step)} verify passes "
      f"({time.perf_counter() - t0:.1f} s, jit included); drafted tokens accepted per pass: "
      f"{accepted_per_step}")

# %%
assert produced == reference, (produced, reference)
print("speculative == plain constrained greedy:", produced == reference)
