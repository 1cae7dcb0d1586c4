"""A test run that cannot hang, stays on this machine and leaves no process behind (a pytest plugin).

- **Hangs.** Every phase of every test (setup, call, teardown) runs under a watchdog armed with the
  test's timeout (pytest-timeout's ``timeout`` ini value or ``@pytest.mark.timeout``) plus
  ``GRACE_S``. pytest-timeout fails a slow call first when it can; the watchdog is for what it
  misses: pytest-timeout (and pytest's own ``faulthandler_timeout``) cancel their timer as soon as
  a test has failed, so a teardown that waits on something in flight would hang the run for ever.
  When the watchdog fires it prints which test and phase ran over, the stacks of all threads, ends
  the processes the run started and exits the run with status 3. A second, C-level timer
  (``faulthandler.dump_traceback_later(exit=True)``) does the same without Python, should the
  interpreter itself be stuck.
- **Localhost only.** ROS 2 discovery is limited to this machine (``ROS_AUTOMATIC_DISCOVERY_RANGE=
  LOCALHOST``, honoured by Kilted's and Jazzy's rmw_fastrtps: only 127.0.0.1 is sent to) for the
  run and every process it starts; static peers are dropped.
- **Own domain.** ``ros_domain_id`` gives each test process a DDS domain of its own (see
  :func:`pick_domain`): the workers of one parallel run (pytest-xdist) take consecutive domains, so no
  two of them ever share one.
- **No leftovers.** Every process the run starts inherits ``HERACLES_TEST_RUN``; at the end, any
  such process still alive (a node, a database server, an orphan whose parent died) is killed, listed,
  and the run fails. In a parallel run each worker checks its own and reports them to the controller,
  which fails the run.
- **Crashes.** Every process the run starts has ``PYTHONFAULTHANDLER=1``: one that dies of a signal
  (SIGSEGV, SIGABRT) prints its Python stacks to its stderr, which the test shows.
- **Alone.** ``@pytest.mark.serial`` marks a test that loads the whole machine or times something
  against it; ``./run.sh test`` runs those after the parallel ones, one at a time, with no other test
  running.
"""
from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import threading
import uuid
from collections.abc import Generator, Iterator, Mapping

import psutil
import pytest

RUN_TOKEN_VARIABLE = "HERACLES_TEST_RUN"
# Past the test's own timeout, so pytest-timeout gets the first chance to fail the test alone.
GRACE_S = float(os.environ.get("HERACLES_TEST_GRACE_S", "30"))
C_BACKSTOP_S = 20.0  # past the watchdog, for an interpreter that cannot run the watchdog thread
SESSION_EXIT_LIMIT_S = 120.0  # from the end of the run to the process's exit (threads joined at exit)
#: Seconds a process found at the end of the run may take to finish exiting before it counts as left running.
EXITING_GRACE_S = 2.0
LEAK_EXIT_STATUS = 3  # the watchdog's exit status, and what a run with leftover processes returns

_run_token = uuid.uuid4().hex
_stderr_fd = 2


def _write(text: str) -> None:
    os.write(_stderr_fd, text.encode(errors="replace"))


def run_processes() -> list[psutil.Process]:
    """Processes alive that this run started: descendants, and orphans carrying the run's token."""
    me = psutil.Process()
    found = {child.pid: child for child in me.children(recursive=True)}
    token = f"{RUN_TOKEN_VARIABLE}={_run_token}"
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == me.pid:
            continue
        try:
            if proc.uids().real != os.getuid():
                continue
            with open(f"/proc/{proc.pid}/environ", "rb") as environ:
                if token.encode() in environ.read().split(b"\0"):
                    found[proc.pid] = proc
        except (psutil.Error, OSError):
            continue
    return list(found.values())


def end_processes(processes: list[psutil.Process], grace_s: float = 3.0) -> list[str]:
    """SIGTERM, then SIGKILL after ``grace_s``; a line per process for the report."""
    lines = []
    for proc in processes:
        try:
            # A process mid-exec or already a zombie shows an empty command line: its name still tells.
            shown = " ".join(proc.cmdline()) or f"{proc.name()} ({proc.status()})"
            lines.append(f"  pid {proc.pid} (parent {proc.ppid()}): {shown[:200]}")
            proc.terminate()
        except psutil.Error:
            continue
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(alive, timeout=grace_s)
    return lines


class _Watchdog:
    """One timer at a time: armed for a test phase, disarmed when the phase returns."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def arm(self, limit_s: float, what: str) -> None:
        with self._lock:
            self._cancel()
            self._timer = threading.Timer(limit_s, self._fire, (limit_s, what))
            self._timer.name = "heracles-run-guard"
            self._timer.daemon = True
            self._timer.start()
        # Without a header of its own: it dumps the stacks and exits with status 1.
        faulthandler.dump_traceback_later(limit_s + C_BACKSTOP_S, exit=True, file=_stderr_fd)

    def disarm(self) -> None:
        with self._lock:
            self._cancel()
        faulthandler.cancel_dump_traceback_later()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, limit_s: float, what: str) -> None:
        _write(f"\n\nheracles run guard: {what} still running after {limit_s:g} s: "
               "ending the run. Stacks of all threads:\n")
        faulthandler.dump_traceback(file=_stderr_fd, all_threads=True)
        lines = end_processes(run_processes())
        if lines:
            _write("heracles run guard: ended the processes the run had started:\n" + "\n".join(lines) + "\n")
        _write(f"heracles run guard: exiting with status {LEAK_EXIT_STATUS}\n")
        os._exit(LEAK_EXIT_STATUS)


_watchdog = _Watchdog()

TEST_DOMAINS = range(1, 201)  # 0, every robot's default, is never one of them


def pick_domain(slot: int, exported: str | None) -> int:
    """A test process's DDS domain: one of 1..200 by ``slot``, never the domain the user exported.

    Discovery is localhost-only for the whole run, so no test meets a robot over the network; the
    exported domain is skipped as well, so a run on a robot's own computer never meets the nodes
    running there. Consecutive slots get different domains (the exported one skipped).
    """
    domains = [d for d in TEST_DOMAINS if exported is None or exported.strip() != str(d)]
    return domains[slot % len(domains)]


def domain_slot(pid: int, environ: Mapping[str, str]) -> int:
    """This test process's slot: in a parallel run, its worker's index after a base drawn from the run's
    id (so the workers of one run never share a domain); otherwise its ``pid`` (so two runs rarely do)."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    if not (worker.startswith("gw") and worker[2:].isdigit()):
        return pid
    try:
        base = int(environ.get("PYTEST_XDIST_TESTRUNUID", ""), 16)
    except ValueError:
        base = 0
    return base + int(worker[2:])


