"""``xg2-jax generate``: constrained generation with a model (the main job).

Compiles the structure (JSON Schema, EBNF, regex, structural tag, or a model format's tool
calling) against the model's vocabulary, runs :func:`xg2_jax.constrained_generate` with the
model's step, prints the generated text on stdout and the timing on stderr. The default model
is the tiny Llama-architecture model shipped in the package (GPT-2 vocabulary); ``--model``
takes a local Hugging Face-layout directory (Llama, Qwen2, Qwen3, Mistral, GPT-2).

JAX, Flax and the models are imported only when this command runs, so ``xg2-jax check``
stays light.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from xg2_jax._src.errors import XG2Error
from xg2_jax._src.grammar import Grammar

__all__ = ["add_generate_parser", "run_generate"]

DEFAULT_MAX_NEW_TOKENS = 512
PROGRESS_EVERY_S = 2.0


def add_structure_options(parser: argparse.ArgumentParser) -> None:
    """The structure options shared by ``check`` and ``generate`` (read by build_grammar)."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--json-schema", help="a JSON Schema: inline JSON or a file")
    source.add_argument("--ebnf", help="grammar text (GBNF / XGrammar EBNF)")
    source.add_argument("--ebnf-file", help="file with the grammar text")
    source.add_argument("--regex", help="a regular expression (ECMAScript subset)")
    source.add_argument("--structural-tag", help="a structural tag: inline JSON or a file")
    source.add_argument("--tools", help="JSON file with a list of tools (OpenAI format); "
                                        "needs --model-format")
    source.add_argument("--builtin-json", action="store_true", help="any JSON value")
    from xg2_jax._src.model_formats import supported_models

    parser.add_argument("--model-format", metavar="FORMAT",
                        help="tool-calling format for --tools, one of: "
                             f"{', '.join(supported_models())} (aliases such as llama3.1, "
                             "qwen2.5, gpt-oss are accepted)")
    parser.add_argument("--tool-choice", default="auto", choices=("auto", "required", "none"),
                        help="with --tools: calls optional, at least one, or none (default auto)")
    parser.add_argument("--reasoning", default=None, choices=("required", "optional", "off"),
                        help="with --tools, for models that think: the turn starts with a "
                             "reasoning block, may, or may not (default: off with the shipped "
                             "model, which was not trained to reason; required otherwise)")
    parser.add_argument("--loose", action="store_true",
                        help="JSON Schema: strict_mode=False (allow undeclared properties)")
    parser.add_argument("--any-order", action="store_true",
                        help="JSON Schema: properties in any order (each once; required ones present)")
    parser.add_argument("--root-rule", default="root", help="EBNF root rule (default: root)")


def add_generate_parser(sub) -> None:
    gen = sub.add_parser("generate", help="generate text constrained by a structure with a model "
                                          "(default: the tiny model shipped in the package)")
    gen.add_argument("--model", help="local Hugging Face-layout model directory (config.json, "
                                     "*.safetensors, tokenizer.json); default: the shipped "
                                     "tiny model")
    gen.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default=None,
                     help="parameter dtype (default float32)")
    gen.add_argument("--prompt", default="", help="prompt text (fed as is, no chat template)")
    add_structure_options(gen)
    gen.add_argument("--max-new-tokens", type=int, default=DEFAULT_MAX_NEW_TOKENS,
                     help=f"token budget (default {DEFAULT_MAX_NEW_TOKENS})")
    gen.add_argument("--greedy", action="store_true", help="take the most likely token "
                                                           "(the default without --temperature)")
    gen.add_argument("--temperature", type=float, help="sample at this temperature")
    gen.add_argument("--top-p", type=float, default=1.0, help="nucleus mass when sampling")
    gen.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    from xg2_jax._src.cli_batch import add_whitespace_options

    add_whitespace_options(gen)
    gen.set_defaults(func=run_generate)


def _json_arg(text: str, option: str) -> Any:
    """Inline JSON, or the path of a JSON file."""
    stripped = text.lstrip()
    looks_inline = stripped.startswith(("{", "[", '"')) or stripped in ("true", "false")
    if not looks_inline:
        path = Path(text)
        if not path.exists():
            raise XG2Error(f"{option} {text}: no such file (and not inline JSON)")
        if path.is_dir():
            raise XG2Error(f"{option} {text}: is a directory")
        where, text = text, path.read_text(encoding="utf-8")
    else:
        where = option
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise XG2Error(f"{where}: not JSON: line {e.lineno} column {e.colno}: "
                       f"{e.msg}") from None


