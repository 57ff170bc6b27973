"""No import circle among the modules of ``fedenv`` and ``agents``, counting every import statement
(module level, inside functions and under ``typing.TYPE_CHECKING``), read with :mod:`ast`."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``root / package`` (``__init__.py`` names
    its package)."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (file ``path``) imports anywhere in its body.

    ``import a.b`` names ``a.b``; ``from a import b`` names ``a.b`` when that is a module, else ``a``;
    relative imports are resolved against the module's package.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {module for module in found if module in known and module != name}


def import_graph(root: Path, packages: tuple[str, ...]) -> nx.DiGraph:
    """Directed graph: an edge ``a -> b`` when module ``a`` imports module ``b``."""
    modules = module_files(root, packages)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        graph.add_edges_from((name, target) for target in imported_modules(name, path, set(modules)))
    return graph


def import_circles(root: Path, packages: tuple[str, ...]) -> list[list[str]]:
    """Each strongly connected set of more than one module (a circle of imports), sorted."""
    return sorted(sorted(c) for c in nx.strongly_connected_components(import_graph(root, packages)) if len(c) > 1)


def test_fedenv_and_agents_have_no_import_circle():
    assert import_circles(ROOT, ("fedenv", "agents")) == []


def test_fedenv_never_imports_agents():
    graph = import_graph(ROOT, ("fedenv", "agents"))
    assert [(a, b) for a, b in graph.edges if a.startswith("fedenv") and b.startswith("agents")] == []


def test_a_planted_circle_is_found(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("from .b import thing\n")
    (tmp_path / "pkg" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import b\n")
    (tmp_path / "pkg" / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    assert import_circles(tmp_path, ("pkg",)) == [["pkg.a", "pkg.sub.b"]]


def test_a_tree_of_imports_has_no_circle(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg import a\n")
    (tmp_path / "pkg" / "a.py").write_text("from pkg import b\n")
    (tmp_path / "pkg" / "b.py").write_text("import os\n")
    assert import_circles(tmp_path, ("pkg",)) == []
