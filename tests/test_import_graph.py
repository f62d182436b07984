"""The package's import graph has no cycle, counting imports inside functions too.

A cycle that only works because one side imports lazily still couples the two modules both
ways; the layout keeps every dependency one-directional (errors <- bitmask <- matcher <- batch
<- host_loop <- decode ...). The graph is read from the sources with ``ast`` (docstring
examples are not code), over ``xg2_jax/`` and ``models/`` (shipped as ``xg2_jax.models``).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"xg2_jax": ROOT / "xg2_jax", "xg2_jax.models": ROOT / "models"}


def _modules() -> dict[str, Path]:
    mods = {}
    for package, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join([package, *parts])] = path
    mods["xg2_jax._core"] = ROOT / "xg2_jax" / "_core.pyi"  # the native module: a leaf
    return mods


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports (the deepest known module of each import)."""
    if path.suffix == ".pyi":
        return set()
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _package_of(name, path).split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import name`: the submodule pkg.name where there is one, else pkg
            # (a package's own __init__, run for every submodule import, is not an edge).
            targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                           for alias in node.names)
    resolved = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, set(mods)) for name, path in mods.items()}


def test_import_graph_has_no_cycle():
    graph = _graph()
    assert len(graph) > 20  # the walk found the package
    assert _cycles(graph) == []


def test_cycle_finder_sees_lazy_imports():
    # The check itself must fail on a cycle closed by an import inside a function.
    graph = _graph()
    graph["xg2_jax._src.errors"] = graph["xg2_jax._src.errors"] | {"xg2_jax._src.matcher"}
    assert any("xg2_jax._src.matcher" in c and "xg2_jax._src.errors" in c for c in _cycles(graph))
    assert "xg2_jax._src.draft_tree" in graph["xg2_jax._src.matcher"]
    assert "xg2_jax._src.package_data" in graph["xg2_jax._src.cli_generate"]


def test_type_checking_block_names_every_lazy_export():
    # Type checkers see the lazily imported JAX names through the TYPE_CHECKING block.
    import xg2_jax

    tree = ast.parse((ROOT / "xg2_jax" / "__init__.py").read_text(encoding="utf-8"))
    typed = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
             for imp in node.body if isinstance(imp, ast.ImportFrom) for alias in imp.names}
    assert typed == set(xg2_jax._JAX_EXPORTS)
    for name, module in xg2_jax._JAX_EXPORTS.items():  # and each lives where the map says
        assert getattr(importlib.import_module(f"xg2_jax._src.{module}"), name) is not None
