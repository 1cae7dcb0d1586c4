"""Declared parameters refuse run-time changes they would ignore, over DDS (rcl_interfaces SetParameters).

A node that reads a parameter only at start must not accept a ``ros2 param set``
and silently keep the old value: the parameter is read-only, and the caller gets
the reason. Parameters a node applies while running carry their Setting's range.
"""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import DescribeParameters, SetParameters
from rclpy.node import Node
from support.ros import call_service, ros_session, spinning

from heracles_ros.errors import ConfigError
from heracles_ros.nodes import dispatcher, dsg_mirror, language_server
from heracles_ros.ros.parameters import declare, descriptor
from heracles_ros.settings import Setting

TABLE = (
    Setting("db_uri", "embedded", "read at start"),
    Setting("fraction", 0.5, "applied while running", minimum=0.0, maximum=1.0),
    Setting("count", 3, "applied while running", minimum=1),
)


def _double(name: str, value: float) -> ParameterMsg:
    return ParameterMsg(name=name, value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value))


def _string(name: str, value: str) -> ParameterMsg:
    return ParameterMsg(name=name, value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value))


def _integer(name: str, value: int) -> ParameterMsg:
    return ParameterMsg(name=name, value=ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value))


def test_set_parameters_over_dds_is_refused_with_a_reason_unless_the_node_applies_it(ros_domain_id):
    with ros_session(ros_domain_id):
        node = Node("parameter_owner")
        declare(node, TABLE, runtime={"fraction", "count"})
        caller = Node("parameter_caller")
        with spinning(node, caller):
            client = caller.create_client(SetParameters, "/parameter_owner/set_parameters")
            results = call_service(client, SetParameters.Request(parameters=[
                _string("db_uri", "falkordb://elsewhere:1"),
                _double("fraction", 1.5),
                _integer("count", 0),
                _double("fraction", 0.25),
                _integer("count", 7),
            ])).results
            assert [r.successful for r in results] == [False, False, False, True, True]
            assert "read-only" in results[0].reason and "db_uri" in results[0].reason
            assert "fraction" in results[1].reason and "range" in results[1].reason
            assert "count" in results[2].reason and "range" in results[2].reason
            assert node.get_parameter("db_uri").value == "embedded"
            assert (node.get_parameter("fraction").value, node.get_parameter("count").value) == (0.25, 7)
            describe = caller.create_client(DescribeParameters, "/parameter_owner/describe_parameters")
            described = call_service(describe, DescribeParameters.Request(names=["db_uri", "fraction"])).descriptors
            assert described[0].read_only and not described[1].read_only
            assert (described[1].floating_point_range[0].from_value,
                    described[1].floating_point_range[0].to_value) == (0.0, 1.0)


def test_a_start_value_outside_the_range_is_a_config_error_naming_it(ros_domain_id):
    from rclpy.parameter import Parameter

    with ros_session(ros_domain_id):
        node = Node("parameter_owner", parameter_overrides=[Parameter("fraction", value=2.0)])
        try:
            with pytest.raises(ConfigError, match=r"fraction must be <= 1.0, got 2.0"):
                declare(node, TABLE)
        finally:
            node.destroy_node()


def test_runtime_names_must_be_declared():
    with pytest.raises(ConfigError, match="frac"):
        declare(object(), TABLE, runtime={"frac"})


@pytest.mark.parametrize("module", [dsg_mirror, language_server, dispatcher], ids=lambda m: m.__name__)
def test_every_node_parameter_range_matches_its_setting(module):
    """Each bounded number of every node gets a ROS range with the Setting's bounds (open side: widest)."""
    for spec in module.PARAMETERS:
        result = descriptor(spec, read_only=True)
        assert result.read_only and result.description == spec.description
        if (spec.minimum is None and spec.maximum is None) or not isinstance(spec.default, (int, float)):
            assert not result.floating_point_range and not result.integer_range
            continue
        if isinstance(spec.default, bool):
            continue
        (bounds,) = result.integer_range if isinstance(spec.default, int) else result.floating_point_range
        low = bounds.from_value if spec.minimum is not None else None
        high = bounds.to_value if spec.maximum is not None else None
        assert (low, high) == (spec.minimum, spec.maximum), spec.name
        assert spec.minimum is not None or bounds.from_value in (-math.inf, -(2**63))


