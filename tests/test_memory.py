"""Memory stays bounded under a stream of distinct grammars, and no input aborts the process
(issue #18). The long version is benchmarks/bench_soak.py; these run by default in seconds.

* a few hundred distinct generated schemas under low cache limits: every cache's byte count
  and the process RSS stay under the limits;
* an allocation failure forced by an address-space limit (in a child process) comes back as
  MemoryError, and the compiler keeps working;
* an exception on a mask-building worker thread reaches the caller;
* the front end's time limit trips inside allany16-like pattern products;
* degenerate vocabularies raise.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import vm_rss_mib

import xg2_jax as xg
from xg2_jax import _core
from xg2_jax._src.errors import InvalidArgumentError, LimitExceededError


@pytest.fixture
def cache_budget():
    """Restores the process-wide cache budget (and empties the caches) after the test."""
    before = xg.cross_grammar_cache_stats()["budget_bytes"]
    yield
    xg.set_cross_grammar_cache_limit(before)
    xg.clear_cross_grammar_cache()


def distinct_schema(rng: random.Random, i: int) -> dict:
    """A schema no other index produces (property names carry i), of a few shapes."""
    props = {}
    for k in range(rng.randint(1, 6)):
        kind = rng.choice(["string", "integer", "enum", "pattern", "bounded_pattern", "array", "object"])
        name = f"f{i}_{k}"
        if kind == "string":
            props[name] = {"type": "string", "maxLength": rng.randint(1, 30)}
        elif kind == "integer":
            lo = rng.randint(-100, 100)
            props[name] = {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(1, 5000)}
        elif kind == "enum":
            props[name] = {"enum": [f"v{i}_{j}" for j in range(rng.randint(1, 5))]}
        elif kind == "pattern":
            props[name] = {"type": "string", "pattern": f"^[a-z]{{{rng.randint(1, 4)}}}{i}[0-9]*$"}
        elif kind == "bounded_pattern":  # a distinct pattern automaton, kept by the front end
            props[name] = {"type": "string", "pattern": f"^(?:\\S+\\s){{0,{rng.randint(2, 9)}}}{i}$",
                           "maxLength": rng.randint(10, 300)}
        elif kind == "array":
            props[name] = {"type": "array", "items": {"type": "number"}, "maxItems": rng.randint(1, 5)}
        else:
            props[name] = {"type": "object", "properties": {f"in{i}": {"type": "boolean"}},
                           "required": [f"in{i}"]}
    return {"type": "object", "properties": props, "required": list(props)[: rng.randint(0, len(props))]}


# ---------------------------------------------------------------------------------- soak (small)

def test_distinct_schemas_stay_under_low_limits(gpt2_tokenizer, cache_budget):
    budget = 6 << 20
    xg.set_cross_grammar_cache_limit(budget)
    stats = xg.cross_grammar_cache_stats()
    # The registry's split: masks the budget, automata 1/8, suffixes 1/4, key exclusion and
    # length-bounded patterns 1/16 each.
    assert stats["budget_bytes"] == budget
    assert stats["limit_bytes"] == budget
    assert stats["automaton_limit_bytes"] == budget // 8
    assert stats["suffix_limit_bytes"] == budget // 4
    assert stats["key_exclusion_limit_bytes"] == stats["pattern_automaton_limit_bytes"] == budget // 16
    assert stats["total_limit_bytes"] == budget + budget // 8 + budget // 4 + 2 * (budget // 16)

    compiler = xg.GrammarCompiler(gpt2_tokenizer, max_threads=2, cache_limit_bytes=4 << 20)
    rng = random.Random(18)
    schemas = [distinct_schema(rng, i) for i in range(300)]
    rss = []
    for i, schema in enumerate(schemas):
        compiler.compile_json_schema(schema, lazy=i % 3 == 0)
        s = xg.cross_grammar_cache_stats()
        c = compiler.cache_stats()
        assert s["bytes"] <= s["limit_bytes"], s
        assert s["automaton_bytes"] <= s["automaton_limit_bytes"], s
        assert s["suffix_bytes"] <= s["suffix_limit_bytes"], s
        assert s["key_exclusion_bytes"] <= s["key_exclusion_limit_bytes"], s
        assert s["pattern_automaton_bytes"] <= s["pattern_automaton_limit_bytes"], s
        assert s["total_bytes"] <= s["total_limit_bytes"]
        assert c["bytes"] <= c["limit_bytes"], c
        if i % 50 == 49:
            rss.append(vm_rss_mib())
    s, c = xg.cross_grammar_cache_stats(), compiler.cache_stats()
    assert s["evictions"] > 0 and c["evictions"] > 0, (s, c)
    assert s["pattern_automaton_misses"] > 0 and s["pattern_automaton_entries"] > 0, s
    assert c["misses"] == len(schemas)
    # Flat after warm-up: the caches hold ~11 MiB at most, far below this margin.
    assert max(rss[1:]) - rss[1] < 64, rss

    # Warm: the most recent grammars are still kept and come back as they are.
    last = compiler.compile_json_schema(schemas[-1], lazy=False)
    assert compiler.cache_stats()["hits"] == 1
    assert compiler.compile_json_schema(schemas[-1], lazy=False)._handle is last._handle


def test_compiled_cache_knobs(gpt2_tokenizer):
    schema = {"type": "object", "properties": {"knob": {"type": "string"}}}
    off = xg.GrammarCompiler(gpt2_tokenizer, cache_enabled=False)
    off.compile_json_schema(schema, lazy=False)
    assert off.cache_stats()["entries"] == 0 and off.cache_stats()["limit_bytes"] == 0

    unbounded = xg.GrammarCompiler(gpt2_tokenizer, cache_limit_bytes=-1)
    assert unbounded.cache_limit_bytes == -1
    unbounded.compile_json_schema(schema, lazy=False)
    assert unbounded.cache_stats()["entries"] == 1

    default = xg.GrammarCompiler(gpt2_tokenizer)
    assert default.cache_limit_bytes == xg._src.compiler.DEFAULT_CACHE_LIMIT_BYTES
    cg = default.compile_json_schema(schema, lazy=False)
    assert 0 < cg.memory_size_bytes <= default.cache_stats()["bytes"]
    default.cache_limit_bytes = 0  # drops everything kept
    assert default.cache_stats()["entries"] == 0 and default.cache_stats()["bytes"] == 0
    default.compile_json_schema(schema, lazy=False)
    assert default.cache_stats()["entries"] == 0
    with pytest.raises(InvalidArgumentError):
        xg.set_cross_grammar_cache_limit(-1)


# ---------------------------------------------------------------------------- allocation failure

CHILD = textwrap.dedent("""
    import json, resource, sys
    import xg2_jax as xg

    tok = xg.TokenizerInfo.from_vocab_file(sys.argv[1])
    lazy = json.loads(sys.argv[2])  # None: the default mode (a background mask build)
    compiler = xg.GrammarCompiler(tok, max_threads=4, cache_enabled=False)
    # Warm up (the worker pool starts, the runtime sets up) while memory is plentiful.
    compiler.compile_json_schema({"type": "object", "properties": {
        f"w{i}": {"type": "string", "maxLength": i + 1} for i in range(20)}}, lazy=False)

    def vmsize():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    outcomes = []
    for k, margin in enumerate([0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 8, 64] * 2):
        schema = {"type": "object", "properties": {
            f"p{k}_{i}": {"type": "string", "pattern": f"[a-z]{{{i % 7 + 1}}}x[0-9]+{k}"}
            for i in range(400)}}
        grammar = xg.Grammar.from_json_schema(schema)
        xg.clear_cross_grammar_cache()  # returns freed memory: the compile must map more
        resource.setrlimit(resource.RLIMIT_AS, (vmsize() + int(margin * 2**20), hard))
        try:
            compiled = compiler.compile_grammar(grammar, lazy=lazy)
            if compiled._background is not None:
                # The background build runs under the limit too, whatever the machine's load
                # (a late start used to fall after the limit was lifted); its MemoryError
                # surfaces here.
                compiled._background.wait()
            # The first mask (built now if the background build has not reached it).
            matcher = xg.GrammarMatcher(compiled)
            matcher.fill_next_token_bitmask(xg.allocate_token_bitmask(1, tok.vocab_size))
            del matcher, compiled
            outcomes.append("compiled")
        except MemoryError:
            outcomes.append("MemoryError")
        except Exception as e:
            outcomes.append(f"{type(e).__name__}: {e}")
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        # The compiler keeps working after each failure.
        cg = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}, lazy=lazy)
        m = xg.GrammarMatcher(cg)
        assert m.accept_string('{"a": "x"}'), "the compiler should still work"
    print(json.dumps(outcomes))
