"""The whole heracles_ros system on a robot: mirror, language server, dispatcher (+ Hydra's visualizer, RViz).

    ros2 launch heracles_ros heracles.launch.py robot_name:=spot driver:=spot_ros2 \
        db_uri:=neo4j://localhost:7687 llm:=openai model:=gpt-4.1

Our three nodes run in the namespace ``robot_name``, so their topics and
services are ``/<robot_name>/ask``, ``/<robot_name>/execute_command`` and so on. Their
parameters come from ``config/<node>.yaml`` (keys match the node in any
namespace) and the launch arguments below override the ones an operator
changes most. Secrets (OPENAI_API_KEY, NEO4J_PASSWORD, ...) come only from the
environment the launch runs in.

Hydra's own visualizer (package ``hydra_visualizer``, MIT-SPARK/Hydra-ROS) is
included as Hydra ships it, ``launch/streaming_visualizer.launch.yaml``, which
runs ``hydra_visualizer_node`` named ``hydra_visualizer``; it subscribes to
``hydra_visualizer/dsg`` (remapped here to ``dsg_topic``, as Hydra's README
instructs) and publishes the scene as a MarkerArray on
``/hydra_visualizer/graph``. It stays in the root namespace, where Hydra's
documentation and our RViz config expect it.

On the robot the driver is spot_ros2 unless named otherwise, and commands wait for
the operator's confirmation (``require_confirmation`` true) unless
``require_confirmation:=false``; with ``driver:=sim`` they do not wait.

An optional part whose package is not installed (rviz2, hydra_visualizer) is
skipped with a warning; the nodes run without it. Tests: test/launch.
"""
import os
import shutil

from ament_index_python.packages import PackageNotFoundError, get_package_prefix
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    GroupAction,
    IncludeLaunchDescription,
    LogInfo,
    OpaqueFunction,
    SetLaunchConfiguration,
)
from launch.conditions import IfCondition
from launch.launch_description_sources import AnyLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution, PythonExpression
from launch_ros.actions import Node, PushRosNamespace, SetRemap
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

PACKAGE = "heracles_ros"
# config/ beside launch/, in the source tree as in the installed share directory.
CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config")


def _text(name):
    """A launch argument passed as a string parameter (never re-read as YAML: '' or '8b' stay strings)."""
    return ParameterValue(LaunchConfiguration(name), value_type=str)


def _installed(package):
    try:
        get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return True


def _if_installed(package, part, actions):
    """``actions`` when ``package`` is installed; else a warning, so a missing option never fails the launch."""
    def choose(context):
        if _installed(package):
            return actions
        return [LogInfo(msg=f"WARNING: {part} not started: package '{package}' is not installed "
                            "(the heracles nodes run without it)")]
    return OpaqueFunction(function=choose)


# Every process this file starts (our nodes, the web console, RViz, Hydra's visualizer) gets SIGTERM when the
# launch process dies however it dies: launch forwards SIGINT to its processes, but on SIGTERM, SIGQUIT or
# SIGHUP (a closed terminal) it exits at once and leaves them running, and on SIGKILL it can do nothing; a
# robot's processes must never outlive their launch.
_SETPRIV = shutil.which("setpriv")
NODE_PREFIX = f"{_SETPRIV} --pdeathsig TERM" if _SETPRIV else None


