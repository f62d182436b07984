"""Trains the tiny Llama-architecture model shipped as ``xg2_jax/data/tiny_llama_json``.

The model (2 layers, d_model 64, tied embeddings, GPT-2 vocabulary) learns, on CPU in a few
minutes, from self-generated JSON-like text: records (people, products, events), tool calls
(bare and inside ``<tool_call>`` tags) and objects with random keys and values, each after an
optional one-line instruction. It is not a useful language model; it makes ``xg2-jax
generate``'s constrained output look plausible (names after ``"name"``, numbers after
``"age"``, closed strings) with nothing to download.

Sequences are tokenized by greedy longest match over the GPT-2 vocabulary (what the CLI does
with prompts). Only the tokens that occur in the corpus are trained: the others keep an
all-zero embedding row, so their logit is exactly 0; the training softmax includes them as
one column of logit ``log(number of unused tokens)``, which makes it equal to the full
50,257-way softmax at a fraction of the cost, and lets the weights be stored compressed.

Run (deterministic: fixed seeds; optax is used here only, it is not a runtime dependency):

    PYTHONPATH=. python3 tools/train_tiny_model.py --steps 1500 --out xg2_jax/data/tiny_llama_json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from xg2_jax import greedy_tokenize
from xg2_jax._src.package_data import default_vocab_path
from xg2_jax._src.tokenizer import TokenizerInfo
from xg2_jax.models import LlamaForCausalLM, config_from_hf
from xg2_jax.models.llama import llama_tensor_plan

HF_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 50257,
    "hidden_size": 64, "intermediate_size": 192, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "max_position_embeddings": 1024, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "tie_word_embeddings": True, "bos_token_id": 50256, "eos_token_id": 50256,
    "torch_dtype": "float16",
}
SEQ_LEN = 128
EOT = 50256

# ------------------------------------------------------------------------------ the corpus
FIRST = ["Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry", "Isabel", "Jack",
         "Karen", "Liam", "Maria", "Noah", "Olivia", "Paul", "Quinn", "Rosa", "Sam", "Tara",
         "Victor", "Wendy", "Yusuf", "Zoe", "Ana", "Leo", "Mia", "Omar", "Nina", "Hugo"]
LAST = ["Smith", "Jones", "Garcia", "Brown", "Miller", "Davis", "Wilson", "Moore", "Taylor",
        "Lee", "Martin", "Clark", "Lopez", "Hill", "Scott", "Green", "Adams", "Baker", "Kim"]
CITIES = ["Paris", "London", "Berlin", "Tokyo", "New York", "Madrid", "Rome", "Boston",
          "Sydney", "Toronto", "Seattle", "Lisbon", "Vienna", "Oslo", "Dublin", "Chicago"]
WORDS = ["red", "blue", "green", "fast", "small", "large", "new", "old", "open", "closed",
         "alpha", "beta", "data", "cloud", "music", "sport", "book", "garden", "coffee", "tea",
         "travel", "python", "jax", "model", "report", "music", "summer", "winter", "home"]
PRODUCTS = ["Laptop", "Phone", "Desk Lamp", "Coffee Mug", "Backpack", "Headphones", "Keyboard",
            "Water Bottle", "Notebook", "Camera", "Chair", "Watch", "Bicycle", "Jacket"]
KEYS = ["id", "name", "value", "count", "status", "type", "description", "score", "enabled",
        "items", "tags", "result", "message", "code", "url", "version", "title", "priority",
        "label", "color", "size", "level", "email", "age", "city", "price", "date", "note",
        "user", "query", "location", "unit", "amount", "currency", "language", "rating"]
STATUS = ["active", "pending", "done", "failed", "ok", "error", "draft", "archived"]
TOOLS = {
    "get_weather": lambda r: {"location": r.choice(CITIES), "unit": r.choice(["celsius", "fahrenheit"])},
    "search_web": lambda r: {"query": " ".join(r.sample(WORDS, r.randint(1, 3)))},
    "send_email": lambda r: {"to": _email(r), "subject": r.choice(WORDS).title() + " update",
                             "body": "Hello " + r.choice(FIRST) + ", see you in " + r.choice(CITIES) + "."},
    "get_stock_price": lambda r: {"symbol": r.choice(["AAPL", "GOOG", "MSFT", "NVDA", "AMZN"])},
    "convert_currency": lambda r: {"amount": round(r.uniform(1, 500), 2), "from": "USD",
                                   "to": r.choice(["EUR", "GBP", "JPY"])},
    "create_event": lambda r: {"title": r.choice(WORDS).title() + " meeting", "date": _date(r)},
}


def _email(r):
    return f"{r.choice(FIRST).lower()}.{r.choice(LAST).lower()}@example.com"


def _date(r):
    return f"20{r.randint(19, 26)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"


def _scalar(r, key=None):
    by_key = {"name": lambda: f"{r.choice(FIRST)} {r.choice(LAST)}", "email": lambda: _email(r),
              "age": lambda: r.randint(18, 90), "city": lambda: r.choice(CITIES),
              "location": lambda: r.choice(CITIES), "status": lambda: r.choice(STATUS),
              "price": lambda: round(r.uniform(1, 999), 2), "date": lambda: _date(r),
              "id": lambda: r.randint(1, 9999), "url": lambda: f"https://example.com/{r.choice(WORDS)}",
              "enabled": lambda: r.random() < 0.5, "score": lambda: round(r.uniform(0, 100), 1),
              "count": lambda: r.randint(0, 500), "title": lambda: r.choice(PRODUCTS)}
    if key in by_key and r.random() < 0.85:
        return by_key[key]()
    kind = r.random()
    if kind < 0.35:
        return " ".join(r.sample(WORDS, r.randint(1, 3)))
    if kind < 0.6:
        return r.randint(-100, 1000)
    if kind < 0.75:
        return round(r.uniform(-50, 500), r.randint(1, 3))
    if kind < 0.9:
        return r.random() < 0.5
    return None


def _random_object(r, depth=0):
    obj = {}
    for key in r.sample(KEYS, r.randint(1, 5)):
        kind = r.random()
        if kind < 0.12 and depth < 2:
            obj[key] = _random_object(r, depth + 1)
        elif kind < 0.24 and depth < 2:
            obj[key] = [_scalar(r) if r.random() < 0.7 else r.choice(WORDS)
                        for _ in range(r.randint(0, 4))]
        else:
            obj[key] = _scalar(r, key)
    return obj


def _document(r: random.Random) -> str:
    kind = r.random()
    if kind < 0.2:
        first, last = r.choice(FIRST), r.choice(LAST)
        obj = {"name": f"{first} {last}", "age": r.randint(18, 90),
               "email": f"{first.lower()}.{last.lower()}@example.com", "city": r.choice(CITIES),
               "tags": r.sample(WORDS, r.randint(0, 3)), "active": r.random() < 0.5}
        obj = dict(r.sample(list(obj.items()), r.randint(2, len(obj))))
        prompt = r.choice(["Describe a person as JSON.", "Extract the user record.",
                           f"Who lives in {obj.get('city', r.choice(CITIES))}?"])
    elif kind < 0.35:
        obj = {"id": r.randint(1, 9999), "title": r.choice(PRODUCTS),
               "price": round(r.uniform(1, 999), 2), "in_stock": r.random() < 0.5,
               "categories": r.sample(WORDS, r.randint(1, 3))}
        obj = dict(r.sample(list(obj.items()), r.randint(2, len(obj))))
        prompt = r.choice(["Give a product as JSON.", "List one item from the shop."])
    elif kind < 0.6:
        name = r.choice(list(TOOLS))
        obj = {"name": name, "arguments": TOOLS[name](r)}
        prompt = r.choice([f"Call {name}.", "Use a tool to answer the question.",
                           f"What is the weather in {r.choice(CITIES)}?"])
        if r.random() < 0.4:
            return (prompt + "\n" if r.random() < 0.6 else "") + \
                f"<tool_call>\n{json.dumps(obj)}\n</tool_call>"
    elif kind < 0.7:
        obj = [r.randint(-20, 200) if r.random() < 0.5 else r.choice(WORDS)
               for _ in range(r.randint(1, 6))]
        prompt = "Return a JSON list."
    else:
        obj = _random_object(r)
        prompt = r.choice(["Return JSON.", "Answer with a JSON object.", "Output the data.",
                           "Generate JSON for the schema."])
    text = json.dumps(obj, indent=2) if r.random() < 0.1 else json.dumps(obj)
    return (prompt + "\n" if r.random() < 0.6 else "") + text


def build_corpus(tok: TokenizerInfo, *, num_docs: int, seed: int):
    """Token sequences ``[EOT] doc [EOT]`` padded to SEQ_LEN, and the loss weights."""
    r = random.Random(seed)
    rows, weights = [], []
    while len(rows) < num_docs:
        ids = [EOT] + greedy_tokenize(tok, _document(r).encode()) + [EOT]
        if len(ids) > SEQ_LEN + 1:
            continue
        pad = SEQ_LEN + 1 - len(ids)
        rows.append(ids + [EOT] * pad)
        weights.append([1.0] * (len(ids) - 1) + [0.0] * pad)
    return np.array(rows, np.int32), np.array(weights, np.float32)


# ------------------------------------------------------------------------------ training
def train(*, steps: int, batch_size: int, num_docs: int, seed: int, out: Path, lr: float):
    tok = TokenizerInfo.from_vocab_file(default_vocab_path())
    t0 = time.time()
    data, weights = build_corpus(tok, num_docs=num_docs, seed=seed)
    used = np.unique(data)
    print(f"corpus: {len(data)} sequences, {int(weights.sum())} target tokens, "
          f"{len(used)} distinct tokens ({time.time() - t0:.1f}s)")
    remap = np.zeros(HF_CONFIG["vocab_size"], np.int32)
    remap[used] = np.arange(len(used))
    log_unused = math.log(HF_CONFIG["vocab_size"] - len(used))

    cfg = config_from_hf(HF_CONFIG)
    model = LlamaForCausalLM(cfg, rngs=nnx.Rngs(seed))
    row_mask = np.zeros((cfg.vocab_size, 1), np.float32)
    row_mask[used] = 1.0
    model.embed_tokens[...] = model.embed_tokens[...] * row_mask  # unused rows: exactly zero
    graphdef, params = nnx.split(model, nnx.Param)
    schedule = optax.warmup_cosine_decay_schedule(0.0, lr, min(100, steps // 4), steps, lr * 0.05)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=0.0))
    opt_state = optimizer.init(params)
    used_dev = jnp.asarray(used)

    def loss_fn(params, batch, w):
        m = nnx.merge(graphdef, params)
        cache = m.init_cache(batch_size=batch.shape[0], max_length=SEQ_LEN)
        hidden, _ = m.hidden_states(batch[:, :-1], cache)
        table = jnp.take(m.embed_tokens[...], used_dev, axis=0)
        logits = hidden @ table.T
        logits = jnp.concatenate([logits, jnp.full(logits.shape[:-1] + (1,), log_unused)], -1)
        logp = jax.nn.log_softmax(logits, axis=-1)
        target = jnp.take(jnp.asarray(remap), batch[:, 1:])
        nll = -jnp.take_along_axis(logp, target[..., None], axis=-1)[..., 0]
        return (nll * w).sum() / w.sum()

    @jax.jit
    def train_step(params, opt_state, batch, w):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch, w)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    rng = np.random.default_rng(seed)
    t0 = time.time()
    for step in range(steps):
        idx = rng.integers(0, len(data), batch_size)
        params, opt_state, loss = train_step(params, opt_state, data[idx], weights[idx])
        if step % 100 == 0 or step == steps - 1:
            print(f"step {step:5d}  loss {float(loss):.3f}  {time.time() - t0:.0f}s", flush=True)
    model = nnx.merge(graphdef, params)
    save(model, cfg, out)


def save(model: LlamaForCausalLM, cfg, out: Path) -> None:
    """Writes ``config.json`` and ``model.npz`` (HF tensor names, float16, compressed)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(HF_CONFIG, indent=2) + "\n")
    state = nnx.to_pure_dict(nnx.state(model, nnx.Param))
    tensors = {}
    for name, path, transpose in llama_tensor_plan(cfg):
        value = state
        for key in path:
            value = value[key]
        array = np.asarray(value, np.float32)
        tensors[name] = (array.T if transpose else array).astype(np.float16)
    np.savez_compressed(out / "model.npz", **tensors)
    size = (out / "model.npz").stat().st_size
    print(f"wrote {out}/model.npz ({size / 1e6:.2f} MB, "
          f"{sum(t.size for t in tensors.values()):,} parameters)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("xg2_jax/data/tiny_llama_json"))
    args = parser.parse_args()
    train(steps=args.steps, batch_size=args.batch_size, num_docs=args.docs, seed=args.seed,
          out=args.out, lr=args.lr)


if __name__ == "__main__":
    main()
