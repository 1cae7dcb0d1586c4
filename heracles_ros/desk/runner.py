"""Run the local system's processes with honcho: prefixed logs, one stop for all, an exit status that says why.

honcho (the Procfile runner) starts every process in its own session, prints
each line prefixed by the process's name, and on SIGINT/SIGTERM, or when any
process exits, sends SIGTERM to every process group and SIGKILL to what is
left ``KILL_WAIT`` seconds after the first one ended. What is ours:

- a closed terminal (SIGHUP) stops everything as SIGTERM does, and output that
  can no longer be written is dropped rather than ending the runner mid-stop;
- the order: the nodes get SIGTERM first, the database (``last``) only once
  they have all exited or ``grace_s`` has passed, so a node finishing a
  snapshot or writing where the robot stopped still has its database;
- the exit status: 0 after a stop asked for by a signal where every process
  exited cleanly, else 1 with the process named that ended first on its own
  (or did not exit cleanly).
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TextIO

from honcho import manager as honcho_manager
from honcho.printer import Message, Printer

#: Exit statuses of a process that stopped cleanly when told to (SIGTERM/SIGINT are handled by our processes).
_CLEAN = {0}
_SIGNAL_NAMES = {128 + signal.SIGINT: "SIGINT", 128 + signal.SIGTERM: "SIGTERM"}


@dataclass(frozen=True)
class RunResult:
    exit_status: int
    #: Processes that ended on their own before anything stopped the system, with their exit status.
    ended_first: dict[str, int]
    #: After the stop: processes that did not exit cleanly, with their exit status (negative: killed by a signal).
    unclean: dict[str, int]
    #: The signal that stopped the system, or None when a process ending did.
    signal_name: str | None

    def summary(self) -> str:
        if self.ended_first:
            first = ", ".join(f"{name} (exit status {code})" for name, code in self.ended_first.items())
            return f"heracles up: {first} ended on its own; stopped the others"
        if self.unclean:
            named = ", ".join(f"{name} (exit status {code})" for name, code in self.unclean.items())
            return f"heracles up: stopped on {self.signal_name}, but not cleanly: {named}"
        return f"heracles up: stopped on {self.signal_name}; every process exited cleanly"


class _Printer(Printer):
    """honcho's printer, but a terminal that went away (closed window, broken pipe) never ends the runner:
    the stop it is carrying out must go on without anyone reading."""

    def write(self, message: Message) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().write(message)


class SystemRunner(honcho_manager.Manager):
    """honcho's Manager with the database stopped after the nodes, and the exit status of :class:`RunResult`."""

    _terminating: bool

    def __init__(self, out: TextIO, *, last: Iterable[str], grace_s: float, last_stop_s: float):
        super().__init__(_Printer(out))
        self._last = set(last)
        self._grace_s = grace_s
        self._ended_first: dict[str, int] = {}
        self._signal_name: str | None = None
        # honcho kills what is left KILL_WAIT s after the first process ended: the nodes' grace, then the
        # database's own stop (a module constant of honcho's; nothing else in this process runs honcho).
        honcho_manager.KILL_WAIT = grace_s + last_stop_s

    def run(self) -> RunResult:
        # honcho handles SIGINT and SIGTERM; a closed terminal (SIGHUP) stops the system the same way,
        # where it would otherwise end this process alone and leave the others (own sessions) running.
        signal.signal(signal.SIGHUP, self._hang_up)
        self.loop()
        codes = {name: p.get("returncode") for name, p in self._processes.items()}
        unclean = {name: code for name, code in codes.items() if code not in _CLEAN and name not in self._ended_first}
        ok = not self._ended_first and not unclean
        return RunResult(0 if ok else 1, dict(self._ended_first), unclean, self._signal_name)

    def _hang_up(self, signum: int, frame: object) -> None:
        self._signal_name = "SIGHUP"
        signal.raise_signal(signal.SIGTERM)

    def terminate(self) -> None:
        """SIGTERM to every process but ``last``; those follow once the others are gone (a thread waits)."""
        if self._terminating:
            return
        self._terminating = True
        self._ended_first = {name: p["returncode"] for name, p in self._processes.items() if "returncode" in p}
        if not self._ended_first and self._signal_name is None:
            # honcho's handler set returncode to 128 + the signal's number just before calling this
            self._signal_name = _SIGNAL_NAMES.get(self.returncode, "a signal")
        threading.Thread(target=self._stop_in_order, name="stop-in-order", daemon=True).start()

    def _stop_in_order(self) -> None:
        """The others first (also those whose start was still under way), then ``last``, bounded by the grace."""
        signalled: set[str] = set()
        deadline = time.monotonic() + self._grace_s
        while time.monotonic() < deadline:
            for name in self._running(exclude=self._last | signalled):
                self._say(f"sending SIGTERM to {name}")
                self._procmgr.terminate(self._processes[name]["pid"])
                signalled.add(name)
            if not self._running(exclude=self._last) and all("pid" in p for p in list(self._processes.values())):
                break
            time.sleep(0.1)
        for name in self._running(only=self._last):
            self._say(f"sending SIGTERM to {name} (after the others)")
            self._procmgr.terminate(self._processes[name]["pid"])

    def _running(self, *, exclude: set[str] | None = None, only: set[str] | None = None) -> list[str]:
        return [name for name, p in list(self._processes.items())
                if "returncode" not in p and p.get("pid") is not None
                and (exclude is None or name not in exclude) and (only is None or name in only)]

    def _say(self, text: str) -> None:
        """A line from the runner, through honcho's queue (printed by the loop, in order with the rest)."""
        self.events.put(Message(type="line", data=f"{text}\n", time=self._clock.now(),
                                name=honcho_manager.SYSTEM_PRINTER_NAME, colour=None))


def run_processes(processes: Iterable[Any], env: dict[str, str], out: TextIO, *, last: Iterable[str],
                  grace_s: float, last_stop_s: float) -> RunResult:
    """Run ``processes`` (``name`` and ``command`` each) until a signal or one of them ends."""
    runner = SystemRunner(out, last=last, grace_s=grace_s, last_stop_s=last_stop_s)
    for process in processes:
        runner.add_process(process.name, process.command, env=env)
    return runner.run()
