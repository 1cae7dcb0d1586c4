"""The embedded server's modules build on each other one way: the server on its maintenance, files, log and
process probes, the read replica on the server; nothing below imports what stands above it (lazy and
type-only imports count, as in test/test_package_imports.py)."""
from __future__ import annotations

import ast
from pathlib import Path

from test_package_imports import cycles, describe

EMBEDDED_DIR = Path(__file__).resolve().parents[2] / "heracles_ros" / "embedded"
PREFIX = "heracles_ros.embedded."


def module_edges() -> dict[str, dict[str, str]]:
    """module -> embedded module it imports -> the line that does."""
    edges: dict[str, dict[str, str]] = {}
    for path in sorted(EMBEDDED_DIR.glob("*.py")):
        imported = edges.setdefault(path.stem, {})
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == PREFIX.rstrip("."):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PREFIX):
                names = [(node.module or "").removeprefix(PREFIX)]
            elif isinstance(node, ast.Import):
                names = [a.name.removeprefix(PREFIX) for a in node.names if a.name.startswith(PREFIX)]
            else:
                continue
            for name in names:
                imported.setdefault(name, f"{path.name}:{node.lineno}")
    return edges


def test_no_module_of_embedded_imports_one_that_imports_it_back() -> None:
    edges = module_edges()
    assert {"server", "replica", "maintenance"} <= set(edges)
    circles = cycles(edges)
    assert circles == [], "\n".join(describe(edges, circle) for circle in circles)


def test_the_replica_builds_on_the_server_and_maintenance_on_neither() -> None:
    edges = module_edges()
    assert "server" in edges["replica"]
    assert not {"server", "replica"} & set(edges["maintenance"])
    assert not {"replica"} & set(edges["server"])
