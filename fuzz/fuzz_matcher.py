"""Fuzz harness: the GrammarMatcher API. The input is a program of matcher calls
(accept_token / accept_string / rollback / reset / fork / fill with bad buffers / jump-forward)
run against a few fixed compiled grammars, checking the documented invariants after each call:

* an allowed token is accepted, a forbidden one rejected with the state unchanged;
* rollback(k) restores exactly the mask seen k steps earlier; reset restores the first mask;
* a fork is independent of its parent;
* misuse (token id out of range, rollback past the history, accept after termination, a
  bitmask of the wrong dtype/shape/index) raises an ``XG2Error`` subclass and leaves the matcher
  unchanged and usable;
* the jump-forward string is accepted; ``is_completed()`` means a stop token is allowed.

Byte 0 picks the grammar and matcher options; every following byte starts one operation.
"""

from __future__ import annotations

import numpy as np
from common import (
    Bytes,
    InvariantViolation,
    atheris_main,
    check_mask_agrees,
    mask_of,
    small_compiler,
    small_tokenizer,
    xg,
)

GRAMMARS = [
    ("schema", '{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"array",'
               '"items":{"type":"string","maxLength":3}}},"required":["a"]}'),
    ("ebnf", 'root ::= ("ab" | "a" [0-9]{1,3})+ "!"?'),
    ("regex", "[a-c]{2,40}x|é+"),
    ("json", None),
]
_COMPILED = {}


def compiled(i: int) -> "xg.CompiledGrammar":
    if i not in _COMPILED:
        kind, src = GRAMMARS[i]
        c = small_compiler()
        if kind == "schema":
            _COMPILED[i] = c.compile_json_schema(src)
        elif kind == "ebnf":
            _COMPILED[i] = c.compile_grammar(src)
        elif kind == "regex":
            _COMPILED[i] = c.compile_grammar(xg.Grammar.from_regex(src))
        else:
            _COMPILED[i] = c.compile_builtin_json_grammar()
    return _COMPILED[i]


class Tracked:
    """A matcher plus the mask it showed after each accepted step (index = history length)."""

    def __init__(self, matcher, masks):
        self.m = matcher
        self.masks = masks

    def check(self, what: str, V: int) -> np.ndarray:
        n = self.m.num_accepted_tokens
        if n != len(self.masks) - 1:
            raise InvariantViolation(f"after {what}: history {n}, expected {len(self.masks) - 1}")
        mask = mask_of(self.m, V)
        if not np.array_equal(mask, self.masks[-1]):
            diff = np.flatnonzero(mask != self.masks[-1])[:8].tolist()
            raise InvariantViolation(f"after {what}: mask changed (tokens {diff})")
        return mask


def _expect_error(cls, fn, *args):
    try:
        fn(*args)
    except cls:
        return
    except xg.XG2Error as e:
        raise InvariantViolation(f"{fn.__name__}{args!r}: expected {cls.__name__}, got "
                                 f"{type(e).__name__}: {e}") from e
    raise InvariantViolation(f"{fn.__name__}{args!r}: expected {cls.__name__}, nothing raised")


def one_input(data: bytes) -> None:
    b = Bytes(data)
    head = b.u8()
    cg = compiled(head % len(GRAMMARS))
    tok = small_tokenizer()
    V = tok.vocab_size
    stops = tok.stop_token_ids
    auto_end = bool(head & 0x10)
    m0 = xg.GrammarMatcher(cg, terminate_without_stop_token=auto_end)
    live = [Tracked(m0, [mask_of(m0, V)])]
    cur = live[0]
    ops = 0
    while b.remaining() and ops < 64:
        ops += 1
        op = b.u8() % 11
        m, masks = cur.m, cur.masks
        allowed = masks[-1]
        term = m.has_ended()  # nothing is accepted from here (is_terminated: xgrammar's notion)
        if op in (0, 1, 2):
            if op == 2:
                t = b.u32() % (V + 64) - 32  # in range, negative or past the end
            else:
                pool = np.flatnonzero(allowed if op == 0 else ~allowed)
                if len(pool) == 0:
                    continue
                t = int(pool[b.u16() % len(pool)])
            if not 0 <= t < V:
                _expect_error(xg.InvalidArgumentError, m.accept_token, t)
            elif term:
                # Ended: every token is refused (the mask allows none).
                if m.accept_token(t) or allowed.any() or not m.has_ended():
                    raise InvariantViolation(f"accept_token({t}) after the end disagrees with the mask")
                if not np.array_equal(mask_of(m, V), allowed):
                    raise InvariantViolation(f"accept_token({t}) after the end changed the mask")
            else:
                got = m.accept_token(t)
                if got != bool(allowed[t]):
                    raise InvariantViolation(f"accept_token({t}) = {got}, mask says {bool(allowed[t])}")
                if got:
                    masks.append(mask_of(m, V))
        elif op == 3:
            n = b.u8() % (len(masks) + 2)
            if n > len(masks) - 1:
                _expect_error(xg.MatcherStateError, m.rollback, n)
            else:
                m.rollback(n)
                del masks[len(masks) - n:]
        elif op == 4:
            m.reset()
            del masks[1:]
        elif op == 5 and len(live) < 6:
            f = m.fork()
            live.append(Tracked(f, list(masks)))
            cur = live[-1]
        elif op == 6:
            cur = live[b.u8() % len(live)]
        elif op == 7:
            kind = b.u8() % 5
            W = (V + 31) // 32
            if kind == 0:
                bad, idx = np.zeros((1, W), np.int64), 0
            elif kind == 1:
                bad, idx = np.zeros((1, W - 1), np.int32), 0
            elif kind == 2:
                bad, idx = np.zeros((2, W), np.int32), 2 + b.u8()
            elif kind == 3:
                bad, idx = np.zeros((2, 2 * W), np.int32)[:, ::2], 0
            else:
                bad, idx = np.zeros((1, W), np.int32), -1 - b.u8()
            _expect_error(xg.InvalidArgumentError, m.fill_next_token_bitmask, bad, idx)
        elif op == 8:
            s = b.take(b.u8() % 5)
            if term:
                if m.accept_string(s):
                    raise InvariantViolation(f"accept_string({s!r}) accepted after the end")
            elif m.accept_string(s):
                masks.append(mask_of(m, V))
        elif op == 9 and not term:
            jf = m.find_jump_forward_bytes()
            if jf and not m.fork().accept_string(jf):
                raise InvariantViolation(f"jump-forward bytes {jf!r} are not accepted")
        elif op == 10 and not term:
            mask = check_mask_agrees(m, V)
            # Stop tokens are allowed exactly where the output can end, but never with
            # terminate_without_stop_token (as xgrammar).
            if m.is_completed() and not auto_end and not any(mask[s] for s in stops):
                raise InvariantViolation("is_completed() but no stop token is allowed")
            if auto_end and any(mask[s] for s in stops):
                raise InvariantViolation("a stop token allowed with terminate_without_stop_token")
        cur.check(f"op {op}", V)
    for t in live:  # forks never disturbed each other
        t.check("end", V)


if __name__ == "__main__":
    atheris_main(one_input)
