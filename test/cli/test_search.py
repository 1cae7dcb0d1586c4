"""``heracles search`` through the real nodes over DDS: the dispatcher on the simulated Spot with a simulated Hydra
whose world holds fire extinguishers the map lacks, the real dsg_mirror on the namespace's own topic, the CLI as a
process of its own (Fast Downward plans each leg; FalkorDB holds the map)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import rclpy
from heracles_ros.msg import StopState
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from support.ros import Collector, call_service, ros_session, spinning, wait_until

from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from heracles_ros.ros.qos import latched
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.search.worlds import hide_objects

pytestmark = pytest.mark.backends("falkordb")

NS = "/searcher"
TOPIC = f"{NS}/hydra/backend/dsg"
ROOT = Path(__file__).resolve().parents[2]


def search(domain: int, db: str, graph: str, what: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    return subprocess.Popen(
        [sys.executable, "-m", "heracles_ros.cli", "search", what, "--execute", "--json", "--namespace", NS,
         "--db", db, "--graph", graph, *extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def robot_xy(store) -> tuple[float, float]:
    row = store.query("MATCH (r:Robot {nodeSymbol: 'robot'}) RETURN r.x AS x, r.y AS y")[0]
    return float(row["x"]), float(row["y"])


@pytest.fixture
def system(ros_domain_id, falkordb_uri, graph_name, small_store, tmp_path):
    """The mirror and the dispatcher (sim world: fire extinguishers at P77 in R3 and P47 in R1) in NS."""
    def start(time_scale: float):
        world = generate_scene("small", 0)
        hidden = hide_objects(world, "fire extinguisher", ["P77", "P47"])
        world.save(str(tmp_path / "world.json"))
        common = {"db_uri": falkordb_uri, "graph_name": graph_name}
        mirror = DsgMirrorNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **common, "dsg_topic": TOPIC, "instance_check_s": 0.0}.items()])
        dispatcher = DispatcherNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **common, "start_place": "P0", "sim_world": str(tmp_path / "world.json"), "sim_dsg_topic": TOPIC,
            "sim_hydra_period_s": 0.2, "sim_time_scale": time_scale}.items()])
        return mirror, dispatcher, hidden

    with ros_session(ros_domain_id):
        yield start


def test_search_execute_walks_until_the_mirror_holds_the_thing_and_names_it_the_robot_still(
        system, ros_domain_id, falkordb_uri, graph_name, small_store):
    mirror, dispatcher, hidden = system(10.0)
    with spinning(mirror), spinning(dispatcher, num_threads=dispatcher.executor_threads()):
        started = time.monotonic()
        cli = search(ros_domain_id, falkordb_uri, graph_name, "something to put out fires")  # by meaning
        out, err = cli.communicate(timeout=120)
        assert cli.returncode == 0, err
        result = json.loads(out)
        assert result["outcome"] == "found" and result["found"] in hidden, result
        assert result["visited"] and result["visited"][-1] == result["where"]
        assert result["distance_m"] > 3.0
        assert "looking in R" in err
        seen = small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": result["found"]})
        assert seen == [{"c": "fire extinguisher"}]  # the mirror wrote it from the simulated Hydra's snapshots
        still = robot_xy(small_store)
        time.sleep(1.0)
        assert robot_xy(small_store) == still  # the leg was cancelled once it was seen: the robot stands
        assert time.monotonic() - started < 90


def test_a_search_for_what_the_world_lacks_ends_not_found_in_bounded_time_listing_the_rooms(
        system, ros_domain_id, falkordb_uri, graph_name):
    mirror, dispatcher, _ = system(20.0)
    with spinning(mirror), spinning(dispatcher, num_threads=dispatcher.executor_threads()):
        started = time.monotonic()
        cli = search(ros_domain_id, falkordb_uri, graph_name, "unicorn")
        out, err = cli.communicate(timeout=180)
        result = json.loads(out)
        assert cli.returncode == 1, err
        assert result["outcome"] == "not_found" and result["found"] is None
        assert sorted(result["visited"]) == ["R0", "R1", "R2", "R3"], result  # the shed cannot be reached
        assert time.monotonic() - started < 150


def test_heracles_stop_during_a_search_stops_it_like_any_plan(system, ros_domain_id, falkordb_uri, graph_name,
                                                             small_store):
    mirror, dispatcher, _ = system(1.0)  # real time: the first leg is still walking when the stop comes
    probe = rclpy.create_node("probe")
    stop = probe.create_client(Trigger, f"{NS}/stop")
    states = Collector(probe, StopState, f"{NS}/stop_state", latched())
    with spinning(mirror), spinning(dispatcher, num_threads=dispatcher.executor_threads()), spinning(probe):
        cli = search(ros_domain_id, falkordb_uri, graph_name, "unicorn")
        wait_until(lambda: dispatcher._active is not None, 60.0, "the search's first leg running")
        assert call_service(stop, Trigger.Request(), 10.0).success
        out, err = cli.communicate(timeout=30)
        result = json.loads(out)
        assert cli.returncode == 1, err
        assert result["outcome"] == "stopped" and len(result["visited"]) == 1, result
        wait_until(lambda: states.latest is not None and states.latest.stopped, 5.0, "the latched stop")
        still = robot_xy(small_store)
        time.sleep(1.0)
        assert robot_xy(small_store) == still
