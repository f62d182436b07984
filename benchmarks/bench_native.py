#!/usr/bin/env python3
"""Native-engine benchmark: xg2_jax beside xgrammar on the same vocabulary, grammars and tokens.

Three workloads, each a grammar plus about 30 valid texts generated deterministically:

    json  the builtin JSON grammar of each engine (compile_builtin_json_grammar) on nested
          objects/arrays with escapes, non-ASCII text and exponent numbers, plus a few valid
          instances from JSONSchemaBench when shared/data/jsonschemabench is present;
    lang  one EBNF grammar of a small recursive programming language (statements, blocks,
          functions, operator precedence) on generated programs;
    log   one EBNF grammar of structured log lines (character classes, Unicode ranges and
          literals, {n,m} repeats) on generated log chunks.

The EBNF text is the same for every engine (it is written in the dialect that xg2_jax and
xgrammar both accept). Every text is tokenized greedily (longest match over the decoded bytes
of the non-special tokens), an end-of-sequence token is appended, and the token streams are
replayed in lock-step: at each step every engine, in rotating order, fills its own int32
bitmask (timed), the harness checks that the next token is allowed (untimed), then the engine
accepts it (timed separately). Compile time is cold (compiler cache cleared), median of 3.

Runs with or without xgrammar installed (without it, only xg2_jax rows are printed). xg2_jax
never needs torch; xgrammar 0.2.x does. See benchmarks/README.md.

    python benchmarks/bench_native.py [--engines xg2_jax,xgrammar] [--repeat N] [--quick]
                                      [--md FILE] [--vocab PATH]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import importlib
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
DEFAULT_DATA = HERE.parents[2] / "shared" / "data"
DEFAULT_VOCAB = DEFAULT_DATA / "vocab" / "llama3.json.gz"
REFERENCE = "xgrammar"          # ratios and mask agreement are relative to this engine
KNOWN_ENGINES = ("xg2_jax", "xgrammar")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ======================================================================================
# Vocabulary: decoding token strings to bytes, greedy longest-match tokenizer
# ======================================================================================
def _gpt2_byte_decoder() -> dict[str, int]:
    """Inverse of GPT-2's bytes_to_unicode: the character that stands for each byte."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    table = {}
    extra = 0
    for b in range(256):
        if b in printable:
            table[chr(b)] = b
        else:
            table[chr(256 + extra)] = b
            extra += 1
    return table


class Vocab:
    """A vocabulary file of shared/data/vocab (see its README): token strings, specials, eos."""

    def __init__(self, path: Path):
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        data = json.loads(raw)
        self.path = path
        self.name = data.get("name", path.name)
        self.vocab_type = data["vocab_type"]
        self.encoded: list[str] = data["tokens"]
        self.size = len(self.encoded)
        self.special_ids = sorted(set(data.get("special_ids") or []))
        self.eos_ids = list(data.get("eos_ids") or [])
        if not self.eos_ids:
            raise SystemExit(f"{path}: the vocabulary lists no eos_ids")
        self.eos = self.eos_ids[0]
        self.decoded = [self._decode(t) for t in self.encoded]
        special = set(self.special_ids)
        self.table: dict[bytes, int] = {}
        for tid, b in enumerate(self.decoded):
            if tid in special or not b:
                continue
            self.table.setdefault(b, tid)          # lowest id wins for duplicate byte strings
        self.max_len = max(len(b) for b in self.table)

    def _decode(self, tok: str) -> bytes:
        if self.vocab_type == "byte_level":
            dec = _BYTE_DECODER
            try:
                return bytes(dec[c] for c in tok)
            except KeyError:                       # not in the byte alphabet: take it as text
                return tok.encode("utf-8")
        if self.vocab_type == "byte_fallback":
            if len(tok) == 6 and tok.startswith("<0x") and tok.endswith(">"):
                try:
                    return bytes([int(tok[3:5], 16)])
                except ValueError:
                    pass
            return tok.replace("\u2581", " ").encode("utf-8")
        return tok.encode("utf-8")

    def tokenize(self, data: bytes) -> list[int]:
        """Greedy longest match over the decoded bytes of the non-special tokens."""
        out = []
        table = self.table
        i, n = 0, len(data)
        while i < n:
            for j in range(min(n, i + self.max_len), i, -1):
                tid = table.get(data[i:j])
                if tid is not None:
                    out.append(tid)
                    i = j
                    break
            else:
                raise SystemExit(f"byte {data[i]:#x} at {i} has no token in {self.name}")
        return out


_BYTE_DECODER = _gpt2_byte_decoder()


