"""The `xg2-jax check` command: compiles EBNF, JSON Schema, regex or a structural tag against the shipped
vocabulary and traces the masks along a sample; bad input exits non-zero with the location."""

from __future__ import annotations

import pytest

from xg2_jax._src.cli import main


@pytest.mark.parametrize("args,sample", [
    (["--builtin-json"], '{"a": [1, 2.5e3, "x\\n"]}'),
    (["--ebnf", 'root ::= "yes" | "no" | [0-9]{1,3}'], "123"),
    (["--regex", r"[a-z]+@[a-z]+\.com"], "me@example.com"),
    (["--json-schema", '{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}'],
     '{"id": 7}'),
    (["--structural-tag", '{"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<f"], '
      '"tags": [{"begin": "<f>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}}, '
      '"end": "</f>"}]}}'], "text <f>42</f> more"),
])
def test_check_runs_along_sample(capsys, args, sample):
    assert main(["check", *args, "--sample", sample]) == 0
    out = capsys.readouterr().out
    assert "compiled in" in out and "complete: True" in out and "mask time" in out


def test_check_reads_grammar_file(tmp_path, capsys):
    path = tmp_path / "g.ebnf"
    path.write_text('root ::= "a" b\nb ::= "b"+\n')
    assert main(["check", "--ebnf-file", str(path), "--sample", "abb"]) == 0


@pytest.mark.parametrize("args,message", [
    (["--ebnf", 'root ::= "a\n'], "1:10"),
    (["--json-schema", '{"type": "objec'], "not JSON"),
    (["--json-schema", '{"type": "array", "uniqueItems": true}'], "uniqueItems"),
    (["--regex", "(a)\\1"], "Backreference"),
    (["--ebnf-file", "/nonexistent/grammar.ebnf"], "No such file"),
    (["--structural-tag", '{"type": "structural_tag", "format": {"type": "triggered_tags", "triggers": ["<a"], '
      '"tags": [{"begin": "<b>", "content": {"type": "any_text"}, "end": "</b>"}]}}'], "format.tags[0].begin"),
    (["--tools", "[]"], "--tools and --model-format go together"),
])
def test_check_reports_bad_input(capsys, args, message):
    assert main(["check", *args]) != 0
    assert message in capsys.readouterr().err


def test_check_sample_that_breaks_the_grammar(capsys):
    assert main(["check", "--ebnf", 'root ::= "ab"', "--sample", "ax"]) == 1
    assert "breaks the grammar" in capsys.readouterr().err


def test_check_any_order(capsys):
    schema = '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}'
    assert main(["check", "--json-schema", schema, "--any-order", "--sample", '{"b": 1, "a": 2}']) == 0
    assert main(["check", "--json-schema", schema, "--sample", '{"b": 1, "a": 2}']) == 1
