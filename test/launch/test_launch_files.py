"""Static checks of launch/, config/ and the RViz console against the nodes they start.

``launch_ros`` is not installable here, so nothing is launched: the launch file
is parsed (never imported) and compared with setup.py, scripts/, CMakeLists.txt,
the nodes' PARAMETERS tables and the topic names in the nodes' sources. Each
check is also run once on a deliberately broken input, so a check that could
never fail would show up.
"""
from __future__ import annotations

import importlib
import os
import stat
import textwrap
from pathlib import Path

import pytest
from support.launch_static import (
    REPO,
    LaunchFile,
    LaunchNode,
    cmake_installed_programs,
    console_scripts,
    load_yaml,
    node_endpoints,
    node_fqn,
    node_key_matches,
    node_name_in_source,
    parameters_for,
    parse_launch_file,
    rviz_displays,
)

from heracles_ros.settings import Setting

PACKAGE = "heracles_ros"
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))
MAIN_LAUNCH = REPO / "launch" / "heracles.launch.py"
RVIZ_CONFIG = REPO / "config" / "heracles.rviz"
#: Namespaces the nodes are checked in: the launch file's default robot_name and the root.
NAMESPACES = ("spot", "")
#: Hydra's visualizer: the MarkerArray it publishes (hydra_visualizer_node named hydra_visualizer, ~/graph)
#: and the DsgUpdate topic it reads (~/dsg), per MIT-SPARK/Hydra-ROS hydra_visualizer sources.
HYDRA_GRAPH_TOPIC = "/hydra_visualizer/graph"
HYDRA_VISUALIZER_INPUT = "hydra_visualizer/dsg"
#: spot_ros2's robot model topic (relative: the Spot driver runs in the robot's namespace).
SPOT_DESCRIPTION_TOPIC = "robot_description"


# -- helpers -----------------------------------------------------------------------------------
def our_nodes(launch: LaunchFile) -> list[LaunchNode]:
    return [n for n in launch.nodes if n.package == PACKAGE]


def node_module(executable: str) -> str:
    return console_scripts()[executable].split(":")[0]


def parameters_of(executable: str) -> dict[str, Setting]:
    module = importlib.import_module(node_module(executable))
    return {spec.name: spec for spec in module.PARAMETERS}


def node_name(node: LaunchNode) -> str:
    """The name the node runs under: the launch file's name=, else the name the node gives itself."""
    return node.name or node_name_in_source(node_module(node.executable))


def launch_problems(launch: LaunchFile) -> list[str]:
    """Arguments without default/description, and configurations that name no declared argument."""
    problems = []
    declared = {a.name for a in launch.arguments}
    for arg in launch.arguments:
        if not arg.has_default:
            problems.append(f"launch argument {arg.name} (line {arg.line}) has no default_value")
        if not (isinstance(arg.description, str) and arg.description.strip()):
            problems.append(f"launch argument {arg.name} (line {arg.line}) has no description")
        if arg.choices is not None and isinstance(arg.default, str) and arg.default not in arg.choices:
            problems.append(f"launch argument {arg.name}: default {arg.default!r} is not one of {arg.choices}")
    for name, line in launch.configurations:
        if name not in declared:
            problems.append(f"LaunchConfiguration({name!r}) on line {line} names no declared launch argument")
    if len(declared) != len(launch.arguments):
        problems.append("a launch argument is declared twice")
    return problems


def executable_problems(launch: LaunchFile) -> list[str]:
    scripts = console_scripts()
    installed = cmake_installed_programs()
    problems = []
    for node in our_nodes(launch):
        exe = node.executable
        if exe not in scripts:
            problems.append(f"executable {exe!r} is not a console_scripts entry point in setup.py")
            continue
        script = REPO / "scripts" / exe
        if not script.is_file():
            problems.append(f"executable {exe!r} has no scripts/{exe} for colcon")
            continue
        if not script.stat().st_mode & stat.S_IXUSR:
            problems.append(f"scripts/{exe} is not executable")
        module, function = scripts[exe].split(":")
        if f"from {module} import {function}" not in script.read_text():
            problems.append(f"scripts/{exe} does not run {module}:{function} like the entry point")
        if exe not in installed:
            problems.append(f"CMakeLists.txt does not install scripts/{exe} to lib/{PACKAGE}")
    return problems


