"""Continuous batching with a structure per request, on the shipped model: mixed requests
(JSON Schemas from JSONSchemaBench, regexes, BFCL tool sets in two model formats,
unconstrained ones; prompts of different lengths, rendered with the chat template) give
outputs that validate (jsonschema, re.fullmatch, parsed tool calls against their tools'
schemas) and greedy tokens equal to one-request runs; bad requests fail alone."""

from __future__ import annotations

import json
import re

import pytest

jax = pytest.importorskip("jax")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")

from bfcl_lib import load_tool_set  # noqa: E402
from json_schema_corpus_lib import JSB, jsb_categories, jsb_sample, large_bound  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import models  # noqa: E402
from xg2_jax._src.continuous import loop_compiler  # noqa: E402

REGEXES = [r"[A-Z]{3}-[0-9]{4}", r"(yes|no|maybe)", r"[a-z]{3,8}@example\.com",
           r"\d{4}-\d{2}-\d{2}", r"#[0-9a-f]{6}"]
USER_TEXT = ["Return JSON.", "Describe a person as JSON.", "Give a product as JSON.",
             "What is the weather in Paris?", "Use a tool to answer the question.",
             "Answer with a JSON object. " * 6]


@pytest.fixture(scope="module")
def stack():
    path = models.default_model_path()
    lm = models.load_pretrained(path)
    tok_info = models.load_tokenizer_info(path, vocab_size=lm.config.vocab_size)
    return (lm, tok_info, xg.ModelTokenizer.from_model_dir(path),
            xg.ChatTemplate.from_model_dir(path), xg.GrammarCompiler(tok_info))


def _schemas(n: int) -> list:
    if not JSB.exists():
        pytest.skip("shared/data/jsonschemabench is not present")
    out = []
    for entry in jsb_sample(jsb_categories(), per_category=8):
        schema = entry["data"]["schema"]
        if isinstance(schema, str):
            schema = json.loads(schema)
        if large_bound(schema) is not None:
            continue
        try:
            xg.Grammar.from_json_schema(schema, any_whitespace=False)
        except xg.XG2Error:
            continue
        out.append(schema)
        if len(out) == n:
            break
    return out


