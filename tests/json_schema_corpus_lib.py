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
    """Compiles schemas and drives instances through a matcher token by token.

    ``any_order=False`` compiles in the default (declaration) property order and drives each
    instance with its members in the schema's order (schema_ordered)."""

    def __init__(self, vocab: Path = VOCAB, *, any_order: bool = True):
        self.any_order = any_order
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
            g = Grammar.from_json_schema(schema, strict_mode=False, any_order=self.any_order)
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
        if not self.any_order:
            tests = [(schema_ordered(schema, data), valid) for data, valid in tests]
        out = [("valid:" if valid else "invalid:") + self.match(cg, data) for data, valid in tests]
        return {"schema": status, "instances": out}


def schema_ordered(schema: Any, instance: Any) -> Any:
    """``instance`` with the members of every object put in the schema's declaration order,
    the order the default (ordered) mode writes them: names as ``properties`` declare them,
    walking each applicable subschema in key order with ``$ref`` and ``allOf`` inline, then
    the ``anyOf`` / ``oneOf`` branch, ``if`` outcome and ``dependentSchemas`` the instance
    takes (judged by ``jsonschema``); required names no subschema declares follow in
    ``required`` order, and undeclared members keep their order at the end. The mode admits
    undeclared members anywhere, so only the declared ones are reordered."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    root = cls(schema)
    return _order_value(root, [(schema, root._resolver)], instance)


def _valid(root, node, resolver, instance) -> bool:
    try:
        return root.evolve(schema=node, _resolver=resolver).is_valid(instance)
    except Exception:  # an unresolvable reference: this branch is not taken
        return False


def _applicable(root, nodes, instance) -> list:
    """The subschemas that apply to ``instance``, in the converter's merge order: each node's
    keys in order, ``$ref`` targets and ``allOf`` members merged where they stand (a node
    takes its place at its ``properties`` key), then the taken ``anyOf`` / ``oneOf`` /
    ``if`` / dependency branches, which the converter merges after the node."""
    out: list = []
    seen: set = set()
    deferred: list = []

    def visit(node, res, depth=0):
        if not isinstance(node, dict) or (id(node), id(res)) in seen or depth > 64 or len(out) > 4096:
            return
        seen.add((id(node), id(res)))
        placed = False
        for k, v in node.items():
            if k == "properties" and not placed:
                out.append((node, res))
                placed = True
            elif k == "$ref" and isinstance(v, str):
                try:
                    hit = res.lookup(v)
                except Exception:  # unresolvable: nothing to merge
                    continue
                visit(hit.contents, hit.resolver, depth + 1)
            elif k == "allOf" and isinstance(v, list):
                for b in v:
                    visit(b, res, depth + 1)
            elif k in ("anyOf", "oneOf") and isinstance(v, list):
                taken = next((b for b in v if _valid(root, b, res, instance)), None)
                if taken is not None:
                    deferred.append((taken, res))
            elif k == "if" and ("then" in node or "else" in node):
                # anyOf [allOf [if, then], allOf [not if, else]]: either way the condition's
                # names come first (its negation declares them too).
                deferred.append((v, res))
                branch = node.get("then") if _valid(root, v, res, instance) else node.get("else")
                if branch is not None:
                    deferred.append((branch, res))
            elif k in ("dependentSchemas", "dependentRequired", "dependencies") and isinstance(v, dict) \
                    and isinstance(instance, dict):
                # present: {required: [name, *names], allOf: [schema]} (DependencyAlternatives)
                for name, d in v.items():
                    if name in instance:
                        deferred.append(({"required": [name] + (d if isinstance(d, list) else [])}, res))
                        if isinstance(d, dict):
                            deferred.append((d, res))
        if not placed:
            out.append((node, res))

    for node, res in nodes:
        visit(node, res)
    while deferred:
        node, res = deferred.pop(0)
        visit(node, res)
    return out


def _order_value(root, nodes, instance):
    if isinstance(instance, list):
        return _order_array(root, nodes, instance)
    if not isinstance(instance, dict):
        return instance
    applied = _applicable(root, nodes, instance)
    declared: list[str] = []
    required: list[str] = []
    for node, _ in applied:
        for name in node.get("properties", {}) if isinstance(node.get("properties"), dict) else ():
            if name not in declared:
                declared.append(name)
        for name in node.get("required", []) if isinstance(node.get("required"), list) else ():
            if isinstance(name, str) and name not in required:
                required.append(name)
    literal = next((lit for lit in _literals(applied) if lit == instance), None)
    if literal is not None:  # a const / enum object is written in its own order
        return _order_like(instance, literal)
    order = declared + [n for n in required if n not in declared]
    keys = [k for k in order if k in instance] + [k for k in instance if k not in order]
    out = {}
    for k in keys:
        children = []
        for node, res in applied:
            props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
            pats = node.get("patternProperties") if isinstance(node.get("patternProperties"), dict) else {}
            matched = [s for p, s in pats.items() if _search(p, k)]
            if k in props:
                children.append((props[k], res))
            children += [(s, res) for s in matched]
            if k not in props and not matched and "additionalProperties" in node:
                children.append((node["additionalProperties"], res))
        out[k] = _order_value(root, children, instance[k])
    return out


def _literals(applied) -> list:
    out = []
    for node, _ in applied:
        if "const" in node:
            out.append(node["const"])
        if isinstance(node.get("enum"), list):
            out += node["enum"]
    return out


def _order_like(instance, literal):
    if isinstance(instance, dict) and isinstance(literal, dict):
        return {k: _order_like(instance[k], literal[k]) for k in literal}
    if isinstance(instance, list) and isinstance(literal, list):
        return [_order_like(a, b) for a, b in zip(instance, literal)]
    return instance


def _order_array(root, nodes, instance):
    applied = _applicable(root, nodes, instance)
    out = []
    for i, x in enumerate(instance):
        children = []
        for node, res in applied:
            prefix = node.get("prefixItems")
            items = node.get("items")
            if isinstance(items, list):
                prefix, items = items, node.get("additionalItems")
            if isinstance(prefix, list) and i < len(prefix):
                children.append((prefix[i], res))
            elif items is not None:
                children.append((items, res))
        out.append(_order_value(root, children, x))
    return out


def _search(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def check_against_jsonschema(runner: Runner, schema: Any, samples: Iterable[Any]) -> int:
    """Compiles ``schema`` and asserts that every sample (its members in the schema's order when
    the runner is ordered) is accepted exactly when the ``jsonschema`` package (the schema's own
    draft, else 2020-12) finds it valid; returns how many were valid."""
    import jsonschema

    status, cg = runner.compile(schema)
    assert status == "compiled", status
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)
    valid = 0
    for x in samples:
        expect = validator.is_valid(x)
        valid += expect
        got = runner.match(cg, x if runner.any_order else schema_ordered(schema, x))
        assert got == ("accepted" if expect else "rejected"), (x, expect, got)
    return valid


def passed(instance_outcome: str) -> bool:
    return instance_outcome in ("valid:accepted", "invalid:rejected")


# ------------------------------------------------------------------------------ corpora

DRAFT_URIS = {"draft7": "http://json-schema.org/draft-07/schema#"}


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
                schema = group["schema"]
                if isinstance(schema, dict) and "$schema" not in schema and draft in DRAFT_URIS:
                    # The suite runs a folder's schemas under its draft unless they name one.
                    group = {**group, "schema": {"$schema": DRAFT_URIS[draft], **schema}}
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
