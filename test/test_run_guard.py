"""The suite cannot hang, stays on this machine and leaves nothing running (support/run_guard.py).

Each case runs pytest in a subprocess on a generated test that hangs (or leaks a process) the way
a real one did, under a 1 s timeout and a 2 s grace, and checks the run ended on its own, soon, with
the stacks of all threads printed and the processes it started gone.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from support.run_guard import LEAK_EXIT_STATUS, domain_slot, pick_domain

TEST_DIR = Path(__file__).resolve().parent
BOUND_S = 45.0  # start-up of a pytest process on a loaded machine, 1 s timeout, 2 s grace, clean-up

# A helper thread waiting in its own function: its stack must be printed too. The test leaves a
# child process behind that the guard must end.
PREAMBLE = """
import subprocess, threading, pytest

def helper_thread_waits_here(event):
    event.wait()

def start_helper_and_child(tmp_path):
    threading.Thread(target=helper_thread_waits_here, args=(threading.Event(),), daemon=True).start()
    child = subprocess.Popen(["sleep", "600"], start_new_session=True)
    (tmp_path / "child.pid").write_text(str(child.pid))

def wait_without_alarms():
    # Stuck where pytest-timeout's SIGALRM cannot reach (a blocked signal, as in C code holding on).
    import signal
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    threading.Event().wait()
"""

CASES = {
    "setup": """
@pytest.fixture
def stuck(tmp_path):
    start_helper_and_child(tmp_path)
    wait_without_alarms()
    yield

def test_case(stuck):
    pass
""",
    "call": """
def test_case(tmp_path):
    start_helper_and_child(tmp_path)
    wait_without_alarms()
""",
    # pytest-timeout cancels its timer when the test fails: the teardown waits with nothing armed.
    "teardown": """
@pytest.fixture
def in_flight(tmp_path):
    start_helper_and_child(tmp_path)
    yield
    threading.Event().wait()

def test_case(in_flight):
    assert False, "the test failed; its teardown waits on work in flight"
""",
}


def run_generated(tmp_path: Path, body: str, *, workers: int = 0) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``body`` as a test file under the guard; ``workers`` > 0: in parallel, as ./run.sh test does."""
    (tmp_path / "test_generated.py").write_text(textwrap.dedent(PREAMBLE) + textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(TEST_DIR), "HERACLES_TEST_GRACE_S": "2"}
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_XDIST_WORKER_COUNT"):
        env.pop(name, None)  # this test may itself run on a worker of a parallel run
    parallel = ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "support.run_guard", "-p", "no:randomly", "-p", "no:cacheprovider",
         *parallel, "-c", os.devnull, "--rootdir", str(tmp_path), "-o", "timeout=1",
         "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_generated.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BOUND_S * 3,
    )
    return result, time.monotonic() - started


def child_pid(tmp_path: Path) -> int:
    (found,) = (tmp_path / "base").rglob("child.pid")
    return int(found.read_text())


@pytest.mark.parametrize("phase", sorted(CASES))
def test_a_hang_ends_the_run_with_every_stack_and_no_process_left(tmp_path: Path, phase: str) -> None:
    result, elapsed = run_generated(tmp_path, CASES[phase])
    output = result.stdout + result.stderr
    assert result.returncode == LEAK_EXIT_STATUS, output
    assert elapsed < BOUND_S, f"the hung run took {elapsed:.0f} s"
    assert f"test_generated.py::test_case ({phase}) still running after 3 s" in output, output
    assert "helper_thread_waits_here" in output, "the helper thread's stack was not printed:\n" + output
    assert "Current thread" in output or "Thread 0x" in output, output
    pid = child_pid(tmp_path)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, \
        "the process the hung test started is still running"


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "parallel"])
def test_a_process_left_running_fails_the_run_and_is_ended(tmp_path: Path, workers: int) -> None:
    result, _ = run_generated(tmp_path, """
def test_case(tmp_path):
    start_helper_and_child(tmp_path)

def test_other():
    pass
""", workers=workers)
    output = result.stdout + result.stderr
    assert result.returncode == LEAK_EXIT_STATUS, output
    assert "process(es) started by the tests were still running at the end" in output, output
    pid = child_pid(tmp_path)
    assert f"pid {pid}" in output and re.search(rf"pid {pid} \(parent \d+\): sleep", output), output
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_ros_discovery_is_localhost_only_for_the_run_and_its_processes() -> None:
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'])"],
                           capture_output=True, text=True, check=True, timeout=30)
    assert child.stdout.strip() == "LOCALHOST"


@pytest.mark.parametrize("pid", [0, 41, 199, 200, 12345])
def test_a_test_domain_is_never_the_exported_one_nor_zero(pid: int) -> None:
    mine = pick_domain(pid, None)
    assert 1 <= mine <= 200
    assert pick_domain(pid, str(mine)) != mine
    assert 1 <= pick_domain(pid, str(mine)) <= 200
    assert pick_domain(pid, "0") == mine


def test_a_hang_on_a_parallel_worker_ends_that_test_with_its_stacks_and_no_process_left(tmp_path: Path) -> None:
    result, elapsed = run_generated(tmp_path, CASES["call"], workers=2)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert elapsed < BOUND_S, f"the hung run took {elapsed:.0f} s"
    assert "test_generated.py::test_case (call) still running after 3 s" in output, output
    assert "helper_thread_waits_here" in output, output
    pid = child_pid(tmp_path)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_the_workers_of_one_parallel_run_never_share_a_domain() -> None:
    run = {"PYTEST_XDIST_TESTRUNUID": "9f" * 16}
    domains = [pick_domain(domain_slot(4242, {**run, "PYTEST_XDIST_WORKER": f"gw{i}"}), "17") for i in range(16)]
    assert len(set(domains)) == 16 and "17" not in map(str, domains) and all(1 <= d <= 200 for d in domains)
    other_run = {"PYTEST_XDIST_TESTRUNUID": "a1" * 16, "PYTEST_XDIST_WORKER": "gw0"}
    assert domain_slot(4242, other_run) != domain_slot(4242, {**run, "PYTEST_XDIST_WORKER": "gw0"})
    assert domain_slot(4242, {}) == 4242  # not a worker: by pid