def _mixed_requests(n: int, stack) -> list[tuple[str, object, xg.Request]]:
    """``n`` requests cycling through five kinds; (kind, check data, request)."""
    _, tok_info, tokenizer, template, _ = stack
    schemas = _schemas(max(1, n // 5 + 1))
    tool_sets = [load_tool_set(size).tools for size in (5, 12)]
    out = []
    for i in range(n):
        kind = ("schema", "regex", "qwen3", "llama3", "free")[i % 5]
        user = USER_TEXT[i % len(USER_TEXT)] + (" Please." * (i % 4))
        messages = [{"role": "user", "content": user}]
        prompt = tokenizer.encode(template.render(messages))
        if kind == "schema":
            schema = schemas[(i // 5) % len(schemas)]
            grammar, data = xg.Grammar.from_json_schema(schema, any_whitespace=False), schema
        elif kind == "regex":
            data = REGEXES[(i // 5) % len(REGEXES)]
            grammar = xg.Grammar.from_regex(data)
        elif kind in ("qwen3", "llama3"):
            tools = tool_sets[(i // 5) % 2]
            tag = xg.get_model_structural_tag(kind, tools, "required", False)
            data = (tag, tools)
            grammar = (lambda tag=tag: xg.Grammar.from_structural_tag(tag, tokenizer_info=tok_info))
        else:
            grammar, data = None, None
        out.append((kind, data, xg.Request(prompt, grammar=grammar, max_tokens=96, id=i)))
    return out


def _check_output(kind, data, out, tokenizer) -> bool:
    """Validates a finished output; returns whether it finished on its own ("stop")."""
    assert out.finish_reason in ("stop", "length"), out.error
    if out.finish_reason != "stop" or kind == "free":
        return out.finish_reason == "stop"
    text = tokenizer.decode(out.tokens[:-1])  # without the stop token
    if kind == "schema":
        jsonschema.validate(json.loads(text), data)
    elif kind == "regex":
        assert re.fullmatch(data, text), text
    else:
        tag, tools = data
        message = xg.parse_structured_output(text, tag, tools=tools)
        assert message["tool_calls"], text
        by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        for call in message["tool_calls"]:
            jsonschema.validate(json.loads(call["function"]["arguments"]),
                                by_name[call["function"]["name"]])
    return True


@pytest.mark.parametrize("n", [pytest.param(12, id="12"),
                               pytest.param(50, id="50", marks=pytest.mark.slow)])
def test_mixed_requests_validate_and_equal_single_runs(stack, n):
    lm, tok_info, tokenizer, _, compiler = stack
    reqs = _mixed_requests(n, stack)
    outs = xg.generate_requests(lm, tok_info, [r for _, _, r in reqs], num_slots=8,
                                max_length=512, compiler=compiler)
    assert [o.id for o in outs] == list(range(n))  # input order
    stopped = sum(_check_output(kind, data, out, tokenizer)
                  for (kind, data, _), out in zip(reqs, outs))
    assert stopped >= n * 0.6, [o.finish_reason for o in outs]
    for (_, _, r), out in zip(reqs, outs):
        alone = xg.generate_requests(lm, tok_info, [r], num_slots=1, max_length=512,
                                     compiler=compiler)[0]
        assert alone.tokens == out.tokens, r.id


def test_bad_requests_fail_alone(stack):
    lm, tok_info, _, _, compiler = stack
    good = xg.Request([50256, 15], grammar=xg.Grammar.from_regex("[0-9]{2}"), max_tokens=4)
    reqs = [good,
            xg.Request([50256], grammar=lambda: xg.Grammar.from_json_schema({"type": "nope"})),
            xg.Request([], max_tokens=3),
            xg.Request([50256] * 600, max_tokens=3),
            xg.Request([50256], max_tokens=3, top_p=0.0),
            good]
    outs = xg.generate_requests(lm, tok_info, reqs, num_slots=2, max_length=512,
                                compiler=compiler)
    assert [o.finish_reason for o in outs] == ["stop", "error", "error", "error", "error",
                                               "stop"]
    assert "unknown type 'nope'" in outs[1].error and "/type" in outs[1].error
    assert outs[0].tokens == outs[5].tokens


def test_sampled_requests_depend_only_on_their_seed(stack):
    lm, tok_info, _, _, compiler = stack
    mk = (lambda seed: xg.Request([50256, 1212], grammar=xg.Grammar.builtin_json_grammar(),
                                  max_tokens=20, temperature=1.0, top_p=0.9, seed=seed))
    batch = xg.generate_requests(lm, tok_info, [mk(1), mk(2), mk(1)], num_slots=3,
                                 max_length=128, compiler=compiler)
    assert batch[0].tokens == batch[2].tokens
    alone = xg.generate_requests(lm, tok_info, [mk(2)], num_slots=1, max_length=128,
                                 compiler=compiler)[0]
    assert alone.tokens == batch[1].tokens


def test_new_rows_do_not_stall_running_rows(stack):
    """A request whose grammar compiles slowly joins late; the others finish meanwhile."""
    import threading

    lm, tok_info, _, _, compiler = stack
    gate = threading.Event()

    def slow_grammar():
        gate.wait(timeout=30)
        return xg.Grammar.from_regex("[a-z]{2}")

    gen = xg.BatchGenerator(lm, tok_info, num_slots=2, max_length=64, compiler=compiler)
    gen.submit(xg.Request([50256], grammar=slow_grammar, max_tokens=4, id="slow"))
    gen.submit(xg.Request([50256], grammar=xg.Grammar.from_regex("[0-9]{3}"), max_tokens=8,
                          id="fast"))
    order = []
    try:
        for out in gen.run():
            order.append(out.id)
            if out.id == "fast":
                gate.set()
    finally:
        gen.close()
    assert order == ["fast", "slow"]


@pytest.mark.parametrize("compile_ahead", [None, 0])
def test_queued_requests_compile_before_admission(stack, compile_ahead):
    """With compile-ahead (the default) a queued request's grammar compiles while the slot is
    still busy; with ``compile_ahead=0`` only once it is admitted."""
    import threading

    lm, tok_info, _, _, compiler = stack
    started = threading.Event()

    def queued_grammar():
        started.set()
        return xg.Grammar.from_regex("[a-z]{2}")

    gen = xg.BatchGenerator(lm, tok_info, num_slots=1, max_length=64, compiler=compiler,
                            compile_ahead=compile_ahead)
    gen.submit(xg.Request([50256], max_tokens=6, stop_token_ids=[], id="busy"))
    gen.submit(xg.Request([50256], grammar=queued_grammar, max_tokens=4, id="queued"))
    seen = {}
    try:
        for out in gen.run():
            if out.id == "busy":
                seen["compiled_while_queued"] = started.wait(timeout=10 if compile_ahead
                                                             is None else 0.5)
            seen[out.id] = out.finish_reason
    finally:
        gen.close()
    assert seen == {"compiled_while_queued": compile_ahead is None, "busy": "length",
                    "queued": "stop"}


def test_compile_ahead_must_not_be_negative(stack):
    lm, tok_info, _, _, compiler = stack
    with pytest.raises(ValueError, match="compile_ahead"):
        xg.BatchGenerator(lm, tok_info, num_slots=1, compiler=compiler, compile_ahead=-1)


@pytest.mark.parametrize("platform, mode", [("cpu", True), ("gpu", None), ("tpu", None)])
def test_loop_compiler_builds_nothing_ahead_on_the_host(stack, platform, mode):
    # On the host CPU the forward pass needs the cores a background mask build would take.
    _, tok_info, _, _, _ = stack
    assert loop_compiler(tok_info, platform=platform).enable_dynamic_compilation is mode


def test_loop_default_and_given_compilers(stack):
    lm, tok_info, _, _, compiler = stack
    default = xg.BatchGenerator(lm, tok_info, num_slots=1)
    given = xg.BatchGenerator(lm, tok_info, num_slots=1, compiler=compiler)
    try:
        expected = loop_compiler(tok_info).enable_dynamic_compilation
        assert default.engine.compiler.enable_dynamic_compilation is expected
        assert given.engine.compiler is compiler  # a caller's compiler keeps its own mode
    finally:
        default.close()
        given.close()


def test_rule_temperatures_replace_the_request_temperature(stack):
    """A rule's ``[temperature=0]`` makes its span greedy in a hot request (temperature 5,
    any seed), and the request's own temperature applies outside it."""
    lm, tok_info, _, _, compiler = stack
    body = '[a-z]{1,6} " " [a-z]{1,6} "."'
    greedy_rule = xg.Grammar.from_ebnf(f"root ::= word\nword[temperature=0] ::= {body}")
    plain = xg.Grammar.from_ebnf(f"root ::= {body}")
    assert compiler.compile_grammar(greedy_rule).has_rule_temperatures
    assert not compiler.compile_grammar(plain).has_rule_temperatures
    prompt = [50256, 1212, 318]
    hot = [xg.Request(prompt, grammar=greedy_rule, max_tokens=24, temperature=5.0, seed=s)
           for s in range(4)]
    greedy = xg.Request(prompt, grammar=plain, max_tokens=24, temperature=0.0)
    outs = xg.generate_requests(lm, tok_info, hot + [greedy], num_slots=5, max_length=128,
                                compiler=compiler)
    assert all(o.finish_reason == "stop" for o in outs), [o.error for o in outs]
    assert all(o.tokens == outs[-1].tokens for o in outs[:-1])
    # The same hot requests without the rule's temperature are sampled hot.
    free = [xg.Request(prompt, grammar=plain, max_tokens=24, temperature=5.0, seed=s) for s in range(4)]
    sampled = xg.generate_requests(lm, tok_info, free, num_slots=4, max_length=128, compiler=compiler)
    assert len({tuple(o.tokens) for o in sampled}) > 1
