"""Rule temperatures (xgrammar's `name[temperature=T]` rule attribute): parsing in EBNF and
Lark, the matcher's active temperature, serialization, batch fill and draft trees."""

import math

import numpy as np
import pytest

import xg2_jax as xg

VOCAB = ["a", "b", "x", "z", " "]
A, B, X, Z, SPACE = range(5)


@pytest.fixture(scope="module")
def tok():
    return xg.TokenizerInfo(VOCAB, stop_token_ids=[])


def compile_text(tok, text, form):
    grammar = xg.Grammar.from_ebnf(text) if form == "ebnf" else xg.Grammar.from_lark(text)
    return xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)


# The same grammar in both front ends: "a" value "z", value inside a temperature rule.
ENTER_LEAVE = {
    "ebnf": 'root ::= "a" value "z"\nvalue[temperature=0.6] ::= "x"+',
    "lark": 'start: "a" value "z"\nvalue[temperature=0.6]: "x"+',
}


@pytest.mark.parametrize("form", ["ebnf", "lark"])
def test_temperature_enters_and_leaves_rule(tok, form):
    m = xg.GrammarMatcher(compile_text(tok, ENTER_LEAVE[form], form), default_temperature=0.1)
    steps = [(None, 0.1), ("a", 0.6), ("xx", 0.6), ("z", 0.1)]
    for text, expected in steps:
        if text is not None:
            assert m.accept_string(text)
        assert m.temperature == pytest.approx(expected)
    m.rollback()
    assert m.temperature == pytest.approx(0.6)
    m.reset()
    assert m.temperature == pytest.approx(0.1)


@pytest.mark.parametrize("form", ["ebnf", "lark"])
@pytest.mark.parametrize("default", [None, 0.0, 0.25])
def test_default_applies_outside_temperature_rules(tok, form, default):
    text = 'root ::= "a"' if form == "ebnf" else 'start: "a"'
    m = xg.GrammarMatcher(compile_text(tok, text, form), default_temperature=default)
    assert m.temperature == default
    assert m.accept_string("a")
    assert m.temperature == default


@pytest.mark.parametrize("value", [-0.1, math.inf, -math.inf, math.nan, 1e300])
def test_invalid_default_temperature(tok, value):
    compiled = compile_text(tok, 'root ::= "a"', "ebnf")
    with pytest.raises(xg.InvalidArgumentError, match="finite non-negative"):
        xg.GrammarMatcher(compiled, default_temperature=value)


def test_non_numeric_default_temperature(tok):
    compiled = compile_text(tok, 'root ::= "a"', "ebnf")
    with pytest.raises(xg.InvalidArgumentError, match="must be a number"):
        xg.GrammarMatcher(compiled, default_temperature="hot")


@pytest.mark.parametrize("form", ["ebnf", "lark"])
@pytest.mark.parametrize("literal, expected", [("0", 0.0), ("0.125", 0.125), ("1e-2", 0.01), ("2.", 2.0),
                                               ("2.0", 2.0), (".5", 0.5), ("1E1", 10.0)])
def test_number_forms(tok, form, literal, expected):
    text = f'root[temperature={literal}] ::= "a"' if form == "ebnf" else f'start[temperature={literal}]: "a"'
    m = xg.GrammarMatcher(compile_text(tok, text, form), default_temperature=0.5)
    assert m.temperature == pytest.approx(expected)


@pytest.mark.parametrize("text, message, line, column", [
    ('root[temperature=-0.1] ::= "a"', "finite non-negative", 1, 18),
    ('root[temperature=1e999] ::= "a"', "finite non-negative", 1, 18),
    ('root[temperature=1e39] ::= "a"', "finite non-negative", 1, 18),  # beyond float
    ('root[temperature=abc] ::= "a"', "expected a number", 1, 18),
    ('root[temperature] ::= "a"', "expected '='", 1, 17),
    ('root[temperature=1, temperature=2] ::= "a"', "given twice", 1, 21),
    ('root ::= "a"\nv[temperature=-1] ::= "b"', "finite non-negative", 2, 15),
])
def test_bad_ebnf_temperature(text, message, line, column):
    with pytest.raises(xg.GrammarSyntaxError, match=message) as info:
        xg.Grammar.from_ebnf(text)
    assert (info.value.line, info.value.column) == (line, column)


@pytest.mark.parametrize("text, message, line", [
    ('start[temperature=-0.1]: "a"', "finite non-negative", 1),
    ('start[temperature=1e999]: "a"', "finite non-negative", 1),
    ('start[temperature=abc]: "a"', "expected number after temperature=", 1),
    ('start[temperature=0.1, temperature=0.2]: "a"', "specified more than once", 1),
    ('start: c\nc[temperature=0.5]: "a" child\nchild: "b"', "only supported on terminals and subgrammars", 2),
    ('start: c\nc[temperature=0.5]: "a" %json {"type": "integer"}', "only supported on terminals and subgrammars", 2),
])
def test_bad_lark_temperature(text, message, line):
    with pytest.raises(xg.GrammarSyntaxError, match=message) as info:
        xg.Grammar.from_lark(text)
    assert info.value.line == line


