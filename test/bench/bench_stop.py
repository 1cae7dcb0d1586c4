"""How long from ``heracles stop`` starting to the robot standing still (run by hand, not by pytest).

Starts a dispatcher with the simulator on the small synthetic scene (embedded
FalkorDB in a temporary directory), sends it a long walk planned by the real
planner, and for each run starts ``heracles stop`` as a
new process and measures until the dispatcher's robot marker stops moving: the
last marker pose that differs from the final one is the moment the robot
stopped. Then resumes and walks again. Prints each run and the median.

    HERACLES_VENV=/work/main/.venv ./run.sh exec python test/bench/bench_stop.py [RUNS]
"""
from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NS = "/benchstop"
DOMAIN = 77


def main(runs: int) -> None:
    import rclpy
    from heracles_ros.action import ExecutePlan
    from heracles_ros.srv import Resume
    from rclpy.action import ActionClient
    from visualization_msgs.msg import MarkerArray

    from heracles_ros.graphdb import open_store
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.nodes.plan_msgs import plan_to_msg
    from heracles_ros.planning.planner import Planner
    from heracles_ros.scene.synthetic import generate_scene

    env = {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN), "PYTHONPATH": str(ROOT)}
    data = tempfile.mkdtemp(prefix="bench_stop_")
    store = open_store(f"embedded:{data}")
    Mirror(store).reconcile(generate_scene("small", seed=0))
    ends = [row["s"] for row in store.query(
        "MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s, p.x + p.y AS d ORDER BY d")]  # fmt: skip
    far_ends = (ends[0], ends[-1])
    dispatcher = subprocess.Popen(
        [sys.executable, "-m", "heracles_ros.nodes.dispatcher", "--ros-args", "-r", f"__ns:={NS}",
         "-p", f"db_uri:=embedded:{data}", "-p", f"start_place:={far_ends[0]}", "-p", "sim_speed_mps:=0.5"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    rclpy.init(domain_id=DOMAIN)
    node = rclpy.create_node("bench_stop")
    poses: list[tuple[float, float, float]] = []  # (receive time, x, y) of the robot arrow

    def on_markers(array: MarkerArray) -> None:
        for marker in array.markers:
            if (marker.ns, marker.id, marker.action) == ("heracles/robot", 0, marker.ADD):
                poses.append((time.monotonic(), marker.pose.position.x, marker.pose.position.y))

    node.create_subscription(MarkerArray, f"{NS}/plan_markers", on_markers, 100)
    actions = ActionClient(node, ExecutePlan, f"{NS}/execute_plan")
    resume = node.create_client(Resume, f"{NS}/resume")
    try:
        assert actions.wait_for_server(timeout_sec=60.0), "the dispatcher did not start"
        figures = []
        for run in range(runs):
            # From wherever the last stop left the robot (its record) to the far end of the scene.
            plan = Planner(store).plan(f"(at-place {far_ends[(run + 1) % 2]})")
            assert plan.ok, plan.reason
            future = actions.send_goal_async(ExecutePlan.Goal(plan=plan_to_msg(plan, plan_id=f"bench-{run}")))
            rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
            assert future.result() is not None and future.result().accepted, "the walk was refused"
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:  # walk a little
                rclpy.spin_once(node, timeout_sec=0.05)
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "stop", "--namespace", NS],
                                  env=env, capture_output=True, text=True)  # fmt: skip
            returned = time.monotonic() - started
            settle = time.monotonic() + 2.0
            while time.monotonic() < settle:
                rclpy.spin_once(node, timeout_sec=0.05)
            final = poses[-1][1:]
            moving = [t for t, x, y in poses if (x, y) != final and t >= started - 1.0]
            stopped_after = (max(moving) - started) if moving else 0.0
            figures.append(stopped_after)
            print(f"run {run}: robot stopped {stopped_after:.2f} s after 'heracles stop' started "
                  f"(the command returned after {returned:.2f} s, exit {done.returncode}: {done.stdout.strip()})")
            answer = resume.call_async(Resume.Request(operator_name="bench", reason="next run"))
            rclpy.spin_until_future_complete(node, answer, timeout_sec=10.0)
        print(f"median over {runs} runs: {statistics.median(figures):.2f} s, max {max(figures):.2f} s")
    finally:
        store.close()
        node.destroy_node()
        rclpy.shutdown()
        dispatcher.send_signal(signal.SIGINT)
        try:
            dispatcher.wait(timeout=15.0)
        except subprocess.TimeoutExpired:
            dispatcher.kill()
        subprocess.run([sys.executable, "-m", "heracles_ros.cli", "db", "stop", "--db", f"embedded:{data}"],
                       env=env, capture_output=True)  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
