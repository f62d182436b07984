"""The Colab notebooks (notebooks/*.py, jupytext percent sources, and the .ipynb generated
from them) are in sync and execute top to bottom on CPU.

The notebooks run in a kernel on this interpreter, in a temporary folder, importing xg2_jax
from where this test process imports it (the installed package in CI), so they can only use
package data and the public API. Cells tagged ``tpu-only`` are dropped before execution.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("*.py"))
TPU_ONLY = "tpu-only"
CELL_TIMEOUT_S = 240

with warnings.catch_warnings():
    # jupyter_core announces its move to platformdirs with a DeprecationWarning at import.
    warnings.simplefilter("ignore", DeprecationWarning)
    nbformat = pytest.importorskip("nbformat")
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")


def _cells(nb) -> list[tuple[str, str, list]]:
    return [(c.cell_type, c.source, list(c.metadata.get("tags", []))) for c in nb.cells]


def test_notebooks_exist():
    assert {"quickstart", "tool_calling", "speculative_decoding", "tpu"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_ipynb_in_sync_with_source(name):
    source = jupytext.read(NOTEBOOKS / f"{name}.py")
    ipynb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert _cells(ipynb) == _cells(source), (
        f"notebooks/{name}.ipynb is stale: run `jupytext --to ipynb notebooks/{name}.py`")
    for cell in ipynb.cells:
        assert cell.cell_type != "code" or not cell.outputs, f"{name}.ipynb has outputs"


@pytest.mark.parametrize("name", NAMES)
def test_colab_badge_and_install_cell(name):
    cells = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells
    badge = ("https://colab.research.google.com/github/xg2-jax/xg2-jax/blob/main/notebooks/"
             f"{name}.ipynb")
    assert cells[0].cell_type == "markdown" and badge in cells[0].source
    first_code = next(c for c in cells if c.cell_type == "code")
    assert '"google.colab" in sys.modules' in first_code.source
    assert "%pip install" in first_code.source


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory, monkeypatch_module):
    """A kernelspec for this interpreter, found first through JUPYTER_PATH."""
    import xg2_jax

    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "xg2-notebook-test"
    spec.mkdir(parents=True)
    env = {
        # Where this process found xg2_jax (site-packages in CI), and nothing else.
        "PYTHONPATH": str(Path(xg2_jax.__file__).resolve().parents[1]),
        "JAX_PLATFORMS": "cpu",
    }
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "xg2-jax test kernel", "language": "python", "env": env}))
    monkeypatch_module.setenv("JUPYTER_PATH", str(root))
    monkeypatch_module.setenv("JUPYTER_PLATFORM_DIRS", "1")
    return spec.name


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.mark.parametrize("name", NAMES)
def test_notebook_executes(name, kernel_name, tmp_path):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if TPU_ONLY not in c.metadata.get("tags", [])]
    client = nbclient.NotebookClient(nb, kernel_name=kernel_name, timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(tmp_path)}})
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        # Deprecations inside the Jupyter client stack (e.g. newer Pythons) are not ours.
        warnings.filterwarnings("ignore", category=DeprecationWarning,
                                module=r"(jupyter_client|jupyter_core|nbclient|zmq)")
        client.execute()
    nbformat.write(nb, tmp_path / f"{name}.ipynb")  # the executed notebook, for a look
    print(f"{name}: executed in {time.perf_counter() - t0:.1f} s")
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    stderr = "".join(o.text for o in outputs if o.get("name") == "stderr")
    assert "Warning" not in stderr, stderr  # e.g. a figure that could not be shown
