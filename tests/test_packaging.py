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


def test_native_module_imports_no_python_module_by_name():
    # The package hands its error classes to the core (_set_error_classes) instead.
    for source in (ROOT / "native" / "bindings").glob("*.cc"):
        assert "import_(" not in source.read_text(encoding="utf-8"), source.name


def test_core_raises_the_classes_the_package_registered():
    import xg2_jax as xg

    with pytest.raises(xg.UnsupportedSchemaError, match="uniqueItems"):  # by kind, not by text
        xg.Grammar.from_json_schema({"type": "array", "items": {"type": "object"},
                                     "uniqueItems": True})
    with pytest.raises(xg.GrammarSyntaxError) as e:
        xg.Grammar.from_ebnf('root ::= "a" |\n  ]')
    assert e.value.line == 2
    with pytest.raises(xg.InvalidArgumentError):
        from xg2_jax import _core

        _core._set_error_classes({"XG2Error": xg.XG2Error})  # incomplete: refused, kept as is
    with pytest.raises(xg.UnsupportedSchemaError):
        xg.Grammar.from_json_schema({"type": "array", "items": {"type": "object"},
                                     "uniqueItems": True})


def test_source_files_stay_reviewable():
    # The layout's size bounds: native sources at most 1,200 lines, Python modules 700.
    native = [p for p in (ROOT / "native").rglob("*") if p.suffix in (".cc", ".h")]
    python = [*(ROOT / "xg2_jax").rglob("*.py"), *(ROOT / "models").rglob("*.py")]
    assert len(native) > 50 and len(python) > 20
    for paths, limit in ((native, 1200), (python, 700)):
        for path in paths:
            lines = path.read_text(encoding="utf-8").count("\n")
            assert lines <= limit, f"{path.relative_to(ROOT)}: {lines} lines (limit {limit})"