def parameter_problems(launch: LaunchFile, *, config_dir: Path = REPO / "config") -> list[str]:
    """Parameter files and overrides against the nodes' declared PARAMETERS."""
    problems = []
    for node in our_nodes(launch):
        specs = parameters_of(node.executable)
        for key in node.param_overrides:
            if key not in specs:
                problems.append(f"{node.executable}: launch file sets undeclared parameter {key!r}")
        for name in node.param_files:
            path = config_dir / name
            if not path.is_file():
                problems.append(f"{node.executable}: parameter file config/{name} does not exist")
                continue
            document = load_yaml(path)
            if not isinstance(document, dict):
                problems.append(f"config/{name} is not a mapping of node names")
                continue
            for namespace in NAMESPACES:
                fqn = node_fqn(namespace, node_name(node))
                values = parameters_for(document, fqn)
                if not values:
                    problems.append(f"config/{name}: no key applies to node {fqn} (use /** or /**/{node_name(node)})")
                    continue
                problems += _value_problems(name, fqn, values, specs)
    return problems


def _value_problems(name: str, fqn: str, values: dict, specs: dict[str, Setting]) -> list[str]:
    problems = []
    for key, value in values.items():
        spec = specs.get(key)
        if spec is None:
            problems.append(f"config/{name} sets {key!r}, which {fqn} does not declare")
            continue
        # rclpy refuses an override whose type differs from the declared one (60 for a double, "1" for an int).
        expected = type(spec.default)
        if isinstance(spec.default, list):
            ok = isinstance(value, list)
        elif expected is float:
            ok = isinstance(value, float)
        elif expected is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, expected)
        if not ok:
            problems.append(f"config/{name}: {key}={value!r} has type {type(value).__name__}, "
                            f"{fqn} declares {expected.__name__}")
            continue
        try:
            spec.check(value)
        except Exception as exc:
            problems.append(f"config/{name}: {exc}")
    for key, spec in specs.items():
        # ROS parameter files cannot hold an empty list, so such parameters may only be left out.
        if key not in values and not (isinstance(spec.default, list) and not spec.default):
            problems.append(f"config/{name} does not set {key!r} (every declared parameter belongs in the file)")
    return problems


def topics_by_node(launch: LaunchFile) -> dict[str, list]:
    return {n.executable: node_endpoints(node_module(n.executable)) for n in our_nodes(launch)}


# -- the launch files --------------------------------------------------------------------------
def test_the_simulation_launch_file_runs_the_whole_system_on_the_example_scene():
    launch = parse_launch_file(REPO / "launch" / "sim.launch.py")
    assert launch.includes == [("heracles.launch.py", ["driver", "scene_file", "start_rviz"])]
    assert {"data", "example_scene.json"} <= launch.strings
    assert (REPO / "heracles_ros" / "data" / "example_scene.json").is_file()


def test_there_is_a_launch_file_for_the_whole_system():
    assert MAIN_LAUNCH in LAUNCH_FILES
    launch = parse_launch_file(MAIN_LAUNCH)
    assert {n.executable for n in our_nodes(launch)} == {"dsg_mirror", "language_server", "dispatcher"}
    assert {a.name for a in launch.arguments} >= {
        "robot_name", "db_uri", "llm", "model", "base_url", "dsg_topic", "driver", "scene_file",
        "start_hydra_visualizer", "start_rviz",
    }


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_arguments_have_defaults_and_descriptions(path):
    assert launch_problems(parse_launch_file(path)) == []


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_executable_is_an_entry_point_and_an_installed_script(path):
    assert executable_problems(parse_launch_file(path)) == []


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_launch_file_starts_nodes_or_includes_one_of_ours_with_arguments_it_declares(path):
    launch = parse_launch_file(path)
    ours = [name for name, _ in launch.includes if (REPO / "launch" / name).is_file()]
    assert our_nodes(launch) or ours, f"{path.name} starts no node of {PACKAGE} and includes no launch file of it"
    for name, given in launch.includes:
        if name not in ours:
            continue  # another package's file (Hydra's visualizer), checked where it is wired
        declared = {a.name for a in parse_launch_file(REPO / "launch" / name).arguments}
        extra = sorted(set(given) - declared)
        assert not extra, f"{path.name} passes {extra} that {name} does not declare"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_parameter_files_and_overrides_match_what_the_nodes_declare(path):
    assert parameter_problems(parse_launch_file(path)) == []


def test_every_parameter_file_is_used_by_a_launch_file():
    used = {name for path in LAUNCH_FILES for n in parse_launch_file(path).nodes for name in n.param_files}
    shipped = {p.name for p in (REPO / "config").glob("*.yaml")}
    assert shipped <= used, f"parameter files no launch file loads: {sorted(shipped - used)}"


