"""The docstring examples of every module of the package (``xg2_jax`` and ``xg2_jax.models``),
run as doctests against the imported (installed) package."""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil

import pytest

# Modules whose examples need more than the CPU test environment has.
# xg2_jax.integrations.vllm needs vLLM (tests/integration runs it in its own environment).
SKIP = {"xg2_jax.integrations.vllm", "xg2_jax.integrations.vllm_server"}


def _module_names() -> list[str]:
    import xg2_jax.models

    names = {"xg2_jax", "xg2_jax.models"}
    # The package's own folders (an editable install's __path__ may list more).
    for package in (xg2_jax, xg2_jax.models):
        folder = [os.path.dirname(package.__file__)]
        for info in pkgutil.walk_packages(folder, prefix=f"{package.__name__}."):
            if not info.name.endswith("__main__"):
                names.add(info.name)
    return sorted(names - SKIP)


MODULES = _module_names()


def test_modules_found():
    assert {"xg2_jax._src.decode", "xg2_jax.models.llama", "xg2_jax.testing"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name, globs=vars(module).copy()) if t.examples]
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
