"""Shared code of the JSON Schema corpus checks (tests/test_json_schema_corpus.py) and of the
scripts benchmarks/jsb_coverage.py and benchmarks/jsb_timing.py.

Outcome vocabulary (what the ratchet files in tests/data/ hold):

* per schema: ``compiled``, ``unsupported:<keyword>`` (UnsupportedSchemaError),
  ``error:<ExceptionClass>`` (any other XG2Error), ``skipped:large-bound`` (pre-screened out:
  a counted repetition above LARGE_BOUND, which the engine still unrolls);
* per instance: ``<expectation>:<result>`` with expectation ``valid``/``invalid`` and result
  ``accepted``/``rejected`` (``untokenizable`` when the llama3 vocabulary cannot spell it).
  ``valid:accepted`` and ``invalid:rejected`` are passes.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Optional

import xg2_jax as xg
from xg2_jax import greedy_tokenize
from xg2_jax._src.errors import UnsupportedSchemaError, XG2Error
from xg2_jax._src.grammar import Grammar

DATA = Path("/work/shared/data")
SUITE = DATA / "json-schema-test-suite" / "tests"
JSB = DATA / "jsonschemabench"
LLG = DATA / "llguidance"
VOCAB = DATA / "vocab" / "llama3.json.gz"

# Schemas with a counted repetition above this are recorded as skipped:large-bound instead of
# being compiled. When repetitions were unrolled, maxLength 4096-65535 took 1-14 s per schema or
# hit LimitExceededError; since counted loops (commit 1322a38) all 305 JSB schemas with a bound
# above 1024 (up to maxLength=65535) compile and match in 50 s together, at most 1.6 s each
# (benchmarks/jsb_timing.py --no-screen). XG2_CORPUS_LARGE_BOUND overrides; the ratchet files
# record outcomes under the default.
LARGE_BOUND = int(os.environ.get("XG2_CORPUS_LARGE_BOUND", "65536"))
COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
# Regex quantifiers {n}, {n,}, {n,m} inside "pattern" / "patternProperties" keys.
_QUANT = re.compile(r"\{(\d+)(?:,(\d*))?\}")


# ------------------------------------------------------------------------------ pre-screen

def large_bound(schema: Any, limit: int = LARGE_BOUND) -> Optional[str]:
    """Returns ``"<keyword>=<value>"`` for the first counted repetition above ``limit`` in the
    schema (length/item/property counts and regex quantifiers), or None."""
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, list):
            stack.extend(s)
            continue
        if not isinstance(s, dict):
            continue
        for k, v in s.items():
            if k in ("enum", "const", "default", "examples", "example"):
                continue
            if k in COUNT_KEYWORDS and isinstance(v, (int, float)) and not isinstance(v, bool) and v > limit:
                return f"{k}={v:g}"
            if k == "pattern" and isinstance(v, str):
                q = _regex_bound(v, limit)
                if q:
                    return f"pattern{q}"
            if k == "patternProperties" and isinstance(v, dict):
                for p in v:
                    q = _regex_bound(p, limit)
                    if q:
                        return f"patternProperties{q}"
            if isinstance(v, (dict, list)):
                stack.append(v)
    return None


def _regex_bound(pattern: str, limit: int) -> Optional[str]:
    for m in _QUANT.finditer(pattern):
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        if max(lo, hi) > limit:
            return m.group(0)
    return None


# ------------------------------------------------------------------------------ matching

class Tokenizer:
    """Greedy longest-match tokenization (xg2_jax._src.cli.greedy_tokenize); None for text
    the vocabulary cannot spell."""

    def __init__(self, info: "xg.TokenizerInfo"):
        self.info = info

    def __call__(self, data: bytes) -> Optional[list[int]]:
        try:
            return greedy_tokenize(self.info, data)
        except xg.XG2Error:
            return None


class Runner:
    """Compiles schemas and drives instances through a matcher token by token."""

    def __init__(self, vocab: Path = VOCAB):
        self.tok_info = xg.TokenizerInfo.from_vocab_file(vocab)
        self.compiler = xg.GrammarCompiler(self.tok_info, cache_enabled=False)
        self.tokenize = Tokenizer(self.tok_info)
        self.stop = self.tok_info.stop_token_ids[0]

    def compile(self, schema: Any):
        """Returns (status, compiled grammar or None)."""
        bound = large_bound(schema)
        if bound is not None:
            return "skipped:large-bound", None
        try:
            g = Grammar.from_json_schema(schema, strict_mode=False, any_order=True)
            return "compiled", self.compiler.compile_grammar(g, lazy=True)
        except UnsupportedSchemaError as e:
            kw = str(e).split("'")[1] if "'" in str(e) else "?"
            return f"unsupported:{kw}", None
        except XG2Error as e:
            return f"error:{type(e).__name__}", None

    def match(self, cg, data: Any) -> str:
        ids = self.tokenize(json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if ids is None:
            return "untokenizable"
        m = xg.GrammarMatcher(cg)
        for t in ids:
            if not m.accept_token(t):
                return "rejected"
        return "accepted" if m.accept_token(self.stop) else "rejected"

    def run_case(self, schema: Any, tests: Iterable[tuple[Any, bool]]) -> dict:
        status, cg = self.compile(schema)
        if cg is None:
            return {"schema": status, "instances": []}
        out = [("valid:" if valid else "invalid:") + self.match(cg, data) for data, valid in tests]
        return {"schema": status, "instances": out}


def check_against_jsonschema(runner: Runner, schema: Any, samples: Iterable[Any]) -> int:
    """Compiles ``schema`` and asserts that every sample is accepted exactly when the
    ``jsonschema`` package (the schema's own draft, else 2020-12) finds it valid; returns how
    many were valid."""
    import jsonschema

    status, cg = runner.compile(schema)
    assert status == "compiled", status
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    valid = 0
    for x in samples:
        expect = validator.is_valid(x)
        valid += expect
        got = runner.match(cg, x)
        assert got == ("accepted" if expect else "rejected"), (x, expect, got)
    return valid


def passed(instance_outcome: str) -> bool:
    return instance_outcome in ("valid:accepted", "invalid:rejected")


# ------------------------------------------------------------------------------ corpora

def suite_cases():
    """(case id, group) for the official test suite, draft2020-12 and draft7; remote refs out."""
    skip_files = {"refRemote.json", "dynamicRef.json", "vocabulary.json"}
    for draft in ("draft2020-12", "draft7"):
        for f in sorted((SUITE / draft).glob("*.json")):
            if f.name in skip_files:
                continue
            for gi, group in enumerate(json.loads(f.read_text())):
                text = json.dumps(group["schema"])
                if "remote" in text and "localhost" in text:
                    continue
                yield f"{draft}/{f.name}::{gi}", group


def jsb_categories() -> dict[str, list[dict]]:
    """Category -> entries sorted by file name."""
    cats: dict[str, list[dict]] = {}
    for f in sorted(JSB.glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            entries = [json.loads(line) for line in fh]
        entries.sort(key=lambda e: e["file"])
        cats[f.name[:-len(".jsonl.gz")]] = entries
    return cats


def jsb_sample(cats: dict[str, list[dict]], per_category: int = 6) -> list[dict]:
    """Deterministic sample: ``per_category`` evenly spaced entries of every category, taken
    round-robin (category order is alphabetical)."""
    picks = []
    for entries in cats.values():
        n = len(entries)
        k = min(per_category, n)
        picks.append([entries[(i * n) // k] for i in range(k)])
    out = []
    for i in range(per_category):
        for p in picks:
            if i < len(p):
                out.append(p[i])
    return out


def jsb_tests(entry: dict) -> list[tuple[Any, bool]]:
    return [(t["data"], t["valid"]) for t in entry["data"].get("tests", [])]


def llguidance_maskbench() -> dict:
    p = LLG / "json_stats" / "expected_maskbench.json"
    return json.loads(p.read_text()) if p.exists() else {}


# ------------------------------------------------------------------------------ ratchets

def load_ratchet(path: Path) -> dict:
    if not path.exists():
        return {}
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    return json.loads(path.read_text())


def write_ratchet(path: Path, results: dict) -> None:
    if path.suffix == ".gz":
        text = json.dumps(results, sort_keys=True, separators=(",", ":")) + "\n"
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            fh.write(text.encode("utf-8"))
    else:
        path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def diff_ratchet(ratchet: dict, results: dict) -> tuple[list[str], list[str]]:
    """(regressions, improvements) of ``results`` against ``ratchet``.

    Regressions: a schema that compiled no longer does; an instance that passed now fails.
    Cases missing from the ratchet are neither."""
    regressions, improvements = [], []
    for cid, res in results.items():
        old = ratchet.get(cid)
        if old is None:
            continue
        was, now = old["schema"], res["schema"]
        if was == "compiled" and now != "compiled":
            regressions.append(f"{cid}: compiled -> {now}")
            continue
        if was != "compiled" and now == "compiled":
            good = sum(passed(s) for s in res["instances"])
            improvements.append(f"{cid}: {was} -> compiled ({good}/{len(res['instances'])} instances pass)")
            continue
        for i, (a, b) in enumerate(zip(old["instances"], res["instances"])):
            if passed(a) and not passed(b):
                regressions.append(f"{cid}#{i}: {a} -> {b}")
            elif passed(b) and not passed(a):
                improvements.append(f"{cid}#{i}: {a} -> {b}")
    return regressions, improvements


def summarize(results: dict) -> dict:
    n = len(results)
    compiled = sum(r["schema"] == "compiled" for r in results.values())
    full = sum(r["schema"] == "compiled" and all(passed(s) for s in r["instances"]) for r in results.values())
    counts: dict[str, int] = {}
    for r in results.values():
        for s in r["instances"]:
            counts[s] = counts.get(s, 0) + 1
    statuses: dict[str, int] = {}
    for r in results.values():
        if r["schema"] != "compiled":
            statuses[r["schema"]] = statuses.get(r["schema"], 0) + 1
    return {"cases": n, "compiled": compiled, "fully_passing": full, "instances": counts,
            "not_compiled": dict(sorted(statuses.items(), key=lambda kv: -kv[1]))}
