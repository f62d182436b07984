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


@pytest.fixture(scope="module")
def runner():
    if not lib.VOCAB.exists():
        pytest.skip("llama3 vocabulary not available")
    return lib.Runner()


def check_ratchet(name: str, results: dict, path: Path) -> None:
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
    results = {cid: runner.run_case(g["schema"], [(t["data"], t["valid"]) for t in g["tests"]])
               for cid, g in lib.suite_cases()}
    check_ratchet("JSON-Schema-Test-Suite", results, SUITE_RATCHET)


def run_jsb(runner, entries, path: Path, name: str) -> None:
    results = {e["file"]: runner.run_case(e["data"]["schema"], lib.jsb_tests(e)) for e in entries}
    check_ratchet(name, results, path)


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
