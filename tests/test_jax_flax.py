"""Constrained decoding of a tiny random Flax NNX model: the loops take any Flax model through
a (params, cache, tokens) -> (logits, cache) step built with nnx.split / nnx.merge."""

from __future__ import annotations

import json

import numpy as np
import pytest

jax = pytest.importorskip("jax")
nnx = pytest.importorskip("flax.nnx")
import jax.numpy as jnp  # noqa: E402
import jsonschema  # noqa: E402

import xg2_jax as xg  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
        "score": {"type": "integer", "minimum": -5, "maximum": 500},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "tags", "score", "ok"],
    "additionalProperties": False,
}
BATCH = 3


class TinyFlaxLM(nnx.Module):
    """Embedding, a tanh recurrent cell and an output head: the smallest model with a cache."""

    def __init__(self, vocab_size: int, hidden: int, *, rngs: "nnx.Rngs"):
        self.embed = nnx.Embed(vocab_size, hidden, rngs=rngs)
        self.cell = nnx.Linear(hidden, hidden, rngs=rngs)
        self.head = nnx.Linear(hidden, vocab_size, rngs=rngs)

    def __call__(self, tokens, h):
        x = jnp.swapaxes(self.embed(tokens), 0, 1)  # (T, B, H)

        def body(h, xt):
            h = jnp.tanh(xt + self.cell(h))
            return h, None

        h, _ = jax.lax.scan(body, h, x)
        return self.head(h), h


@pytest.fixture(scope="module")
def model(gpt2_tokenizer):
    lm = TinyFlaxLM(gpt2_tokenizer.vocab_size, 32, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(lm)

    def step(params, cache, tokens):
        logits, h = nnx.merge(graphdef, params)(tokens, cache["h"])
        return logits, {"h": h}

    return step, state


@pytest.mark.parametrize("sampling", [xg.SamplingConfig(greedy=True),
                                      xg.SamplingConfig(temperature=1.0, top_p=0.9)],
                         ids=["greedy", "sampled"])
def test_flax_model_json_schema_outputs_validate(gpt2_tokenizer, model, sampling):
    step, params = model
    compiled = xg.GrammarCompiler(gpt2_tokenizer).compile_json_schema(SCHEMA, any_whitespace=False)
    matchers = [xg.GrammarMatcher(compiled) for _ in range(BATCH)]
    prompts = np.array([[464, 3290], [40, 588], [818, 262]], dtype=np.int32)
    cache = {"h": jnp.zeros((BATCH, 32), jnp.float32)}
    out = xg.constrained_generate(step, params, cache, prompts, matchers, max_new_tokens=96,
                                  sampling=sampling, key=jax.random.key(1))
    assert not out.errors.any()
    stops = set(gpt2_tokenizer.stop_token_ids)
    for row in range(BATCH):
        tokens = [int(t) for t in out.tokens[row, :out.lengths[row]]]
        data = b"".join(gpt2_tokenizer.token_bytes(t) for t in tokens if t not in stops)
        assert out.finished[row], "every output of this schema fits in the token budget"
        assert tokens[-1] in stops
        jsonschema.validate(json.loads(data), SCHEMA)
