"""JSON Schema constructs compiled exactly (issue 22): unknown formats as annotations, formats
checked on the decoded string, multipleOf with decimal and several divisors. Every instance's
verdict is checked against the `jsonschema` package (known formats asserted with its
FormatChecker; numbers compared as decimals, the value the literal writes), and along every
instance the mask allows exactly the tokens the matcher accepts."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import json_schema_corpus_lib as lib  # noqa: E402
from helpers import mask_row  # noqa: E402

import xg2_jax as xg  # noqa: E402
from xg2_jax import greedy_tokenize  # noqa: E402
from xg2_jax._src.errors import UnsupportedSchemaError  # noqa: E402
from xg2_jax._src.grammar import Grammar  # noqa: E402

# (schema, instance texts): texts are JSON as written, so escapes can be spelled out. A
# (text, valid) pair states the verdict where jsonschema's FormatChecker does not check the
# format without optional packages (json-pointer, relative-json-pointer, uri): RFC 6901 / 3986.
CASES = {
    "format_unknown_typed": ({"type": "string", "format": "path"}, ['"a/b"', '""', "1", "null"]),
    "format_unknown_untyped": ({"format": "semver"}, ['"1.2.3"', "2", "[1]", "{}"]),
    "format_unknown_with_pattern": ({"type": "string", "format": "html-selector", "pattern": "^[a-z]+$"},
                                    ['"abc"', '"a1"', '""']),
    "format_unknown_in_anyOf": ({"anyOf": [{"type": "string", "format": "color"}, {"type": "integer"}]},
                                ['"red"', "3", "2.5"]),
    "json_pointer": ({"type": "string", "format": "json-pointer"},
                     [('"/\\""', True), ('"/a~0b/c~1"', True), ('""', True), ('"\\/x"', True), ('"/\\u007e1"', True),
                      ('"/a\\\\b"', True), ('"/\\n"', True), ('"/\\u007e"', False), ('"a"', False), ('"/~2"', False),
                      ('"/~"', False)]),
    "relative_json_pointer": ({"type": "string", "format": "relative-json-pointer"},
                              [('"0"', True), ('"1#"', True), ('"2/a~1\\""', True), ('"01"', False), ('"/a"', False),
                               ('"0#/"', False)]),
    "date_escaped": ({"type": "string", "format": "date"},
                     ['"2024-02-29"', '"2024\\u002d02-29"', '"2023-02-29"', '"2024-13-01"']),
    "uri_escaped_slash": ({"type": "string", "format": "uri"},
                          [('"http:\\/\\/x"', True), ('"http://x"', True), ('"//x"', False)]),
    "not_format": ({"type": "string", "not": {"format": "date"}},
                   ['"2024-01-01"', '"2024\\u002d01-01"', '"x"', '"2023-02-29"']),
    "oneOf_formats_overlap": ({"oneOf": [{"format": "hostname"}, {"format": "ipv4"}]},
                              [('"example.com"', True), ('"1.2.3.4"', False), ('"300.1.1.1"', True), ('"-x"', False),
                               ("5", False)]),
    "oneOf_uri_or_relative": ({"oneOf": [{"type": "string", "format": "uri"}, {"type": "string", "pattern": "^\\./.+$"}]},
                              [('"http://a"', True), ('"./a"', True), ('"abc"', False), ("1", False)]),
    # jsonschema reads 1.0 as an integer only as a float, so these state the verdicts.
    "number_not_integer": ({"type": "number", "not": {"type": "integer"}},
                           [("1.5", True), ("-0.25", True), ("1.50", True), ("0.001", True), ("1", False), ("1.0", False),
                            ("-0", False), ("0.000", False), ('"x"', False)]),
    "not_integer_bounded": ({"not": {"type": "integer"}, "minimum": 0, "maximum": 2, "type": ["number", "null"]},
                            [("0.5", True), ("1.99", True), ("null", True), ("2.5", False), ("-0.5", False), ("1", False)]),
    "not_integer_multipleOf": ({"allOf": [{"not": {"type": "integer"}}, {"multipleOf": 0.5}], "type": "number"},
                               [("0.5", True), ("7.5", True), ("2", False), ("0.25", False)]),
    "not_integer_enum": ({"enum": [1, 1.5, 2.0, "a"], "not": {"type": "integer"}},
                         [("1.5", True), ('"a"', True), ("1", False), ("2.0", False)]),
    "multipleOf_hundredth": ({"type": "number", "multipleOf": 0.01},
                             ["1.23", "1.230", "5", "-0.5", "0", "-0", "1.234", "0.001", "12.3456"]),
    "multipleOf_two_and_half_min": ({"type": "number", "multipleOf": 2.5, "minimum": 0},
                                    ["0", "2.5", "7.5", "2.50", "-2.5", "1", "3.0", "1000"]),
    "multipleOf_integer_one_sided": ({"type": "integer", "multipleOf": 3, "minimum": 10},
                                     ["12", "300", "9", "13", "0", "-3"]),
    "multipleOf_number_integral_divisor": ({"type": "number", "multipleOf": 2},
                                           ["4", "4.0", "4.00", "3", "3.5", "-6"]),
    "multipleOf_large_divisor": ({"type": "integer", "multipleOf": 1234}, ["0", "1234", "2468", "1235", "-1234"]),
    "multipleOf_several": ({"allOf": [{"multipleOf": 0.5}, {"multipleOf": 0.3}], "maximum": 10},
                           ["1.5", "3", "0.5", "0.3", "4.5", "10.5", "\"x\""]),
    "multipleOf_bounded_range": ({"type": "number", "multipleOf": 0.25, "exclusiveMinimum": -1, "maximum": 1},
                                 ["-0.75", "-1", "1", "1.25", "0.125", "0.5"]),
    # `not {enum/const}` on numbers and one boolean: every plain spelling of the value is
    # excluded (1 also as 1.0); exponent spellings are not generated beside it.
    "not_const_integer": ({"type": "integer", "not": {"const": 169}, "minimum": 100},
                          ["169", "168", "170", "1690", "16", "-169", "100"]),
    "not_enum_numbers": ({"type": "number", "not": {"enum": [1.5, 3, -0.25]}},
                         ["1.5", "1.50", "3", "3.0", "3.00", "-0.25", "0.25", "1.25", "4", "-3", '"x"']),
    "not_enum_numbers_untyped": ({"not": {"enum": [0, "a", None]}},
                                 ["0", "-0", "0.0", "1", '"a"', '"b"', "null", "true", "[]", "{}"]),
    "not_const_true": ({"not": {"const": True}}, ["true", "false", "null", "1", '"true"', "{}"]),
    "not_const_false_typed": ({"type": ["boolean", "integer"], "not": {"enum": [False, 2]}},
                              ["true", "false", "2", "3", "null"]),
    "not_const_number_then_enum": ({"allOf": [{"not": {"const": 2}}, {"enum": [1, 2.0, 3, True]}]},
                                   ["1", "2", "2.0", "3", "true"]),
    "enum_not_multipleOf": ({"enum": [1, 2, 3, 4, 4.5, "a"], "not": {"multipleOf": 2}},
                            ["1", "2", "3", "4", "4.5", '"a"']),
    # The same property schema reached through two allOf branches is one conjunct: its ten
    # dependencies expand once (2^10 combinations), not once per copy (2^20, over the budget).
    "dependencies_through_two_refs": (
        {"$defs": {"o": {"type": "object", "dependentRequired": {f"k{i}": [f"v{i}"] for i in range(10)}},
                   "w": {"properties": {"a": {"$ref": "#/$defs/o"}}}},
         "allOf": [{"$ref": "#/$defs/w"}, {"$ref": "#/$defs/w"}]},
        ['{"a": {}}', '{"a": {"k1": 1}}', '{"a": {"k1": 1, "v1": 2}}', '{"a": {"v3": 1, "k3": 0, "k9": 1}}',
         '{"a": 1}']),
    # Both bounds within one integer: the fraction digits between the bounds' fractions.
    "number_range_within_one_integer": ({"type": "number", "minimum": 0.1, "maximum": 0.3},
                                        ["0.1", "0.10", "0.2", "0.25", "0.3", "0.30", "0.301", "0.09", "0.099", "0",
                                         "1", "-0.2"]),
    "number_range_exclusive_within_one_integer": ({"type": "number", "exclusiveMinimum": 2.05, "exclusiveMaximum": 2.5},
                                                  ["2.05", "2.050", "2.0500001", "2.051", "2.1", "2.49999", "2.5",
                                                   "2.50", "2", "3"]),
    "number_range_negative_within_one_integer": ({"type": "number", "minimum": -0.35, "maximum": -0.3},
                                                 ["-0.3", "-0.35", "-0.349", "-0.351", "-0.29", "-0.30", "0.3"]),
    "number_range_above_zero_below_one": ({"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
                                          ["0", "0.0", "0.00", "0.001", "0.5", "0.50", "0.5001", "-0.1"]),
    # Bounds beyond 64 bits (digit-string ranges): int64's limits, and a double's 2^65.
    "integer_int64_bounds": ({"type": "integer", "minimum": -9223372036854775808, "maximum": 9223372036854775807},
                             ["9223372036854775807", "9223372036854775808", "-9223372036854775808",
                              "-9223372036854775809", "0", "-1", "99999999999999999999"]),
    "number_beyond_64_bits": ({"type": "number", "exclusiveMinimum": 3.6893488147419103e+19},
                              ["36893488147419103000", "36893488147419103000.5", "36893488147419103001",
                               "100000000000000000000", "1", "-36893488147419103001"]),
    # Numbers compare by exact value, not as doubles: these two consts are different values.
    "const_beyond_double_precision": ({"oneOf": [{"const": 9007199254740992}, {"const": 9007199254740993}]},
                                      ["9007199254740992", "9007199254740993", "9007199254740994", "9007199254740993.0"]),
}

UNSUPPORTED = {
    "not_const_object": ({"not": {"const": {"a": 1}}}, "not"),
    "format_regex": ({"type": "string", "format": "regex"}, "format"),
    "multipleOf_too_precise": ({"type": "number", "multipleOf": 0.0000000000001}, "multipleOf"),
}


@pytest.fixture(scope="module")
def runner():
    if not lib.VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return lib.Runner()


def oracle(schema):
    """A validator that asserts the known formats and compares numbers as decimals."""
    decimal_schema = json.loads(json.dumps(schema), parse_float=Decimal)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(decimal_schema, format_checker=cls.FORMAT_CHECKER)


def drive(runner, cg, text: str) -> bool:
    """Feeds the tokens of `text` and the stop token; at every step the mask must allow the
    token exactly when the matcher accepts it. Returns whether all were accepted."""
    m = xg.GrammarMatcher(cg)
    vocab_size = runner.tok_info.vocab_size
    for t in greedy_tokenize(runner.tok_info, text.encode()) + [runner.stop]:
        row = mask_row(m, vocab_size)
        allowed = bool((int(row[t // 32]) >> (t % 32)) & 1)
        accepted = m.accept_token(t)
        assert allowed == accepted, (text, t, allowed, accepted)
        if not accepted:
            return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact(runner, name):
    schema, texts = CASES[name]
    cg = runner.compiler.compile_grammar(Grammar.from_json_schema(schema, strict_mode=False), lazy=True)
    validator = oracle(schema)
    for text in texts:
        text, expect = text if isinstance(text, tuple) else (text, validator.is_valid(json.loads(text, parse_float=Decimal)))
        assert drive(runner, cg, text) == expect, (text, expect)


def test_number_ranges_within_one_integer(runner):
    """Random bounds sharing their integer part (either may be exclusive) against decimal
    comparison, probing each bound, its neighbours one digit further, and values between."""
    import random

    rng = random.Random(7)
    for _ in range(30):
        ip = rng.choice([0, 3, 12])
        a, b = sorted(rng.sample(range(1, 1000), 2))
        lo, hi = Decimal(ip) + Decimal(a) / 1000, Decimal(ip) + Decimal(b) / 1000
        if rng.random() < 0.5:
            lo, hi = -hi, -lo
        lo_kw = rng.choice(["minimum", "exclusiveMinimum"])
        hi_kw = rng.choice(["maximum", "exclusiveMaximum"])
        schema = {"type": "number", lo_kw: float(lo), hi_kw: float(hi)}
        cg = runner.compiler.compile_grammar(Grammar.from_json_schema(schema), lazy=True)
        probes = {lo, hi, (lo + hi) / 2, lo - Decimal("0.0001"), hi + Decimal("0.0001"), lo + Decimal("0.0001"),
                  hi - Decimal("0.0001"), Decimal(ip), -Decimal(ip)}
        for x in probes:
            text = format(x.normalize(), "f")
            expect = (x >= lo if lo_kw == "minimum" else x > lo) and (x <= hi if hi_kw == "maximum" else x < hi)
            for spelled in {text, text + "0" if "." in text else text + ".0"}:
                assert drive(runner, cg, spelled) == expect, (schema, spelled, expect)


def test_integer_ranges_of_any_size(runner):
    """Random integer bounds of 1 to 25 digits (either side, either exclusive, integral or
    not) against exact comparison, probing each bound and its neighbours."""
    import random

    rng = random.Random(11)
    for _ in range(40):
        def bound():
            v = Decimal(rng.randrange(10 ** rng.randint(1, 25))) * rng.choice([1, -1])
            return v + (Decimal(rng.choice([0, 0, 5])) / 10)
        lo, hi = sorted([bound(), bound()])
        lo_kw = rng.choice(["minimum", "exclusiveMinimum", None])
        hi_kw = rng.choice(["maximum", "exclusiveMaximum", None])
        # The schema text carries the bounds' digits as written (a float would round them).
        members = [f'"type": "{rng.choice(["integer", "number"])}"']
        members += [f'"{k}": {v}' for k, v in ((lo_kw, lo), (hi_kw, hi)) if k]
        text = "{" + ", ".join(members) + "}"
        cg = runner.compiler.compile_grammar(Grammar.from_json_schema(text), lazy=True)
        probes = {int(x) + d for x in (lo, hi) for d in (-1, 0, 1)} | {0}
        for x in sorted(probes):
            ok = (lo_kw is None or (x >= lo if lo_kw == "minimum" else x > lo)) and \
                 (hi_kw is None or (x <= hi if hi_kw == "maximum" else x < hi))
            assert drive(runner, cg, str(x)) == ok, (text, x, ok)


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_still_refused(name):
    schema, keyword = UNSUPPORTED[name]
    with pytest.raises(UnsupportedSchemaError, match=f"unsupported keyword '{keyword}' at"):
        Grammar.from_json_schema(schema)


def test_not_unknown_format_is_false(runner):
    """An unknown format asserts nothing, so its negation admits no value."""
    schema = {"not": {"format": "path"}, "type": ["string", "null"]}
    assert not any(oracle(schema).is_valid(x) for x in ["a", None, ""])
    with pytest.raises(xg.GrammarError, match="no JSON value satisfies"):
        Grammar.from_json_schema(schema)
    status, _ = runner.compile(schema)
    assert status.startswith("error:"), status