def build_grammar(args: argparse.Namespace, tokenizer_info=None, *,
                  default_reasoning: str = "required") -> Grammar:
    """The grammar named by the structure options (see add_structure_options).

    ``tokenizer_info`` resolves the token-level parts of structural tags;
    ``default_reasoning`` applies when ``--reasoning`` is not given.
    """
    if args.builtin_json:
        return Grammar.builtin_json_grammar()
    if args.regex is not None:
        return Grammar.from_regex(args.regex)
    if args.json_schema is not None:
        ws = getattr(args, "whitespace", "any")
        options = ({"any_whitespace": False} if ws == "compact" else
                   {"any_whitespace": True, "max_whitespace_cnt": getattr(args, "max_whitespace",
                                                                          None)})
        return Grammar.from_json_schema(_json_arg(args.json_schema, "--json-schema"),
                                        strict_mode=not args.loose, any_order=args.any_order,
                                        **options)
    if args.structural_tag is not None:
        return Grammar.from_structural_tag(_json_arg(args.structural_tag, "--structural-tag"),
                                           tokenizer_info=tokenizer_info)
    if args.tools is not None:
        from xg2_jax._src.model_formats import get_model_structural_tag

        tools = _json_arg(args.tools, "--tools")
        try:
            mode = args.reasoning or default_reasoning
            reasoning = {"required": True, "optional": "optional", "off": False}[mode]
            tag = get_model_structural_tag(args.model_format, tools, args.tool_choice,
                                           reasoning)
        except ValueError as e:  # unknown format or malformed tools
            raise XG2Error(f"--tools/--model-format: {e}") from None
        return Grammar.from_structural_tag(tag, tokenizer_info=tokenizer_info)
    text = Path(args.ebnf_file).read_text(encoding="utf-8") if args.ebnf_file else args.ebnf
    return Grammar.from_ebnf(text, root_rule_name=args.root_rule)


class _Model:
    """The model, its vocabulary, and how prompts become tokens."""

    def __init__(self, args: argparse.Namespace):
        from xg2_jax import models
        from xg2_jax._src.package_data import default_vocab_path
        from xg2_jax._src.tokenizer import TokenizerInfo, greedy_tokenize

        self.path = Path(args.model) if args.model else models.default_model_path()
        self.config = cfg = models.load_config(self.path, dtype=args.dtype)
        self.lm = None  # load_weights()
        self.encoder = None
        self.is_default = args.model is None
        if self.is_default:  # the shipped model: GPT-2 vocabulary, greedy tokenization
            self.tokenizer = TokenizerInfo.from_vocab_file(default_vocab_path(),
                                                           vocab_size=cfg.vocab_size)
        else:
            self.tokenizer = models.load_tokenizer_info(self.path, vocab_size=cfg.vocab_size)
            try:
                import tokenizers

                self.encoder = tokenizers.Tokenizer.from_file(str(self.path / "tokenizer.json"))
            except ImportError:  # the hf extra is not installed: greedy tokenization
                pass
            except Exception as e:  # noqa: BLE001 - the tokenizers library's own errors
                raise XG2Error(f"{self.path / 'tokenizer.json'}: {e}") from None
        self._greedy = greedy_tokenize
        hf = json.loads((self.path / "config.json").read_text(encoding="utf-8"))
        stops = list(self.tokenizer.stop_token_ids) or list(cfg.eos_token_ids)
        bos = hf.get("bos_token_id")
        self.bos = bos if isinstance(bos, int) else (stops[0] if stops else 0)
        self.stop_token_ids = stops

    def load_weights(self, dtype) -> None:
        from xg2_jax import models

        self.lm = models.load_pretrained(self.path, dtype=dtype)

    def encode(self, prompt: str) -> list[int]:
        if self.encoder is not None:
            ids = self.encoder.encode(prompt).ids
        else:
            if self.is_default and prompt and not prompt.endswith("\n"):
                prompt += "\n"  # the shipped model was trained on "instruction\nJSON"
            ids = [self.bos] + self._greedy(self.tokenizer, prompt.encode("utf-8"))
        return ids or [self.bos]

    def decode(self, ids) -> str:
        stops = set(self.stop_token_ids)
        data = b"".join(self.tokenizer.token_bytes(int(t)) for t in ids if int(t) not in stops)
        return data.decode("utf-8", errors="replace")


def _timed_batch_matcher(progress):
    """A BatchGrammarMatcher that adds up the host time of mask fills and token accepts."""
    from xg2_jax._src.batch import BatchGrammarMatcher

    class TimedBatchMatcher(BatchGrammarMatcher):
        fill_s = 0.0
        accept_s = 0.0
        steps = 0

        def batch_fill_next_token_bitmask(self, *a, **k):
            t0 = time.perf_counter()
            out = super().batch_fill_next_token_bitmask(*a, **k)
            self.fill_s += time.perf_counter() - t0
            self.steps += 1
            progress(self.steps)
            return out

        def batch_accept_token(self, *a, **k):
            t0 = time.perf_counter()
            out = super().batch_accept_token(*a, **k)
            self.accept_s += time.perf_counter() - t0
            return out

    return TimedBatchMatcher()