def test_launch_argument_choices_and_defaults_agree_with_the_parameters_they_set():
    launch = parse_launch_file(MAIN_LAUNCH)
    arguments = {a.name: a for a in launch.arguments}
    checked = 0
    for node in our_nodes(launch):
        specs = parameters_of(node.executable)
        for param, argument in node.param_overrides.items():
            arg = arguments.get(argument)
            assert arg is not None, f"{node.executable}.{param} is set from {argument!r}, not a launch argument"
            spec = specs[param]
            if spec.choices:
                assert arg.choices is not None and sorted(arg.choices) == sorted(spec.choices), (
                    f"launch argument {argument} offers {arg.choices}, {node.executable}.{param} accepts "
                    f"{list(spec.choices)}")
            if isinstance(arg.default, str):
                spec.check(arg.default)  # a default the node would refuse fails here
                checked += 1
    assert checked >= 8


def test_the_same_database_reaches_every_node():
    launch = parse_launch_file(MAIN_LAUNCH)
    for node in our_nodes(launch):
        assert node.param_overrides.get("db_uri") == "db_uri", f"{node.executable} does not get db_uri"
    graphs = set()
    for node in our_nodes(launch):
        for name in node.param_files:
            graphs.add(parameters_for(load_yaml(REPO / "config" / name), node_fqn("spot", node_name(node)))
                       .get("graph_name"))
    assert len(graphs) == 1, f"the nodes' parameter files name different graphs: {graphs}"


def test_remappings_name_topics_the_nodes_use():
    launch = parse_launch_file(MAIN_LAUNCH)
    endpoints = topics_by_node(launch)
    for node in our_nodes(launch):
        names = {e.name for e in endpoints[node.executable]}
        for src, _ in node.remappings:
            assert src in names, f"{node.executable} remaps {src!r}, a name it does not use ({sorted(names)})"
    # Hydra's visualizer is wired the way Hydra documents: its ~/dsg input to our dsg_topic.
    assert (HYDRA_VISUALIZER_INPUT, "dsg_topic") in launch.set_remaps
    assert "streaming_visualizer.launch.yaml" in launch.strings and "hydra_visualizer" in launch.strings


def test_the_nodes_topics_and_actions_connect():
    """Every fixed-name topic a node subscribes to is published, and every action it calls is served, by
    another node of the system (same name and type)."""
    endpoints = topics_by_node(parse_launch_file(MAIN_LAUNCH))
    offered = {(e.kind, e.name, e.type_name) for eps in endpoints.values() for e in eps}
    provider = {"subscription": "publisher", "action_client": "action_server"}
    used = [(exe, e) for exe, eps in endpoints.items() for e in eps if e.kind in provider and e.name]
    assert any(e.kind == "action_client" for _, e in used), "no node calls an action of the system"
    for exe, end in used:
        assert (provider[end.kind], end.name, end.type_name) in offered, (
            f"{exe} uses {end.name} ({end.type_name}) but no node of the system offers it")
    language = {(e.kind, e.name) for e in endpoints["language_server"]}
    assert {("action_server", "execute_command"), ("service", "confirm"),
            ("publisher", "command_rejections")} <= language


def test_rviz_and_hydra_visualizer_are_optional_and_rviz_loads_the_shipped_console():
    launch = parse_launch_file(MAIN_LAUNCH)
    rviz = [n for n in launch.nodes if n.package == "rviz2"]
    assert len(rviz) == 1 and rviz[0].executable == "rviz2" and rviz[0].conditional
    assert rviz[0].arguments == ["-d", RVIZ_CONFIG.name]
    assert RVIZ_CONFIG.parent.name == "config"  # installed to share/ by CMake's install(DIRECTORY launch config)


# -- the RViz console ------------------------------------------------------------------------
def test_rviz_config_parses_and_shows_what_the_nodes_publish():
    config = load_yaml(RVIZ_CONFIG)
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == \
        parameters_of("dispatcher")["map_frame"].default
    endpoints = topics_by_node(parse_launch_file(MAIN_LAUNCH))
    marker_topics = {e.name for eps in endpoints.values() for e in eps
                     if e.kind == "publisher" and e.type_name == "MarkerArray"}
    topics = {}
    for display in rviz_displays(config):
        if display.topic:
            topics[display.topic] = display
            if display.cls == "rviz_default_plugins/MarkerArray":
                assert display.topic in marker_topics | {HYDRA_GRAPH_TOPIC}, (
                    f"RViz display {display.name!r} reads {display.topic}, which no node publishes as a MarkerArray")
            else:
                assert display.topic == SPOT_DESCRIPTION_TOPIC, f"unexpected topic {display.topic}"
    assert HYDRA_GRAPH_TOPIC in topics and "plan_markers" in topics and "answer_marker" in topics