def test_ebnf_combines_with_lazy(tok):
    text = 'root ::= "a" value "z"\nvalue[lazy, temperature=0.6] ::= "x"+'
    m = xg.GrammarMatcher(compile_text(tok, text, "ebnf"), default_temperature=0.1)
    assert m.accept_string("a")
    assert m.temperature == pytest.approx(0.6)
    assert m.accept_string("xz")  # lazy: the first x ends the rule
    assert m.temperature == pytest.approx(0.1)


@pytest.mark.parametrize("form", ["ebnf", "lark"])
def test_inner_rule_wins(tok, form):
    if form == "ebnf":
        text = 'root ::= "a" outer "z"\nouter[temperature=0.6] ::= "b" inner\ninner[temperature=0.3] ::= "x"'
    else:  # Lark nests temperatures through named subgrammars
        text = None
    if text is None:
        item = xg.Grammar.from_lark('start[temperature=0.3]: "x"')
        grammar = xg.Grammar.from_lark('start: "a" value "z"\nvalue[temperature=0.6]: @item',
                                       named_grammars={"item": item})
        compiled = xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar)
        steps = [("a", 0.3), ("x", 0.1)]
    else:
        compiled = compile_text(tok, text, form)
        steps = [("a", 0.6), ("b", 0.3), ("x", 0.1)]
    m = xg.GrammarMatcher(compiled, default_temperature=0.1)
    for s, expected in steps:
        assert m.accept_string(s)
        assert m.temperature == pytest.approx(expected)


@pytest.mark.parametrize("body, value", [('%json {"type": "integer"}', "1"), ('%lark { start: "x" }', "x"),
                                         ("@item", "xx")])
def test_lark_subgrammar_body(tok, body, value):
    named = {"item": xg.Grammar.from_lark('start: "x"+')}
    grammar = xg.Grammar.from_lark(f'start: "a" value "z"\nvalue[temperature=0.6]: {body}', named_grammars=named)
    m = xg.GrammarMatcher(xg.GrammarCompiler(tok, cache_enabled=False).compile_grammar(grammar),
                          default_temperature=0.1)
    assert m.accept_string("a")
    assert m.temperature == pytest.approx(0.6)
    assert m.accept_string(value + "z")
    assert m.temperature == pytest.approx(0.1)


def test_lark_ignore_follows_temperature_rule(tok):
    text = '%import common.WS\n%ignore WS\nstart: hot "z"\nhot[temperature=0.6]: "x"'
    m = xg.GrammarMatcher(compile_text(tok, text, "lark"), default_temperature=0.1)
    assert m.temperature == pytest.approx(0.6)
    assert m.accept_string("x")
    assert m.temperature == pytest.approx(0.1)  # inside the ignore, after the rule
    assert m.accept_string(" z")


def test_lark_start_rule_with_temperature_and_ignore(tok):
    text = '%import common.WS\n%ignore WS\nstart[temperature=0.4]: "a" "x"'
    m = xg.GrammarMatcher(compile_text(tok, text, "lark"), default_temperature=0.1)
    assert m.temperature == pytest.approx(0.4)
    assert m.accept_string("ax")
    assert m.temperature == pytest.approx(0.1)
    assert m.accept_string("  ")  # the trailing %ignore, outside the rule


@pytest.mark.parametrize("batch", [False, True])
def test_ambiguous_paths_take_the_maximum_and_warn_once(tok, capfd, batch):
    text = 'start: left | right\nleft[temperature=0.2]: "a"+\nright[temperature=0.9]: "a" "b"'
    m = xg.GrammarMatcher(compile_text(tok, text, "lark"), default_temperature=0.1)
    out = np.zeros(1, dtype=np.float32)

    def temperature():
        if not batch:
            return m.temperature
        xg.BatchGrammarMatcher.batch_fill_temperature([m], out)
        return float(out[0])

    assert temperature() == pytest.approx(0.9)
    assert m.accept_string("a")
    assert temperature() == pytest.approx(0.9)
    assert m.accept_string("a")
    assert temperature() == pytest.approx(0.2)
    assert capfd.readouterr().err.count("Multiple active grammar paths specify different temperatures") == 1


