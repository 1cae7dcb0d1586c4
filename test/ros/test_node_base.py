"""The node skeleton every node shares: what a failed start leaves, the closing order, run-time parameters."""
from __future__ import annotations

from typing import Any

import pytest
from rclpy.parameter import Parameter
from support.ros import live_nodes, ros_session

from heracles_ros.errors import ConfigError
from heracles_ros.ros.node_base import HeraclesNode
from heracles_ros.ros.runner import SHUTDOWN_TIMEOUT
from heracles_ros.settings import Setting


class _Resource:
    def __init__(self, steps: list[str], name: str):
        self.steps, self.name = steps, name

    def close(self) -> None:
        self.steps.append(f"closed {self.name}")

    def destroy(self) -> None:
        self.steps.append(f"destroyed {self.name}")


class _Probe(HeraclesNode):
    """Opens a resource in setup, then (when told) fails; records every step of closing."""

    NODE_NAME = "node_base_probe"
    PARAMETERS = (
        Setting("fail_after_open", False, "raise in setup after opening the resource"),
        Setting("speed", 1.0, "a run-time parameter", minimum=0.0, maximum=10.0),
        SHUTDOWN_TIMEOUT,
    )
    RUNTIME_PARAMETERS = ("speed",)

    def __init__(self, steps: list[str], **kwargs: Any):
        self.steps = steps
        super().__init__(**kwargs)

    def setup(self, values: dict[str, Any]) -> None:
        self.resource = _Resource(self.steps, "store")
        self.destroyed_with_node(_Resource(self.steps, "action server"))
        if values["fail_after_open"]:
            raise ConfigError("told to fail")
        self.speed = values["speed"]

    def finish(self) -> None:
        self.steps.append(f"finished (closed={self.closed})")

    def release(self) -> None:
        resource = getattr(self, "resource", None)
        if resource is not None:
            resource.close()

    def apply_parameter(self, name: str, value: Any) -> None:
        self.steps.append(f"{name}={value}")


def test_a_start_that_fails_releases_what_it_opened_and_leaves_no_node(ros_domain_id: int) -> None:
    steps: list[str] = []
    with ros_session(ros_domain_id) as context:
        with pytest.raises(ConfigError, match="told to fail"):
            _Probe(steps, parameter_overrides=[Parameter("fail_after_open", value=True)])
        assert steps == ["closed store"]  # nothing to finish: it never started
        assert live_nodes(context) == []


def test_close_finishes_then_releases_once_and_destroy_closes_first(ros_domain_id: int) -> None:
    steps: list[str] = []
    with ros_session(ros_domain_id):
        node = _Probe(steps, parameter_overrides=[Parameter("shutdown_timeout_s", value=2.0)])
        assert not node.closed and node.shutdown_timeout_s == 2.0
        node.close()
        node.close()
        assert steps == ["finished (closed=True)", "closed store"]
        node.destroy_node()
        assert steps == ["finished (closed=True)", "closed store", "destroyed action server"]


def test_run_time_parameters_are_checked_against_the_table_before_they_apply(ros_domain_id: int) -> None:
    steps: list[str] = []
    with ros_session(ros_domain_id):
        node = _Probe(steps)
        try:
            refused = node.set_parameters([Parameter("speed", value=11.0)])[0]
            assert not refused.successful
            assert node.set_parameters([Parameter("speed", value=3.0)])[0].successful
            assert not node.set_parameters([Parameter("fail_after_open", value=True)])[0].successful  # read-only
            assert steps == ["speed=3.0"]
        finally:
            node.destroy_node()


class _Faulty(_Probe):
    """A node whose applying of a run-time change raises (a bug in a node's apply_parameter)."""

    NODE_NAME = "node_base_faulty"

    def apply_parameter(self, name: str, value: Any) -> None:
        raise RuntimeError(f"cannot apply {name}")


def _msg(name: str, type_: int, **value: Any) -> Any:
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.msg import ParameterValue

    return ParameterMsg(name=name, value=ParameterValue(type=type_, **value))


