"""Every Neo4j-dialect statement the package can send, and Neo4j's own linter to check them.

No Neo4j server runs here, and ArcadeDB (the Bolt stand-in) accepts some queries
Neo4j rejects, so the statements are checked by Neo4j's Cypher front end
compiled to JavaScript (npm ``@neo4j-cypher/language-support``, installed by
``run.sh test`` under ``$VENV/neo4j_lint``), with the functions and procedures
of Neo4j 5 without APOC or GDS (``cypher_lint/neo4j5_catalogue.json``).

Statements are found by introspection, not listed by hand: every public string
constant and every statement-building function of every module in
:mod:`heracles_ros.graphdb.cypher` (functions are called with each value of each
parameter in turn, the Neo4j dialect throughout), the Cypher in the prompt the
model sees (examples and notes), and the eval datasets' gold queries.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
import shutil
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

import heracles_ros.graphdb.cypher as cypher_package
from heracles_ros.schema import (
    AT,
    CONNECTED_TYPES,
    CONTAINS,
    CORRECTABLE_PROPERTIES,
    CORRECTION_LABEL,
    HOLDING,
    MIRROR_META_LABEL,
    MIRRORED_LABELS,
    NEO4J,
    ROBOT_LABEL,
    Dialect,
    Layer,
)

HERE = Path(__file__).resolve().parent / "cypher_lint"
CATALOGUE = HERE / "neo4j5_catalogue.json"
LINT_SCRIPT = HERE / "lint.mjs"
PACKAGE = "@neo4j-cypher/language-support"

#: Public functions of the cypher modules that return something other than a statement.
NOT_STATEMENTS = {"introspection.quote"}
#: Cypher modules that only FalkorDB ever receives (a query rewrite, a JavaScript function library).
FALKORDB_ONLY_MODULES = {"falkordb_indexes", "falkordb_paths", "point_udf"}

#: Values tried for a string parameter, by its name (labels and types cannot be parameters, so
#: statement builders take them from the schema's closed sets).
_LABELS = (*MIRRORED_LABELS, ROBOT_LABEL, CORRECTION_LABEL, MIRROR_META_LABEL)
_RELATIONS = (*CONNECTED_TYPES, CONTAINS, AT, HOLDING)
STRING_DOMAINS: dict[str, tuple[str, ...]] = {
    "label": _LABELS,
    "relation": _RELATIONS,
    "rel_type": _RELATIONS,
    "prop": ("nodeSymbol", *CORRECTABLE_PROPERTIES),
    "cls": ("bicycle", "trash can"),  # the scripted model's classes (graphdb/cypher/demo.py)
    "room_class": ("lounge",),
}


def _domain(function: Callable[..., Any], name: str, annotation: Any) -> tuple[Any, ...]:
    """The values one parameter takes; an unknown parameter stops the enumeration, naming it."""
    if annotation is Dialect:
        return (NEO4J,)
    if annotation is Layer:
        return tuple(Layer)
    if annotation == list[Layer]:
        return (list(Layer),)
    if annotation is bool:
        return (False, True)
    if annotation is str and name in STRING_DOMAINS:
        return STRING_DOMAINS[name]
    raise LookupError(
        f"{function.__module__}.{function.__name__}: no values known for parameter {name!r} ({annotation}); "
        "add them to test/support/neo4j_lint.py so its statements are linted"
    )


def _calls(function: Callable[..., Any]) -> Iterator[tuple[str, str]]:
    """(label, statement) for each parameter's values in turn, the others at their first value."""
    hints = typing.get_type_hints(function)
    params = list(inspect.signature(function).parameters)
    domains = {name: _domain(function, name, hints.get(name)) for name in params}
    seen: set[str] = set()
    for varied in params or [None]:
        for value in domains[varied] if varied else [None]:
            args = {name: (value if name == varied else domains[name][0]) for name in params}
            text = function(**args)
            if text not in seen:
                seen.add(text)
                shown = ", ".join(f"{k}={getattr(v, 'name', v) if not isinstance(v, list) else 'all'}"
                                  for k, v in args.items())
                yield f"{function.__name__}({shown})", text


def _defined_names(module: Any) -> list[str]:
    """Top-level names a module assigns or defines itself (not the ones it imports)."""
    tree = ast.parse(Path(module.__file__).read_text())
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.FunctionDef):
            names.append(node.name)
    return [name for name in names if not name.startswith("_")]


