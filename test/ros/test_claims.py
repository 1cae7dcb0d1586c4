"""One node of a kind per robot: of two claims the older wins, at start or found late, and the newer goes."""
from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rclpy
from std_msgs.msg import String
from support.ros import ros_session, spinning, wait_until

from heracles_ros.errors import ConfigError
from heracles_ros.ros.claims import RobotClaim, claim_order
from heracles_ros.ros.interfaces import Qos, Topic

ROOT = Path(__file__).resolve().parents[2]
KIND = "claims_probe"
NS = "/claims"
TOPIC = Topic(f"{KIND}_claim", "std_msgs.msg.String", KIND, Qos(20, latched=True))
HERE = f"{socket.gethostname()}:{os.getpid()}"


def test_a_node_started_beside_a_running_one_refuses_naming_its_holder(ros_domain_id):
    with ros_session(ros_domain_id):
        running = rclpy.create_node(KIND, namespace=NS)
        RobotClaim(running, TOPIC, 0.0).look()  # not looked for, still announced
        late = rclpy.create_node(KIND, namespace=NS)
        began = time.monotonic()
        with pytest.raises(ConfigError) as refused:
            RobotClaim(late, TOPIC, 10.0).look()
        assert time.monotonic() - began < 10.0  # refused once found, not at the end of the look
        assert str(refused.value) == (
            f"another {KIND} already runs for this robot ({NS}/{KIND}, on {HERE}): one {KIND} per robot; stop that "
            "one first, or start this one in another namespace; this one started nothing and wrote nothing")
        unchecked = rclpy.create_node(KIND, namespace=NS)
        claim = RobotClaim(unchecked, TOPIC, 0.0)  # 0: nothing looked for, nothing refused
        claim.look()
        claim.arm(lambda holder: None)
        elsewhere = rclpy.create_node(KIND, namespace="/another_robot")
        RobotClaim(elsewhere, TOPIC, 1.0).look()  # another namespace is another robot
        for node in (running, late, unchecked, elsewhere):
            node.destroy_node()


def test_of_two_started_at_once_exactly_one_runs(ros_domain_id):
    outcomes: queue.Queue[tuple[str, str]] = queue.Queue()
    with ros_session(ros_domain_id):
        nodes = [rclpy.create_node(KIND, namespace=NS) for _ in range(2)]
        start = threading.Barrier(2)

        def claim(node: rclpy.node.Node) -> None:
            start.wait()
            claim = RobotClaim(node, TOPIC, 3.0)
            try:
                claim.look()
            except ConfigError:
                outcomes.put(("refused", claim.mine))
            else:
                outcomes.put(("runs", claim.mine))

        threads = [threading.Thread(target=claim, args=(node,)) for node in nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30.0)
        ended = sorted(outcomes.get(timeout=1.0) for _ in nodes)
        assert [outcome for outcome, _ in ended] == ["refused", "runs"]
        assert claim_order(ended[1][1]) < claim_order(ended[0][1])  # the older claim is the one that runs
        for node in nodes:
            node.destroy_node()


def test_an_older_claim_found_late_goes_to_on_superseded_once_and_a_newer_one_never(ros_domain_id):
    superseded: list[str] = []
    with ros_session(ros_domain_id):
        node = rclpy.create_node(KIND, namespace=NS)
        claim = RobotClaim(node, TOPIC, 0.2)
        claim.look()
        claim.arm(superseded.append)
        probe = rclpy.create_node("claims_forger")
        forged = TOPIC.publisher(probe, namespace=NS)
        with spinning(node, probe):
            newer = f"{time.time() + 1000:.6f} ffff later:2"
            older = [f"1.000000 {'0' * 32} elsewhere:7", f"0.500000 {'0' * 32} elsewhere:8"]
            for text in (newer, *older):
                forged.publish(String(data=text))
            wait_until(lambda: len(claim._older) == 2, 10.0, "both older claims to reach the node")
            assert superseded == ["elsewhere:7"]
            with pytest.raises(ConfigError, match="on elsewhere:8"):  # arming again: an older claim is known
                claim.arm(superseded.append)


NODE_PROGRAM = f"""
import sys
from heracles_ros.ros.interfaces import Qos, Topic
from heracles_ros.ros.node_base import HeraclesNode
from heracles_ros.ros.runner import SHUTDOWN_TIMEOUT

class Probe(HeraclesNode):
    NODE_NAME = {KIND!r}
    PARAMETERS = (SHUTDOWN_TIMEOUT,)

    def setup(self, values):
        self.claim_robot(Topic({TOPIC.name!r}, "std_msgs.msg.String", {KIND!r}, Qos(20, latched=True)), 0.5)
        self.get_logger().info("claimed the robot")

    def on_superseded(self):
        self.get_logger().warning("robot stopped first")

    def finish(self):
        self.get_logger().info("finished its work")

sys.exit(Probe.main())
"""


def test_a_running_node_that_finds_an_older_claim_steps_down_and_its_process_exits_1(ros_domain_id):
    process = subprocess.Popen(
        [sys.executable, "-c", NODE_PROGRAM, "--ros-args", "-r", f"__ns:={NS}"], cwd=ROOT, text=True,
        env={**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        wait_until(lambda: "claimed the robot" in "".join(lines) or process.poll() is not None, 60.0, "the start")
        assert process.poll() is None, "".join(lines)
        with ros_session(ros_domain_id):
            probe = rclpy.create_node("claims_forger")
            forged = TOPIC.publisher(probe, namespace=NS)
            forged.publish(String(data=f"1.000000 {'0' * 32} elsewhere:7"))
            code = process.wait(timeout=30.0)
            probe.destroy_node()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    reader.join(10.0)  # the output's last lines
    output = "".join(lines)
    assert code == 1, output
    assert (f"another {KIND} for this robot ({NS}/{KIND}) started before this one, on elsewhere:7: one {KIND} per "
            "robot; this one stops and exits") in output
    steps = ("robot stopped first", "stopping (it stepped down)", "finished its work")  # then the clean close
    assert all(step in output for step in steps), output
    assert sorted(steps, key=output.index) == list(steps), output
