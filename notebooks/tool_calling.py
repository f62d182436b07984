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
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/xg2-jax/xg2-jax/blob/main/notebooks/tool_calling.ipynb)
#
# # Tool calling with a built-in model format
#
# `xg2_jax.get_model_structural_tag` builds the structural tag of one assistant turn for a
# model family's tool-calling format (here Qwen3: an optional `<think>` block, free text, and
# `<tool_call>` blocks whose JSON names a tool and follows its parameter schema). Compiled
# against a vocabulary, it constrains decoding so that every tool call is well formed.

# %%
# On Colab, install the package (builds the native extension: a few minutes). Elsewhere, e.g.
# in CI, it is already installed and this cell does nothing.
import sys

if "google.colab" in sys.modules:
    # %pip install -q "xg2-jax[notebooks] @ git+https://github.com/xg2-jax/xg2-jax"

# %% [markdown]
# ## Two tools and the Qwen3 structural tag
#
# The vocabulary is the GPT-2 one shipped in the package (the one of the tiny model used at
# the end). With a real Qwen3 checkpoint use
# `xg2_jax.models.load_tokenizer_info(path)` instead.

# %%
import json
import re
import time
from importlib import resources

import numpy as np

import xg2_jax as xg

with resources.as_file(resources.files("xg2_jax") / "data" / "gpt2.json.gz") as vocab_path:
    tok = xg.TokenizerInfo.from_vocab_file(vocab_path)

tools = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object",
                       "properties": {"location": {"type": "string"},
                                      "unit": {"enum": ["celsius", "fahrenheit"]}},
                       "required": ["location"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Local time in a time zone",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}},
                       "required": ["timezone"], "additionalProperties": False}}},
]
tag = xg.get_model_structural_tag("qwen3", tools, tool_choice="auto", reasoning=True)
elements = tag.to_dict()["format"]["elements"]
print("turn:", " then ".join(e["type"] for e in elements))
print("the get_weather tag:", json.dumps(elements[1]["tags"][0], indent=1))

# %%
compiler = xg.GrammarCompiler(tok)
t0 = time.perf_counter()
compiled = compiler.compile_structural_tag(tag)
print(f"compiled in {1e3 * (time.perf_counter() - t0):.0f} ms")

# %% [markdown]
# ## Drive a matcher over a model's output, token by token
#
# A Qwen3-style turn: reasoning, a sentence, two parallel calls. The text is split into
# tokens by greedy longest match over the vocabulary (a real model emits its own BPE
# tokens; the matcher does not care which split it sees). Before each token the matcher fills
# the mask of allowed tokens: nearly everything inside free text, a handful inside a call.

# %%
def tokenize(text: str) -> list[int]:
    """Greedy longest match over the vocabulary."""
    return xg.greedy_tokenize(tok, text)


output = (
    "<think>\nThe user wants the weather in Paris and the local time there.\n</think>\n\n"
    "Let me look that up.\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris", '
    '"unit": "celsius"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}\n'
    "</tool_call>"
)
matcher = xg.GrammarMatcher(compiled)
bitmask = xg.allocate_token_bitmask(1, tok.vocab_size)
rows = []
for t in tokenize(output):
    matcher.fill_next_token_bitmask(bitmask)
    allowed = int(xg.bitmask_to_bool(bitmask[0], tok.vocab_size).sum())
    assert matcher.accept_token(t)
    rows.append((tok.token_bytes(t).decode(), allowed))
stop = tok.stop_token_ids[0]
print("end of turn accepted:", matcher.accept_token(stop), "| terminated:",
      matcher.is_terminated())
print(f"{len(rows)} tokens; allowed-token count before each one of the first call:")
call = [i for i, (s, _) in enumerate(rows) if s == "{\""][0]
print(" ".join(f"{s!r}:{n}" for s, n in rows[call - 1:call + 30]))

# %% [markdown]
# ## Malformed calls are rejected
#
# `accept_token` returns `False` (and leaves the matcher unchanged) for a token that breaks
# the structure; a decoder that applies the masks never samples one.

# %%
def first_rejection(text: str):
    """(position, token text, text accepted so far) of the first rejected token, or None."""
    m = xg.GrammarMatcher(compiled)
    ids = tokenize(text)
    for i, t in enumerate(ids):
        if not m.accept_token(t):
            done = b"".join(tok.token_bytes(x) for x in ids[:i]).decode()
            return i, tok.token_bytes(t).decode(), done[-40:]
    return None


malformed = {
    "unknown tool": output.replace("get_time", "get_stock_price"),
    "value outside the enum": output.replace('"celsius"', '"kelvin"'),
    "undeclared argument": output.replace('"Paris", ', '"Paris", "days": 3, '),
    "misspelled </think>": output.replace("</think>", "</thinking>"),
}
for what, text in malformed.items():
    pos, token, before = first_rejection(text)
    print(f"{what:24s} rejected token {pos}: {token!r} after ...{before!r}")
assert first_rejection(output) is None

# %% [markdown]
# ## Generate a call with the tiny model
#
# The tiny model shipped in the package saw bare and `<tool_call>`-wrapped calls in training.
# It cannot reason, so the tag is built with `reasoning=False` and `tool_choice="required"`
# (at least one call). Its prompt is an instruction line, tokenized the way it was trained.

# %%
import jsonschema

from xg2_jax import models

lm = models.load_pretrained(models.default_model_path())
required = xg.get_model_structural_tag("qwen3", tools, tool_choice="required", reasoning=False)
compiled_required = compiler.compile_structural_tag(required)
prompt = np.array([[stop] + tokenize("What is the weather in Paris?\n")], dtype=np.int32)
max_new_tokens = 60
cache = lm.init_cache(batch_size=1, max_length=prompt.shape[1] + max_new_tokens)
t0 = time.perf_counter()
out = xg.constrained_generate(lm.step_fn, lm.params, cache, prompt,
                              [xg.GrammarMatcher(compiled_required)],
                              max_new_tokens=max_new_tokens,
                              sampling=xg.SamplingConfig(greedy=True),
                              stop_token_ids=tok.stop_token_ids)
n = int(out.lengths[0])
text = b"".join(tok.token_bytes(int(t)) for t in out.tokens[0, :n] if t != stop).decode()
print(text)
print(f"{n} tokens in {time.perf_counter() - t0:.1f} s (jit included); "
      f"finished={bool(out.finished[0])}")

# %%
schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
calls = [json.loads(c) for c in re.findall(r"<tool_call>\n(.*?)\n</tool_call>", text, re.S)]
assert calls and out.finished[0]
for c in calls:
    jsonschema.validate(c["arguments"], schemas[c["name"]])
    print("valid call:", c)
