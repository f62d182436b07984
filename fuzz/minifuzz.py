"""A small deterministic mutation fuzzer that needs no atheris (used by pytest and CI).

It mutates the seed corpus of a harness (byte flips, inserts, deletes, duplications, splices
and dictionary words) with a seeded RNG and runs each input through the harness.

Usage: python fuzz/minifuzz.py <harness>... [-n 300] [--count NAME=N] [--seed 0]
       [--save-to DIR | --no-save] [--tolerate-known]
Exit status 1 on the first failing input; it is written to DIR (default fuzz/crashes/<harness>)
as crash-<sha1> and printed as hex.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import FUZZ_DIR, guarded  # noqa: E402
from registry import DICTIONARY, HARNESSES, word_bytes  # noqa: E402


def seeds(name: str) -> list[bytes]:
    d = FUZZ_DIR / "corpus" / name
    out = [p.read_bytes() for p in sorted(d.iterdir())] if d.is_dir() else []
    return out or [b""]


def mutate(rng: random.Random, data: bytes, pool: list[bytes], words: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(b))
        if op == 0 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[pos:pos] = bytes([rng.randrange(256)])
        elif op == 2 and b:
            del b[pos:pos + rng.randint(1, 8)]
        elif op == 3 and b:
            start = rng.randrange(len(b))
            chunk = b[start:start + rng.randint(1, 16)]
            b[pos:pos] = chunk * rng.randint(1, 4)
        elif op == 4:
            other = rng.choice(pool)
            start = rng.randint(0, len(other))
            b[pos:] = other[start:start + rng.randint(0, 64)] + b[pos:]
        elif op in (5, 6) and words:
            b[pos:pos] = rng.choice(words)
    return bytes(b[:4096])


def inputs(name: str, n: int, seed: int):
    rng = random.Random(f"{name}:{seed}")
    pool = seeds(name)
    words = [word_bytes(w) for w in DICTIONARY.get(name, [])]
    for s in pool:
        yield s
    for _ in range(n):
        yield mutate(rng, rng.choice(pool), pool, words)


def run(name: str, n: int, seed: int, save_to: Path | None, tolerate: bool = False) -> int:
    one_input = importlib.import_module(HARNESSES[name]).one_input
    if tolerate:
        one_input = guarded(one_input, tolerate=True)
    t0 = time.perf_counter()
    count = 0
    for data in inputs(name, n, seed):
        count += 1
        try:
            one_input(data)
        except Exception:  # noqa: BLE001 - any escape is a finding
            traceback.print_exc()
            sys.stderr.write(f"failing input ({len(data)} bytes): {data.hex()}\n")
            if save_to is not None:
                save_to.mkdir(parents=True, exist_ok=True)
                path = save_to / f"crash-{hashlib.sha1(data).hexdigest()}"
                path.write_bytes(data)
                sys.stderr.write(f"written to {path}\n")
            return 1
    print(f"{name}: {count} inputs in {time.perf_counter() - t0:.1f} s, no failure")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("harness", nargs="+", choices=sorted(HARNESSES),
                    help="one or more harnesses")
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-to", type=Path, default=None)
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--tolerate-known", action="store_true",
                    help="ignore inputs that hit already reported bugs (common.KNOWN_BUG_PATTERNS)")
    ap.add_argument("--count", action="append", default=[], metavar="NAME=N",
                    help="a different number of inputs for one harness")
    args = ap.parse_args()
    args.counts = {k: int(v) for k, v in (c.split("=", 1) for c in args.count)}
    for name in args.harness:
        save = None if args.no_save else (args.save_to or FUZZ_DIR / "crashes" / name)
        if run(name, args.counts.get(name, args.n), args.seed, save, args.tolerate_known):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