def cypher_module_statements() -> dict[str, str]:
    """Every statement :mod:`heracles_ros.graphdb.cypher` can produce for Neo4j, by name."""
    statements: dict[str, str] = {}
    for info in pkgutil.iter_modules(cypher_package.__path__):
        if info.name in FALKORDB_ONLY_MODULES:
            continue
        module = importlib.import_module(f"{cypher_package.__name__}.{info.name}")
        for name in _defined_names(module):
            value = getattr(module, name)
            key = f"{info.name}.{name}"
            if key in NOT_STATEMENTS:
                continue
            if isinstance(value, str):
                statements[key] = value
            elif inspect.isfunction(value):
                for label, text in _calls(value):
                    statements[f"{info.name}.{label}"] = text
    return statements


_PROMPT_QUERY = re.compile(r"\b((?:OPTIONAL MATCH|MATCH|UNWIND|CALL|WITH) .*\bRETURN\b.*)$", re.MULTILINE)


def prompt_statements() -> dict[str, str]:
    """The Cypher the model is shown for Neo4j: every example query and every query in the notes."""
    from heracles_ros.agent.database_text import interface_text
    from heracles_ros.agent.prompt import ask_examples, command_examples, correct_examples
    from heracles_ros.agent.schema_facts import SchemaFacts

    statements: dict[str, str] = {}
    for task, examples in (("ask", ask_examples(NEO4J)), ("command", command_examples()),
                           ("correct", correct_examples())):
        for number, example in enumerate(examples):
            if example.query:
                statements[f"prompt.{task}_examples[{number}]"] = example.query
    notes = interface_text(SchemaFacts(generation=None, labels=(), relationships=()), NEO4J, 2000)
    for number, match in enumerate(_PROMPT_QUERY.finditer(notes)):
        statements[f"prompt.interface_text[{number}]"] = match.group(1)
    return statements


def eval_statements() -> dict[str, str]:
    """Gold queries of the eval datasets shipped with the package (run by ``heracles eval --verify-gold``)."""
    data = Path(importlib.import_module("heracles_ros").__file__ or "").parent / "data" / "eval"
    statements: dict[str, str] = {}
    for path in sorted(data.glob("*.yaml")):
        for item in yaml.safe_load(path.read_text())["items"]:
            if item.get("gold_query"):
                statements[f"eval.{path.stem}.{item['id']}"] = item["gold_query"]
    return statements


def neo4j_statements() -> dict[str, str]:
    """Everything the package can send to Neo4j, by a name that says where it comes from."""
    return {**cypher_module_statements(), **prompt_statements(), **eval_statements()}


# --- the linter ------------------------------------------------------------------
@dataclass(frozen=True)
class Diagnostic:
    severity: str  # error | warning | information | hint
    message: str
    at: int | None


def node_modules() -> Path:
    """Where ``run.sh test`` installed the npm package: inside the environment running the tests."""
    return Path(sys.prefix) / "neo4j_lint" / "node_modules"


def linter_problem() -> str:
    """Why the linter cannot run here ('' when it can), naming the fix."""
    if shutil.which("node") is None:
        return "node is not installed (./run.sh test installs nodejs)"
    if not (node_modules() / PACKAGE / "package.json").is_file():
        return f"{PACKAGE} is not installed under {node_modules()} (run ./run.sh test)"
    return ""


def lint(statements: dict[str, str], *, timeout_s: float = 300.0) -> dict[str, list[Diagnostic]]:
    """Neo4j's diagnostics for each statement, by name."""
    problem = linter_problem()
    if problem:
        raise RuntimeError(problem)
    request = {
        "node_modules": str(node_modules()),
        "catalogue": str(CATALOGUE),
        "statements": [{"name": name, "query": text} for name, text in statements.items()],
    }
    done = subprocess.run(
        ["node", str(LINT_SCRIPT)], input=json.dumps(request), capture_output=True, text=True, timeout=timeout_s
    )
    if done.returncode != 0:
        raise RuntimeError(f"the Cypher linter failed ({done.returncode}): {done.stderr[-2000:]}")
    return {
        result["name"]: [Diagnostic(d["severity"], d["message"], d["at"]) for d in result["diagnostics"]]
        for result in json.loads(done.stdout)
    }
