"""Every Neo4j statement the package can send passes Neo4j's own Cypher linter.

No Neo4j server runs here and the Bolt stand-in (ArcadeDB) accepts some queries
Neo4j rejects, so Neo4j's front end (syntax, semantics, known functions and
procedures of Neo4j 5 without APOC or GDS) checks each statement instead.
"""
from __future__ import annotations

import pkgutil

import pytest
from support.neo4j_lint import FALKORDB_ONLY_MODULES, Diagnostic, cypher_module_statements, lint, neo4j_statements

import heracles_ros.graphdb.cypher as cypher_package
from heracles_ros.graphdb.cypher import planning
from heracles_ros.schema import Layer


def _errors(diagnostics: list[Diagnostic]) -> list[str]:
    return [f"{d.message} (at {d.at})" for d in diagnostics if d.severity == "error"]


@pytest.fixture(scope="module")
def statements() -> dict[str, str]:
    return neo4j_statements()


@pytest.fixture(scope="module")
def diagnostics(statements: dict[str, str]) -> dict[str, list[Diagnostic]]:
    """One linter run for every statement (starting Node is the slow part)."""
    good = statements[f"planning.place_nodes(layer={Layer.MESH_PLACE.name})"]
    probes = {
        "probe.algo_SPpaths": good.replace(
            " RETURN ", " CALL algo.SPpaths({sourceNode: n, targetNode: n, relTypes: ['MESH_PLACE_CONNECTED']}) "
            "YIELD path RETURN length(path) AS hops, ", 1
        ),
        "probe.vecf32": good.replace(
            " RETURN ", " RETURN vec.euclideanDistance(vecf32([n.x, n.y, n.z]), vecf32([0.0, 0.0, 0.0])) AS d, ", 1
        ),
        "probe.syntax": good.replace("RETURN", "RETURN RETURN", 1),
    }
    return lint({**statements, **probes})


def test_every_cypher_module_contributes_statements(statements: dict[str, str]) -> None:
    modules = {info.name for info in pkgutil.iter_modules(cypher_package.__path__)}
    found = {name.split(".")[0] for name in cypher_module_statements()}
    assert found == modules - FALKORDB_ONLY_MODULES
    assert any(name.startswith("prompt.ask_examples") for name in statements)
    assert any(name.startswith("prompt.interface_text") for name in statements)
    assert any(name.startswith("eval.") for name in statements)
    # Builders are called for every layer, so each layer's statement is among them.
    for layer in Layer:
        assert planning.place_nodes(layer) in statements.values()


def test_every_neo4j_statement_passes_the_linter(
    statements: dict[str, str], diagnostics: dict[str, list[Diagnostic]]
) -> None:
    failures = {name: _errors(diagnostics[name]) for name in statements if _errors(diagnostics[name])}
    assert not failures, "\n".join(f"{name}: {statements[name]}\n  {errs}" for name, errs in failures.items())
    assert len(statements) >= 100  # a floor: the enumeration found the builders, not just a few constants


def test_the_linter_rejects_falkordb_only_constructs(diagnostics: dict[str, list[Diagnostic]]) -> None:
    assert any("algo.SPpaths" in e for e in _errors(diagnostics["probe.algo_SPpaths"]))
    vec = _errors(diagnostics["probe.vecf32"])
    assert any("vecf32" in e for e in vec) and any("vec.euclideanDistance" in e for e in vec)
    assert _errors(diagnostics["probe.syntax"])
