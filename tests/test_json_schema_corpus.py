"""Data-driven JSON Schema checks against the official test suite and JSONSchemaBench.

Every schema either compiles or raises the documented error (UnsupportedSchemaError naming a
keyword, or another XG2Error for a schema we consider invalid or too large); schemas with a
counted repetition above json_schema_corpus_lib.LARGE_BOUND are not compiled but recorded as
``skipped:large-bound``. Instances are driven through a matcher (greedy tokenization of
``json.dumps(instance, ensure_ascii=False)`` then the stop token). strict_mode=False
throughout (validation semantics). Outcomes are described in json_schema_corpus_lib.

Results are compared with the ratchets in tests/data/: a schema that compiled and now does
not, or an instance that passed and now fails, fails the test; newly passing cases are
printed (run with -s). XG2_UPDATE_RATCHET=1 rewrites the ratchet files.

* test_json_schema_test_suite: draft2020-12 + draft7 -> ratchet_json_schema_test_suite.json
* test_jsonschemabench_sample: 6 schemas per JSB category, round-robin
  -> ratchet_jsonschemabench.json
* test_jsonschemabench_full (slow): every JSB schema -> ratchet_jsonschemabench_full.json.gz
  (its own file, so the default run never depends on it; created on its first run).

The checks above compile with ``any_order=True`` (validation semantics: members in any
order). The ``_ordered`` twins compile in the default declaration order and drive every
instance with its members in the schema's order (json_schema_corpus_lib.schema_ordered):
ratchet_json_schema_test_suite_ordered.json, ratchet_jsonschemabench_ordered.json and
ratchet_jsonschemabench_full_ordered.json.gz.

Beyond the ratchet, every compiled schema must judge every instance right (no valid
instance rejected, no invalid one accepted), except the test-suite instances listed in
STRICTER_ON_PURPOSE.
"""

from __future__ import annotations

import os
from pathlib import Path

import json_schema_corpus_lib as lib
import pytest

RATCHETS = Path(__file__).parent / "data"
SUITE_RATCHET = RATCHETS / "ratchet_json_schema_test_suite.json"
JSB_RATCHET = RATCHETS / "ratchet_jsonschemabench.json"
JSB_FULL_RATCHET = RATCHETS / "ratchet_jsonschemabench_full.json.gz"
JSB_PER_CATEGORY = 6

# Test-suite instances that xg2_jax rejects on purpose, by description: known formats are
# asserted (a generation grammar that let any string through "format" would widen it), and
# an integer is written without a fraction (1.0 is the number type's spelling).
STRICTER_ON_PURPOSE = {
    "a float with zero fractional part is an integer",
}
STRICTER_ON_PURPOSE_PREFIX = ("invalid ",)  # "invalid <format> string is only an annotation by default"
STRICTER_ON_PURPOSE_SUFFIX = (" string is only an annotation by default",)


def ordered_path(path: Path) -> Path:
    stem, _, rest = path.name.partition(".")
    return path.with_name(f"{stem}_ordered.{rest}")


@pytest.fixture(scope="module", params=[True, False], ids=["any_order", "ordered"])
def runner(request):
    if not lib.VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return lib.Runner(any_order=request.param)


def ratchet_for(runner, path: Path) -> Path:
    return path if runner.any_order else ordered_path(path)


def wrong_verdicts(results: dict, descriptions: dict | None = None) -> list[str]:
    """Instances judged wrong on compiled schemas, less the test suite's STRICTER_ON_PURPOSE."""
    wrong = []
    for cid, r in results.items():
        for i, outcome in enumerate(r["instances"]):
            if outcome not in ("valid:rejected", "invalid:accepted"):
                continue
            d = (descriptions or {}).get(cid, [""] * (i + 1))[i]
            if outcome == "valid:rejected" and (
                    d in STRICTER_ON_PURPOSE
                    or (d.startswith(STRICTER_ON_PURPOSE_PREFIX) and d.endswith(STRICTER_ON_PURPOSE_SUFFIX))):
                continue
            wrong.append(f"{cid}#{i}: {outcome} {d}".rstrip())
    return wrong