def test_every_set_over_dds_outside_the_run_time_table_is_refused_with_a_reason_and_the_node_lives(
    ros_domain_id: int,
) -> None:
    """rclpy's own use_sim_time, a name the node lacks, a read-only one, a value of no ParameterType: each refused
    with its reason through both set services, nothing applied, the node serving on (ROS time never switched on)."""
    import rclpy
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import SetParameters, SetParametersAtomically
    from support.ros import call_service, spinning

    steps: list[str] = []
    with ros_session(ros_domain_id):
        node = _Probe(steps)
        caller = rclpy.create_node("parameter_caller")
        with spinning(node, caller) as executor:
            single = caller.create_client(SetParameters, "/node_base_probe/set_parameters")
            results = call_service(single, SetParameters.Request(parameters=[
                _msg("use_sim_time", ParameterType.PARAMETER_BOOL, bool_value=True),
                _msg("speeed", ParameterType.PARAMETER_DOUBLE, double_value=2.0),
                _msg("fail_after_open", ParameterType.PARAMETER_BOOL, bool_value=True),
                _msg("speed", 77, double_value=2.0),
                _msg("speed", ParameterType.PARAMETER_DOUBLE, double_value=2.5),
            ])).results
            assert [r.successful for r in results] == [False, False, False, False, True]
            assert results[0].reason.startswith("use_sim_time cannot change while /node_base_probe runs"), results[0]
            assert "what may change while it runs: speed" in results[0].reason
            assert results[1].reason.startswith("/node_base_probe has no parameter 'speeed' (did you mean 'speed'?)")
            assert results[2].reason.startswith("parameter fail_after_open is read only at start")
            assert results[3].reason == "parameter speed: value type 77 is not a rcl_interfaces/msg/ParameterType"
            atomic = caller.create_client(SetParametersAtomically, "/node_base_probe/set_parameters_atomically")
            result = call_service(atomic, SetParametersAtomically.Request(parameters=[
                _msg("speed", ParameterType.PARAMETER_DOUBLE, double_value=4.0),
                _msg("use_sim_time", ParameterType.PARAMETER_BOOL, bool_value=True),
            ])).result
            assert not result.successful and result.reason.startswith("use_sim_time cannot change")
            assert steps == ["speed=2.5"]  # the atomic set changed nothing
            assert node.get_parameter("speed").value == 2.5
            assert node.get_parameter("use_sim_time").value is False
            assert not node.get_clock().ros_time_is_active
            # In process too (a node's own code, a test): the same judge.
            refused = node.set_parameters([Parameter("use_sim_time", value=True)])[0]
            assert not refused.successful and refused.reason.startswith("use_sim_time cannot change")
            assert executor is not None and call_service(single, SetParameters.Request(parameters=[
                _msg("speed", ParameterType.PARAMETER_DOUBLE, double_value=5.0)])).results[0].successful


def test_a_node_whose_apply_raises_refuses_the_set_and_keeps_serving(ros_domain_id: int) -> None:
    import rclpy
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import GetParameters, SetParameters
    from support.ros import call_service, spinning

    with ros_session(ros_domain_id):
        node = _Faulty([])
        caller = rclpy.create_node("parameter_caller")
        with spinning(node, caller):
            client = caller.create_client(SetParameters, "/node_base_faulty/set_parameters")
            (result,) = call_service(client, SetParameters.Request(parameters=[
                _msg("speed", ParameterType.PARAMETER_DOUBLE, double_value=2.0)])).results
            assert not result.successful
            assert result.reason == "setting speed failed inside the node: RuntimeError('cannot apply speed')"
            get = caller.create_client(GetParameters, "/node_base_faulty/get_parameters")
            (value,) = call_service(get, GetParameters.Request(names=["speed"])).values
            assert value.double_value == 1.0
            in_process = node.set_parameters([Parameter("speed", value=3.0)])[0]  # the callback itself never raises
            assert not in_process.successful and "RuntimeError('cannot apply speed')" in in_process.reason


def test_with_undeclared_parameters_allowed_a_new_name_is_still_refused(ros_domain_id: int) -> None:
    """rclpy lets such a node take any name; ours judge it like every set (nothing is declared by a set)."""
    with ros_session(ros_domain_id):
        node = _Probe([], allow_undeclared_parameters=True)
        try:
            (refused,) = node.set_parameters([Parameter("ghost", value=1)])
            assert not refused.successful
            assert refused.reason.startswith("/node_base_probe has no parameter 'ghost'"), refused.reason
            assert not node.has_parameter("ghost")
        finally:
            node.destroy_node()
