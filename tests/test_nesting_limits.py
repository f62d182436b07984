"""Nesting at the front ends' limits: at the most that can be set (xgrammar's default
recursion depth, 10000), every front end either builds the grammar or raises a typed limit
error; none overflows a thread's stack, whether the thread has glibc's 8 MiB or 512 KiB
(macOS's default for secondary threads; the front ends then run on a helper thread with a
deep stack). Each case runs in a subprocess, on a worker thread, so that a crash fails the
test instead of ending the test run."""

import subprocess
import sys
import textwrap

import pytest

import xg2_jax as xg

LIMIT = 10000
# Per case: the source at a nesting depth, and the deepest nesting that must build.
CASES = {
    "ebnf": ("xg.Grammar.from_ebnf('root ::= ' + '(' * N + '\"a\"' + ')' * N)", LIMIT),
    "regex": ("xg.Grammar.from_regex('(b|' * N + 'a' + ')' * N)", LIMIT),
    "lark": ("xg.Grammar.from_lark('start: ' + '(' * N + '\"a\"' + ')' * N)", LIMIT // 10 - 1),
    "schema-items": ("xg.Grammar.from_json_schema('{\"type\":\"array\",\"items\":' * N + "
                     "'{\"type\":\"integer\"}' + '}' * N)", LIMIT // 40 - 2),
    "schema-properties": ("xg.Grammar.from_json_schema('{\"type\":\"object\",\"properties\":"
                          "{\"a\":' * N + '{}' + '}}' * N)", LIMIT // 40 - 3),
    "json-const": ("xg.Grammar.from_json_schema('{\"const\": ' + '[' * N + ']' * N + '}')",
                   LIMIT - 2),
    "structural-tag": ("xg.Grammar.from_structural_tag('{\"type\":\"structural_tag\",\"format\":' + "
                       "'{\"type\":\"sequence\",\"elements\":[' * N + "
                       "'{\"type\":\"const_string\",\"value\":\"a\"}' + ']}' * N + '}')",
                       LIMIT // 40 - 1),
}

SCRIPT = textwrap.dedent("""
    import sys, threading
    import xg2_jax as xg
    if {stack}:
        threading.stack_size({stack})
    assert xg.get_max_recursion_depth() == {limit}
    compiler = xg.GrammarCompiler(xg.TokenizerInfo(["a", "b", "</s>"], stop_token_ids=[2]),
                                  cache_enabled=False)
    outcome = []
    def build(N):
        try:
            grammar = {source}
            compiler.compile_grammar(grammar)
            xg.Grammar.deserialize_json(grammar.serialize_json())
            outcome.append("built")
        except xg.LimitExceededError:
            outcome.append("limit")
    for depth in ({deepest}, {deepest} + 5, 4 * {limit}):
        worker = threading.Thread(target=build, args=(depth,))
        worker.start()
        worker.join()
    print(" ".join(outcome))
""")


def test_default_is_the_most_that_can_be_set():
    assert xg.get_max_recursion_depth() == LIMIT
    with pytest.raises(xg.InvalidArgumentError, match=r"\[1, 10000\]"):
        xg.set_max_recursion_depth(LIMIT + 1)
    assert xg.get_max_recursion_depth() == LIMIT


@pytest.mark.parametrize("stack", ["default", "thread-512KiB", "rlimit-512KiB"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_deepest_nesting_builds_and_deeper_is_a_typed_error(case, stack, tmp_path):
    source, deepest = CASES[case]
    thread_stack = 512 << 10 if stack == "thread-512KiB" else 0
    script = SCRIPT.format(limit=LIMIT, source=source, deepest=deepest, stack=thread_stack)
    command = [sys.executable, "-c", script]
    if stack == "rlimit-512KiB":
        # 512 KiB for the main thread and, through glibc's default, for every thread it starts
        # (the compile's workers too), as musl gives its threads. A shell sets it: a preexec_fn
        # would fork a process that holds JAX's threads.
        command = ["/bin/sh", "-c", 'ulimit -s 512 && exec "$0" "$@"', *command]
    # Run outside the repository root, whose xg2_jax/ folder would shadow the installed package.
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["built", "limit", "limit"]


# Github_easy o78062 (JSONSchemaBench): allOf and oneOf through $ref recursion, whose levels
# take the most stack; at a tenth of the limit it overflowed the main thread's 8 MiB.
RECURSIVE_ALL_OF = {
    "definitions": {
        "named": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "node": {"allOf": [{"$ref": "#/definitions/named"}, {"oneOf": [
            {"properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/node"}}},
             "required": ["children"]},
            {"properties": {"leaves": {"type": "array", "items": {"type": "string"}}},
             "required": ["leaves"]}]}]},
    },
    "allOf": [{"$ref": "#/definitions/node"}, {"properties": {"note": {"type": "string"}}}],
}


def test_recursive_all_of_is_a_grammar_or_a_typed_error_on_a_worker_thread(tmp_path):
    script = textwrap.dedent(f"""
        import json, threading
        import xg2_jax as xg
        outcome = []
        def build():
            try:
                xg.Grammar.from_json_schema(json.dumps({RECURSIVE_ALL_OF!r}), strict_mode=False)
                outcome.append("built")
            except (xg.LimitExceededError, xg.UnsupportedSchemaError):
                outcome.append("refused")
        worker = threading.Thread(target=build)
        worker.start()
        worker.join()
        print(outcome[0])
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() in (["built"], ["refused"])


def test_a_low_limit_bounds_every_front_end_at_itself():
    # The Lark and JSON Schema caps only ever lower the limit: at 50, ordinary schemas and
    # grammars still build, and the 50 levels are what each front end takes.
    nested_schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "array", "items": {"type": "integer"}}}}}}
    with xg.max_recursion_depth(50):
        xg.Grammar.from_json_schema(nested_schema)
        xg.Grammar.from_json_schema('{"unused": ' + "[" * 40 + "0" + "]" * 40 + "}")
        xg.Grammar.from_json_schema("{\"type\":\"array\",\"items\":" * 45 + "{}" + "}" * 45)
        xg.Grammar.from_lark("start: " + "(" * 45 + '"a"' + ")" * 45)
        with pytest.raises(xg.LimitExceededError, match="max_nesting_depth=50"):
            xg.Grammar.from_json_schema('{"unused": ' + "[" * 60 + "0" + "]" * 60 + "}")
        with pytest.raises(xg.LimitExceededError, match="max_nesting_depth"):
            xg.Grammar.from_json_schema("{\"type\":\"array\",\"items\":" * 60 + "{}" + "}" * 60)
        with pytest.raises(xg.LimitExceededError, match="max_nesting_depth=50"):
            xg.Grammar.from_lark("start: " + "(" * 60 + '"a"' + ")" * 60)


def test_small_limit_keeps_lark_json_directives():
    # Lark's %json directive takes a schema under a small limit; its documents stay bounded.
    with xg.max_recursion_depth(50):
        xg.Grammar.from_lark("start: %json true\n# " + "[" * 100)
        xg.Grammar.from_json_schema('{"type":"array","items":' * 10 + "true" + "}" * 10)
        with pytest.raises(xg.LimitExceededError, match="Maximum recursion depth exceeded"):
            xg.Grammar.from_lark("start: %json " + "[" * 60 + "]" * 60)


@pytest.mark.parametrize("reader", [xg.Grammar.deserialize_json, xg.TokenizerInfo.deserialize_json])
def test_json_documents_are_read_within_the_limit(reader):
    # The serialized JSON forms are read under the same limit as every other front end; a
    # bracket inside a string does not nest.
    with xg.max_recursion_depth(50):
        with pytest.raises(xg.InvalidJSONError, match="Maximum recursion depth exceeded.*max_nesting_depth=50"):
            reader("[" * 60 + "]" * 60)
        with pytest.raises(xg.DeserializeFormatError, match="must be an object"):
            reader("[" * 50 + "]" * 50)
        with pytest.raises(xg.DeserializeVersionError):
            reader('{"a": "' + "[" * 100 + '"}')
    grammar = xg.Grammar.from_ebnf('root ::= [a-z] "[" ' + "(" * 40 + '"x"' + ")" * 40)
    with xg.max_recursion_depth(50):
        assert str(xg.Grammar.deserialize_json(grammar.serialize_json())) == str(grammar)


@pytest.mark.parametrize("as_object", [False, True])
def test_structural_tag_too_deep_for_json_dumps_is_a_typed_error(as_object):
    """A tag object or dict deeper than Python's own recursion allows cannot be written as JSON:
    a LimitExceededError, as for a schema dict (not a RecursionError)."""
    fmt = xg.ConstStringFormat(value="a") if as_object else {"type": "const_string", "value": "a"}
    for _ in range(5000):
        fmt = xg.SequenceFormat(elements=[fmt]) if as_object else {"type": "sequence", "elements": [fmt]}
    tag = xg.StructuralTag(format=fmt) if as_object else {"type": "structural_tag", "format": fmt}
    with pytest.raises(xg.LimitExceededError, match="nested too deeply"):
        xg.Grammar.from_structural_tag(tag)


def nested_sequences(depth: int) -> str:
    """A structural tag of `depth` sequences around one string, as JSON text."""
    fmt = '{"type": "sequence", "elements": [' * depth
    fmt += '{"type": "const_string", "value": "a"}' + "]}" * depth
    return '{"type": "structural_tag", "format": ' + fmt + "}"


def test_structural_tag_formats_nest_at_most_250_levels():
    # Like JSON Schema's subschemas (xgrammar bounds them too: its passes recurse per level).
    xg.Grammar.from_structural_tag(nested_sequences(249))
    with pytest.raises(xg.LimitExceededError,
                       match=r"^format(\.elements\[0\]){250}: formats nested deeper than 250 levels"):
        xg.Grammar.from_structural_tag(nested_sequences(250))
    # Under a lower limit the tag's JSON text (two levels a sequence) is what it bounds first.
    with xg.max_recursion_depth(100):
        xg.Grammar.from_structural_tag(nested_sequences(48))
        with pytest.raises(xg.LimitExceededError, match="max_nesting_depth=100"):
            xg.Grammar.from_structural_tag(nested_sequences(50))


def test_helper_thread_keeps_the_time_limit_and_errors(tmp_path):
    # On a small stack the front end runs on a helper thread: the caller's time limit still
    # applies there, its errors reach the caller typed, and results come back whole.
    script = textwrap.dedent("""
        import threading, time
        import xg2_jax as xg
        from xg2_jax import _core
        threading.stack_size(256 << 10)
        words = {"type": "string", "pattern": "^(?:\\\\S+\\\\s+){0,49}\\\\S+$", "maxLength": 500}
        outcome = []
        def run():
            with _core.TimeLimit(1e-9):
                time.sleep(0.001)
                try:
                    xg.Grammar.from_json_schema(words)
                    outcome.append("built")
                except xg.LimitExceededError as e:
                    outcome.append("time" if "time_limit_s" in str(e) else "other")
            try:
                xg.Grammar.from_ebnf("root ::= (")
            except xg.GrammarSyntaxError as e:
                outcome.append("syntax" if "1:11" in str(e) or "column 11" in str(e) else str(e))
            outcome.append(str(xg.Grammar.from_regex("a{2}b")).count("root"))
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
        print(*outcome)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["time", "syntax", "1"], proc.stdout
