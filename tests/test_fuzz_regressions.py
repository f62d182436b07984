"""Replays the fuzz corpora and the saved crash inputs through the fuzz harnesses, and runs a
short deterministic mutation-fuzzing pass of each harness.

Every input runs in a subprocess (``fuzz/replay.py``, ``fuzz/minifuzz.py``) with a timeout, so
a native crash or a hang fails one test instead of killing the run. atheris is not needed.

A file under ``fuzz/crashes/<harness>/`` is a bug reproducer: it must pass once the bug is
fixed. Bugs that are still open are listed in KNOWN_OPEN (strict xfail: a fix makes the test
XPASS, then delete the entry).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz"
sys.path.insert(0, str(FUZZ))

from registry import HARNESSES  # noqa: E402

REPLAY_TIMEOUT_S = 120

# "<harness>/<file>": the open bug it reproduces (observed behaviour).
KNOWN_OPEN: dict = {}  # all reproduced bugs are fixed; add new ones here


def _env() -> dict:
    # The subprocesses import xg2_jax as this process does (installed, or the caller's
    # PYTHONPATH); adding the checkout would shadow an installed build with sources that have
    # no compiled extension (fuzz/common.py falls back to the checkout only if nothing imports).
    env = dict(os.environ)
    env.setdefault("XG2_FUZZ_TIME_LIMIT", "20")
    if "asan" in env.get("LD_PRELOAD", ""):  # replay.py's RLIMIT_AS is off under ASan
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":hard_rss_limit_mb=6144").lstrip(":")
    return env


def _files():
    out = []
    for kind in ("corpus", "crashes"):
        for name in sorted(HARNESSES):
            d = FUZZ / kind / name
            if d.is_dir():
                out += [(kind, name, p) for p in sorted(d.iterdir()) if p.is_file()]
    return out


_RESULTS: dict = {}


def _replay_all() -> dict:
    """Replays every file in one subprocess; after a crash or a hang, the file that did not
    report is marked failed and the rest continue in a new process."""
    results: dict = {}
    pending = [(name, path) for _, name, path in _FILES]
    while pending:
        args = [f"{name}:{path}" for name, path in pending]
        try:
            proc = subprocess.run([sys.executable, str(FUZZ / "replay.py"), "--mixed", *args],
                                  capture_output=True, text=True, timeout=REPLAY_TIMEOUT_S,
                                  env=_env(), cwd=tempfile.gettempdir())
            out, err, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc = f"timeout after {REPLAY_TIMEOUT_S} s", "timeout"
        for line in out.splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                results[Path(rec["file"])] = rec
        pending = [(n, p) for n, p in pending if p not in results]
        if pending:  # the first file without a result crashed or hung the process
            name, bad = pending.pop(0)
            results[bad] = {"status": "fail", "error": f"process ended (rc={rc}): {err[-2000:]}"}
    return results


def _result(path: Path) -> dict:
    if not _RESULTS:
        _RESULTS.update(_replay_all())
    return _RESULTS[path]


_FILES = _files()


def _params():
    out = []
    for kind, name, path in _FILES:
        rel = f"{name}/{path.name}"
        marks = []
        if kind == "crashes" and rel in KNOWN_OPEN:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_OPEN[rel]))
        out.append(pytest.param(kind, name, path, id=f"{kind}/{rel}", marks=marks))
    return out


@pytest.mark.parametrize("kind,name,path", _params())
def test_replay(kind, name, path):
    rec = _result(path)
    assert rec["status"] == "ok", f"{kind}/{name}/{path.name}: {rec['error']}"


def test_known_open_entries_exist():
    present = {f"{n}/{p.name}" for k, n, p in _FILES if k == "crashes"}
    assert set(KNOWN_OPEN) <= present


def test_short_random_run(tmp_path):
    """A few hundred mutated inputs per harness (deterministic seed), all harnesses in one
    subprocess. Inputs that hit one of the bugs pinned above are skipped (they have their own
    xfail test); anything new fails, and the input is saved under tmp_path and printed."""
    cmd = [sys.executable, str(FUZZ / "minifuzz.py"), *sorted(HARNESSES), "-n", "250",
           "--count", "json_schema=120", "--count", "regex=150", "--seed", "1",
           "--tolerate-known", "--save-to", str(tmp_path)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=_env(),
                              cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        pytest.fail("the random run hung (180 s)")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