""")


@pytest.mark.parametrize("lazy", [False, None], ids=["eager", "default"])
def test_allocation_failure_raises_memory_error(vocab_path, tmp_path, lazy):
    """Eager, and the default mode, whose background mask build runs out of memory too
    (it once ended the process: the build's thread could not allocate its thread-locals)."""
    # From a scratch folder: `python -c` puts the working directory first on sys.path, and the
    # repository root's source folder would shadow an installed (non-editable) package.
    proc = subprocess.run([sys.executable, "-c", CHILD, str(vocab_path("gpt2")), json.dumps(lazy)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, f"child died ({proc.returncode}): {proc.stderr[-2000:]}"
    outcomes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(outcomes) <= {"MemoryError", "compiled"}, outcomes
    assert "MemoryError" in outcomes, outcomes
    assert outcomes[-1] == "compiled"


# ------------------------------------------------------------------------ worker-thread errors

def test_worker_thread_exception_reaches_caller(gpt2_tokenizer, cache_budget):
    xg.set_cross_grammar_cache_limit(0)  # every mask is built, none comes from the pool
    schema = {"type": "object", "properties": {f"k{i}": {"type": "string", "maxLength": 3 + i}
                                               for i in range(40)}}
    # The memory budget is checked on the mask-building workers (4 threads): its error is
    # thrown there and must come back here, typed, naming the limit.
    compiler = xg.GrammarCompiler(gpt2_tokenizer, max_threads=4, max_memory_bytes=300_000)
    with pytest.raises(LimitExceededError, match="max_memory_bytes"):
        compiler.compile_json_schema(schema, lazy=False)
    # A budget the automaton alone exceeds stops before any mask is built.
    tiny = xg.GrammarCompiler(gpt2_tokenizer, max_threads=4, max_memory_bytes=1000)
    with pytest.raises(LimitExceededError, match="max_memory_bytes"):
        tiny.compile_json_schema(schema, lazy=False)
    # Usable afterwards, and a generous budget compiles.
    assert xg.GrammarCompiler(gpt2_tokenizer, max_threads=4, max_memory_bytes=1 << 30) \
        .compile_json_schema(schema, lazy=False).num_states > 0
    assert compiler.compile_json_schema({"type": "integer"}, lazy=False).num_states > 0
    with pytest.raises(ValueError):
        xg.GrammarCompiler(gpt2_tokenizer, max_memory_bytes=0)


def test_precompute_async_error_reaches_wait(gpt2_tokenizer):
    compiled = xg.GrammarCompiler(gpt2_tokenizer).compile_json_schema({"type": "string"}, lazy=True)
    handle = compiled.precompute_async(num_threads=2)
    assert handle.wait(timeout=60) and handle.completed()


# --------------------------------------------------------------------------- front-end time limit

# JSONSchemaBench Handwritten---allany16: all of (not all of (not any of patterns)), 9^3
# pattern products in the front end.
ALLANY16 = json.loads(r"""
{"type": "string", "allOf": [{"$ref": "#/definitions/not1"}, {"$ref": "#/definitions/not2"},
 {"$ref": "#/definitions/not3"}, {"pattern": "[aA][12].*[zZ]"}, {"minLength": 10}, {"maxLength": 20}],
 "definitions": {
  "not1": {"not": {"allOf": [{"$ref": "#/definitions/not11"}, {"$ref": "#/definitions/not12"}, {"$ref": "#/definitions/not13"}]}},
  "not2": {"not": {"allOf": [{"$ref": "#/definitions/not21"}, {"$ref": "#/definitions/not22"}, {"$ref": "#/definitions/not23"}]}},
  "not3": {"not": {"allOf": [{"$ref": "#/definitions/not31"}, {"$ref": "#/definitions/not32"}, {"$ref": "#/definitions/not33"}]}},
  "not11": {"not": {"anyOf": [{"pattern": "^....$"}, {"pattern": "ab1"}, {"pattern": "b12"}]}},
  "not12": {"not": {"anyOf": [{"pattern": "^....$"}, {"pattern": "bc1"}, {"pattern": "c12"}]}},
  "not13": {"not": {"anyOf": [{"pattern": "^....$"}, {"pattern": "ca1"}, {"pattern": "a12"}]}},
  "not21": {"not": {"anyOf": [{"pattern": "^[\\w]*$"}, {"pattern": "\\d\\d"}, {"pattern": "[a|b]"}]}},
  "not22": {"not": {"anyOf": [{"pattern": "^[\\w]*$"}, {"pattern": "\\d\\d"}, {"pattern": "[b|c]"}]}},
  "not23": {"not": {"anyOf": [{"pattern": "^[\\w]*$"}, {"pattern": "\\d\\d"}, {"pattern": "[c|a]"}]}},
  "not31": {"not": {"anyOf": [{"pattern": "^[\\w]+"}, {"pattern": "1.*2"}, {"pattern": "ac"}]}},
  "not32": {"not": {"anyOf": [{"pattern": "^[\\w]+"}, {"pattern": "1.*2"}, {"pattern": "a2"}]}},
  "not33": {"not": {"anyOf": [{"pattern": "^[\\w]+"}, {"pattern": "1.*2"}, {"pattern": "a1"}]}}}}
""")


def test_front_end_time_limit_trips_in_pattern_products(gpt2_tokenizer):
    compiler = xg.GrammarCompiler(gpt2_tokenizer, time_limit_s=0.5)
    start = time.monotonic()
    with pytest.raises(LimitExceededError, match="time_limit_s"):
        compiler.compile_json_schema(ALLANY16, strict_mode=False, lazy=False)
    assert time.monotonic() - start < 5
    # The limit belongs to that call: the compiler and the front end work afterwards.
    assert compiler.compile_json_schema({"type": "string", "pattern": "^a[0-9]+$"}, lazy=False).num_states > 0
    assert xg.Grammar.from_json_schema({"type": "string", "pattern": "^b$"}).to_ebnf()


def test_time_limit_scope_is_per_thread_and_nests():
    with _core.TimeLimit(1e-9):
        time.sleep(0.001)
        with pytest.raises(LimitExceededError, match="time_limit_s"):
            xg.Grammar.from_json_schema(ALLANY16, strict_mode=False)
        with _core.TimeLimit(100.0):  # an inner scope cannot extend the outer one
            with pytest.raises(LimitExceededError):
                xg.Grammar.from_json_schema(ALLANY16, strict_mode=False)
    xg.Grammar.from_json_schema({"type": "string", "pattern": "^c$"})  # no limit left behind


# ------------------------------------------------------------------------ degenerate vocabularies

def test_empty_vocabulary_matches_strings_only():
    # xgrammar's TokenizerInfo([]): a matcher that takes strings, with zero-word masks.
    tok = xg.TokenizerInfo([])
    assert tok.vocab_size == 0 and tok.stop_token_ids == []
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok).compile_grammar('root ::= "a"+ [0-9]'))
    mask = xg.allocate_token_bitmask(1, tok.vocab_size)
    assert mask.shape == (1, 0)
    m.fill_next_token_bitmask(mask)
    assert m.accept_string("aa1") and m.is_completed()
    assert not m.accept_string("b")
    with pytest.raises(InvalidArgumentError):
        m.accept_token(0)


def test_vocabulary_without_text_or_stop_tokens_raises():
    tok = xg.TokenizerInfo(["", ""])  # empty strings are special: no text, no stop token
    with pytest.raises(InvalidArgumentError, match="every mask would be empty"):
        xg.GrammarCompiler(tok)