def test_path_without_temperature_does_not_conflict(tok, capfd):
    # After "xx" one path continues the value rule (0.6), the other is back in root (none).
    m = xg.GrammarMatcher(compile_text(tok, ENTER_LEAVE["ebnf"], "ebnf"))
    assert m.accept_string("axx")
    assert m.temperature == pytest.approx(0.6)
    assert capfd.readouterr().err == ""


def test_temperature_rule_is_kept_apart_from_equal_rules(tok):
    # `plain` and `hot` have the same body: rule deduplication and inlining must keep `hot`.
    text = 'root ::= plain hot\nplain ::= "x"\nhot[temperature=0.7] ::= "x"'
    m = xg.GrammarMatcher(compile_text(tok, text, "ebnf"))
    assert m.temperature is None
    assert m.accept_string("x")
    assert m.temperature == pytest.approx(0.7)


@pytest.mark.parametrize("form", ["ebnf", "lark"])
def test_serialization_round_trips(tok, form):
    text = 'root[temperature=0.75] ::= "a"' if form == "ebnf" else 'start[temperature=0.75]: "a"'
    grammar = xg.Grammar.from_ebnf(text) if form == "ebnf" else xg.Grammar.from_lark(text)
    assert "[temperature=0.75]" in str(grammar)
    restored = xg.Grammar.deserialize_json(grammar.serialize_json())
    assert str(restored) == str(grammar)
    compiler = xg.GrammarCompiler(tok, cache_enabled=True)
    compiled = compiler.compile_grammar(restored)
    for loaded in (xg.CompiledGrammar.deserialize_json(compiled.serialize_json(), tok),
                   xg.CompiledGrammar.deserialize(compiled.serialize(), tok)):
        assert xg.GrammarMatcher(loaded).temperature == pytest.approx(0.75)


def test_cache_tells_temperatures_apart(tok):
    # Equal languages with different temperatures must not share a compiled grammar.
    compiler = xg.GrammarCompiler(tok, cache_enabled=True)
    temps = []
    for text in ('root[temperature=0.2] ::= "a"', 'root[temperature=0.3] ::= "a"', 'root ::= "a"'):
        temps.append(xg.GrammarMatcher(compiler.compile_grammar(text)).temperature)
    assert temps == [pytest.approx(0.2), pytest.approx(0.3), None]


@pytest.mark.parametrize("max_threads", [1, 2])
def test_batch_fill_temperature(tok, max_threads):
    matchers = [
        xg.GrammarMatcher(compile_text(tok, 'root[temperature=0.2] ::= "a"', "ebnf"), default_temperature=0.8),
        xg.GrammarMatcher(compile_text(tok, 'root ::= "a"', "ebnf"), default_temperature=0.4),
        xg.GrammarMatcher(compile_text(tok, 'root ::= "a"', "ebnf")),
    ]
    out = np.zeros(3, dtype=np.float32)
    assert xg.BatchGrammarMatcher(max_threads).batch_fill_temperature(matchers, out) is None
    np.testing.assert_allclose(out, [0.2, 0.4, -1.0])
    out = np.zeros(4, dtype=np.float32)
    xg.BatchGrammarMatcher.batch_fill_temperature(matchers, out, indices=[3, 0, 1])
    np.testing.assert_allclose(out, [0.4, -1.0, 0.0, 0.2])


@pytest.mark.parametrize("buffer, indices, message", [
    (np.zeros(3, np.float32), [0], "indices size"),
    (np.zeros(3, np.float32), [0, 3], "out of bounds"),
    (np.zeros(3, np.float32), [1, 1], "more than one matcher"),
    (np.zeros(3, np.float64), None, "temperatures tensor"),
    (np.zeros((3, 1), np.float32), None, "temperatures tensor"),
    (np.zeros(6, np.float32)[::2], None, "temperatures tensor"),
    (np.zeros(1, np.float32), None, "fewer than"),
])
def test_batch_fill_temperature_bad_buffers(tok, buffer, indices, message):
    matchers = [xg.GrammarMatcher(compile_text(tok, 'root ::= "a"', "ebnf")) for _ in range(2)]
    before = buffer.copy()
    with pytest.raises(xg.InvalidArgumentError, match=message):
        xg.BatchGrammarMatcher.batch_fill_temperature(matchers, buffer, indices=indices)
    np.testing.assert_array_equal(buffer, before)


def test_draft_tree_temperatures(tok):
    # root -> 1 "a" -> {2 "x" -> 3 "z", 4 "a" (rejected)}; node 5 is not linked.
    m = xg.GrammarMatcher(compile_text(tok, ENTER_LEAVE["ebnf"], "ebnf"), default_temperature=0.1)
    #        node: 0  1  2  3  4  5
    draft = np.array([A, A, X, Z, A, X], dtype=np.int64)
    next_token = np.array([1, 2, 3, -1, -1, -1], dtype=np.int64)
    next_sibling = np.array([-1, -1, 4, -1, -1, -1], dtype=np.int64)
    bitmask = xg.allocate_token_bitmask(6, len(VOCAB))
    temperatures = np.full(6, 7.0, dtype=np.float32)
    assert m.traverse_draft_tree(next_token, next_sibling, draft, bitmask, temperatures=temperatures)
    np.testing.assert_allclose(temperatures, [0.1, 0.6, 0.6, 0.1, -1.0, -1.0])
    assert m.temperature == pytest.approx(0.1)  # the matcher is unchanged


