"""A slow, independent reference recognizer for the grammars the tests generate.

Grammars are built as small Python AST objects (`Lit`, `Cls`, `Seq`, `Alt`, `Ref`, `Rep`), rendered
to EBNF text for the engine with `render_grammar`, and interpreted here directly: the AST is
lowered to a plain context-free grammar whose terminals are sets of code points, unproductive
productions are removed, and an Earley recognizer decides, for an input prefix, whether it can
still be extended to a sentence (viability) and whether it is a sentence (completeness).

Byte-level questions (the engine consumes UTF-8 bytes, tokens may split characters) are answered by
`ByteState`: a prefix that ends inside a UTF-8 sequence is viable iff some code point that starts
with those bytes may come next.

Nothing here is fast; everything here is meant to be obviously correct.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Optional, Union

MAX_CP = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

# ----------------------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class Lit:
    """A literal string ("" is the empty string)."""

    text: str


@dataclass(frozen=True)
class Cls:
    """One code point from inclusive ranges, or (negated) one code point outside them.

    ``Cls((), True)`` is ``.``, any code point.
    """

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True)
class Seq:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Alt:
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Rep:
    """``item`` repeated lo..hi times; ``hi=None`` means unbounded."""

    item: "Expr"
    lo: int
    hi: Optional[int]


@dataclass(frozen=True)
class AnyOrd:
    """Members joined by ``sep`` in any order: each required one exactly once, each optional one
    at most once, each repeated one any number of times; ``lo``..``hi`` members in all
    (``hi=None``: no bound). Members must not match the empty string. ``depends`` holds
    presence rules ``(member, (alternative, ...))``: when that required-or-optional member
    appears, all members of one alternative appear too (only without ``hi``)."""

    sep: "Expr"
    required: tuple["Expr", ...]
    optional: tuple["Expr", ...] = ()
    repeated: tuple["Expr", ...] = ()
    lo: int = 0
    hi: Optional[int] = None
    depends: tuple[tuple[int, tuple[tuple[int, ...], ...]], ...] = ()


Expr = Union[Lit, Cls, Seq, Alt, Ref, Rep, AnyOrd]


@dataclass(frozen=True)
class GrammarAst:
    rules: tuple[tuple[str, Expr], ...]  # (name, body), root first
    root: str = "root"

    def rule_dict(self) -> dict[str, Expr]:
        return dict(self.rules)


# ------------------------------------------------------------------------------- rendering


def _escape_cp(cp: int) -> str:
    return f"\\u{cp:04X}" if cp <= 0xFFFF else f"\\U{cp:08X}"


def _render_string_char(ch: str, escape_all: bool) -> str:
    cp = ord(ch)
    if escape_all or cp < 0x20 or cp == 0x7F:
        return _escape_cp(cp)
    if ch in '"\\':
        return "\\" + ch
    return ch


def _render_class_char(cp: int, escape_all: bool) -> str:
    ch = chr(cp)
    if escape_all or cp < 0x20 or cp == 0x7F:
        return _escape_cp(cp)
    if ch in "\\]-^[":
        return "\\" + ch
    return ch


def render_expr(e: Expr, escape_all: bool = False) -> str:
    """EBNF text of an expression; every compound operand is parenthesised."""
    if isinstance(e, Lit):
        return '"' + "".join(_render_string_char(c, escape_all) for c in e.text) + '"'
    if isinstance(e, Cls):
        if e.negated and not e.ranges:
            return "."
        body = "".join(
            _render_class_char(lo, escape_all)
            + ("" if lo == hi else "-" + _render_class_char(hi, escape_all))
            for lo, hi in e.ranges
        )
        return "[" + ("^" if e.negated else "") + body + "]"
    if isinstance(e, Ref):
        return e.name
    if isinstance(e, Seq):
        return " ".join("(" + render_expr(x, escape_all) + ")" for x in e.items) or '""'
    if isinstance(e, Alt):
        return " | ".join("(" + render_expr(x, escape_all) + ")" for x in e.items)
    if isinstance(e, Rep):
        inner = "(" + render_expr(e.item, escape_all) + ")"
        if e.hi is None:
            suffix = {0: "*", 1: "+"}.get(e.lo, "{%d,}" % e.lo)
        elif e.lo == 0 and e.hi == 1:
            suffix = "?"
        elif e.lo == e.hi:
            suffix = "{%d}" % e.lo
        else:
            suffix = "{%d,%d}" % (e.lo, e.hi)
        return inner + suffix
    if isinstance(e, AnyOrd):
        def members(xs):
            return "(" + ", ".join("(" + render_expr(x, escape_all) + ")" for x in xs) + ")"
        def ints(xs):
            return "(" + ", ".join(str(x) for x in xs) + ")"
        depends = "".join(f", depends=({', '.join(f'({m}, ' + ', '.join(ints(a) for a in alts) + ')' for m, alts in e.depends)})"
                          for _ in [0] if e.depends)
        return (f"AnyOrder(({render_expr(e.sep, escape_all)}), required={members(e.required)}, "
                f"optional={members(e.optional)}, repeated={members(e.repeated)}, "
                f"min={e.lo}, max={-1 if e.hi is None else e.hi}{depends})")
    raise TypeError(e)


def render_grammar(g: GrammarAst, escape_all: bool = False) -> str:
    return "".join(f"{name} ::= {render_expr(body, escape_all)}\n" for name, body in g.rules)


# ------------------------------------------------------------------------- code point sets


def normalize(ranges) -> tuple[tuple[int, int], ...]:
    """Sorted, merged ranges, without surrogates (which have no UTF-8 encoding)."""
    pieces = []
    for lo, hi in ranges:
        # Cut the surrogate block out.
        if lo < SURROGATES[0]:
            pieces.append((lo, min(hi, SURROGATES[0] - 1)))
        if hi > SURROGATES[1]:
            pieces.append((max(lo, SURROGATES[1] + 1), hi))
    pieces = sorted(p for p in pieces if p[0] <= p[1])
    out: list[list[int]] = []
    for lo, hi in pieces:
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def complement(ranges) -> tuple[tuple[int, int], ...]:
    out = []
    nxt = 0
    for lo, hi in normalize(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CP:
        out.append((nxt, MAX_CP))
    return normalize(out)


@dataclass(frozen=True)
class Term:
    """A terminal: one code point from a set of (normalized) ranges."""

    ranges: tuple[tuple[int, int], ...]

    def __contains__(self, cp: int) -> bool:
        return any(lo <= cp <= hi for lo, hi in self.ranges)

    def intersects(self, lo: int, hi: int) -> bool:
        return any(a <= hi and lo <= b for a, b in self.ranges)

    def empty(self) -> bool:
        return not self.ranges


def cls_term(e: Cls) -> Term:
    return Term(complement(e.ranges) if e.negated else normalize(e.ranges))


# ----------------------------------------------------------------------------------- CFG


Symbol = Union[str, Term]  # str: a nonterminal


class Cfg:
    """A plain CFG lowered from a GrammarAst, trimmed to productive productions."""

    def __init__(self, g: GrammarAst):
        self.prods: dict[str, list[tuple[Symbol, ...]]] = {}
        self._fresh = 0
        rules = g.rule_dict()
        for name in rules:
            self.prods["R:" + name] = []
        for name, body in rules.items():
            self.prods["R:" + name].append(tuple(self._lower(body, rules)))
        self.start = "R:" + g.root
        self._trim()
        self.nullable = self._nullable()

    def _new_nt(self) -> str:
        self._fresh += 1
        nt = f"#{self._fresh}"
        self.prods[nt] = []
        return nt

    def _lower(self, e: Expr, rules) -> list[Symbol]:
        """Symbols whose concatenation derives exactly the strings of e."""
        if isinstance(e, Lit):
            return [Term(((ord(c), ord(c)),)) for c in e.text]
        if isinstance(e, Cls):
            return [cls_term(e)]
        if isinstance(e, Seq):
            out: list[Symbol] = []
            for x in e.items:
                out.extend(self._lower(x, rules))
            return out
        if isinstance(e, Alt):
            nt = self._new_nt()
            for x in e.items:
                self.prods[nt].append(tuple(self._lower(x, rules)))
            return [nt]
        if isinstance(e, Ref):
            if e.name not in rules:
                raise KeyError(f"undefined rule {e.name}")
            return ["R:" + e.name]
        if isinstance(e, Rep):
            item = self._new_nt()
            self.prods[item].append(tuple(self._lower(e.item, rules)))
            out = [item] * e.lo
            if e.hi is None:
                # T -> "" | item T
                tail = self._new_nt()
                self.prods[tail] = [(), (item, tail)]
                out.append(tail)
            elif e.hi > e.lo:
                # O_k -> "" | item O_{k-1};  O_1 -> "" | item
                prev: Optional[str] = None
                for _ in range(e.hi - e.lo):
                    opt = self._new_nt()
                    self.prods[opt] = [(), (item,) if prev is None else (item, prev)]
                    prev = opt
                out.append(prev)
            return out
        if isinstance(e, AnyOrd):
            return self._lower_any_order(e, rules)
        raise TypeError(e)

    def _lower_any_order(self, e: AnyOrd, rules) -> list[Symbol]:
        """The plain CFG of an AnyOrd: one nonterminal per (members seen, count), 2^n of them."""
        once = list(e.required) + list(e.optional)
        syms = [tuple(self._lower(x, rules)) for x in once + list(e.repeated)]
        sep = tuple(self._lower(e.sep, rules))
        cap = e.hi if e.hi is not None else max(e.lo, 1)
        nts: dict = {}

        def state(seen: frozenset, count: int) -> str:
            key = (seen, count)
            if key in nts:
                return nts[key]
            nt = nts[key] = self._new_nt()
            if count >= e.lo and all(i in seen for i in range(len(e.required))) and all(
                    m not in seen or any(all(k in seen for k in alt) for alt in alts) for m, alts in e.depends):
                self.prods[nt].append(())
            if e.hi is None or count < e.hi:
                for i, m in enumerate(syms):
                    if i < len(once) and i in seen:
                        continue
                    nxt = state(seen | {i} if i < len(once) else seen, min(count + 1, cap))
                    self.prods[nt].append((sep if count > 0 else ()) + m + (nxt,))
            return nt

        return [state(frozenset(), 0)]

    def _trim(self) -> None:
        productive: set[str] = set()

        def ok(sym: Symbol) -> bool:
            return (not sym.empty()) if isinstance(sym, Term) else sym in productive

        changed = True
        while changed:
            changed = False
            for nt, prods in self.prods.items():
                if nt not in productive and any(all(ok(s) for s in p) for p in prods):
                    productive.add(nt)
                    changed = True
        self.prods = {
            nt: [p for p in prods if all(ok(s) for s in p)]
            for nt, prods in self.prods.items()
            if nt in productive
        }

    def _nullable(self) -> set[str]:
        nullable: set[str] = set()
        changed = True
        while changed:
            changed = False
            for nt, prods in self.prods.items():
                if nt not in nullable and any(
                    all(isinstance(s, str) and s in nullable for s in p) for p in prods
                ):
                    nullable.add(nt)
                    changed = True
        return nullable

    @property
    def empty_language(self) -> bool:
        return self.start not in self.prods


# --------------------------------------------------------------------------------- Earley

Item = tuple  # (nonterminal, production index, dot, origin)


class EarleySet:
    """A closed Earley set, with its items indexed by the nonterminal they wait on."""

    def __init__(self, items: set, prods):
        self.items = frozenset(items)
        self.waiting: dict[str, list[Item]] = {}
        for it in self.items:
            nt, p, dot, _ = it
            prod = prods[nt][p]
            if dot < len(prod) and isinstance(prod[dot], str):
                self.waiting.setdefault(prod[dot], []).append(it)


class Recognizer:
    """Earley recognizer over code points. States are immutable (`Parse` objects)."""

    def __init__(self, g: GrammarAst):
        self.cfg = Cfg(g)

    @property
    def empty_language(self) -> bool:
        return self.cfg.empty_language

    def initial(self) -> "Parse":
        if self.empty_language:
            raise ValueError("the grammar derives no string")
        first = {(self.cfg.start, i, 0, 0) for i in range(len(self.cfg.prods[self.cfg.start]))}
        return Parse(self, [self._close(first, [], 0)])

    def _close(self, seed: set, chart: list, k: int) -> EarleySet:
        """Earley closure of set k (predict + complete, nullable-aware)."""
        prods = self.cfg.prods
        items = set(seed)
        work = list(seed)
        while work:
            nt, p, dot, origin = work.pop()
            prod = prods[nt][p]
            new = []
            if dot < len(prod):
                sym = prod[dot]
                if isinstance(sym, str):
                    for j in range(len(prods[sym])):
                        new.append((sym, j, 0, k))
                    if sym in self.cfg.nullable:
                        new.append((nt, p, dot + 1, origin))
            elif origin != k:
                # Complete. (Parents in this same set that wait on nt were, or will be, advanced
                # by the nullable rule above: a completion with origin == k means nt is nullable.)
                for pnt, pp, pdot, porigin in chart[origin].waiting.get(nt, ()):
                    new.append((pnt, pp, pdot + 1, porigin))
            for it in new:
                if it not in items:
                    items.add(it)
                    work.append(it)
        return EarleySet(items, prods)

    def step(self, chart: list, cp: int) -> Optional[EarleySet]:
        prods = self.cfg.prods
        seed = set()
        for nt, p, dot, origin in chart[-1].items:
            prod = prods[nt][p]
            if dot < len(prod) and isinstance(prod[dot], Term) and cp in prod[dot]:
                seed.add((nt, p, dot + 1, origin))
        if not seed:
            return None
        return self._close(seed, chart, len(chart))


class Parse:
    """The chart after some code points; every item in it can be completed to a sentence
    (the CFG has only productive productions), so a non-empty chart means 'viable prefix'."""

    def __init__(self, rec: Recognizer, chart: list):
        self.rec = rec
        self.chart = chart

    def feed(self, cp: int) -> Optional["Parse"]:
        nxt = self.rec.step(self.chart, cp)
        return None if nxt is None else Parse(self.rec, self.chart + [nxt])

    def feed_text(self, text: str) -> Optional["Parse"]:
        state: Optional[Parse] = self
        for ch in text:
            state = state.feed(ord(ch))
            if state is None:
                return None
        return state

    @property
    def complete(self) -> bool:
        start = self.rec.cfg.start
        prods = self.rec.cfg.prods
        return any(
            nt == start and origin == 0 and dot == len(prods[nt][p])
            for nt, p, dot, origin in self.chart[-1].items
        )

    def next_terms(self) -> list[Term]:
        prods = self.rec.cfg.prods
        out = []
        for nt, p, dot, origin in self.chart[-1].items:
            prod = prods[nt][p]
            if dot < len(prod) and isinstance(prod[dot], Term):
                out.append(prod[dot])
        return out

    def can_continue(self) -> bool:
        return bool(self.next_terms())


# ------------------------------------------------------------------------------- bytes


def utf8_completion_range(partial: bytes) -> Optional[tuple[int, int]]:
    """The code points whose UTF-8 encoding starts with `partial` (an incomplete sequence of
    1..3 bytes), as one inclusive range (surrogates still inside); None if there are none."""
    lead = partial[0]
    if 0xC2 <= lead <= 0xDF:
        n, lo_ok, hi_ok = 2, 0x80, 0x7FF
    elif 0xE0 <= lead <= 0xEF:
        n, lo_ok, hi_ok = 3, 0x800, 0xFFFF
    elif 0xF0 <= lead <= 0xF4:
        n, lo_ok, hi_ok = 4, 0x10000, MAX_CP
    else:
        return None
    if len(partial) >= n or any(not 0x80 <= b <= 0xBF for b in partial[1:]):
        return None

    def decode(seq: bytes) -> int:
        value = seq[0] & (0xFF >> (n + 1))
        for b in seq[1:]:
            value = (value << 6) | (b & 0x3F)
        return value

    pad = n - len(partial)
    lo = max(decode(partial + b"\x80" * pad), lo_ok)
    hi = min(decode(partial + b"\xbf" * pad), hi_ok)
    return (lo, hi) if lo <= hi else None


class ByteState:
    """A code point `Parse` plus the bytes of an unfinished UTF-8 sequence."""

    def __init__(self, parse: Parse, pending: bytes = b""):
        self.parse = parse
        self.pending = pending

    def feed_byte(self, b: int) -> Optional["ByteState"]:
        pending = self.pending + bytes([b])
        try:
            text = pending.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            nxt = self.parse.feed(ord(text)) if len(text) == 1 else None
            return None if nxt is None else ByteState(nxt)
        rng = utf8_completion_range(pending)
        if rng is None:
            return None
        lo, hi = rng
        # Some non-surrogate code point in [lo, hi] must be allowed next.
        pieces = normalize([(lo, hi)])
        if any(t.intersects(a, c) for t in self.parse.next_terms() for a, c in pieces):
            return ByteState(self.parse, pending)
        return None

    def feed_bytes(self, data: bytes) -> Optional["ByteState"]:
        state: Optional[ByteState] = self
        for b in data:
            state = state.feed_byte(b)
            if state is None:
                return None
        return state

    @property
    def complete(self) -> bool:
        return not self.pending and self.parse.complete


# ------------------------------------------------------------------------------ sampling


def sample_sentence(rec: Recognizer, rng: random.Random, budget: int = 12,
                    alphabet: str = "ab{}") -> str:
    """A random sentence of the (trimmed) CFG; after `budget` expansions, prefers the shortest
    derivations so that recursion ends."""
    cfg = rec.cfg
    # Height of the shortest derivation of each nonterminal (fixpoint).
    inf = float("inf")
    height = {nt: inf for nt in cfg.prods}

    def prod_height(p) -> float:
        return 1 + max([0] + [height[s] if isinstance(s, str) else 0 for s in p])

    changed = True
    while changed:
        changed = False
        for nt, prods in cfg.prods.items():
            h = min(prod_height(p) for p in prods)
            if h < height[nt]:
                height[nt] = h
                changed = True

    out: list[str] = []
    steps = [0]

    def pick_cp(t: Term) -> int:
        preferred = [ord(c) for c in alphabet if ord(c) in t]
        if preferred and rng.random() < 0.8:
            return rng.choice(preferred)
        lo, hi = rng.choice(t.ranges)
        return rng.randint(lo, min(hi, lo + 300))

    def expand(sym: Symbol, depth: int) -> None:
        if isinstance(sym, Term):
            out.append(chr(pick_cp(sym)))
            return
        steps[0] += 1
        prods = cfg.prods[sym]
        if steps[0] > budget or depth > 40:
            best = min(prod_height(p) for p in prods)
            prods = [p for p in prods if prod_height(p) == best]
        for s in rng.choice(prods):
            expand(s, depth + 1)

    expand(cfg.start, 0)
    return "".join(out)