# The user's own domain (read before any test sets its own): never used by a test, see pick_domain.
_EXPORTED_DOMAIN = os.environ.get("ROS_DOMAIN_ID")


@pytest.fixture
def ros_domain_id() -> Iterator[int]:
    """A DDS domain of this test process's own, so parallel runs do not hear each other."""
    previous = os.environ.get("ROS_DOMAIN_ID")
    domain = pick_domain(domain_slot(os.getpid(), os.environ), _EXPORTED_DOMAIN)
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    yield domain
    if previous is None:
        os.environ.pop("ROS_DOMAIN_ID", None)
    else:
        os.environ["ROS_DOMAIN_ID"] = previous


def _timeout_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    value = item.config.getoption("timeout", None)
    if value is None:
        value = item.config.getini("timeout")
    return float(value or 0.0) or 300.0


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item, "setup"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item, "call"))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, None, None]:
    return (yield from _guarded(item, "teardown"))


def _guarded(item: pytest.Item, phase: str) -> Generator[None, None, None]:
    _watchdog.arm(_timeout_of(item) + GRACE_S, f"{item.nodeid} ({phase})")
    try:
        return (yield)
    finally:
        _watchdog.disarm()


def pytest_configure(config: pytest.Config) -> None:
    global _stderr_fd
    try:  # the terminal's stderr, kept by pytest's faulthandler plugin (fd 2 is captured during tests)
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        terminal = config.stash[fault_handler_stderr_fd_key]
    except (ImportError, KeyError):
        terminal = sys.__stderr__.fileno() if sys.__stderr__ is not None else 2
    _stderr_fd = os.dup(terminal)  # ours: pytest closes its copy before the process exits
    os.environ[RUN_TOKEN_VARIABLE] = _run_token
    # Test traffic stays on this machine, in this process and every process it starts.
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ.pop("ROS_STATIC_PEERS", None)
    os.environ.pop("ROS_LOCALHOST_ONLY", None)  # deprecated; conflicts with the range on Jazzy
    # A process of the run that crashes (SIGSEGV, SIGABRT) prints its Python stacks: a node, a CLI, a server's client.
    os.environ["PYTHONFAULTHANDLER"] = "1"
    config.addinivalue_line(
        "markers", "serial: loads the whole machine or times against it; run alone, after the parallel tests")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leftover = run_processes()
    if leftover:  # one already on its way out (a node a test's last step stopped) is not left running
        _, leftover = psutil.wait_procs(leftover, timeout=EXITING_GRACE_S)
    lines = end_processes(leftover) if leftover else []
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a parallel run's worker: its controller fails the run
        workeroutput[_LEFTOVER_OUTPUT] = lines
    if lines:  # a line per process that was still there when ended
        session.config.stash[_LEFTOVER_KEY] = lines
        # Also straight to the terminal: the terminal summary may already have been written.
        with contextlib.suppress(OSError):
            report = "processes left running by the run (killed now):\n" + "\n".join(lines) + "\n"
            os.write(_stderr_fd, report.encode())
    if session.config.stash.get(_LEFTOVER_KEY, []) and session.exitstatus == 0:
        session.exitstatus = LEAK_EXIT_STATUS
    # Nothing may keep the process from exiting (a non-daemon thread a test left waiting).
    faulthandler.dump_traceback_later(SESSION_EXIT_LIMIT_S, exit=True, file=_stderr_fd)


_LEFTOVER_KEY = pytest.StashKey[list[str]]()
#: Key of a parallel run's worker output carrying the lines of the processes it found left running.
_LEFTOVER_OUTPUT = "heracles_leftover_processes"


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """Controller of a parallel run: a worker's leftover processes fail the run like the controller's own."""
    lines = getattr(node, "workeroutput", {}).get(_LEFTOVER_OUTPUT) or []
    if lines:
        config: pytest.Config = node.config  # type: ignore[attr-defined]
        config.stash[_LEFTOVER_KEY] = [*config.stash.get(_LEFTOVER_KEY, []), *lines]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(_LEFTOVER_KEY, [])
    if lines:
        terminalreporter.section("processes left running by the run", sep="=", red=True, bold=True)
        terminalreporter.write_line(
            f"FAILED: {len(lines)} process(es) started by the tests were still running at the end "
            "(killed now); a test or fixture did not stop them:", red=True)
        for line in lines:
            terminalreporter.write_line(line)
