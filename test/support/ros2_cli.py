"""ROS 2's own command line (`ros2 ...`, `ros2 launch`) for the tests that run it as an operator would.

Found on PATH: the environment's copy that ``./run.sh test`` installs from ../shared/ros2-tools, or a
ROS install's. Without one, these tests are skipped with the reason (:func:`require_ros2`).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import pytest

from support.run_guard import end_processes, run_processes

REPO = Path(__file__).resolve().parents[2]


def require_ros2() -> str:
    """The ``ros2`` executable with launch support; skips the test (one line) when there is none."""
    ros2 = shutil.which("ros2")
    if ros2 is None:
        pytest.skip("no ros2 command line (no ROS install; ./run.sh test installs it from ../shared/ros2-tools)")
    try:
        import launch_ros  # noqa: F401
    except ImportError as error:
        pytest.skip(f"ros2 launch unusable here: {error}")
    return ros2


def require_service_call() -> None:
    """``ros2 service call`` of these ros2cli sources (rolling, Dec 2024) needs Kilted's rclpy or newer."""
    from importlib.metadata import version

    major = int(version("rclpy").split(".")[0])
    if major < 8:
        pytest.skip(f"ros2 service call from ../shared/ros2-tools needs rclpy >= 8 (`with rclpy.init()`), "
                    f"this is rclpy {version('rclpy')} (Jazzy)")


def ros2_env(domain: int) -> dict[str, str]:
    """The environment of a ``ros2`` command or launch: this worktree's code, the test's domain."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["ROS_DOMAIN_ID"] = str(domain)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def ros2(args: Sequence[str], domain: int, *, timeout_s: float = 60.0, check: bool = True) -> str:
    """Run ``ros2 ARGS`` to completion (bounded); its stdout, or AssertionError naming the command."""
    command = ["ros2", *args]
    try:
        result = subprocess.run(command, env=ros2_env(domain), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(
            f"`{' '.join(command)}` did not end within {timeout_s:g} s; output: {error.stdout!r}") from None
    if check and result.returncode != 0:
        raise AssertionError(f"`{' '.join(command)}` failed ({result.returncode}): {result.stdout}{result.stderr}")
    return result.stdout


def retry_ros2(args: Sequence[str], domain: int, until_s: float, *, expect: str = "") -> str:
    """``ros2 ARGS`` until it succeeds (and prints ``expect``): nodes take a while to appear."""
    deadline = time.monotonic() + until_s
    while True:
        try:
            out = ros2(args, domain, timeout_s=max(5.0, deadline - time.monotonic()))
            if expect in out:
                return out
            problem = f"output without {expect!r}: {out}"
        except AssertionError as error:
            problem = str(error)
        if time.monotonic() >= deadline:
            raise AssertionError(f"`ros2 {' '.join(args)}` within {until_s:g} s: {problem}")
        time.sleep(1.0)


def stop_daemon(domain: int) -> None:
    """The ``ros2`` daemon the verbs started for this domain (it outlives them); killed if it does not stop."""
    with contextlib.suppress(AssertionError):
        ros2(["daemon", "stop"], domain, timeout_s=30.0, check=False)
    daemons = [proc for proc in run_processes() if _is_daemon_of(proc, domain)]
    end_processes(daemons)


def _is_daemon_of(proc: psutil.Process, domain: int) -> bool:
    try:
        command = proc.cmdline()
    except psutil.Error:
        return False
    return "ros2cli.daemon.daemonize" in " ".join(command) and f"--ros-domain-id {domain}" in " ".join(command)


class Launch:
    """``ros2 launch FILE ARGS`` in the background, its output in a file, ended with Ctrl-C (SIGINT)."""

    def __init__(self, launch_file: Path, arguments: Sequence[str], domain: int, log: Path):
        self.log = log
        self._output = log.open("w")
        self.process = subprocess.Popen(
            ["ros2", "launch", str(launch_file), *arguments], env=ros2_env(domain),
            stdout=self._output, stderr=subprocess.STDOUT,
            # Ctrl-C reaches it as from a terminal, even when the suite runs from a background job.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def processes(self) -> list[psutil.Process]:
        """Everything the launch started, still alive (nodes, the database server they started)."""
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def interrupt(self, timeout_s: float) -> int:
        """Ctrl-C; the launch's exit status, AssertionError if it has not ended within ``timeout_s``."""
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"ros2 launch still running {timeout_s:g} s after Ctrl-C:\n{self.output()[-3000:]}") from None

    def close(self) -> None:
        """Whatever is still running is killed (the test has already failed if anything was)."""
        left = self.processes()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(left, timeout=10)
        self._output.close()


@contextlib.contextmanager
def launched(launch_file: Path, arguments: Sequence[str], domain: int, log: Path) -> Iterator[Launch]:
    launch = Launch(launch_file, arguments, domain, log)
    try:
        yield launch
    finally:
        launch.close()