# ======================================================================================
# Engines (both have xgrammar's Python API; the adapter only builds the tokenizer/compiler)
# ======================================================================================
class Engine:
    def __init__(self, name: str):
        self.name = name
        self.mod = importlib.import_module(name)

    def version(self) -> str:
        v = getattr(self.mod, "__version__", None)
        if not v:
            try:
                from importlib.metadata import version
                v = version(self.name)
            except Exception:
                v = "?"
        return v

    def setup(self, vocab: Vocab, threads: int, *, special_strings: bool = False) -> float:
        """Builds TokenizerInfo and GrammarCompiler; returns the seconds it took.

        Special tokens get empty strings (special for both engines: never text), or, with
        ``special_strings``, keep them (a structural tag's token format names them): xg2_jax is
        then told which ids are special, xgrammar reads that from the strings itself."""
        x = self.mod
        vt = getattr(x.VocabType, vocab.vocab_type.upper())
        enc = list(vocab.encoded)
        extra = {}
        if special_strings:
            if self.name == "xg2_jax":
                extra["special_token_ids"] = vocab.special_ids
        else:
            for i in vocab.special_ids:
                enc[i] = ""
        t0 = time.perf_counter()
        self.tokenizer = x.TokenizerInfo(enc, vocab_type=vt, vocab_size=vocab.size,
                                         stop_token_ids=list(vocab.eos_ids), **extra)
        self.compiler = x.GrammarCompiler(self.tokenizer, max_threads=threads,
                                          cache_enabled=True)
        return time.perf_counter() - t0

    def decode_mismatches(self, vocab: Vocab) -> int:
        """Non-special tokens the engine decodes to other bytes than this script (untimed)."""
        dv = self.tokenizer.decoded_vocab
        special = set(vocab.special_ids)
        return sum(1 for i, b in enumerate(vocab.decoded)
                   if i not in special and (i >= len(dv) or bytes(dv[i]) != b))

    def compile(self, workload: "Workload"):
        if workload.grammar is None:
            return self.compiler.compile_builtin_json_grammar()
        return self.compiler.compile_grammar(workload.grammar)

    def clear_cache(self) -> None:
        self.compiler.clear_cache()

    def matcher(self, compiled):
        return self.mod.GrammarMatcher(compiled)

    def bitmask(self, vocab_size: int) -> np.ndarray:
        if self.name == "xg2_jax":
            return self.mod.allocate_token_bitmask(1, vocab_size)
        # xgrammar's allocate_token_bitmask returns a torch tensor; its fill accepts numpy too
        return np.full((1, (vocab_size + 31) // 32), -1, dtype=np.int32)


def load_engines(spec: str | None) -> list[Engine]:
    names = []
    if spec:
        names = [s.strip() for s in spec.split(",") if s.strip()]
        unknown = [n for n in names if n not in KNOWN_ENGINES]
        if unknown:
            raise SystemExit(f"unknown engine(s) {unknown}; known: {', '.join(KNOWN_ENGINES)}")
    engines = []
    for name in names or KNOWN_ENGINES:
        try:
            engines.append(Engine(name))
        except Exception as exc:         # ImportError, or a broken torch under xgrammar
            if spec or name == "xg2_jax":
                hint = (" (pip install . from the repo root, or PYTHONPATH=<repo root>)"
                        if name == "xg2_jax" else "")
                raise SystemExit(f"cannot import {name}: {exc}{hint}")
            log(f"note: {name} not importable ({type(exc).__name__}: {exc}); skipped")
    return engines


# ======================================================================================
# Workload 1: JSON documents
# ======================================================================================
class Num(str):
    """A number literal, kept exactly as written."""


JSON_WORDS = [
    "alpha", "beta", "gamma", "delta", "value", "index", "config", "user", "status", "ok",
    "café", "naïve", "Zürich", "façade", "東京", "数据", "Привет", "мир", "Ελλάδα", "שלום",
    "مرحبا", "😀", "🚀 launch", "emoji 🔥🔥", "tab\there", 'say "hi"', "back\\slash",
    "line\nbreak", "path/to/file", "a\r\nb", "bell\x07", "nul\x00byte", "sep\u2028x",
    "ünïcödé", "x" * 40, "", " ", "0", "true", "null", "{not json}", "[1, 2]",
]
JSON_KEYS = [
    "id", "name", "type", "items", "meta", "tags", "data", "count", "enabled", "ratio",
    "created_at", "owner", "children", "values", "schema", "émoji", "名前", "key with space",
    "quote\"key", "x", "_private", "$ref", "nested", "matrix",
]


def _json_number(rng: random.Random) -> Num:
    k = rng.randrange(8)
    if k == 0:
        return Num(str(rng.randint(-1000, 1000)))
    if k == 1:
        return Num(str(rng.randint(10 ** 9, 10 ** 18) * rng.choice((1, -1))))
    if k == 2:
        return Num(rng.choice(("0", "-0", "1", "-1", "0.0", "100")))
    if k in (3, 4):
        return Num(f"{rng.uniform(-1e4, 1e4):.{rng.randint(1, 7)}f}")
    mant = f"{rng.randint(1, 9)}" + (f".{rng.randint(0, 99999)}" if rng.random() < 0.7 else "")
    sign = rng.choice(("", "-")) if k != 7 else "-"
    return Num(f"{sign}{mant}{rng.choice('eE')}{rng.choice(('', '+', '-'))}{rng.randint(0, 308)}")


def _json_string(rng: random.Random) -> str:
    return rng.choice((" ", "", "-", "/")).join(rng.choice(JSON_WORDS)
                                                 for _ in range(rng.randint(1, 4)))


def _json_value(rng: random.Random, depth: int, max_depth: int):
    r = rng.random()
    if depth < max_depth and r < 0.22:
        return _json_object(rng, depth + 1, max_depth)
    if depth < max_depth and r < 0.36:
        return _json_array(rng, depth + 1, max_depth)
    r = rng.random()
    if r < 0.4:
        return _json_string(rng)
    if r < 0.8:
        return _json_number(rng)
    return rng.choice((True, False, None))


def _json_object(rng: random.Random, depth: int, max_depth: int) -> dict:
    n = rng.randint(0, 3) if depth > 1 else rng.randint(2, 6)
    out = {}
    for _ in range(n):
        key = rng.choice(JSON_KEYS)
        if key in out:
            key = f"{key}_{len(out)}"
        out[key] = _json_value(rng, depth, max_depth)
    return out


def _json_array(rng: random.Random, depth: int, max_depth: int) -> list:
    kind = rng.random()
    n = rng.randint(0, 5)
    if kind < 0.3:                      # homogeneous numbers (a vector / matrix row)
        return [_json_number(rng) for _ in range(n)]
    return [_json_value(rng, depth, max_depth) for _ in range(n)]


class JsonStyle:
    def __init__(self, rng: random.Random):
        self.indent = rng.choice((None, None, "  ", "    ", "\t"))
        self.item_sep = rng.choice((",", ", ")) if self.indent is None else ","
        self.key_sep = rng.choice((":", ": ", " : "))
        self.ascii = rng.random() < 0.3            # non-ASCII as \\uXXXX escapes
        self.escape_slash = rng.random() < 0.3     # "/" as "\\/"
        self.upper_hex = rng.random() < 0.5


def _json_str_literal(s: str, st: JsonStyle) -> str:
    short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
             "\b": "\\b", "\f": "\\f"}
    hexfmt = "\\u{:04X}" if st.upper_hex else "\\u{:04x}"
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in short:
            out.append(short[ch])
        elif ch == "/" and st.escape_slash:
            out.append("\\/")
        elif o < 0x20:
            out.append(hexfmt.format(o))
        elif o >= 0x80 and st.ascii:
            if o > 0xFFFF:                          # surrogate pair
                o -= 0x10000
                out.append(hexfmt.format(0xD800 + (o >> 10)) + hexfmt.format(0xDC00 + (o & 0x3FF)))
            else:
                out.append(hexfmt.format(o))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_dump(v, st: JsonStyle, level: int = 0) -> str:
    if isinstance(v, Num):
        return str(v)
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return _json_str_literal(v, st)
    if isinstance(v, (list, dict)):
        items = ([_json_dump(x, st, level + 1) for x in v] if isinstance(v, list) else
                 [_json_str_literal(k, st) + st.key_sep + _json_dump(x, st, level + 1)
                  for k, x in v.items()])
        o, c = ("[", "]") if isinstance(v, list) else ("{", "}")
        if not items:
            return o + c
        if st.indent is None:
            return o + st.item_sep.join(items) + c
        pad = st.indent * (level + 1)
        return o + "\n" + ",\n".join(pad + s for s in items) + "\n" + st.indent * level + c
    raise TypeError(type(v))


def _jsb_instances(data_dir: Path, k: int) -> list[str]:
    """A few valid object/array instances from JSONSchemaBench (one per category file)."""
    root = data_dir / "jsonschemabench"
    out = []
    for cat in ("Github_medium", "Kubernetes", "Glaiveai2K", "Snowplow", "WashingtonPost"):
        if len(out) >= k:
            break
        path = root / f"{cat}.jsonl.gz"
        if not path.exists():
            continue
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                tests = json.loads(line).get("data", {}).get("tests") or []
                hit = None
                for t in tests:
                    if not t.get("valid") or not isinstance(t.get("data"), (dict, list)):
                        continue
                    try:
                        s = json.dumps(t["data"], ensure_ascii=False, allow_nan=False,
                                       indent=2 if len(out) % 2 else None)
                    except ValueError:
                        continue
                    if 150 <= len(s.encode()) <= 2500:
                        hit = s
                        break
                if hit:
                    out.append(hit)
                    break
    return out


def json_documents(n: int, seed: int, data_dir: Path) -> tuple[list[str], int]:
    """n documents: generated ones, then up to 4 JSONSchemaBench instances (their count)."""
    jsb = _jsb_instances(data_dir, min(4, n // 6))
    rng = random.Random(seed)
    docs = []
    while len(docs) < n - len(jsb):
        st = JsonStyle(rng)
        max_depth = rng.randint(2, 5)
        top = (_json_object(rng, 1, max_depth) if rng.random() < 0.8
               else _json_array(rng, 1, max_depth) or [_json_number(rng)])
        text = _json_dump(top, st)
        json.loads(text)                         # valid JSON by construction; checked anyway
        if 20 <= len(text.encode()) <= 2500:
            docs.append(text)
    return docs + jsb, len(jsb)


# ======================================================================================
# Workload 2: a small programming language (recursive EBNF)
# ======================================================================================
# Whitespace is written inline as character-class stars ([ ]*, [ \t\n]*), the usual GBNF style.
# A nullable rule instead (sp ::= " "?, ws ::= [ \t\n]*) made every token that starts with a
# space context-dependent: in a trial on these programs masks got 10-100x slower in both engines
# (xgrammar p50 ~30 ms/token). That is a grammar-authoring effect, not what this workload measures.
LANG_GRAMMAR = r'''root ::= stmt ([ \t\n]* stmt)* [ \t\n]*
stmt ::= let_stmt | assign_stmt | if_stmt | while_stmt | return_stmt | expr_stmt | fn_def | block
let_stmt ::= "let " ident [ ]* "=" [ ]* expr [ ]* ";"
assign_stmt ::= ident [ ]* ("=" | "+=" | "-=" | "*=") [ ]* expr [ ]* ";"
if_stmt ::= "if" [ ]* "(" [ ]* expr [ ]* ")" [ ]* block ([ ]* "else" [ ]* (block | if_stmt))?
while_stmt ::= "while" [ ]* "(" [ ]* expr [ ]* ")" [ ]* block
return_stmt ::= "return" (" " expr)? [ ]* ";"
expr_stmt ::= call [ ]* ";"
fn_def ::= "fn " ident [ ]* "(" [ ]* params? [ ]* ")" [ ]* block
params ::= ident ([ ]* "," [ ]* ident)*
block ::= "{" [ \t\n]* (stmt [ \t\n]*)* "}"
expr ::= sum ([ ]* binop [ ]* sum)*
binop ::= "||" | "&&" | "==" | "!=" | "<=" | ">=" | "<" | ">"
sum ::= term ([ ]* [+\-] [ ]* term)*
term ::= unary ([ ]* [*/%^] [ ]* unary)*
unary ::= [\-!] [ ]* unary | atom
atom ::= number | string | "true" | "false" | "nil" | ident | call | "(" [ ]* expr [ ]* ")" | list
list ::= "[" [ ]* (expr ([ ]* "," [ ]* expr)*)? [ ]* "]"
call ::= ident "(" [ ]* (expr ([ ]* "," [ ]* expr)*)? [ ]* ")"
ident ::= [a-zA-Z_] [a-zA-Z0-9_]*
number ::= [0-9]+ ("." [0-9]+)? ([eE] [+\-]? [0-9]+)?
string ::= "\"" ([^"\\\n] | "\\" ["\\nt0])* "\""
'''

LANG_IDENTS = ["x", "y", "i", "n", "acc", "total", "count_2", "_tmp", "fooBar", "result",
               "Vec3", "matrix", "left", "right", "node", "value", "k9", "MAX_DEPTH"]
LANG_FUNCS = ["print", "len", "max", "min", "push", "sqrt", "fib", "map_values", "assert_eq"]
LANG_STRINGS = ["hello", "a \\\"quoted\\\" word", "tab\\there", "line\\n", "naïve café",
                "日本語のテキスト", "emoji 🎉", "50% done", "{x} = {y}", "back\\\\slash", ""]


class LangGen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.style = rng.choice(("pretty", "pretty", "compact", "messy"))

    def ws(self) -> str:                    # "sp" in the grammar: inside statements
        if self.style == "compact":
            return ""
        if self.style == "messy":
            return self.rng.choice(("", " "))
        return " "

    def ws_op(self) -> str:                 # around binary operators
        return "" if self.style == "compact" and self.rng.random() < 0.7 else self.ws() or " "

    def ws1(self) -> str:                   # the one space after let / fn / return
        return " "

    def nl(self, indent: int) -> str:       # whitespace between statements
        if self.style == "pretty":
            return "\n" + "    " * indent
        if self.style == "compact":
            return self.rng.choice(("", " "))
        return self.rng.choice(("", " ", "\n", "\n" + "  " * indent, "\t"))

    # expressions, mirroring the grammar's precedence levels
    def expr(self, d: int) -> str:
        parts = [self.and_expr(d)]
        while d < 2 and self.rng.random() < 0.15:
            parts.append(self.and_expr(d))
        return (self.ws_op() + "||" + self.ws_op()).join(parts)

    def and_expr(self, d: int) -> str:
        parts = [self.cmp_expr(d)]
        while d < 2 and self.rng.random() < 0.15:
            parts.append(self.cmp_expr(d))
        return (self.ws_op() + "&&" + self.ws_op()).join(parts)

    def cmp_expr(self, d: int) -> str:
        s = self.sum(d)
        if self.rng.random() < 0.25:
            op = self.rng.choice(("==", "!=", "<=", ">=", "<", ">"))
            s += self.ws_op() + op + self.ws_op() + self.sum(d)
        return s

    def sum(self, d: int) -> str:
        s = self.term(d)
        for _ in range(self.rng.choice((0, 0, 1, 1, 2, 3))):
            s += self.ws_op() + self.rng.choice("+-") + self.ws_op() + self.term(d)
        return s

    def term(self, d: int) -> str:
        s = self.unary(d)
        for _ in range(self.rng.choice((0, 0, 0, 1, 2))):
            s += self.ws_op() + self.rng.choice("*/%") + self.ws_op() + self.unary(d)
        return s

    def unary(self, d: int) -> str:
        if self.rng.random() < 0.1:
            return self.rng.choice("-!") + self.rng.choice(("", "", " ")) + self.unary(d)
        s = self.atom(d)
        if self.rng.random() < 0.08:
            s += self.ws_op() + "^" + self.ws_op() + self.unary(d + 1)
        return s

    def args(self, d: int, lo: int, hi: int) -> str:
        items = [self.expr(d + 1) for _ in range(self.rng.randint(lo, hi))]
        return ("," + self.ws_op()).join(items)

    def call(self, d: int) -> str:
        return self.rng.choice(LANG_FUNCS) + "(" + self.args(d, 0, 3 if d < 3 else 0) + ")"

    def atom(self, d: int) -> str:
        r = self.rng.random()
        if d >= 3 or r < 0.3:
            return self.number() if self.rng.random() < 0.5 else self.rng.choice(LANG_IDENTS)
        if r < 0.45:
            return '"' + self.rng.choice(LANG_STRINGS) + '"'
        if r < 0.5:
            return self.rng.choice(("true", "false", "nil"))
        if r < 0.7:
            return self.call(d)
        if r < 0.85:
            return "(" + self.ws() + self.expr(d + 1) + self.ws() + ")"
        return "[" + self.args(d, 0, 4) + "]"

    def number(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return str(self.rng.randint(0, 10 ** self.rng.randint(1, 6)))
        if r < 0.8:
            return f"{self.rng.uniform(0, 1000):.{self.rng.randint(1, 4)}f}"
        return (f"{self.rng.randint(1, 9)}.{self.rng.randint(0, 99)}{self.rng.choice('eE')}"
                f"{self.rng.choice(('', '+', '-'))}{self.rng.randint(0, 99)}")

    # statements
    def block(self, d: int, indent: int, n: int | None = None) -> str:
        n = self.rng.randint(1, 3) if n is None else n
        body = "".join(self.nl(indent + 1) + self.stmt(d + 1, indent + 1) for _ in range(n))
        return "{" + body + self.nl(indent) + "}"

    def stmt(self, d: int, indent: int) -> str:
        r = self.rng.random()
        if d >= 3:
            r = r * 0.45                        # only simple statements when deeply nested
        if r < 0.15:
            return "let" + self.ws1() + self.rng.choice(LANG_IDENTS) + self.ws() + "=" \
                + self.ws() + self.expr(0) + self.ws() + ";"
        if r < 0.3:
            return self.rng.choice(LANG_IDENTS) + self.ws() \
                + self.rng.choice(("=", "=", "+=", "-=", "*=")) + self.ws() + self.expr(0) + ";"
        if r < 0.38:
            return "return" + (self.ws1() + self.expr(0) if self.rng.random() < 0.8 else "") + ";"
        if r < 0.45:
            return self.call(0) + ";"
        if r < 0.65:
            s = "if" + self.ws() + "(" + self.expr(1) + ")" + self.ws() + self.block(d, indent)
            if self.rng.random() < 0.4:
                s += self.ws() + "else" + self.ws() + self.block(d, indent)
            return s
        if r < 0.78:
            return ("while" + self.ws() + "(" + self.expr(1) + ")" + self.ws()
                    + self.block(d, indent))
        if r < 0.95 and d == 0:
            params = ("," + self.ws()).join(self.rng.sample(LANG_IDENTS, self.rng.randint(0, 3)))
            return "fn" + self.ws1() + self.rng.choice(LANG_FUNCS) + self.ws() + "(" + params \
                + ")" + self.ws() + self.block(d, indent, self.rng.randint(2, 4))
        return self.block(d, indent)

    def program(self) -> str:
        stmts = [self.stmt(0, 0) for _ in range(self.rng.randint(1, 4))]
        sep = "\n" if self.style == "pretty" else None
        out = stmts[0]
        for s in stmts[1:]:
            out += (sep or self.nl(0)) + s
        return out + ("\n" if self.style != "compact" else "")


def lang_documents(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    docs = []
    while len(docs) < n:
        text = LangGen(rng).program()
        if 30 <= len(text.encode()) <= 1000:
            docs.append(text)
    return docs


# ======================================================================================
# Workload 3: structured log lines (character classes, Unicode, {n,m} repeats)
# ======================================================================================
# {n,m} on character classes and on groups (component, fields, root). The message is an
# unbounded star: a bounded repeat of that group ((...){0,100}) made xgrammar take ~65 ms per
# token inside every message (xg2_jax ~1.5 ms) in a trial, too slow for a default run.
LOG_GRAMMAR = r'''root ::= entry{1,16}
entry ::= timestamp " " level " " "[" component "]" " " message fields "\n"
timestamp ::= [0-9]{4} "-" [01] [0-9] "-" [0-3] [0-9] "T" [0-2] [0-9] ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{3,6})? zone
zone ::= "Z" | ("+" | "-") [0-2] [0-9] ":" [0-5] [0-9]
level ::= "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR" | "FATAL"
component ::= [a-z] [a-z0-9_.]{1,23} ("/" [a-z0-9_]{1,12}){0,2}
message ::= "\"" ([^"\\\n\x00-\x1f] | "\\" ["\\nt])* "\""
fields ::= (" " key "=" value){0,8}
key ::= [a-z_] [a-z0-9_]{0,15}
value ::= int | float | duration | size | ipv4 | word | quoted | "true" | "false" | "-"
int ::= "-"? [0-9]{1,12}
float ::= "-"? [0-9]{1,6} "." [0-9]{1,6}
duration ::= [0-9]{1,5} ("ns" | "µs" | "ms" | "s" | "m" | "h")
size ::= [0-9]{1,4} ("." [0-9])? ("B" | "KiB" | "MiB" | "GiB")
ipv4 ::= [0-9]{1,3} "." [0-9]{1,3} "." [0-9]{1,3} "." [0-9]{1,3} (":" [0-9]{2,5})?
word ::= [a-zA-Z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u3040-\u30FF\u4E00-\u9FFF] [a-zA-Z0-9_\-\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u3040-\u30FF\u4E00-\u9FFF]{0,23}
quoted ::= "'" [^'\n]{0,40} "'"
'''

LOG_COMPONENTS = ["http.server", "db.pool", "auth", "scheduler", "cache.lru", "kafka_consumer",
                  "worker", "api.v2", "gc", "storage.s3"]
LOG_MESSAGES = [
    "request completed", "connection reset by peer", "retrying after backoff",
    "user \\\"admin\\\" logged in", "cache miss for key", "slow query detected",
    "payload: {\\\"a\\\": 1}", "Zürich datacenter online", "用户登录成功", "Соединение установлено",
    "disk usage at 91%", "tab\\tseparated\\tfields", "multi\\nline", "emoji ✅ deployed 🚀",
    "naïve timestamp, assuming UTC", "Ελληνικά μηνύματα", "path C:\\\\temp\\\\x", "",
]
LOG_KEYS = ["status", "latency", "bytes", "user", "ip", "region", "attempt", "took", "size",
            "trace_id", "ok", "city", "err", "q", "shard_7"]
LOG_WORDS = ["GET", "POST", "eu-west-1", "Zürich", "São_Paulo", "Москва", "東京", "ひらがな",
             "Ελλάδα", "alice", "bob_42", "Straße", "café", "x"]


def _log_value(rng: random.Random) -> str:
    r = rng.randrange(10)
    if r == 0:
        return str(rng.randint(-10 ** 6, 10 ** 9))
    if r == 1:
        return f"{rng.uniform(-1000, 1000):.{rng.randint(1, 6)}f}"
    if r == 2:
        return f"{rng.randint(0, 99999)}{rng.choice(('ns', 'µs', 'ms', 's', 'm', 'h'))}"
    if r == 3:
        unit = rng.choice(("B", "KiB", "MiB", "GiB"))
        return f"{rng.randint(0, 9999)}{rng.choice(('', '.5'))}{unit}"
    if r == 4:
        ip = ".".join(str(rng.randint(0, 255)) for _ in range(4))
        return ip + (f":{rng.randint(10, 65535)}" if rng.random() < 0.5 else "")
    if r in (5, 6):
        return rng.choice(LOG_WORDS)
    if r == 7:
        return "'" + rng.choice(("", "quoted text", "SELECT * FROM t", "a=b, c=d", "späť")) + "'"
    return rng.choice(("true", "false", "-"))


def _log_entry(rng: random.Random) -> str:
    ts = (f"{rng.randint(1990, 2099)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
          f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
    if rng.random() < 0.6:
        ts += "." + "".join(str(rng.randint(0, 9)) for _ in range(rng.choice((3, 6))))
    ts += "Z" if rng.random() < 0.5 else \
        f"{rng.choice('+-')}{rng.randint(0, 14):02d}:{rng.choice((0, 30, 45)):02d}"
    comp = rng.choice(LOG_COMPONENTS)
    if rng.random() < 0.3:
        comp += "/" + rng.choice(("handler", "conn_3", "main"))
    msg = rng.choice(LOG_MESSAGES)
    n_fields = rng.randint(0, 6)
    keys = rng.sample(LOG_KEYS, n_fields)
    fields = "".join(f" {k}={_log_value(rng)}" for k in keys)
    level = rng.choice(("TRACE", "DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR", "FATAL"))
    return f'{ts} {level} [{comp}] "{msg}"{fields}\n'


def log_documents(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(_log_entry(rng) for _ in range(rng.randint(1, 6))) for _ in range(n)]


# ======================================================================================
# Workloads and the lock-step driver
# ======================================================================================
class Workload:
    def __init__(self, name: str, title: str, grammar: str | None, docs: list[str]):
        self.name, self.title, self.grammar, self.docs = name, title, grammar, docs
        self.tokens: list[list[int]] = []


class Stats:
    """Per workload and engine: timings and correctness counters."""

    def __init__(self):
        self.compile_s: list[float] = []
        self.fill_ns: list[int] = []
        self.accept_ns: list[int] = []
        self.steps = 0
        self.violations = 0          # the next valid token was masked out
        self.accept_failed = 0       # accept_token returned False (replay of that text stopped)
        self.not_terminated = 0      # is_terminated() false after the stop token
        self.examples: list[str] = []
        self.max_ns = -1
        self.max_at = (0, 0)         # (text, step) of the slowest fill


class Agreement:
    def __init__(self):
        self.steps = 0
        self.identical = 0
        self.only_a = 0              # token bits only engine A allows (summed over steps)
        self.only_b = 0
        self.examples: list[str] = []


def _popcount(words: np.ndarray) -> int:
    return int(np.unpackbits(words.view(np.uint8)).sum())


def _allowed_ids(words: np.ndarray, limit: int) -> list[int]:
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    return np.flatnonzero(bits)[:limit].tolist()


def measure_compile(wl: Workload, engines: list[Engine], reps: int,
                    stats: dict[str, Stats]) -> dict[str, object]:
    compiled = {}
    for r in range(reps):
        for k in range(len(engines)):
            e = engines[(r + k) % len(engines)]
            e.clear_cache()                          # cold: no compiled grammar to reuse
            gc.collect()
            t0 = time.perf_counter()
            c = e.compile(wl)
            stats[e.name].compile_s.append(time.perf_counter() - t0)
            compiled[e.name] = c
    return compiled


def replay(wl: Workload, engines: list[Engine], compiled: dict, vocab: Vocab, repeat: int,
           stats: dict[str, Stats], agree: dict[str, Agreement], ref: int | None) -> None:
    n = len(engines)
    masks = [e.bitmask(vocab.size) for e in engines]
    perf = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for rep in range(repeat):
            for di, toks in enumerate(wl.tokens):
                matchers = [e.matcher(compiled[e.name]) for e in engines]
                fills = [m.fill_next_token_bitmask for m in matchers]
                accepts = [m.accept_token for m in matchers]
                st = [stats[e.name] for e in engines]
                alive = [True] * n
                seq = toks + [vocab.eos]
                for step, tok in enumerate(seq):
                    word, bit = tok >> 5, tok & 31
                    for j in range(n):
                        k = (step + j) % n                 # rotating order
                        if not alive[k]:
                            continue
                        mask = masks[k]
                        t0 = perf()
                        fills[k](mask)
                        t1 = perf()
                        s = st[k]
                        s.fill_ns.append(t1 - t0)
                        s.steps += 1
                        if t1 - t0 > s.max_ns:
                            s.max_ns, s.max_at = t1 - t0, (di, step)
                        if not (int(mask[0, word]) >> bit) & 1:
                            s.violations += 1
                            if len(s.examples) < 3:
                                s.examples.append(_where(wl, vocab, di, step, tok, "masked out"))
                        t0 = perf()
                        ok = accepts[k](tok)
                        t1 = perf()
                        s.accept_ns.append(t1 - t0)
                        if not ok:
                            s.accept_failed += 1
                            alive[k] = False
                            if len(s.examples) < 3:
                                s.examples.append(_where(wl, vocab, di, step, tok, "accept failed"))
                    if ref is not None and rep == 0:
                        _compare(wl, vocab, engines, masks, alive, ref, agree, di, step)
                for k, m in enumerate(matchers):
                    if alive[k] and not m.is_terminated():
                        st[k].not_terminated += 1
                        if len(st[k].examples) < 3:
                            st[k].examples.append(f"doc {di}: not terminated after the stop token")
    finally:
        gc.enable()


def _compare(wl, vocab, engines, masks, alive, ref, agree, di, step):
    if not alive[ref]:
        return
    for k, e in enumerate(engines):
        if k == ref or not alive[k]:
            continue
        a = agree[e.name]
        a.steps += 1
        if np.array_equal(masks[k], masks[ref]):
            a.identical += 1
            continue
        only_a = masks[k] & ~masks[ref]
        only_b = masks[ref] & ~masks[k]
        a.only_a += _popcount(only_a)
        a.only_b += _popcount(only_b)
        if len(a.examples) < 3:
            prefix = b"".join(vocab.decoded[t] for t in wl.tokens[di][:step])
            ea = [vocab.decoded[t] for t in _allowed_ids(only_a[0], 4)]
            eb = [vocab.decoded[t] for t in _allowed_ids(only_b[0], 4)]
            a.examples.append(
                f"doc {di} step {step} after …{prefix[-30:]!r}: only {e.name} allows "
                f"{_popcount(only_a)} (e.g. {ea}), only {engines[ref].name} allows "
                f"{_popcount(only_b)} (e.g. {eb})")


def _where(wl: Workload, vocab: Vocab, di: int, step: int, tok: int, what: str) -> str:
    toks = wl.tokens[di]
    prefix = b"".join(vocab.decoded[t] for t in toks[:step])
    tb = vocab.decoded[tok] if step < len(toks) else b"<eos>"
    return f"doc {di} step {step}: token {tok} {tb!r} {what} after …{prefix[-40:]!r}"


# ======================================================================================
# Report
# ======================================================================================
def _us(ns_values: list[int], q: float) -> float:
    return float(np.percentile(np.asarray(ns_values, dtype=np.float64), q)) / 1000.0


def _fmt(x: float) -> str:
    if x != x:
        return "–"
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def table(engine_names: list[str], stats: dict[str, Stats], compile_label: str,
          compile_ms: dict[str, float]) -> list[str]:
    has_ref = REFERENCE in engine_names and len(engine_names) > 1
    head = ["engine", compile_label, "fill µs p50", "fill µs p99", "fill µs max",
            "accept µs p50", "steps", "violations", "failed"]
    if has_ref:
        head += [f"p50 / {REFERENCE}", f"p99 / {REFERENCE}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ref_p = None
    if has_ref and stats[REFERENCE].fill_ns:
        ref_p = (_us(stats[REFERENCE].fill_ns, 50), _us(stats[REFERENCE].fill_ns, 99))
    for name in engine_names:
        s = stats[name]
        if s.fill_ns:
            p50, p99 = _us(s.fill_ns, 50), _us(s.fill_ns, 99)
            mx = max(s.fill_ns) / 1000.0
            acc = _us(s.accept_ns, 50)
        else:
            p50 = p99 = mx = acc = float("nan")
        row = [name, _fmt(compile_ms[name]), _fmt(p50), _fmt(p99), _fmt(mx), _fmt(acc),
               f"{s.steps:,}", str(s.violations), str(s.accept_failed + s.not_terminated)]
        if has_ref:
            if name == REFERENCE or ref_p is None:
                row += ["1.00" if name == REFERENCE else "–"] * 2
            else:
                row += [f"{p50 / ref_p[0]:.2f}", f"{p99 / ref_p[1]:.2f}"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def agreement_lines(agree: dict[str, Agreement], details: bool) -> list[str]:
    out = []
    for name, a in agree.items():
        if not a.steps:
            continue
        out.append(f"Mask agreement {name} vs {REFERENCE}: {100.0 * a.identical / a.steps:.1f}% of "
                   f"{a.steps:,} steps identical; token bits only {name} allows: {a.only_a:,}, "
                   f"only {REFERENCE} allows: {a.only_b:,} (summed over steps).")
        if details:
            out += [f"  - {x}" for x in a.examples]
    return out


def _json_workload(n: int, seed: int, data_dir: Path) -> Workload:
    docs, n_jsb = json_documents(n, seed, data_dir)
    title = "builtin JSON grammar, JSON documents"
    if n_jsb:
        title += f" ({len(docs) - n_jsb} generated + {n_jsb} JSONSchemaBench instances)"
    return Workload("json", title, None, docs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", help="comma list of xg2_jax,xgrammar "
                    "(default: xg2_jax, plus xgrammar if importable)")
    ap.add_argument("--vocab", type=Path, default=DEFAULT_VOCAB,
                    help=f"vocabulary file (default: {DEFAULT_VOCAB})")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="shared data folder, for the JSONSchemaBench instances (optional)")
    ap.add_argument("--workloads", default="json,lang,log", help="comma list of json,lang,log")
    ap.add_argument("--docs", type=int, help="texts per workload (default 30, --quick 8)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="replay every text this many times (default 1)")
    ap.add_argument("--compile-reps", type=int, default=3, help="cold compiles per engine (median)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="GrammarCompiler max_threads for every engine (default: all cores)")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--quick", action="store_true", help="8 texts per workload, 1 compile rep")
    ap.add_argument("--md", type=Path, help="also write the report (markdown) to this file")
    ap.add_argument("--details", action="store_true",
                    help="list examples of violations and of mask differences")
    args = ap.parse_args(argv)
    n_docs = args.docs or (8 if args.quick else 30)
    reps = 1 if args.quick else max(1, args.compile_reps)
    t_start = time.perf_counter()

    engines = load_engines(args.engines)
    names = [e.name for e in engines]
    if not args.vocab.exists():
        raise SystemExit(f"vocabulary not found: {args.vocab} (use --vocab)")
    log(f"loading {args.vocab} ...")
    vocab = Vocab(args.vocab)

    wanted = [w.strip() for w in args.workloads.split(",") if w.strip()]
    builders = {
        "json": lambda: _json_workload(n_docs, args.seed, args.data),
        "lang": lambda: Workload("lang", "EBNF: small programming language (recursive)",
                                 LANG_GRAMMAR, lang_documents(n_docs, args.seed + 1)),
        "log": lambda: Workload("log", "EBNF: log lines (classes, Unicode, {n,m})",
                                LOG_GRAMMAR, log_documents(n_docs, args.seed + 2)),
    }
    bad = [w for w in wanted if w not in builders]
    if bad:
        raise SystemExit(f"unknown workload(s) {bad}; known: {', '.join(builders)}")
    workloads = [builders[w]() for w in wanted]
    for wl in workloads:
        wl.tokens = [vocab.tokenize(d.encode("utf-8")) for d in wl.docs]

    setup_s, notes = {}, []
    for e in engines:
        setup_s[e.name] = e.setup(vocab, args.threads)
        mism = e.decode_mismatches(vocab)
        if mism:
            notes.append(f"WARNING: {e.name} decodes {mism} tokens differently from this script")

    ref = names.index(REFERENCE) if REFERENCE in names and len(names) > 1 else None
    out: list[str] = []

    def emit(line: str = "") -> None:
        out.append(line)
        print(line, flush=True)

    emit("# xg2_jax native benchmark")
    emit()
    emit(f"- vocab: {vocab.name} ({vocab.size:,} tokens, {vocab.vocab_type}, "
         f"{len(vocab.special_ids)} special, stop token {vocab.eos}) from `{vocab.path}`")
    emit("- engines: " + ", ".join(
        f"{e.name} {e.version()} (vocab setup {setup_s[e.name] * 1000:.0f} ms)" for e in engines))
    emit(f"- GrammarCompiler(max_threads={args.threads}); {os.cpu_count()} CPUs; "
         f"Python {platform.python_version()}, numpy {np.__version__}; "
         f"{platform.machine()} {platform.system()}")
    emit(f"- compile: cold (cache cleared), median of {reps}; fill/accept: perf_counter_ns around "
         f"one call, engines in lock-step (rotating order), gc disabled; repeat {args.repeat}")
    for wl in workloads:
        nb = sum(len(d.encode()) for d in wl.docs)
        nt = sum(len(t) + 1 for t in wl.tokens)
        emit(f"- `{wl.name}`: {wl.title}: {len(wl.docs)} texts, {nb:,} bytes, {nt:,} steps "
             f"(tokens + stop) per engine per repeat")
    for n in notes:
        emit(f"- {n}")
    emit()

    all_stats = {n: Stats() for n in names}
    compile_sum = {n: 0.0 for n in names}
    all_agree = {n: Agreement() for n in names if ref is not None and n != REFERENCE}
    for wl in workloads:
        log(f"[{wl.name}] compiling ...")
        stats = {n: Stats() for n in names}
        try:
            compiled = measure_compile(wl, engines, reps, stats)
        except Exception as exc:
            emit(f"## {wl.name}: compile failed: {type(exc).__name__}: {exc}")
            emit()
            continue
        log(f"[{wl.name}] replaying {len(wl.docs)} texts ...")
        agree = {n: Agreement() for n in names if ref is not None and n != REFERENCE}
        replay(wl, engines, compiled, vocab, args.repeat, stats, agree, ref)
        cms = {n: statistics.median(stats[n].compile_s) * 1000.0 for n in names}
        emit(f"## {wl.name}: {wl.title}")
        emit()
        for line in table(names, stats, "compile ms", cms):
            emit(line)
        emit()
        extra = agreement_lines(agree, args.details)
        for n in names:
            s = stats[n]
            if (s.violations or s.accept_failed or s.not_terminated) and s.examples:
                extra.append(f"{n} problems: " + "; ".join(s.examples))
            if args.details and s.max_ns >= 0:
                di, step = s.max_at
                extra.append(f"{n} slowest fill: {s.max_ns / 1000:,.0f} µs, "
                             + _where(wl, vocab, di, step, (wl.tokens[di] + [vocab.eos])[step],
                                      "next"))
        for line in extra:
            emit(line)
        if extra:
            emit()
        for n in names:
            a, s = all_stats[n], stats[n]
            a.fill_ns += s.fill_ns
            a.accept_ns += s.accept_ns
            a.steps += s.steps
            a.violations += s.violations
            a.accept_failed += s.accept_failed
            a.not_terminated += s.not_terminated
            compile_sum[n] += cms[n]
        for n, a in agree.items():
            g = all_agree[n]
            g.steps += a.steps
            g.identical += a.identical
            g.only_a += a.only_a
            g.only_b += a.only_b

    if len(workloads) > 1:
        emit(f"## overall ({', '.join(w.name for w in workloads)})")
        emit()
        for line in table(names, all_stats, "compile ms (sum of medians)", compile_sum):
            emit(line)
        emit()
        extra = agreement_lines(all_agree, False)
        for line in extra:
            emit(line)
        if extra:
            emit()
    emit("violations = steps where the next token of a valid text was masked out; failed = "
         "accept_token refused a token, or the matcher was not terminated after the stop token."
         + (f" Ratios below 1: faster than {REFERENCE}." if ref is not None else "")
         + f" Total run {time.perf_counter() - t_start:.0f} s.")
    if args.md:
        args.md.write_text("\n".join(out) + "\n", encoding="utf-8")
        log(f"wrote {args.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
