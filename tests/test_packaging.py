"""What a user installs: the wheel's contents, typing marker, and the message a source-tree
shadowing gives instead of a bare circular-import error."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_py_typed_and_models_ship_with_the_package():
    import xg2_jax.models

    assert resources.files("xg2_jax").joinpath("py.typed").is_file()
    assert xg2_jax.models.LlamaForCausalLM.__module__ == "xg2_jax.models.llama"
    from xg2_jax import models  # the documented spelling

    assert models is xg2_jax.models


def test_installed_wheel_records_models_and_py_typed():
    files = {str(f) for f in importlib.metadata.files("xg2-jax") or []}
    if "xg2_jax/__init__.py" not in files:
        pytest.skip("editable install: the package is served from the source tree")
    assert {"xg2_jax/py.typed", "xg2_jax/models/__init__.py", "xg2_jax/models/llama.py",
            "xg2_jax/testing.py"} <= files
    assert not any(f.startswith("models/") for f in files)  # no bare top-level `models`


def test_source_tree_without_build_explains_itself(tmp_path):
    shutil.copytree(ROOT / "xg2_jax", tmp_path / "xg2_jax",
                    ignore=shutil.ignore_patterns("_core*.so", "_core*.pyd", "__pycache__"))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # An editable install's import hook would serve the build: drop it, as a plain install has.
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path "
            "if 'ScikitBuild' not in type(f).__name__]; import xg2_jax")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "no built native module" in proc.stderr
    assert "circular import" not in proc.stderr.splitlines()[-1]
