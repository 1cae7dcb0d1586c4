"""A killed process of ours leaves the ROS graph in seconds (client presence depends on it); run on Jazzy too."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import rclpy
from support.ros import ros_session, wait_until

from heracles_ros.ros.fastdds_profile import LEASE_S, PROFILE_FILE, fastdds_profile_env

ROOT = Path(__file__).resolve().parents[2]
VICTIM = (
    "from heracles_ros.ros.fastdds_profile import use_fastdds_profile; use_fastdds_profile(); import rclpy, time; "
    "rclpy.init(); node = rclpy.create_node('lease_victim'); print('up', flush=True); time.sleep(120)"
)


def test_a_killed_process_leaves_the_graph_within_its_short_lease(ros_domain_id):
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(ROOT)}
    for name in ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE"):
        env.pop(name, None)
    victim = subprocess.Popen([sys.executable, "-c", VICTIM], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert victim.stdout is not None and victim.stdout.readline().strip() == "up"
        with ros_session(ros_domain_id):
            watcher = rclpy.create_node("lease_watcher")
            try:
                def present() -> bool:
                    return "lease_victim" in [name for name, _ in watcher.get_node_names_and_namespaces()]

                wait_until(present, 20.0, "the victim on the graph")
                victim.kill()
                victim.wait(10)
                killed = time.monotonic()
                wait_until(lambda: not present(), 15.0, "the killed victim to leave the graph")
                gone_after = time.monotonic() - killed
            finally:
                watcher.destroy_node()
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    assert gone_after < LEASE_S + 1.5, f"left the graph after {gone_after:.1f} s (Fast DDS's default lease: 20 s)"


def test_the_shipped_profile_sets_the_lease_and_only_where_the_user_chose_nothing():
    assert f"<leaseDuration><sec>{int(LEASE_S)}</sec></leaseDuration>" in PROFILE_FILE.read_text()
    env = fastdds_profile_env({"PATH": "/bin"})
    assert str(PROFILE_FILE) in (env.get("FASTDDS_DEFAULT_PROFILES_FILE"), env.get("FASTRTPS_DEFAULT_PROFILES_FILE"))
    own = {"FASTRTPS_DEFAULT_PROFILES_FILE": "/etc/robot.xml"}
    assert fastdds_profile_env(own) == own  # the site's own profile wins
    other = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert fastdds_profile_env(other) == other  # only Fast DDS reads it


SERVER = """
import time, rclpy
from std_srvs.srv import Trigger
rclpy.init()
node = rclpy.create_node('late_reader_server')
called = []
def answer(request, response):
    called.append(time.monotonic())
    return response
node.create_service(Trigger, 'late_reader', answer)
print('up', flush=True)
while not called:
    rclpy.spin_once(node, timeout_sec=1.0)
print(f'sent after {time.monotonic() - called[0]:.3f}', flush=True)
"""


def test_a_service_waits_seconds_for_a_client_whose_response_reader_is_not_matched_yet(ros_domain_id):
    """The response writer's wait for the client's reader is the shipped profile's 2 s, not Fast DDS's 0.1 s.

    A client whose response reader can never match (it asks for transient-local
    data, the server offers volatile) while its request writer does stands in
    for a client whose reader is discovered late: the server's send then waits
    out the whole bound, which the server process measures. (Such a client is
    never "ready" by ``wait_for_service``.)
    """
    env = fastdds_profile_env({**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(ROOT)})
    server = subprocess.Popen([sys.executable, "-c", SERVER], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "up"
        with ros_session(ros_domain_id):
            from rclpy.qos import DurabilityPolicy, QoSProfile
            from std_srvs.srv import Trigger

            node = rclpy.create_node("late_reader_client")
            try:
                never_matched = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL)
                client = node.create_client(Trigger, "late_reader", qos_profile=never_matched)
                # A volatile reader gets no request sent before it matched: ask until one arrives.
                deadline = time.monotonic() + 30.0
                while server.poll() is None and time.monotonic() < deadline:
                    client.call_async(Trigger.Request())
                    time.sleep(0.5)
                out, err = server.communicate(timeout=10)
            finally:
                node.destroy_node()
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert "XMLPARSER" not in err, f"Fast DDS refused the shipped profile:\n{err}"
    waited = float(out.strip().rsplit(" ", 1)[-1])
    assert 1.5 <= waited < 10.0, f"the server gave the client's reader {waited:.2f} s (Fast DDS's default: 0.1 s)"