@pytest.mark.parametrize("temperatures", [np.empty(2, np.float64), np.empty((2, 1), np.float32),
                                          np.empty(3, np.float32)])
def test_draft_tree_checks_the_temperature_buffer(tok, temperatures):
    m = xg.GrammarMatcher(compile_text(tok, 'root ::= "a"', "ebnf"))
    links = np.array([1, -1], dtype=np.int64), np.full(2, -1, dtype=np.int64)
    with pytest.raises(xg.InvalidArgumentError, match="temperatures tensor"):
        m.traverse_draft_tree(*links, np.array([A, A], dtype=np.int64), xg.allocate_token_bitmask(2, len(VOCAB)),
                              temperatures=temperatures)


def test_fork_keeps_temperature_state(tok):
    m = xg.GrammarMatcher(compile_text(tok, ENTER_LEAVE["ebnf"], "ebnf"), default_temperature=0.1)
    assert m.accept_string("a")
    f = m.fork()
    assert f.temperature == pytest.approx(0.6)
    assert f.accept_string("xz")
    assert (f.temperature, m.temperature) == (pytest.approx(0.1), pytest.approx(0.6))


# (grammar, [(text to accept, temperature after it)...]): shapes that the grammar passes
# rewrite (counted loops, recursion, nullable rules), each checked step by step.
SHAPES = {
    "inside a counted loop": ('root ::= "a" v{0,500} "z"\nv[temperature=0.3] ::= "x"',
                              [("a", 0.3), ("xxx", 0.3), ("z", None)]),
    "around a counted loop": ('root ::= "a" v "z"\nv[temperature=0.3] ::= "x"{0,500}',
                              [("a", 0.3), ("xx", 0.3), ("z", None)]),
    "left recursion": ('root ::= "a" e "z"\ne[temperature=0.5] ::= e "b" "x" | "x"',
                       [("", None), ("a", 0.5), ("xbx", 0.5), ("z", None)]),
    "right recursion": ('root ::= "a" e\ne[temperature=0.5] ::= "x" e | "z"',
                        [("a", 0.5), ("x" * 40, 0.5), ("z", None)]),
    "nullable rule": ('root ::= "a" v "z"\nv[temperature=0.5] ::= "x"*', [("a", 0.5), ("z", None)]),
    "root rule": ('root[temperature=0.4] ::= "a" inner\ninner[temperature=0.9] ::= "x"',
                  [("", 0.4), ("a", 0.9), ("x", None)]),
    "lazy body": ('root ::= "a" v\nv[lazy, temperature=0.5] ::= [a-z]+ "z"', [("a", 0.5), ("xz", None)]),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("reload", [False, True])
def test_grammar_shapes(tok, name, reload):
    text, steps = SHAPES[name]
    compiled = compile_text(tok, text, "ebnf")
    if reload:  # the printed grammar (ByteDfa bodies, loops) parses back with its temperatures
        compiled = xg.CompiledGrammar.deserialize(compiled.serialize(), tok)
    m = xg.GrammarMatcher(compiled)
    for s, expected in steps:
        if s:
            assert m.accept_string(s), s
        if expected is None:
            assert m.temperature is None
        else:
            assert m.temperature == pytest.approx(expected)


@pytest.mark.parametrize("undo", ["rollback", "reset", "fork"])
def test_memo_follows_rollback(tok, undo):
    # The same (rule, origin row) node, `inner` started at row 1, lies under `hot` on one path
    # and under `cold` on the other: what is memoised for a row must go with the row.
    text = ('root ::= "a" hot | "b" cold\nhot[temperature=0.9] ::= inner\ncold[temperature=0.1] ::= inner\n'
            'inner ::= "x" inner | "z"')
    m = xg.GrammarMatcher(compile_text(tok, text, "ebnf"))
    base = m.fork() if undo == "fork" else m
    assert base.accept_string("a") and base.accept_string("x")
    assert base.temperature == pytest.approx(0.9)
    if undo == "rollback":
        m.rollback(2)
    elif undo == "reset":
        m.reset()
    assert m.accept_string("b") and m.accept_string("x")
    assert m.temperature == pytest.approx(0.1)
    assert m.accept_string("xz")
    assert m.temperature is None
