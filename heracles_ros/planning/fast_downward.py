"""Fast Downward (the build bundled with ``up-fast-downward``) as a subprocess.

A subprocess, not an in-process call: the planner can be killed on a timeout
without taking the caller with it, and a crash is just an exit code. Each run
gets its own temporary directory (FD writes ``output.sas`` to its working
directory), and the whole process group is killed on timeout because the
driver starts the translator and the search as children.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from heracles_ros.errors import PlanningError
from heracles_ros.outcomes import FDStatus

log = logging.getLogger(__name__)

#: Name of the last search phase, the one that proves a plan cost-optimal.
PROVE_PHASE = "prove"


def anytime_search(prove_s: float = 1.0) -> str:
    """A quick greedy plan, improved by weighted A*, then optimality proved by A* within ``prove_s``.

    Every phase is bounded by the best cost found so far, so the proving A*
    only searches below it; if it finishes, the plan is cost-optimal (an
    ``or`` goal gets its cheapest branch), otherwise the best plan found stands.
    Blind A* because the compact problems have conditional effects (goto marks
    rooms and objects) and FD turns ``or`` / ``not`` goals into axioms, which
    lmcut and the pattern databases refuse and hmax handles unsafely.
    """
    improve_s = max(0.05, prove_s / 4)
    return (
        "let(hff, ff(), iterated(["
        "lazy_greedy([hff], preferred=[hff]), "
        f"lazy_wastar([hff], preferred=[hff], w=3, max_time={improve_s:g}), "
        f"lazy_wastar([hff], preferred=[hff], w=1, max_time={improve_s:g}), "
        f"astar(blind(), max_time={prove_s:g}, description=\"{PROVE_PHASE}\")"
        "], pass_bound=true, repeat_last=false))"
    )


DEFAULT_SEARCH = anytime_search()

# Exit codes (driver/returncodes.py of Fast Downward).
_SOLVED = {0, 1, 2, 3}
_UNSOLVABLE = {10, 11, 12, 13}
#: SEARCH_UNSOLVED_INCOMPLETE: an incomplete search found nothing, which proves nothing.
#: docs/known-issues.md#fast-downward-incomplete
_INCOMPLETE = 12
_OUT_OF_TIME = {21, 23, 24}


@dataclass(frozen=True)
class FDResult:
    status: FDStatus
    #: Plan steps as FD writes them, e.g. "(goto mp1 mp5)" (lower case).
    steps: tuple[str, ...] = ()
    #: Plan cost in the problem's integer units.
    cost: int = 0
    seconds: float = 0.0
    exit_code: int | None = None
    #: The end of FD's output, for error reports.
    log_tail: str = ""
    #: The proving phase finished: no cheaper plan exists.
    optimal: bool = False

    @property
    def ok(self) -> bool:
        return self.status is FDStatus.SOLVED


@functools.lru_cache(maxsize=1)
def fast_downward_script() -> Path:
    """``fast-downward.py`` of the up-fast-downward wheel; PlanningError when it is missing."""
    spec = importlib.util.find_spec("up_fast_downward")  # locate only: importing it loads unified-planning
    if spec is None or spec.origin is None:
        raise PlanningError("up-fast-downward is not installed: pip install up-fast-downward")
    script = Path(spec.origin).parent / "downward" / "fast-downward.py"
    if not script.is_file():
        raise PlanningError(f"Fast Downward driver not found at {script}")
    return script


def run_fast_downward(
    domain_text: str, problem_text: str, *, timeout_s: float = 10.0, search: str = DEFAULT_SEARCH
) -> FDResult:
    """Solve one problem; never raises for planning outcomes, only for a missing planner."""
    script = fast_downward_script()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="heracles_fd_") as tmp:
        work = Path(tmp)
        (work / "domain.pddl").write_text(domain_text)
        (work / "problem.pddl").write_text(problem_text)
        command = [
            sys.executable, str(script), "--plan-file", "sas_plan",
            "domain.pddl", "problem.pddl", "--search", search,
        ]  # fmt: skip
        process = subprocess.Popen(
            command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            output, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            output, _ = process.communicate()
            seconds = time.perf_counter() - started
            log.info("Fast Downward stopped after %.2f s (timeout %.2f s)", seconds, timeout_s)
            return FDResult(FDStatus.TIMEOUT, seconds=seconds, log_tail=_tail(output))
        seconds = time.perf_counter() - started
        code = process.returncode
        proving = output.rsplit(f"Starting search: {PROVE_PHASE}", 1)
        proved = len(proving) == 2 and "Time limit reached" not in proving[1]
        if code in _SOLVED:
            plan_file = _last_plan(work)
            if plan_file is None:
                return FDResult(FDStatus.ERROR, seconds=seconds, exit_code=code, log_tail="no plan file written")
            steps, cost = parse_plan(plan_file.read_text())
            return FDResult(FDStatus.SOLVED, steps, cost, seconds, code, optimal=proved)
        if code in _UNSOLVABLE and (proved or code != _INCOMPLETE):
            return FDResult(FDStatus.UNSOLVABLE, seconds=seconds, exit_code=code)
        if code in _OUT_OF_TIME or code == _INCOMPLETE:  # incomplete: the search gave up at its time limit
            return FDResult(FDStatus.TIMEOUT, seconds=seconds, exit_code=code, log_tail=_tail(output))
        log.warning("Fast Downward failed with exit code %s: %s", code, _tail(output))
        return FDResult(FDStatus.ERROR, seconds=seconds, exit_code=code, log_tail=_tail(output))


def _last_plan(work: Path) -> Path | None:
    """The best plan: ``sas_plan``, or the highest ``sas_plan.N`` of an anytime search."""
    numbered = sorted(work.glob("sas_plan.*"), key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else -1)
    if numbered:
        return numbered[-1]
    single = work / "sas_plan"
    return single if single.is_file() else None


def parse_plan(text: str) -> tuple[tuple[str, ...], int]:
    """Steps and cost of a ``sas_plan`` file ("; cost = N (general cost)" ends it)."""
    steps: list[str] = []
    cost = 0
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(";"):
            if "cost =" in line:
                cost = int(line.split("cost =", 1)[1].split()[0])
        elif line:
            steps.append(line.lower())
    return tuple(steps), cost


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(output: str | None, lines: int = 15) -> str:
    return "\n".join((output or "").strip().splitlines()[-lines:])
