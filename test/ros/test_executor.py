"""NodeExecutor: every callback still runs, once per run, and a task waiting for a free thread is not queued again."""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.task import Future

from heracles_ros.ros.executor import NodeExecutor
from heracles_ros.ros.rclpy_compat import ros_initialized
from heracles_ros.ros.runner import BackgroundSpinner

THREADS = 2


@pytest.fixture
def spun(ros_domain_id) -> Iterator[Any]:
    """Start a node on the given executor class, spun in the background; returns (executor, node)."""
    with contextlib.ExitStack() as stack:

        def start(kind: type) -> tuple[Any, Any]:
            context = rclpy.context.Context()
            stack.enter_context(ros_initialized(None, context=context, domain_id=ros_domain_id))
            node = rclpy.create_node("executor_probe", context=context)
            stack.callback(node.destroy_node)
            executor = kind(num_threads=THREADS, context=context)
            executor.add_node(node)
            spinner = BackgroundSpinner(executor, name="executor-test").start()
            stack.callback(spinner.stop, 2.0)
            return executor, node

        yield start


def hand_overs_while_the_pool_is_busy(executor: Any, wakes: int) -> tuple[int, list[int]]:
    """Fill the pool, create one more task, wake the executor ``wakes`` times, free the pool.

    Returns how often the executor handed work to its pool meanwhile, and the task's runs.
    """
    release = threading.Event()
    for _ in range(THREADS):  # every pool thread blocked: the next task waits in the queue
        executor.create_task(release.wait, 5.0)
    time.sleep(0.2)
    pool = executor._executor
    real_submit, handed = pool.submit, [0]

    def counting(fn: Any, *args: Any) -> Any:
        handed[0] += 1
        return real_submit(fn, *args)

    pool.submit = counting
    runs: list[int] = []
    task = executor.create_task(lambda: runs.append(1))
    for _ in range(wakes):  # each wake-up is a turn of the spin loop, as a message or a timer would be
        executor.wake()
        time.sleep(0.001)
    release.set()
    deadline = time.monotonic() + 5.0
    while not task.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    return handed[0], runs


def test_a_task_waiting_for_a_free_thread_is_handed_to_the_pool_once_and_runs_once(spun):
    executor, _ = spun(NodeExecutor)
    handed, runs = hand_overs_while_the_pool_is_busy(executor, 200)
    assert runs == [1]
    assert handed <= 1, f"handed to the pool {handed} times while it waited"


def test_rclpy_own_executor_still_queues_a_waiting_task_again(spun):
    """Why NodeExecutor exists: when this fails, the installed rclpy has the fix; retire NodeExecutor."""
    executor, _ = spun(MultiThreadedExecutor)
    handed, runs = hand_overs_while_the_pool_is_busy(executor, 200)
    assert runs == [1]
    assert handed > 20


def test_callbacks_of_many_kinds_all_run_and_a_suspended_coroutine_is_resumed(spun):
    executor, node = spun(NodeExecutor)
    from std_msgs.msg import String

    got: list[str] = []
    node.create_subscription(String, "burst", lambda msg: got.append(msg.data), 500)
    publisher = node.create_publisher(String, "burst", 500)
    ticks: list[int] = []
    timer = node.create_timer(0.01, lambda: ticks.append(1))
    later: Future = Future(executor=executor)

    async def waits_for_later() -> str:
        return f"resumed with {await later}"

    coroutine = executor.create_task(waits_for_later)
    time.sleep(0.3)
    for i in range(300):
        publisher.publish(String(data=str(i)))
    later.set_result("the value")
    deadline = time.monotonic() + 5.0
    while (len(got) < 300 or not coroutine.done()) and time.monotonic() < deadline:
        time.sleep(0.01)
    timer.cancel()
    assert got == [str(i) for i in range(300)]  # every message once, in order (one subscription, serialised)
    assert coroutine.result() == "resumed with the value"
    assert len(ticks) >= 10


def test_an_exception_in_a_callback_still_ends_the_spin_as_rclpy_does(ros_domain_id):
    context = rclpy.context.Context()
    with ros_initialized(None, context=context, domain_id=ros_domain_id):
        node = rclpy.create_node("executor_probe", context=context)
        executor = NodeExecutor(num_threads=THREADS, context=context)
        executor.add_node(node)
        spinner = BackgroundSpinner(executor, name="executor-test").start()

        def fails() -> None:
            raise ValueError("a callback's bug")

        executor.create_task(fails)
        assert spinner.finished.wait(5.0), "the spin loop went on after a callback raised"
        assert isinstance(spinner.error, ValueError)
        spinner.stop(2.0)
        node.destroy_node()
