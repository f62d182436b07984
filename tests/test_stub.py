"""The committed xg2_jax/_core.pyi matches what nanobind's stubgen makes of the built module."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO_STUB = Path(__file__).resolve().parents[1] / "xg2_jax" / "_core.pyi"


def test_core_stub_in_sync(tmp_path):
    pytest.importorskip("nanobind.stubgen")
    if not REPO_STUB.exists():
        pytest.skip("not running from a source checkout")
    out = tmp_path / "_core.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "xg2_jax._core", "-o", str(out)],
                   check=True, cwd=tmp_path)
    assert out.read_text() == REPO_STUB.read_text(), (
        "xg2_jax/_core.pyi is stale: regenerate with "
        "`python -m nanobind.stubgen -m xg2_jax._core -o xg2_jax/_core.pyi`")