# --- params files: a newcomer's slip stops the node and names it (real node processes, --params-file) ------------
REPO = Path(__file__).resolve().parents[2]
SCENE = REPO / "heracles_ros" / "data" / "example_scene.json"


def _run_mirror(ros_domain_id: int, tmp_path: Path, params: dict[str, str], *, db_uri: str,
                graph: str, stop_when: str | None = None) -> tuple[int, str]:
    """Start dsg_mirror as `ros2 run` would, with each text in ``params`` as a --params-file; wait for it to end
    (or for ``stop_when`` in its output, then Ctrl-C it). (exit status, output)."""
    files = []
    for name, text in params.items():
        (tmp_path / name).write_text(text)
        files += ["--params-file", str(tmp_path / name)]
    process = subprocess.Popen(
        [sys.executable, "-m", "heracles_ros.nodes.dsg_mirror", "--ros-args", *files,
         "-p", f"db_uri:={db_uri}", "-p", f"graph_name:={graph}", "-p", f"scene_file:={SCENE}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(REPO)},
    )
    seen: list[str] = []
    # A node that does not stop (the slip went unnoticed) is killed: the output then ends too.
    deadline = threading.Timer(90.0, process.kill)
    deadline.start()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            seen.append(line)
            if stop_when is not None and stop_when in line:
                process.send_signal(signal.SIGINT)
        return process.wait(timeout=60), "".join(seen)
    finally:
        deadline.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()


SHARED = "/**:\n  ros__parameters:\n    query_timeout_s: 30.0\n"  # a file that does apply, beside one that does not


@pytest.mark.parametrize(("files", "says"), [
    ({"mirror.yaml": "/**/dsg_mirror:\n  ros__parameters:\n    graph_nmae: other\n"},
     "has no parameter 'graph_nmae' (set in {tmp}/mirror.yaml (section '/**/dsg_mirror')): did you mean 'graph_name'?"),
    ({"shared.yaml": "/**:\n  ros__parameters:\n    histroy: false\n"},
     "has no parameter 'histroy' (set in {tmp}/shared.yaml (section '/**')): did you mean 'history'?"),
    ({"shared.yaml": SHARED, "dispatcher.yaml": (REPO / "config" / "dispatcher.yaml").read_text()},
     "params file {tmp}/dispatcher.yaml sets nothing for node /dsg_mirror: its sections are '/**/dispatcher'"),
    ({"broken.yaml": '/**:\n  ros__parameters:\n    db_uri: "embedded\n'},
     "params file {tmp}/broken.yaml:4:1: YAML syntax error"),
])
def test_a_misspelt_name_a_file_for_another_node_or_a_yaml_error_stops_the_node(
    ros_domain_id: int, tmp_path: Path, falkordb_uri: str, graph_name: str, files: dict[str, str], says: str
) -> None:
    status, output = _run_mirror(ros_domain_id, tmp_path, files, db_uri=falkordb_uri, graph=graph_name)
    assert status == 1, output
    assert "dsg_mirror cannot start: " in output and says.format(tmp=tmp_path) in output, output
    assert "Traceback" not in output and "mirrored scene file" not in output, output


def test_shared_sections_keep_working_for_the_node_and_its_siblings(
    ros_domain_id: int, tmp_path: Path, falkordb_uri: str, graph_name: str
) -> None:
    """The shipped `/**:` file, and a shared section that also sets a sibling node's parameter (the
    dispatcher's `driver`), start the mirror as before."""
    files = {"dsg_mirror.yaml": (REPO / "config" / "dsg_mirror.yaml").read_text(),
             "site.yaml": "/**:\n  ros__parameters:\n    driver: sim\n    robot_symbol: robot\n"
                          "    query_timeout_s: 30.0\n"}
    status, output = _run_mirror(ros_domain_id, tmp_path, files, db_uri=falkordb_uri, graph=graph_name,
                                 stop_when="mirrored scene file")
    assert status == 0 and "mirrored scene file" in output, output
    assert "cannot start" not in output, output
