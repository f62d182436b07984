"""Replays input files through a harness, one JSON line per file (used by the pytest replay).

Usage: python fuzz/replay.py <harness> FILE...
       python fuzz/replay.py --mixed HARNESS:FILE...   (several harnesses in one process)
Each line: {"file": ..., "status": "ok" | "fail", "error": "...", "seconds": ...}. A crash
ends the process (the caller sees the missing lines); a hang is the caller's timeout.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _limit_memory() -> None:
    # Keep a runaway allocation from taking the machine: fail it as MemoryError instead.
    # (Not under ASan, which reserves terabytes of virtual shadow memory.)
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        return
    gib = float(os.environ.get("XG2_FUZZ_MEMORY_GIB", "6"))
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (int(gib * 2**30), int(gib * 2**30)))
    except (ImportError, ValueError, OSError):
        pass


def main(argv: list[str]) -> int:
    from registry import HARNESSES

    if argv[0] == "--mixed":
        jobs = [a.split(":", 1) for a in argv[1:]]
    else:
        jobs = [(argv[0], f) for f in argv[1:]]
    _limit_memory()
    for name, f in jobs:
        t0 = time.perf_counter()
        try:
            one_input = importlib.import_module(HARNESSES[name]).one_input
            one_input(Path(f).read_bytes())
            rec = {"status": "ok", "error": ""}
        except BaseException as e:  # noqa: BLE001 - reported, not raised
            rec = {"status": "fail", "error": f"{type(e).__name__}: {str(e)[:500]}"}
        rec.update(file=f, seconds=round(time.perf_counter() - t0, 3))
        print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
