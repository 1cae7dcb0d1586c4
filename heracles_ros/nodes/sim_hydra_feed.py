"""The dispatcher's simulated Hydra on the ROS graph: its snapshots published as Hydra publishes them.

Started by the dispatcher when the sim driver has a ``sim_world``: the driver tells the simulated Hydra every
move (:mod:`~heracles_ros.execution.sim_hydra`), and a steady-clock timer in a group of its own publishes a
full ``hydra_msgs/msg/DsgUpdate`` on ``sim_dsg_topic`` every ``sim_hydra_period_s`` wall-clock seconds, in
Hydra's conventions: header stamp now (ROS time), frame ``map``, ``full_update`` true, ``sequence_number``
1, 2, ... The snapshot's bytes are rebuilt only when something new was seen; the timer never touches the
database, the driver or the stop.
"""
from __future__ import annotations

import itertools
from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.clock import Clock, ClockType

from heracles_ros.errors import ConfigError
from heracles_ros.execution.driver_factory import SimHydraSettings
from heracles_ros.execution.sim_hydra import SimHydra, World
from heracles_ros.graphdb.cypher.search import OBJECT_SYMBOLS
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.ros import interfaces
from heracles_ros.ros.node_base import HeraclesNode


def open_sim_hydra(store: GraphStore, settings: SimHydraSettings) -> SimHydra:
    """The simulated Hydra over ``settings.world``, knowing the objects the database holds now (the map's);
    ConfigError naming the world when it cannot be read or lacks one of them."""
    known = [str(row["symbol"]) for row in store.query(OBJECT_SYMBOLS)]
    return SimHydra(World.load(settings.world), known, sensor_range_m=settings.sensor_range_m)


class SimHydraFeed:
    """Publishes ``hydra``'s snapshots on ``node`` (see the module's docstring)."""

    def __init__(self, node: HeraclesNode, hydra: SimHydra, settings: SimHydraSettings):
        try:
            message_type = interfaces.DSG_UPDATE.type
        except ImportError as exc:
            raise ConfigError("sim_world needs the hydra_msgs interface package (from MIT-SPARK/Hydra-ROS) in the "
                              "ROS workspace; build it next to heracles_ros and source the workspace") from exc
        self.node = node
        self.hydra = hydra
        self.topic = settings.dsg_topic
        self._type = message_type
        self._numbers = itertools.count(1)
        self.publisher = interfaces.DSG_UPDATE.publisher(node, name=settings.dsg_topic)
        self.timer = node.create_timer(settings.hydra_period_s, self.publish,
                                       callback_group=MutuallyExclusiveCallbackGroup(),
                                       clock=Clock(clock_type=ClockType.STEADY_TIME))
        node.get_logger().info(
            f"simulated Hydra: world {settings.world} ({len(hydra.hidden)} objects not on the map), sensor range "
            f"{hydra.sensor_range_m:g} m, snapshots on {settings.dsg_topic} every {settings.hydra_period_s:g} s")

    def publish(self) -> None:
        """One full snapshot of what has been seen, numbered on."""
        msg: Any = self._type()
        msg.header.frame_id = "map"
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.layer_contents = self.hydra.snapshot()
        msg.full_update = True
        msg.sequence_number = next(self._numbers)
        self.publisher.publish(msg)
