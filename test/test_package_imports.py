"""The package's subpackages import each other without cycles (a layered library).

Each subpackage (graphdb, scene, planning, ...) and each top-level module
(errors, schema, plan_types, ...) is one vertex; every ``import`` of another
one, wherever it stands in the source (lazy imports inside functions count: a
cycle through them is still a cycle of concepts), is an edge. Shared types
live in leaf modules so that no two parts need each other.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "heracles_ros"

#: part -> imported part -> "file:line" of one import that makes the edge.
Edges = dict[str, dict[str, str]]


def _part(relative: Path) -> str:
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def import_edges(package_dir: Path = PACKAGE_DIR) -> Edges:
    edges: Edges = defaultdict(dict)
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        source = _part(relative)
        module = [package_dir.name, *relative.with_suffix("").parts]
        if relative.name == "__init__.py":
            module = module[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = module[: len(module) - node.level + (relative.name == "__init__.py")]
                    targets = [".".join([*base, *([node.module] if node.module else [])])]
                else:
                    targets = [node.module or ""]
            for target in targets:
                parts = target.split(".")
                if parts[0] == package_dir.name and len(parts) > 1 and parts[1] != source:
                    edges[source].setdefault(parts[1], f"{path.relative_to(package_dir.parent)}:{node.lineno}")
    return edges


def cycles(edges: Edges) -> list[list[str]]:
    """Strongly connected components with more than one part (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(vertex: str) -> None:
        index[vertex] = low[vertex] = len(index)
        stack.append(vertex)
        on_stack.add(vertex)
        for successor in edges.get(vertex, {}):
            if successor not in index:
                visit(successor)
                low[vertex] = min(low[vertex], low[successor])
            elif successor in on_stack:
                low[vertex] = min(low[vertex], index[successor])
        if low[vertex] == index[vertex]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == vertex:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for vertex in sorted(edges):
        if vertex not in index:
            visit(vertex)
    return sorted(found)


def describe(edges: Edges, component: list[str]) -> str:
    members = set(component)
    return "; ".join(
        f"{a} -> {b} ({where})" for a in component for b, where in sorted(edges.get(a, {}).items()) if b in members
    )


def test_the_subpackages_import_each_other_without_cycles():
    edges = import_edges()
    assert {"graphdb", "scene", "planning", "execution", "formats", "mirror", "embedded"} <= set(edges)
    # The layers this test keeps apart (with no cycle, an edge one way rules out the other): the scene
    # mirror above the stores, the stores above the embedded server they run on.
    assert "graphdb" in edges["mirror"] and "embedded" in edges["graphdb"]
    found = cycles(edges)
    assert found == [], "\n".join(describe(edges, component) for component in found)


def fake_package(folder: Path, files: dict[str, str]) -> Path:
    """A package ``heracles_ros`` in ``folder`` made of ``files`` (path in the package -> text), to read the imports
    of, never to run."""
    package = folder / "heracles_ros"
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def test_a_new_cycle_is_found_with_the_imports_that_make_it(tmp_path):
    package = fake_package(tmp_path, {
        "__init__.py": "",
        "leaf.py": "",
        "scene/__init__.py": "",
        "scene/tables.py": "from heracles_ros.leaf import X\nfrom heracles_ros.graphdb.schema import Layer\n",
        "graphdb/__init__.py": "",
        "graphdb/schema.py": "from . import mirror\n",
        "graphdb/mirror.py": "def f():\n    from ..planning import planner\n",
        "planning/__init__.py": "from heracles_ros.scene.tables import rows\n",
    })
    edges = import_edges(package)
    assert cycles(edges) == [["graphdb", "planning", "scene"]]
    assert "graphdb -> planning (heracles_ros/graphdb/mirror.py:2)" in describe(edges, cycles(edges)[0])
