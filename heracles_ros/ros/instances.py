"""One node of a kind per robot: a second one in the same namespace refuses to start, having done nothing.

Two mirrors would both write the robot's graph (a second one re-mirrored its scene file into a
running system's database before anything refused it); two language servers would both take the
robot's commands. A starting node looks on the ROS graph for another node of its name in its
namespace for a while (another process's node takes a moment to show) before it touches anything.
"""
from __future__ import annotations

import time

from rclpy.node import Node

from heracles_ros.errors import ConfigError

#: How often the start-up check reads the ROS graph, seconds.
POLL_S = 0.1


def refuse_a_second_instance(node: Node, look_s: float) -> None:
    """ConfigError when another node of ``node``'s name runs in its namespace, looked for during ``look_s``
    (0: not looked for)."""
    if look_s <= 0:
        return
    me = (node.get_name(), node.get_namespace())
    deadline = time.monotonic() + look_s
    while True:
        if node.get_node_names_and_namespaces().count(me) > 1:
            raise ConfigError(
                f"another {node.get_fully_qualified_name()} is running (one {node.get_name()} per robot): stop it "
                "first, or start this one in another namespace; this one started nothing and wrote nothing"
            )
        if time.monotonic() >= deadline:
            return
        time.sleep(POLL_S)
