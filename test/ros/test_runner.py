"""Nodes start and stop the same way on every ROS 2 distro (run with HERACLES_ROS_DISTRO=jazzy too)."""
from __future__ import annotations

import gc
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor

from heracles_ros.ros.rclpy_compat import ros_initialized
from heracles_ros.ros.runner import BackgroundSpinner

ROOT = Path(__file__).resolve().parents[2]
SCENE = ROOT / "heracles_ros" / "data" / "example_scene.json"


def test_ros_initialized_inits_and_shuts_down_on_this_distros_rclpy(ros_domain_id):
    context = rclpy.context.Context()
    with ros_initialized(None, context=context, domain_id=ros_domain_id):
        assert context.ok()
        node = rclpy.create_node("compat_probe", context=context)
        node.destroy_node()
    assert not context.ok()


def _lines(stream, out: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        out.put(line)
    out.put(None)


def test_a_node_mirrors_its_scene_and_exits_cleanly_on_ctrl_c(ros_domain_id, tmp_path):
    executable = Path(sys.prefix) / "lib" / "heracles_ros" / "dsg_mirror"
    process = subprocess.Popen(
        [sys.executable, str(executable), "--ros-args", "-p", f"db_uri:=embedded:{tmp_path / 'db'}",
         "-p", f"scene_file:={SCENE}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id)},
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_lines, args=(process.stdout, lines), daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not any("mirrored scene file" in line for line in seen):
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, "dsg_mirror exited early:\n" + "".join(seen)
            seen.append(line)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0, "".join(seen)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        # The node started the embedded server (it runs detached, as on the robot): stop it as an operator would.
        subprocess.run([sys.executable, "-m", "heracles_ros.cli", "db", "stop", "--db", f"embedded:{tmp_path / 'db'}"],
                       env={**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id)}, capture_output=True, timeout=60)
    while (line := lines.get(timeout=10)) is not None:
        seen.append(line)
    output = "".join(seen)
    assert "159 nodes, 349 edges" in output
    assert "Traceback" not in output and "terminate called" not in output, output


@pytest.mark.filterwarnings("ignore:MultiThreadedExecutor is used with a single thread")
def test_stopping_the_spinner_lets_dispatched_callbacks_finish_cleanly(ros_domain_id, capfd):
    """rclpy's Executor.shutdown destroys its guard condition before the thread pool has run the
    callbacks already handed to it: one that started after that printed 'The following exception was
    never retrieved: cannot use Destroyable ...' (seen at the end of CI runs)."""
    context = rclpy.context.Context()
    entered = threading.Event()

    def slow() -> None:  # holds the pool's one thread, so the fast timer's callback waits in its queue
        entered.set()
        time.sleep(0.3)

    with ros_initialized(None, context=context, domain_id=ros_domain_id):
        node = rclpy.create_node("spinner_probe", context=context)
        node.create_timer(0.01, slow, callback_group=MutuallyExclusiveCallbackGroup())
        node.create_timer(0.01, lambda: None, callback_group=MutuallyExclusiveCallbackGroup())
        executor = MultiThreadedExecutor(num_threads=1, context=context)
        executor.add_node(node)
        spinner = BackgroundSpinner(executor, name="probe").start()
        assert entered.wait(5.0)
        time.sleep(0.05)
        spinner.stop()
        node.destroy_node()
        del executor, spinner
        gc.collect()
    assert "never retrieved" not in capfd.readouterr().err


FAILING_NODE = '''
import sys
import rclpy.node
from heracles_ros.ros.runner import run_node

class Failing(rclpy.node.Node):
    def __init__(self):
        super().__init__("failing_probe")
        self.create_timer(0.3, self.fail)

    def fail(self):
        raise RuntimeError("a bug in a callback")

sys.exit(run_node("failing_probe", Failing))
'''


def test_an_exception_that_ends_a_node_is_logged_as_an_error_and_the_process_exits_non_zero(ros_domain_id):
    process = subprocess.run(
        [sys.executable, "-c", FAILING_NODE], capture_output=True, text=True, timeout=60,
        env={**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(ROOT)},
    )
    assert process.returncode == 1, process.stderr
    assert "ERROR heracles_ros.ros.spinner: failing_probe-executor stopped by an exception" in process.stderr
    assert "RuntimeError('a bug in a callback')" in process.stderr


@pytest.mark.filterwarnings("ignore:MultiThreadedExecutor is used with a single thread")
def test_stopping_the_spinner_is_bounded_when_a_callback_never_returns(ros_domain_id):
    context = rclpy.context.Context()
    stuck, release = threading.Event(), threading.Event()

    def never_returns() -> None:
        stuck.set()
        release.wait(30.0)

    with ros_initialized(None, context=context, domain_id=ros_domain_id):
        node = rclpy.create_node("stuck_probe", context=context)
        node.create_timer(0.01, never_returns, callback_group=MutuallyExclusiveCallbackGroup())
        executor = MultiThreadedExecutor(num_threads=2, context=context)
        executor.add_node(node)
        spinner = BackgroundSpinner(executor, name="stuck").start()
        assert stuck.wait(5.0)
        began = time.monotonic()
        drained = spinner.stop(1.0)
        took = time.monotonic() - began
        release.set()
        node.destroy_node()
    assert not drained and took < 2.0, f"stop took {took:.1f} s"


def test_a_repeated_stop_signal_is_only_noted(ros_domain_id):
    from heracles_ros.ros.runner import StopRequests

    with StopRequests() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.requested.wait(2.0) and stop.signal_name == "SIGINT"
        os.kill(os.getpid(), signal.SIGTERM)  # would raise KeyboardInterrupt or end the process otherwise
        time.sleep(0.1)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # stopping: ignored until the process ends
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


STUCK_NODE = '''
import sys, threading
import rclpy.node
from heracles_ros.ros.runner import run_node

class Stuck(rclpy.node.Node):
    def __init__(self):
        super().__init__("stuck_probe")
        self.declare_parameter("shutdown_timeout_s", 1.0)
        print("up", flush=True)

    def destroy_node(self):
        threading.Event().wait()  # stuck for good, as rclpy's own teardown once was

sys.exit(run_node("stuck_probe", Stuck))
'''


def test_a_node_stuck_in_its_teardown_still_ends_within_its_shutdown_bound(ros_domain_id):
    process = subprocess.Popen(
        [sys.executable, "-c", STUCK_NODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(ROOT)},
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "up"
        process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        _, err = process.communicate(timeout=30)
        took = time.monotonic() - stopped
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1, err
    assert took < 1.0 + 0.5 + 2.0, f"exited {took:.1f} s after SIGTERM (bound 1 s, grace 0.5 s)"
    assert "stuck_probe did not exit within 1.5 s of the stop; ending the process" in err
    assert "in destroy_node" in err  # where it was stuck, for whoever reads the log
