"""A hostile ``DsgUpdate`` against the dsg_mirror node's own process, over DDS: refused, cheaply, and survived.

The report (issue 39, N4): one length field changed in a 76 KB snapshot took the mirror from
101 MB to 3.15 GB for about 10 s before a clean error. Here the node runs as the robot runs it
(``python -m heracles_ros.nodes.dsg_mirror``), its peak resident size is reset through
``/proc/PID/clear_refs`` before each hostile snapshot and read after the status that reports it.
"""
from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
import rclpy
from heracles_ros.msg import MirrorStatus
from hydra_msgs.msg import DsgUpdate
from support.node_program import node_program, params
from support.ros import Collector, qos, ros_session, spinning, wait_for_subscribers, wait_until

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.scene.synthetic import generate_scene

pytestmark = pytest.mark.backends("falkordb")  # the decode is the same whatever the database

TOPIC = "/test/hostile_dsg"
#: Issue 39's bound for a malformed snapshot: the mirror's peak memory under 10 x the message's size.
MEMORY_FACTOR = 10


@pytest.fixture
def mirror_process(ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore) -> Iterator[int]:
    with node_program("dsg_mirror", ros_domain_id, *params(
            f"db_uri:={db_uri}", f"graph_name:={graph_name}", f"dsg_topic:={TOPIC}", "instance_check_s:=0.0",
    )) as process:
        yield process.pid
        assert process.poll() is None, process.communicate()[0][-3000:]  # alive after every snapshot


def memory_kb(pid: int) -> tuple[int, int]:
    """The process's peak resident size and its file-backed part (libraries' pages, not allocations)."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(re.findall(r"^(\w+):\s+(\d+) kB", status, re.MULTILINE))
    return int(fields["VmHWM"]), int(fields["RssFile"]) + int(fields["RssShmem"])


def hostile(payload: bytes) -> dict[str, bytes]:
    """The report's case and its kin: one length changed to 2 G, and a truncated snapshot."""
    boundary = payload.index(b"\xdd\x00\x00\x00\x00", payload.index(b"Place2dNodeAttributes") + 200)
    return {
        "layer keys": payload[:1] + struct.pack("<I", 0x7FFFFFF0) + payload[5:],
        "a place's vector": payload[: boundary + 1] + struct.pack("<I", 0x7FFFFFF0) + payload[boundary + 5 :],
        "truncated": payload[: len(payload) * 2 // 3],
    }


def test_a_hostile_snapshot_is_refused_under_ten_times_its_size_and_the_mirror_goes_on(
    ros_domain_id: int, mirror_process: int, store: GraphStore
) -> None:
    scene = generate_scene("small")  # 75 KB: the size of the report's snapshot
    payload = scene.to_binary(include_mesh=False)
    with ros_session(ros_domain_id):
        probe = rclpy.create_node("hostile_probe")
        publisher = probe.create_publisher(DsgUpdate, TOPIC, qos(1))
        status: Collector[MirrorStatus] = Collector(probe, MirrorStatus, "/mirror_status")
        with spinning(probe):
            wait_for_subscribers(publisher, timeout_s=30.0)
            wait_until(lambda: probe.count_publishers("/mirror_status") >= 1, 30.0, "the mirror's status")

            def send(data: bytes, sequence: int) -> MirrorStatus:
                after = status.count
                publisher.publish(DsgUpdate(layer_contents=data, full_update=True, sequence_number=sequence))
                return status.wait(lambda s: s.sequence == sequence, 30.0, after=after, what=f"status of {sequence}")

            first = send(payload, 1)
            assert (first.last_error, first.snapshots_applied) == ("", 1)
            # Hydra's steady state: the next snapshot differs a little (the mirror compares it with the last
            # one, and keeps what that comparison needs); a hostile one then arrives.
            moved = scene.get_node(next(n.id.value for n in scene.nodes if n.id.category == "O"))
            start = moved.attributes.position.copy()
            moved.attributes.position = start + 1.0
            second = send(scene.to_binary(include_mesh=False), 2)
            assert (second.last_error, second.snapshots_applied, second.nodes_changed) == ("", 2, 1)
            current = scene.to_binary(include_mesh=False)
            for sequence, (name, data) in enumerate(hostile(current).items(), start=3):
                Path(f"/proc/{mirror_process}/clear_refs").write_text("5")
                peak_before, files_before = memory_kb(mirror_process)
                reply = send(data, sequence)
                peak, files = memory_kb(mirror_process)
                growth = (peak - peak_before - (files - files_before)) * 1024
                assert "is not a spark_dsg graph (refused before decoding)" in reply.last_error, (name, reply)
                assert reply.snapshots_applied == 2, name
                assert growth < MEMORY_FACTOR * len(data), (name, growth, len(data))

            moved.attributes.position = start + 2.0
            last = send(scene.to_binary(include_mesh=False), 9)
            assert (last.last_error, last.snapshots_applied, last.nodes_changed) == ("", 3, 1)
    symbol = moved.id.str()
    rows = store.query(f"MATCH (o:Object {{nodeSymbol: '{symbol}'}}) RETURN o.x AS x")
    assert rows == [{"x": pytest.approx(float(moved.attributes.position[0]))}]
