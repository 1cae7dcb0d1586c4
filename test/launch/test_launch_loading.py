"""The INSTALLED launch files, executed through a stand-in of the launch API (test/support/launch_api.py).

Where test_launch_files.py reads the launch files' syntax trees, these tests run
``generate_launch_description()`` and evaluate the description as ``ros2 launch``
would, so a missing import (NameError), a parameter file read from a directory
that is not installed, an executable that is not installed, or a parameter no
node declares fails here. The files are the ones ``./run.sh setup`` (the package's
CMake install, as colcon runs it) put into the environment's share directory.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
from ament_index_python.packages import get_package_share_directory
from support.launch_api import Launched, LaunchError, StartedNode, executable_path, launch
from support.launch_static import REPO, console_scripts, load_yaml, node_fqn, node_name_in_source, parameters_for

from heracles_ros.settings import Setting

PACKAGE = "heracles_ros"
SHARE = Path(get_package_share_directory(PACKAGE))
MAIN = SHARE / "launch" / "heracles.launch.py"
SIM = SHARE / "launch" / "sim.launch.py"
OUR_EXECUTABLES = {"dsg_mirror", "language_server", "dispatcher"}


def ours(launched: Launched) -> list[StartedNode]:
    return [node for node in launched.nodes if node.package == PACKAGE]


def declared(executable: str) -> dict[str, Setting]:
    module = importlib.import_module(console_scripts()[executable].split(":")[0])
    return {spec.name: spec for spec in module.PARAMETERS}


def problems(launched: Launched) -> list[str]:
    """Everything ``ros2 launch`` (or the started node) would trip over, one line each."""
    found: list[str] = []
    config = (SHARE / "config").resolve()
    for node in ours(launched):
        if not executable_path(node.package, node.executable).is_file():
            found.append(f"{node.executable}: not installed at {executable_path(node.package, node.executable)}")
            continue
        specs = declared(node.executable)
        name = node.name or node_name_in_source(console_scripts()[node.executable].split(":")[0])
        fqn = node_fqn(node.namespace, name)
        values: dict = {}
        for path in node.parameter_files:
            resolved = Path(path).resolve()
            if not resolved.is_file():
                found.append(f"{node.executable}: parameter file {path} does not exist")
                continue
            if config not in resolved.parents:
                found.append(f"{node.executable}: parameter file {path} is not in the installed {config}")
            values.update(parameters_for(load_yaml(resolved) or {}, fqn))
        values.update(node.parameters)
        if not values:
            found.append(f"{node.executable}: no parameters reach {fqn}")
        for key, value in values.items():
            if key not in specs:
                found.append(f"{node.executable}: parameter {key} is not declared by the node")
                continue
            try:
                specs[key].check(value)
            except Exception as exc:  # ConfigError: the node would refuse to start
                found.append(f"{node.executable}: {exc}")
    return found


def test_the_installed_launch_files_are_the_repository_ones():
    for name in ("heracles.launch.py", "sim.launch.py"):
        assert (SHARE / "launch" / name).read_text() == (REPO / "launch" / name).read_text(), (
            f"{name}: installed copy is stale; run ./run.sh setup")


def test_the_main_launch_file_starts_our_three_nodes_in_the_robot_namespace():
    launched = launch(MAIN)
    assert {n.executable for n in ours(launched)} == OUR_EXECUTABLES
    assert {n.namespace for n in ours(launched)} == {"/spot"}
    assert problems(launched) == []
    # The optional parts are off by default.
    assert [n for n in launched.nodes if n.package != PACKAGE] == []
    assert launched.includes == []
    mirror = next(n for n in ours(launched) if n.executable == "dsg_mirror")
    assert mirror.parameters["db_uri"] == "embedded"
    assert mirror.parameter_files == [str(SHARE / "config" / "dsg_mirror.yaml")]


def test_launch_arguments_reach_every_node_as_typed_strings():
    launched = launch(MAIN, {"robot_name": "", "db_uri": "neo4j://db:7687", "model": "8b", "driver": "spot_ros2"})
    assert {n.namespace for n in ours(launched)} == {"/"}
    assert {n.parameters["db_uri"] for n in ours(launched)} == {"neo4j://db:7687"}
    language = next(n for n in ours(launched) if n.executable == "language_server")
    assert language.parameters["model"] == "8b"  # never re-read as YAML
    dispatcher = next(n for n in ours(launched) if n.executable == "dispatcher")
    assert dispatcher.parameters["spot_name"] == ""  # defaults to robot_name
    assert problems(launched) == []


def test_the_optional_parts_start_when_asked(tmp_path, monkeypatch):
    # Hydra's visualizer is not installed here: an ament prefix of its own holds its launch file.
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages").mkdir(parents=True)
    (tmp_path / "share" / "ament_index" / "resource_index" / "packages" / "hydra_visualizer").touch()
    (tmp_path / "share" / "hydra_visualizer" / "launch").mkdir(parents=True)
    monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path}{os.pathsep}{os.environ['AMENT_PREFIX_PATH']}")
    launched = launch(MAIN, {"start_rviz": "true", "start_hydra_visualizer": "true", "dsg_topic": "/h/dsg"})
    rviz = [n for n in launched.nodes if n.executable == "rviz2"]
    assert len(rviz) == 1 and rviz[0].arguments == ["-d", str(SHARE / "config" / "heracles.rviz")]
    assert Path(rviz[0].arguments[1]).is_file()
    (visualizer,) = launched.includes
    share = tmp_path / "share" / "hydra_visualizer"
    assert visualizer.path == str(share / "launch" / "streaming_visualizer.launch.yaml")
    assert visualizer.arguments == {"start_rviz": "false", "visualizer_ns": "hydra_visualizer"}
    assert ("hydra_visualizer/dsg", "/h/dsg") in visualizer.remaps
    assert visualizer.namespace == ""  # stays in the root namespace


def test_an_argument_outside_its_choices_is_refused():
    with pytest.raises(LaunchError, match="driver"):
        launch(MAIN, {"driver": "gazebo"})


def test_the_simulation_launch_file_runs_the_whole_system_on_the_bundled_scene():
    launched = launch(SIM)
    assert {n.executable for n in ours(launched)} == OUR_EXECUTABLES
    assert problems(launched) == []
    dispatcher = next(n for n in ours(launched) if n.executable == "dispatcher")
    assert dispatcher.parameters["driver"] == "sim"
    mirror = next(n for n in ours(launched) if n.executable == "dsg_mirror")
    assert Path(mirror.parameters["scene_file"]).is_file()
    assert [n.executable for n in launched.nodes if n.package != PACKAGE] == ["rviz2"]


# -- the checks catch the defects they are for (the launch file mutated in a copy) -------------
def _mutated(tmp_path: Path, old: str, new: str) -> Path:
    text = MAIN.read_text()
    assert old in text
    path = tmp_path / "heracles.launch.py"
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_launch_file_missing_an_import_fails_to_load(tmp_path):
    path = _mutated(tmp_path, "from launch.conditions import IfCondition\n", "")
    with pytest.raises(NameError, match="IfCondition"):
        launch(path)


def test_parameter_files_from_a_wrong_directory_are_reported(tmp_path):
    # The repository's config/ exists on a developer's machine but is not what an installed package has.
    path = _mutated(tmp_path, 'config = os.path.join(share, "config")',
                    f'config = {os.fspath(REPO / "config")!r}')
    found = problems(launch(path))
    assert len(found) == 3 and all("is not in the installed" in line for line in found)
    path = _mutated(tmp_path, 'config = os.path.join(share, "config")', 'config = os.path.join(share, "params")')
    found = problems(launch(path))
    assert len(found) == 3 and all("does not exist" in line for line in found)


def test_an_undeclared_parameter_and_an_unknown_executable_are_reported(tmp_path):
    path = _mutated(tmp_path, '"spot_name": _text("spot_name"),', '"spot_nme": _text("spot_name"),')
    assert problems(launch(path)) == ["dispatcher: parameter spot_nme is not declared by the node"]
    path = _mutated(tmp_path, 'executable="dispatcher"', 'executable="dispatch"')
    (line,) = problems(launch(path))
    assert line.startswith("dispatch: not installed at")
