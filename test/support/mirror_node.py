"""A dsg_mirror node under test, with a probe node that sends it snapshots and collects its status."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import rclpy
import spark_dsg as dsg
from heracles_ros.msg import MirrorStatus
from hydra_msgs.msg import DsgUpdate
from rclpy.parameter import Parameter

from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from support.ros import Collector, qos, ros_session, spinning, wait_for_subscribers, wait_until

TOPIC = "/test/dsg"


class MirrorHarness:
    """The node and a probe that publishes ``DsgUpdate`` snapshots on the node's topic and collects its status.

    Further collectors (markers) are made on ``probe``.
    """

    def __init__(self, probe: rclpy.node.Node, node: DsgMirrorNode, topic: str, namespace: str = ""):
        self.node = node
        self.probe = probe
        self.publisher = probe.create_publisher(DsgUpdate, topic, qos(1))
        self.status_topic = f"{namespace}/mirror_status"
        self.status: Collector[MirrorStatus] = Collector(probe, MirrorStatus, self.status_topic)

    def publish(self, payload: bytes, sequence: int, *, full_update: bool = True,
                stamp_s: float | None = None) -> MirrorStatus:
        """Send one snapshot (header stamped ``stamp_s`` when given) and return the status published after it."""
        msg = DsgUpdate(layer_contents=payload, full_update=full_update, sequence_number=sequence)
        msg.header.frame_id = "map"
        if stamp_s is not None:
            msg.header.stamp.sec = int(stamp_s)
            msg.header.stamp.nanosec = round((stamp_s - int(stamp_s)) * 1e9)
        after = self.status.count
        self.publisher.publish(msg)
        return self.status.wait(lambda s: s.sequence == sequence, 15.0, after=after, what=f"status of {sequence}")

    def send(self, graph: dsg.DynamicSceneGraph, sequence: int, *, stamp_s: float | None = None) -> MirrorStatus:
        """Send ``graph`` and check it was applied without error."""
        status = self.publish(graph.to_binary(include_mesh=False), sequence, stamp_s=stamp_s)
        assert status.last_error == "", status.last_error
        return status


@contextlib.contextmanager
def mirror_node(domain: int, *, topic: str = TOPIC, namespace: str = "", **params: Any) -> Iterator[MirrorHarness]:
    """A mirror node on ``topic`` (no periodic status unless asked), in ``namespace`` when given, spinning with its
    probe until the block ends."""
    # No look for another mirror at start (2 s each) unless a test asks: every test's node is alone in its domain.
    values = {"dsg_topic": topic, "status_period_s": 0.0, "retry_period_s": 0.2, "instance_check_s": 0.0, **params}
    with ros_session(domain):
        node = DsgMirrorNode(namespace=namespace or None,
                             parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
        probe = rclpy.create_node("probe")
        harness = MirrorHarness(probe, node, topic, namespace)
        with spinning(node, probe):
            wait_for_subscribers(harness.publisher)
            wait_until(lambda: node.count_subscribers(harness.status_topic) >= 1, 10.0, "status subscriber")
            yield harness
