"""The node skeleton every node shares: what a failed start leaves, the closing order, run-time parameters."""
from __future__ import annotations

from typing import Any

import pytest
from rclpy.parameter import Parameter
from support.ros import live_nodes, ros_session

from heracles_ros.errors import ConfigError
from heracles_ros.nodes.node_base import HeraclesNode
from heracles_ros.nodes.runner import SHUTDOWN_TIMEOUT
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