def test_rviz_marker_displays_list_the_namespaces_the_nodes_publish():
    from heracles_ros.nodes.language_server import NS_ANSWER
    from heracles_ros.nodes.markers import ALL_NAMESPACES

    displays = {d.topic: d for d in rviz_displays(load_yaml(RVIZ_CONFIG))}
    assert sorted(displays["plan_markers"].namespaces) == sorted(ALL_NAMESPACES)
    assert displays["answer_marker"].namespaces == (NS_ANSWER,)


# -- the checks themselves fail on a mismatch -----------------------------------------------------
BROKEN_LAUNCH = textwrap.dedent('''
    def _text(name):
        return ParameterValue(LaunchConfiguration(name), value_type=str)

    def generate_launch_description():
        return LaunchDescription([
            DeclareLaunchArgument("db_uri", default_value="embedded", description="database"),
            DeclareLaunchArgument("driver", description="no default"),
            DeclareLaunchArgument("model", default_value=""),
            Node(package="heracles_ros", executable="dispatcher",
                 parameters=[os.path.join(config, "dispatcher.yaml"),
                             {"db_uri": _text("db_uri"), "dbb_uri": _text("db_uri"), "x": LaunchConfiguration("typo")}],
                 remappings=[("plans", "/elsewhere")]),
            Node(package="heracles_ros", executable="mirror_node"),
        ])
''')


def test_the_checks_catch_a_broken_launch_file(tmp_path):
    path = tmp_path / "broken.launch.py"
    path.write_text(BROKEN_LAUNCH)
    launch = parse_launch_file(path)
    problems = "\n".join(launch_problems(launch))
    assert "driver (line" in problems and "has no default_value" in problems
    assert "model (line" in problems and "has no description" in problems
    assert "LaunchConfiguration('typo')" in problems
    assert "'mirror_node' is not a console_scripts entry point" in "\n".join(executable_problems(launch))
    launch.nodes = [n for n in launch.nodes if n.executable == "dispatcher"]
    params = "\n".join(parameter_problems(launch))
    assert "undeclared parameter 'dbb_uri'" in params and "undeclared parameter 'x'" in params
    names = {e.name for e in node_endpoints("heracles_ros.nodes.dispatcher")}
    assert "execute_plans" not in names and "execute_plan" in names


def test_the_checks_catch_broken_parameter_files(tmp_path):
    (tmp_path / "dispatcher.yaml").write_text(textwrap.dedent('''
        dispatcher:
          ros__parameters:
            db_uri: embedded
    '''))
    launch = LaunchFile(tmp_path / "x.launch.py", [], [LaunchNode(PACKAGE, "dispatcher", 1,
                                                                   param_files=["dispatcher.yaml"])], [], [], set())
    problems = "\n".join(parameter_problems(launch, config_dir=tmp_path))
    # The key matches only a root-namespace node; in /spot the file would silently not apply.
    assert "no key applies to node /spot/dispatcher" in problems
    assert "does not set 'driver'" in problems
    (tmp_path / "dispatcher.yaml").write_text(textwrap.dedent('''
        /**:
          ros__parameters:
            step_timeout_s: 60
            max_replans: 99
            driver: walk
            no_such: 1
    '''))
    problems = "\n".join(parameter_problems(launch, config_dir=tmp_path))
    assert "step_timeout_s=60 has type int" in problems
    assert "max_replans must be <= 20" in problems
    assert "driver must be one of" in problems
    assert "sets 'no_such'" in problems


@pytest.mark.parametrize(("key", "fqn", "applies"), [
    ("/**", "/spot/dispatcher", True),
    ("/**/dispatcher", "/spot/dispatcher", True),
    ("/**/dispatcher", "/dispatcher", True),
    ("dispatcher", "/dispatcher", True),
    ("dispatcher", "/spot/dispatcher", False),
    ("/*/dispatcher", "/a/b/dispatcher", False),
    ("/**/dispatcher", "/spot/dsg_mirror", False),
])
def test_parameter_file_keys_match_nodes_like_rclcpp(key, fqn, applies):
    assert node_key_matches(key, fqn) is applies


def test_scripts_are_executable_on_disk():
    for name in console_scripts():
        path = REPO / "scripts" / name
        assert path.is_file() and os.access(path, os.X_OK), f"scripts/{name}"