def check_ratchet(name: str, results: dict, path: Path, descriptions: dict | None = None) -> None:
    wrong = wrong_verdicts(results, descriptions)
    assert not wrong, f"{name}: {len(wrong)} instances judged wrong:\n" + "\n".join(wrong[:50])
    s = lib.summarize(results)
    print(f"\n[{name}] cases {s['cases']}: compiled {s['compiled']}, all instances pass {s['fully_passing']}; "
          f"instances {s['instances']}; not compiled {s['not_compiled']}")
    if os.environ.get("XG2_UPDATE_RATCHET") == "1" or not path.exists():
        lib.write_ratchet(path, results)
        print(f"[{name}] wrote {path}")
        return
    regressions, improvements = lib.diff_ratchet(lib.load_ratchet(path), results)
    if improvements:
        print(f"[{name}] {len(improvements)} newly passing (XG2_UPDATE_RATCHET=1 to record):")
        for line in improvements[:40]:
            print("   ", line)
    assert not regressions, f"{name}: {len(regressions)} regressions vs {path.name}:\n" + "\n".join(regressions[:50])


def test_json_schema_test_suite(runner):
    if not lib.SUITE.exists():
        pytest.skip("JSON-Schema-Test-Suite not available")
    cases = dict(lib.suite_cases())
    results = {cid: runner.run_case(g["schema"], [(t["data"], t["valid"]) for t in g["tests"]])
               for cid, g in cases.items()}
    descriptions = {cid: [t["description"] for t in g["tests"]] for cid, g in cases.items()}
    check_ratchet("JSON-Schema-Test-Suite", results, ratchet_for(runner, SUITE_RATCHET), descriptions)


def run_jsb(runner, entries, path: Path, name: str) -> None:
    results = {e["file"]: runner.run_case(e["data"]["schema"], lib.jsb_tests(e)) for e in entries}
    check_ratchet(name, results, ratchet_for(runner, path))


def test_jsonschemabench_sample(runner):
    if not lib.JSB.exists():
        pytest.skip("jsonschemabench not available")
    entries = lib.jsb_sample(lib.jsb_categories(), JSB_PER_CATEGORY)
    run_jsb(runner, entries, JSB_RATCHET, "JSONSchemaBench sample")


@pytest.mark.slow
def test_jsonschemabench_full(runner):
    if not lib.JSB.exists():
        pytest.skip("jsonschemabench not available")
    entries = [e for es in lib.jsb_categories().values() for e in es]
    run_jsb(runner, entries, JSB_FULL_RATCHET, "JSONSchemaBench full")


def test_schema_ordered_follows_the_declaration_order():
    schema = {"$defs": {"p": {"properties": {"y": {}, "x": {"properties": {"b": {}, "a": {}}}}}},
              "properties": {"z": {}}, "allOf": [{"$ref": "#/$defs/p"}],
              "anyOf": [{"required": ["n"], "properties": {"w": {}}}, {"properties": {"v": {}}}],
              "required": ["q"]}
    inst = {"extra": 1, "q": 2, "v": 3, "x": {"a": 1, "b": 2, "c": 3}, "y": 4, "z": 5}
    out = lib.schema_ordered(schema, inst)
    assert list(out) == ["z", "y", "x", "v", "q", "extra"]
    assert list(out["x"]) == ["b", "a", "c"]
    assert out == inst
    items = {"prefixItems": [{"properties": {"b": {}, "a": {}}}], "items": {"properties": {"d": {}, "c": {}}}}
    assert [list(o) for o in lib.schema_ordered(items, [{"a": 1, "b": 2}, {"c": 1, "d": 2}])] == [["b", "a"], ["d", "c"]]


def test_large_bound_prescreen():
    assert lib.large_bound({"type": "string", "maxLength": 256}, 256) is None
    assert lib.large_bound({"properties": {"a": {"maxLength": 257}}}, 256) == "maxLength=257"
    assert lib.large_bound({"items": [{"pattern": "^a{2,1000}$"}]}, 256) == "pattern{2,1000}"
    assert lib.large_bound({"patternProperties": {"^x{300}$": {}}}, 256) == "patternProperties{300}"
    assert lib.large_bound({"enum": [{"maxItems": 5000}]}, 256) is None


def test_rows_wider_than_the_dedup_table(runner):
    """A oneOf of 40 object alternatives (any_order) makes a parser row of ~200 items, mostly
    predictions: growing the row's dedup table once sized it below the row and probed forever.
    Every instance of that JSONSchemaBench schema now gets its verdict."""
    path = lib.JSB / "Github_ultra.jsonl.gz"
    if not path.exists():
        pytest.skip("jsonschemabench not available")
    import gzip
    import json

    with gzip.open(path, "rt", encoding="utf-8") as f:
        entry = next(json.loads(line) for line in f if '"Github_ultra---o358.json"' in line[:80])
    result = runner.run_case(entry["data"]["schema"], lib.jsb_tests(entry))
    assert result["schema"] == "compiled"
    assert all(lib.passed(o) for o in result["instances"]), result
