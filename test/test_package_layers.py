"""The package's layers, as rules on its imports (``test_package_imports.py`` keeps it free of cycles).

- **Clients never import node programs.** ``client/``, ``console/`` and ``cli/`` do not import
  ``heracles_ros.nodes``: they talk to the nodes over ROS, and start one only as a process
  (``python -m heracles_ros.nodes.X``), never by importing it.
- **The library never imports the ROS plumbing.** Every module but the ROS sides imports neither
  ``heracles_ros.ros`` nor ``heracles_ros.nodes``, so the library imports and is testable without rclpy.
  The ROS sides: ``ros/`` and ``nodes/`` themselves; ``client/`` (the running system's client);
  ``console/bridge.py`` (the console's ROS client); the CLI's ROS verbs (:data:`CLI_ROS_VERBS`: the
  ``--live`` forms and their options, ``stop``/``resume``/``cancel``/``confirm``, ``command --execute``,
  ``changes`` with the mirror service's bound, ``replay``, ``console`` and ``up``, which start ROS
  processes, and ``search``, which walks the robot through the dispatcher); and the tools that run the
  nodes, ``demo/``, ``desk/`` and ``bench/``.
- **Planning and the agent never import execution.** The robot's record they read is
  :mod:`heracles_ros.robot_record`; execution uses them, never the reverse.
- **Execution never imports the mirror's writer** (``mirror/reconcile.py``, ``mirror/loop.py``), not even
  through another module: the dispatcher reads the scene and writes only the robot's own record.

Imports count wherever they stand (a lazy import inside a function is still a dependency). The first
three rules are on direct imports, between modules; the last follows imports through every module.
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from test_package_imports import PACKAGE_DIR, fake_package

#: The CLI's modules that speak ROS (see the module's docstring).
CLI_ROS_VERBS = ("live", "control", "execute", "changes", "replay", "console", "up", "search")
#: The ROS sides, as module name prefixes (a package's modules, or one module).
ROS_SIDES = (
    "heracles_ros.ros", "heracles_ros.nodes", "heracles_ros.client", "heracles_ros.console.bridge",
    *(f"heracles_ros.cli.{verb}" for verb in CLI_ROS_VERBS),
    "heracles_ros.demo", "heracles_ros.desk", "heracles_ros.bench",
)
#: The mirror's writer.
MIRROR_WRITER = ("heracles_ros.mirror.reconcile", "heracles_ros.mirror.loop")

#: module -> imported module -> "file:line" of one import that makes the edge.
Imports = dict[str, dict[str, str]]


def module_name(path: Path, package_dir: Path) -> str:
    parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports(package_dir: Path = PACKAGE_DIR) -> Imports:
    """Every module's imports of the package's own modules (``from pkg import module`` names the module)."""
    package = package_dir.name
    modules = {module_name(path, package_dir) for path in package_dir.rglob("*.py")}
    found: Imports = defaultdict(dict)
    for path in sorted(package_dir.rglob("*.py")):
        source = module_name(path, package_dir)
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = source.split(".")[: len(source.split(".")) - node.level + is_package]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
            where = f"{path.relative_to(package_dir.parent)}:{node.lineno}" if targets else ""
            for target in targets:
                if target.split(".")[0] == package and target in modules and target != source:
                    found[source].setdefault(target, where)
    return found


def within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def broken(imports: Imports, sources: tuple[str, ...], forbidden: tuple[str, ...], *,
           exempt: tuple[str, ...] = ()) -> list[str]:
    """Direct imports from a module under ``sources`` (less ``exempt``) of one under ``forbidden``."""
    return sorted(f"{source} -> {target} ({where})" for source, targets in imports.items()
                  if within(source, sources) and not within(source, exempt)
                  for target, where in targets.items() if within(target, forbidden))


def reached(imports: Imports, start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or through others, with one chain of imports to it."""
    chains: dict[str, list[str]] = {start: [start]}
    frontier = [start]
    while frontier:
        module = frontier.pop()
        for target in imports.get(module, {}):
            if target not in chains:
                chains[target] = [*chains[module], target]
                frontier.append(target)
    return chains


def test_clients_the_console_and_the_cli_never_import_a_node_program():
    imports = module_imports()
    assert broken(imports, ("heracles_ros.client", "heracles_ros.console", "heracles_ros.cli"),
                  ("heracles_ros.nodes",)) == []


def test_the_library_imports_neither_the_ros_plumbing_nor_the_node_programs():
    imports = module_imports()
    every_module = {module_name(path, PACKAGE_DIR) for path in PACKAGE_DIR.rglob("*.py")}
    # The ROS sides named here exist, so none of the rule's exceptions is stale.
    assert all(any(within(module, (side,)) for module in every_module) for side in ROS_SIDES)
    assert broken(imports, ("heracles_ros",), ("heracles_ros.ros", "heracles_ros.nodes"), exempt=ROS_SIDES) == []


def test_planning_and_the_agent_never_import_execution():
    imports = module_imports()
    assert broken(imports, ("heracles_ros.planning", "heracles_ros.agent"), ("heracles_ros.execution",)) == []


def test_execution_never_reaches_the_mirrors_writer():
    imports = module_imports()
    execution = sorted(module for module in imports if within(module, ("heracles_ros.execution",)))
    assert "heracles_ros.execution.plan_runner" in execution
    found = [" -> ".join(chain) for module in execution for target, chain in reached(imports, module).items()
             if within(target, MIRROR_WRITER)]
    assert found == []


def test_a_broken_rule_is_found_with_the_import_that_breaks_it(tmp_path):
    package = fake_package(tmp_path, {
        "__init__.py": "",
        "ros/__init__.py": "",
        "ros/qos.py": "",
        "nodes/__init__.py": "",
        "nodes/dispatcher.py": "",
        "cli/__init__.py": "",
        "cli/scene.py": "def f():\n    from heracles_ros.nodes import dispatcher\n",
        "planning/__init__.py": "",
        "planning/planner.py": "from ..ros import qos\nfrom heracles_ros.execution.plan_check import x\n",
        "execution/__init__.py": "",
        "execution/plan_check.py": "from heracles_ros.mirror import symbols\n",
        "mirror/__init__.py": "",
        "mirror/symbols.py": "import heracles_ros.mirror.reconcile\n",
        "mirror/reconcile.py": "",
    })
    imports = module_imports(package)
    assert broken(imports, ("heracles_ros.cli",), ("heracles_ros.nodes",)) == [
        "heracles_ros.cli.scene -> heracles_ros.nodes (heracles_ros/cli/scene.py:2)",
        "heracles_ros.cli.scene -> heracles_ros.nodes.dispatcher (heracles_ros/cli/scene.py:2)",
    ]
    assert broken(imports, ("heracles_ros",), ("heracles_ros.ros",), exempt=ROS_SIDES) == [
        "heracles_ros.planning.planner -> heracles_ros.ros (heracles_ros/planning/planner.py:1)",
        "heracles_ros.planning.planner -> heracles_ros.ros.qos (heracles_ros/planning/planner.py:1)",
    ]
    assert broken(imports, ("heracles_ros.planning",), ("heracles_ros.execution",)) == [
        "heracles_ros.planning.planner -> heracles_ros.execution.plan_check (heracles_ros/planning/planner.py:2)",
    ]
    assert reached(imports, "heracles_ros.execution.plan_check")["heracles_ros.mirror.reconcile"] == [
        "heracles_ros.execution.plan_check", "heracles_ros.mirror.symbols", "heracles_ros.mirror.reconcile",
    ]
