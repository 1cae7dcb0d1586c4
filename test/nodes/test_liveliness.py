"""A killed process of ours leaves the ROS graph in seconds (client presence depends on it); run on Jazzy too."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import rclpy
from support.ros import ros_session, wait_until

from heracles_ros.nodes.liveliness import LEASE_S, PROFILE_FILE, short_lease_env

ROOT = Path(__file__).resolve().parents[2]
VICTIM = (
    "from heracles_ros.nodes.liveliness import prefer_short_lease; prefer_short_lease(); import rclpy, time; "
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
    env = short_lease_env({"PATH": "/bin"})
    assert str(PROFILE_FILE) in (env.get("FASTDDS_DEFAULT_PROFILES_FILE"), env.get("FASTRTPS_DEFAULT_PROFILES_FILE"))
    own = {"FASTRTPS_DEFAULT_PROFILES_FILE": "/etc/robot.xml"}
    assert short_lease_env(own) == own  # the site's own profile wins
    other = {"RMW_IMPLEMENTATION": "rmw_cyclonedds_cpp"}
    assert short_lease_env(other) == other  # only Fast DDS reads it