def generate_launch_description():
    config = CONFIG

    arguments = [
        DeclareLaunchArgument(
            "robot_name", default_value="spot",
            description="namespace of the heracles nodes, their topics and services ('' = root namespace)"),
        DeclareLaunchArgument(
            "db_uri", default_value="embedded",
            description="graph database: embedded[:DATA_DIR] (FalkorDB started on loopback), "
            "falkordb://host:port, neo4j://host:port[/db] or bolt://host:port; "
            "credentials from NEO4J_USERNAME / NEO4J_PASSWORD / FALKORDB_PASSWORD"),
        DeclareLaunchArgument(
            "llm", default_value="openai", choices=["openai", "ollama"],
            description="language model provider: openai (key from OPENAI_API_KEY) or ollama"),
        DeclareLaunchArgument(
            "model", default_value="",
            description="model name; '' = the provider's default (gpt-4.1 for openai, qwen3:32b for ollama)"),
        DeclareLaunchArgument(
            "base_url", default_value="",
            description="OpenAI-compatible endpoint or Ollama host; '' = the provider's default "
            "(OPENAI_BASE_URL / OLLAMA_HOST from the environment)"),
        DeclareLaunchArgument(
            "dsg_topic", default_value="/hydra/backend/dsg",
            description="Hydra's hydra_msgs/msg/DsgUpdate topic with full scene-graph snapshots"),
        DeclareLaunchArgument(
            "driver", default_value="spot_ros2", choices=["sim", "spot_ros2"],
            description="robot driver of the dispatcher: spot_ros2 (the robot) or sim (kinematic Spot simulator)"),
        DeclareLaunchArgument(
            "require_confirmation",
            default_value=PythonExpression(
                ["'true' if '", LaunchConfiguration("driver"), "' == 'spot_ros2' else 'false'"]),
            choices=["true", "false"],
            description="commands wait for the operator's confirm before the robot moves "
            "(default: true with driver spot_ros2, false with sim)"),
        DeclareLaunchArgument(
            "spot_name", default_value=LaunchConfiguration("robot_name"),
            description="namespace of the spot_ros2 driver (driver:=spot_ros2); defaults to robot_name"),
        DeclareLaunchArgument(
            "scene_file", default_value="",
            description="spark_dsg file (.json or binary) to mirror at start, e.g. a saved Hydra map; '' = none"),
        DeclareLaunchArgument(
            "sim_world", default_value="",
            description="with driver:=sim, a scene file of a simulated Hydra's world (the map and objects not yet "
            "seen): the dispatcher publishes what the simulated robot sees of it on dsg_topic; '' = none"),
        DeclareLaunchArgument(
            "start_hydra_visualizer", default_value="false", choices=["true", "false"],
            description="start Hydra's visualizer (package hydra_visualizer) on dsg_topic"),
        DeclareLaunchArgument(
            "start_rviz", default_value="false", choices=["true", "false"],
            description="start RViz with the operator console (config/heracles.rviz)"),
        DeclareLaunchArgument(
            "start_console", default_value="false", choices=["true", "false"],
            description="start the web console (heracles console: map, commands, approval, STOP in a browser)"),
        DeclareLaunchArgument(
            "console_host", default_value="127.0.0.1",
            description="address the web console binds; any but loopback needs HERACLES_CONSOLE_SECRET"),
        DeclareLaunchArgument(
            "console_port", default_value="8765", description="port of the web console"),
    ]

    heracles = GroupAction([
        PushRosNamespace(LaunchConfiguration("robot_name")),
        Node(
            package=PACKAGE,
            executable="dsg_mirror",
            exec_name="dsg_mirror",
            output="screen",
            prefix=NODE_PREFIX,
            parameters=[
                os.path.join(config, "dsg_mirror.yaml"),
                {
                    "db_uri": _text("db_uri"),
                    "dsg_topic": _text("dsg_topic"),
                    "scene_file": _text("scene_file"),
                },
            ],
        ),
        Node(
            package=PACKAGE,
            executable="language_server",
            exec_name="language_server",
            output="screen",
            prefix=NODE_PREFIX,
            parameters=[
                os.path.join(config, "language_server.yaml"),
                {
                    "db_uri": _text("db_uri"),
                    "llm": _text("llm"),
                    "model": _text("model"),
                    "base_url": _text("base_url"),
                    "require_confirmation": ParameterValue(
                        LaunchConfiguration("require_confirmation"), value_type=bool),
                },
            ],
        ),
        Node(
            package=PACKAGE,
            executable="dispatcher",
            exec_name="dispatcher",
            output="screen",
            prefix=NODE_PREFIX,
            parameters=[
                os.path.join(config, "dispatcher.yaml"),
                {
                    "db_uri": _text("db_uri"),
                    "driver": _text("driver"),
                    "spot_name": _text("spot_name"),
                    # The simulated Hydra (driver sim, sim_world set) publishes where the mirror listens.
                    "sim_world": _text("sim_world"),
                    "sim_dsg_topic": _text("dsg_topic"),
                },
            ],
        ),
        # The web console: a ROS client in the robot's namespace (it reads the pushed __ns:=).
        Node(
            package=PACKAGE,
            executable="console",
            exec_name="console",
            output="screen",
            prefix=NODE_PREFIX,
            arguments=["--host", LaunchConfiguration("console_host"), "--port", LaunchConfiguration("console_port"),
                       "--db", LaunchConfiguration("db_uri")],
            condition=IfCondition(LaunchConfiguration("start_console")),
        ),
        # The operator console; its topics are relative, so it runs in the robot's namespace too.
        GroupAction(
            [_if_installed("rviz2", "RViz (start_rviz)", [Node(
                package="rviz2",
                executable="rviz2",
                name="heracles_rviz",
                prefix=NODE_PREFIX,
                arguments=["-d", os.path.join(config, "heracles.rviz")],
            )])],
            condition=IfCondition(LaunchConfiguration("start_rviz")),
        ),
    ])

    hydra_visualizer = GroupAction(
        [_if_installed("hydra_visualizer", "Hydra's visualizer (start_hydra_visualizer)", [
            SetRemap(src="hydra_visualizer/dsg", dst=LaunchConfiguration("dsg_topic")),
            # Hydra's own launch file names no prefix: its processes take the launch-wide one, in this group only.
            *([SetLaunchConfiguration("launch-prefix", NODE_PREFIX)] if NODE_PREFIX else []),
            IncludeLaunchDescription(
                AnyLaunchDescriptionSource(
                    PathJoinSubstitution(
                        [FindPackageShare("hydra_visualizer"), "launch", "streaming_visualizer.launch.yaml"]
                    )
                ),
                launch_arguments={"start_rviz": "false", "visualizer_ns": "hydra_visualizer"}.items(),
            ),
        ])],
        condition=IfCondition(LaunchConfiguration("start_hydra_visualizer")),
    )

    return LaunchDescription([*arguments, heracles, hydra_visualizer])
