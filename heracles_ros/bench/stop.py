"""``heracles bench stop``: from ``heracles stop`` starting to the robot standing still.

A dispatcher with the simulator walks the small synthetic scene (embedded FalkorDB
in a throwaway directory) from one corner towards the other, a plan from the real
planner; after a few seconds of walking, ``heracles stop`` starts as a new process,
as an operator would start it (on this machine it takes the dispatcher's local
socket). The robot stopped at the last pose of its marker that differs from the
final one; markers come every 0.2 s, so 0.00 means still by the first marker
after the command started, and ``cli_returned`` (the command's answer: the
dispatcher answers once it has stopped the robot) is the finer bound. Then
``resume`` and the next walk. Both figures include the CLI's own start-up, which
is what the operator waits for.

Discovery is localhost-only for the bench and its dispatcher (a bench never reaches
a robot on the lab network); the domain is ``--domain`` or ROS_DOMAIN_ID.
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from heracles_ros.errors import HeraclesError

#: Seconds: how long each walk goes on before the stop, and how long the robot is watched after it.
WALK_S = 3.0
WATCH_S = 2.0
#: Seconds to wait for the dispatcher to come up, and for a goal or a resume to be answered.
START_S = 60.0
ANSWER_S = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=5, help="stops to measure (default 5)")
    parser.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "0")),
                        help="ROS domain of the bench's own dispatcher (default: ROS_DOMAIN_ID or 0)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.runs < 1:
        raise HeraclesError(f"--runs must be at least 1, got {args.runs}")
    env = {**os.environ, "ROS_DOMAIN_ID": str(args.domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    env.pop("ROS_LOCALHOST_ONLY", None)
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
    os.environ.pop("ROS_LOCALHOST_ONLY", None)
    namespace = f"/bench_stop_{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="heracles-bench-stop-") as data:
        corners = _load_scene(data)
        dispatcher = subprocess.Popen(
            [sys.executable, "-m", "heracles_ros.nodes.dispatcher", "--ros-args", "-r", f"__ns:={namespace}",
             "-p", f"db_uri:=embedded:{data}", "-p", f"start_place:={corners[0]}", "-p", "sim_speed_mps:=0.5"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            runs = _measure(args.runs, namespace, data, corners, env)
        finally:
            dispatcher.send_signal(signal.SIGINT)
            try:
                dispatcher.wait(timeout=15.0)
            except subprocess.TimeoutExpired:
                dispatcher.kill()
                dispatcher.wait(timeout=5.0)
            subprocess.run([sys.executable, "-m", "heracles_ros.cli", "db", "stop", "--db", f"embedded:{data}"],
                           env=env, capture_output=True, timeout=60.0)  # fmt: skip
    stopped = [r["stopped_after_s"] for r in runs]
    returned = [r["cli_returned_s"] for r in runs]
    return {
        "runs": len(runs),
        "stopped_after_median_s": statistics.median(stopped),
        "stopped_after_max_s": max(stopped),
        "stopped_after_each_s": " ".join(f"{s:.2f}" for s in stopped),
        "cli_returned_median_s": statistics.median(returned),
        "cli_exit_codes": " ".join(str(r["exit"]) for r in runs),
        "still_at_end_of_every_run": all(r["still"] for r in runs),
        "load_average_1min": os.getloadavg()[0],
    }


def _load_scene(data: str) -> tuple[str, str]:
    from heracles_ros.graphdb import open_store
    from heracles_ros.graphdb.cypher.bench import PLACES_ALONG_DIAGONAL
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.scene.synthetic import generate_scene

    with open_store(f"embedded:{data}") as store:
        Mirror(store).reconcile(generate_scene("small", seed=0))
        places = [str(row["s"]) for row in store.query(PLACES_ALONG_DIAGONAL)]
    return places[0], places[-1]


def _measure(runs: int, namespace: str, data: str, corners: tuple[str, str], env: dict[str, str]) -> list[dict]:
    import threading

    from heracles_ros.graphdb import open_store
    from heracles_ros.planning.planner import Planner
    from heracles_ros.ros.client_context import ClientContext
    from heracles_ros.ros.interfaces import EXECUTE_PLAN, PLAN_MARKERS, RESUME
    from heracles_ros.ros.plan_msgs import plan_to_msg

    poses: list[tuple[float, float, float]] = []  # (receive time, x, y) of the robot's marker

    def on_markers(array: Any) -> None:
        for marker in array.markers:
            if (marker.ns, marker.id, marker.action) == ("heracles/robot", 0, marker.ADD):
                poses.append((time.monotonic(), marker.pose.position.x, marker.pose.position.y))

    def answered(future: Any) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(ANSWER_S):
            raise HeraclesError(f"the bench's dispatcher did not answer within {ANSWER_S:g} s")
        return future.result()

    results: list[dict] = []
    with ClientContext(f"bench_stop_{os.getpid()}", domain_id=int(env["ROS_DOMAIN_ID"])) as ros:
        PLAN_MARKERS.subscription(ros.node, on_markers, namespace=namespace)
        actions = ros.action_client(EXECUTE_PLAN, namespace)
        resume = RESUME.client(ros.node, namespace=namespace)
        if not actions.wait_for_server(timeout_sec=START_S):
            raise HeraclesError(f"the bench's dispatcher did not start within {START_S:g} s")
        with open_store(f"embedded:{data}") as store:
            planner = Planner(store)
            for index in range(runs):
                # From wherever the last stop left the robot to the opposite corner.
                plan = planner.plan(f"(at-place {corners[(index + 1) % 2]})")
                if not plan.ok:
                    raise HeraclesError(f"the bench's walk could not be planned: {plan.reason}")
                message = plan_to_msg(plan, plan_id=f"bench-{index}")
                goal = answered(actions.send_goal_async(EXECUTE_PLAN.type.Goal(plan=message)))
                if not goal.accepted:
                    raise HeraclesError("the bench's dispatcher refused the walk")
                time.sleep(WALK_S)
                started = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "stop", "--namespace", namespace],
                                      env=env, capture_output=True, text=True, timeout=60.0)  # fmt: skip
                returned = time.monotonic() - started
                time.sleep(WATCH_S)
                if not poses:
                    raise HeraclesError("the dispatcher published no robot marker while walking")
                final = poses[-1][1:]
                moving = [t for t, x, y in poses if (x, y) != final and t >= started - 1.0]
                watched_until = time.monotonic()
                results.append({"stopped_after_s": max(0.0, max(moving) - started) if moving else 0.0,
                                "cli_returned_s": returned, "exit": done.returncode,
                                # No pose change in the last half second watched: the robot stood still.
                                "still": not any(t > watched_until - 0.5 for t in moving)})
                answered(resume.call_async(RESUME.type.Request(operator_name="bench", reason="next run")))
    return results
