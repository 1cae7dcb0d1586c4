"""Write an MCAP recording of Hydra's DsgUpdate topic the way ``ros2 bag record -s mcap`` does.

The ``ros2`` profile of MCAP (foxglove/mcap docs/specification/profiles/ros2.md,
what rosbag2_storage_mcap writes): the schema is named ``hydra_msgs/msg/DsgUpdate``,
encoded ``ros2msg`` and holds the message definition followed by those of the
types it uses, each after a line of 80 ``=`` and ``MSG: <package>/msg/<Type>``
(ros2/rosbag2 docs/message_definition_encoding.md); the channel's
messages are ``cdr``, the middleware's own serialization (here rclpy's
``serialize_message``, as rosbag2 stores what the subscription received), and
its metadata carries ``offered_qos_profiles``. The reader under test decodes it
with the mcap libraries alone, so this is an independent check of both sides.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra_msgs.msg import DsgUpdate
from mcap.writer import Writer
from rclpy.serialization import serialize_message

SCHEMA_NAME = "hydra_msgs/msg/DsgUpdate"
_SEPARATOR = "=" * 80
#: What rosbag2 writes for a reliable, volatile, keep-last publisher (as Hydra's).
_QOS = ("- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 2147483647\n"
        "    nsec: 4294967295\n  lifespan:\n    sec: 2147483647\n    nsec: 4294967295\n  liveliness: 1\n"
        "  liveliness_lease_duration:\n    sec: 2147483647\n    nsec: 4294967295\n"
        "  avoid_ros_namespace_conventions: false\n")
_DEFINITIONS = {
    SCHEMA_NAME: "std_msgs/Header header\nuint8[] layer_contents\nuint64[] deleted_nodes\nuint64[] deleted_edges\n"
                 "bool full_update\nint64 sequence_number\n",
    "std_msgs/msg/Header": "builtin_interfaces/Time stamp\nstring frame_id\n",
    "builtin_interfaces/msg/Time": "int32 sec\nuint32 nanosec\n",
}


def msgdef() -> str:
    """The DsgUpdate definition with its dependencies, as rosbag2 stores it in the schema record."""
    parts = [_DEFINITIONS[SCHEMA_NAME]]
    for name in ("std_msgs/msg/Header", "builtin_interfaces/msg/Time"):
        parts.append(f"{_SEPARATOR}\nMSG: {name}\n{_DEFINITIONS[name]}")
    return "\n".join(parts)


def dsg_update(graph: Any, sequence: int, stamp_s: float) -> DsgUpdate:
    msg = DsgUpdate()
    msg.header.frame_id = "map"
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp_s * 1e9), 1_000_000_000)
    msg.layer_contents = graph.to_binary(include_mesh=False)
    msg.full_update = True
    msg.sequence_number = sequence
    return msg


def write_recording(path: Path, messages: Iterable[tuple[str, DsgUpdate]], *, schema_name: str = SCHEMA_NAME) -> Path:
    """``messages`` ((topic, DsgUpdate) in order) into an MCAP file at ``path``, one channel per topic."""
    with path.open("wb") as stream:
        writer = Writer(stream)
        writer.start(profile="ros2", library="heracles_ros test support")
        schema_id = writer.register_schema(schema_name, "ros2msg", msgdef().encode())
        channels: dict[str, int] = {}
        for index, (topic, msg) in enumerate(messages):
            if topic not in channels:
                channels[topic] = writer.register_channel(topic, "cdr", schema_id,
                                                          metadata={"offered_qos_profiles": _QOS})
            log_time = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            writer.add_message(channels[topic], log_time=log_time, data=serialize_message(msg),
                               publish_time=log_time, sequence=index)
        writer.finish()
    return path