def run_generate(args: argparse.Namespace) -> int:
    """Runs ``xg2-jax generate``; returns the exit status (1: the output was cut by
    ``--max-new-tokens`` before the structure was complete)."""
    if args.max_new_tokens < 1:
        raise XG2Error("--max-new-tokens must be at least 1")
    if args.temperature is not None and (args.greedy or args.temperature <= 0):
        raise XG2Error("--temperature must be > 0 and does not go with --greedy")
    if not 0 < args.top_p <= 1:
        raise XG2Error(f"--top-p must be in (0, 1], got {args.top_p:g}")
    if args.top_p < 1 and args.temperature is None:
        raise XG2Error("--top-p applies when sampling: give --temperature too")
    from xg2_jax._src.cli_batch import whitespace_config

    whitespace_config(args)  # rejects --max-whitespace without --whitespace any
    default_reasoning = "off" if args.model is None else "required"
    if (args.model_format is None) != (args.tools is None):
        raise XG2Error("--tools and --model-format go together")
    if args.tools is None and args.structural_tag is None:
        grammar = build_grammar(args)  # bad structures fail before anything loads

    import jax
    import numpy as np

    from xg2_jax._src.compiler import GrammarCompiler
    from xg2_jax._src.decode import SamplingConfig, constrained_generate
    from xg2_jax._src.matcher import GrammarMatcher

    t0 = time.perf_counter()
    model = _Model(args)
    if args.tools is not None or args.structural_tag is not None:
        grammar = build_grammar(args, model.tokenizer,
                                default_reasoning=default_reasoning)  # before the weights load
    model.load_weights(args.dtype)
    t_load = time.perf_counter() - t0
    prompt = np.array([model.encode(args.prompt)], dtype=np.int32)
    max_length = prompt.shape[1] + args.max_new_tokens
    limit = model.config.max_position_embeddings
    if max_length > limit:
        raise XG2Error(f"prompt ({prompt.shape[1]} tokens) + --max-new-tokens "
                       f"({args.max_new_tokens}) exceeds the model's {limit} positions")
    t0 = time.perf_counter()
    compiled = GrammarCompiler(model.tokenizer).compile_grammar(grammar)
    t_compile = time.perf_counter() - t0

    sampling = (SamplingConfig(greedy=True) if args.temperature is None else
                SamplingConfig(temperature=args.temperature, top_p=args.top_p))
    lm = model.lm
    # Compile the prefill and decode steps first, so the timing below is the steady state.
    t0 = time.perf_counter()
    warm = constrained_generate(lm.step_fn, lm.params,
                                lm.init_cache(batch_size=1, max_length=max_length), prompt,
                                [GrammarMatcher(compiled)], max_new_tokens=2, sampling=sampling)
    jax.block_until_ready(warm.cache)
    t_jit = time.perf_counter() - t0

    started = time.perf_counter()
    last_report = [started]

    def progress(steps: int) -> None:
        now = time.perf_counter()
        if now - last_report[0] >= PROGRESS_EVERY_S:
            last_report[0] = now
            print(f"... {steps} tokens, {steps / (now - started):.1f} tokens/s",
                  file=sys.stderr, flush=True)

    timed = _timed_batch_matcher(progress)
    matcher = GrammarMatcher(compiled)
    out = constrained_generate(lm.step_fn, lm.params,
                               lm.init_cache(batch_size=1, max_length=max_length), prompt,
                               [matcher], max_new_tokens=args.max_new_tokens, sampling=sampling,
                               key=jax.random.key(args.seed), batch_matcher=timed,
                               stop_token_ids=model.stop_token_ids)
    elapsed = time.perf_counter() - started
    n = int(out.lengths[0])
    print(model.decode(out.tokens[0, :n]), flush=True)

    host = timed.fill_s + timed.accept_s
    print(f"model {model.path.name} ({lm.config.model_type}, {lm.config.dtype}) loaded in "
          f"{t_load * 1e3:.0f} ms; grammar compiled in {t_compile * 1e3:.0f} ms; jit warm-up "
          f"{t_jit:.1f} s", file=sys.stderr)
    print(f"{n} tokens in {elapsed:.2f} s ({n / max(elapsed, 1e-9):.1f} tokens/s, prompt "
          f"{prompt.shape[1]} tokens); mask fill + accept {host * 1e3:.1f} ms "
          f"({100 * host / max(elapsed, 1e-9):.1f}% of the time, "
          f"{1e6 * timed.fill_s / max(timed.steps, 1):.0f} µs per fill)", file=sys.stderr)
    if out.errors[0]:
        print("error: the matcher rejected a sampled token", file=sys.stderr)
        return 1
    if not out.finished[0]:
        print(f"error: stopped at --max-new-tokens {args.max_new_tokens} before the structure "
              "was complete (the output is truncated; raise --max-new-tokens)", file=sys.stderr)
        return 1
    return 0
