"""Data-driven JSON Schema checks against the official test suite and JSONSchemaBench.

Every schema either compiles or raises the documented error (UnsupportedSchemaError naming a
keyword, or GrammarError for a schema we consider invalid); instances are driven through a
matcher (greedy tokenization of ``json.dumps(instance, ensure_ascii=False)`` then the stop
token). Results are compared with the committed ratchets in tests/data/: a case that got
worse fails the test; a newly passing one is reported. Set XG2_UPDATE_RATCHET=1 to rewrite
the ratchets. strict_mode=False throughout (validation semantics).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

import xg2_jax as xg
from xg2_jax._src.cli import greedy_tokenize
from xg2_jax._src.errors import UnsupportedSchemaError, XG2Error
from xg2_jax._src.grammar import Grammar

DATA = Path("/work/shared/data")
SUITE = DATA / "json-schema-test-suite" / "tests"
JSB = DATA / "jsonschemabench"
LLG = DATA / "llguidance"
RATCHETS = Path(__file__).parent / "data"
VOCAB = DATA / "vocab" / "llama3.json.gz"
SKIP_FILES = {"refRemote.json", "dynamicRef.json", "vocabulary.json"}  # remote documents
JSB_SAMPLE = 150


@pytest.fixture(scope="module")
def compiler():
    if not VOCAB.exists():
        pytest.skip("vocabulary not available")
    tok = xg.TokenizerInfo.from_vocab_file(VOCAB)
    return xg.GrammarCompiler(tok, cache_enabled=False)


def run_case(compiler, schema, tests):
    """Returns {"schema": status, "instances": [status...]}."""
    try:
        g = Grammar.from_json_schema(schema, strict_mode=False)
        cg = compiler.compile_grammar(g, lazy=True)
    except UnsupportedSchemaError as e:
        kw = str(e).split("'")[1] if "'" in str(e) else "?"
        return {"schema": f"unsupported:{kw}", "instances": []}
    except XG2Error as e:
        return {"schema": f"error:{type(e).__name__}", "instances": []}
    tok = compiler.tokenizer_info
    stop = tok.stop_token_ids[0]
    out = []
    for data, valid in tests:
        try:
            ids = greedy_tokenize(tok, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        except XG2Error:
            out.append("untokenizable")
            continue
        m = xg.GrammarMatcher(cg)
        ok = all(m.accept_token(t) for t in ids) and m.accept_token(stop)
        out.append("ok" if ok == valid else ("rejected_valid" if valid else "accepted_invalid"))
    return {"schema": "compiled", "instances": out}


def rank(status: str) -> int:
    return {"ok": 2, "accepted_invalid": 1}.get(status, 0)


def compare(name: str, results: dict, path: Path):
    if os.environ.get("XG2_UPDATE_RATCHET") or not path.exists():
        old = json.loads(path.read_text()) if path.exists() else {}
        old.update(results)
        path.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
        return
    ratchet = json.loads(path.read_text())
    regressions, improvements = [], []
    for cid, res in results.items():
        old = ratchet.get(cid)
        if old is None:
            continue
        if old["schema"] == "compiled" and res["schema"] != "compiled":
            regressions.append(f"{cid}: {old['schema']} -> {res['schema']}")
            continue
        if old["schema"] != "compiled" and res["schema"] == "compiled":
            improvements.append(cid)
        for i, (a, b) in enumerate(zip(old["instances"], res["instances"])):
            if rank(b) < rank(a):
                regressions.append(f"{cid}#{i}: {a} -> {b}")
            elif rank(b) > rank(a):
                improvements.append(f"{cid}#{i}")
    print(f"\n[{name}] improvements vs ratchet: {len(improvements)} {improvements[:10]}")
    assert not regressions, f"{name} regressions:\n" + "\n".join(regressions[:50])


def summarize(name: str, results: dict):
    n = len(results)
    compiled = sum(r["schema"] == "compiled" for r in results.values())
    inst = [s for r in results.values() for s in r["instances"]]
    full = sum(r["schema"] == "compiled" and all(s == "ok" for s in r["instances"]) for r in results.values())
    counts = {}
    for s in inst:
        counts[s] = counts.get(s, 0) + 1
    kws = {}
    for r in results.values():
        if r["schema"] != "compiled":
            kws[r["schema"]] = kws.get(r["schema"], 0) + 1
    top = sorted(kws.items(), key=lambda kv: -kv[1])[:8]
    print(f"\n[{name}] cases {n}: compiled {compiled} ({compiled / max(n, 1):.1%}), all instances ok {full} "
          f"({full / max(n, 1):.1%}); instances {counts}; not compiled: {top}")
    return full


# ---------------------------------------------------------------------- official test suite

def suite_cases():
    for draft in ("draft2020-12", "draft7"):
        for f in sorted((SUITE / draft).glob("*.json")):
            if f.name in SKIP_FILES:
                continue
            for gi, group in enumerate(json.loads(f.read_text())):
                if "remote" in json.dumps(group["schema"]) and "localhost" in json.dumps(group["schema"]):
                    continue
                yield f"{draft}/{f.name}::{gi}", group


def test_json_schema_test_suite(compiler):
    if not SUITE.exists():
        pytest.skip("test suite not available")
    results, llg_cmp = {}, [0, 0]
    llg_path = LLG / "json_schema_test_suite" / "expected_json_schema_test_suite.json"
    llg = json.loads(llg_path.read_text()) if llg_path.exists() else {}
    for cid, group in suite_cases():
        tests = [(t["data"], t["valid"]) for t in group["tests"]]
        res = run_case(compiler, group["schema"], tests)
        results[cid] = res
        draft, rest = cid.split("/", 1)
        fname = rest.split("::")[0]
        if draft == "draft2020-12" and fname in llg and group["description"] in llg[fname]:
            outcomes = llg[fname][group["description"]]
            for t, s in zip(group["tests"], res["instances"] or ["x"] * len(group["tests"])):
                o = outcomes.get(t["description"]) if isinstance(outcomes, dict) else None
                if o is None:
                    continue
                llg_cmp[0] += o == "pass"
                llg_cmp[1] += s == "ok"
    summarize("JSON-Schema-Test-Suite", results)
    print(f"[JSON-Schema-Test-Suite draft2020-12] instances passing: llguidance {llg_cmp[0]}, xg2 {llg_cmp[1]}")
    compare("JSON-Schema-Test-Suite", results, RATCHETS / "ratchet_json_schema_test_suite.json")


# ---------------------------------------------------------------------- JSONSchemaBench

def jsb_entries():
    for f in sorted(JSB.glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)


def run_jsb(compiler, sample: bool):
    entries = list(jsb_entries())
    if sample:
        step = max(1, len(entries) // JSB_SAMPLE)
        entries = entries[::step][:JSB_SAMPLE]
    llg_path = LLG / "json_stats" / "expected_maskbench.json"
    llg = json.loads(llg_path.read_text()) if llg_path.exists() else {}
    results = {}
    llg_pass = 0
    for e in entries:
        d = e["data"]
        tests = [(t["data"], t["valid"]) for t in d.get("tests", [])]
        results[e["file"]] = run_case(compiler, d["schema"], tests)
        llg_pass += llg.get(e["file"]) == {}
    ours = summarize("JSONSchemaBench" + (" sample" if sample else ""), results)
    print(f"[JSONSchemaBench] schemas fully passing: llguidance {llg_pass}/{len(entries)}, xg2 {ours}/{len(entries)}")
    compare("JSONSchemaBench", results, RATCHETS / "ratchet_jsonschemabench.json")


def test_jsonschemabench_sample(compiler):
    if not JSB.exists():
        pytest.skip("jsonschemabench not available")
    run_jsb(compiler, sample=True)


@pytest.mark.slow
def test_jsonschemabench_full(compiler):
    if not JSB.exists():
        pytest.skip("jsonschemabench not available")
    run_jsb(compiler, sample=False)
