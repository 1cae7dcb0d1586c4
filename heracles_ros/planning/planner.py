"""The planner facade: goal text in, checked goal or expanded plan out.

Per plan it reads only what the goal names (its symbols, its objects, the
robot's record) plus a one-row stamp saying whether the cached place graph is
still current. When the mirror wrote new generations since, the plan reads
their change log and re-reads the places and rooms it names
(:func:`.places.updated`); the whole graph is read again only when the log
cannot tell (the cache is older than the log, the database was reset or
restored, a first load) or a correction changed. Everything else per plan is
sized by the goal: a few bounded shortest-path searches, a small PDDL problem,
one Fast Downward run (one per avoidance group, see :mod:`.problem`).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heracles_ros.domain import Domain, load_domain
from heracles_ros.errors import GoalError, HeraclesError, PlanningError
from heracles_ros.formats.goal_ast import GoalExpr, symbols
from heracles_ros.formats.pddl_goal import check_goal, checked_goal, parse_goal
from heracles_ros.graphdb.cypher import place_changes as place_log
from heracles_ros.graphdb.cypher import planning as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S, read_whole
from heracles_ros.outcomes import FDStatus, PlanStatus
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.expand import expand_plan
from heracles_ros.planning.fast_downward import FDResult, anytime_search, run_fast_downward
from heracles_ros.planning.places import PlaceGraph, load_place_graph, updated
from heracles_ros.planning.problem import (
    COST_SCALE,
    AvoidanceGroup,
    CompactProblem,
    Kinds,
    ObjectInfo,
    Start,
    avoidance_groups,
    build_problem,
    positive_symbols,
    removed_places,
    symbol_places,
)
from heracles_ros.robot_record import RobotRecord
from heracles_ros.schema import ROBOT_SYMBOL, Layer

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class _Stamp:
    """What a cached place graph was read at: the mirror's generation and token, and the corrections."""

    generation: Any
    token: Any
    corrections: tuple[Any, Any]


#: One avoidance group's problem (None where the robot starts inside what it avoids), its search, and why not.
_Outcome = tuple[AvoidanceGroup, "CompactProblem | None", "FDResult | None", str]


class Planner:
    """Plans PDDL goals over one database's scene with Fast Downward."""

    def __init__(
        self,
        store: GraphStore,
        *,
        domain_path: str | Path | None = None,
        timeout_s: float = 10.0,
        robot_symbol: str = ROBOT_SYMBOL,
        prove_s: float = 1.0,
        snapshot_wait_s: float = DEFAULT_WAIT_S,
    ):
        self.store = store
        self.domain: Domain = load_domain(domain_path)
        self.timeout_s = timeout_s
        self.robot_symbol = robot_symbol
        #: Fast Downward's search: greedy plan, improved, then optimality proved within ``prove_s``.
        self.search = anytime_search(prove_s)
        self._robot = RobotRecord(store, symbol=robot_symbol)
        self._lock = threading.Lock()
        #: How long the first graph read waits for a mirror update in progress (see snapshot_reads).
        self.snapshot_wait_s = snapshot_wait_s
        self._graph: PlaceGraph | None = None
        self._stamp: _Stamp | None = None
        #: How the cached graph was brought up to date, by way: "whole" reads and "changes" followed.
        self.graph_reads: dict[str, int] = {"whole": 0, "changes": 0}

    def check(self, goal: str) -> GoalExpr:
        """The parsed goal, or GoalError listing every problem (syntax, predicates, kinds, symbols)."""
        return check_goal(goal, self.store, self.domain)

    def place_graph(self) -> PlaceGraph:
        """The cached place graph, brought up to the mirror's generation (its changes followed) and the
        corrections (read whole after one changed).

        With a graph cached a plan never waits for a reconcile, nor reads again when one overlapped its read:
        while one is being written the cache (the last generation written whole) serves, or the changes up to
        that generation are followed at once; what a read caught half-written the next read re-reads.
        """
        with self._lock:
            stamp = self._read_stamp()
            if self._graph is not None and stamp == self._stamp:
                return self._graph
            wait_s = 0.0 if self._graph is not None else self.snapshot_wait_s
            graph, cached = self._graph, self._stamp
            read = read_whole(self.store, lambda: self._current(graph, cached), wait_s=wait_s)
            # Kept even when a reconcile overlapped the read: its stamp is the generation read before it, so the
            # next read re-reads every place changed since, whatever of them this one caught half-written.
            self._graph, self._stamp = read.value
            return self._graph

    def _read_stamp(self) -> _Stamp:
        """The database's stamp for the place graph."""
        rows = self.store.query(cypher.GRAPH_STAMP)
        row = rows[0] if rows else {}
        return _Stamp(row.get("generation"), row.get("token"), (row.get("corrections"), row.get("corrected_s")))

    def _current(self, graph: PlaceGraph | None, cached: _Stamp | None) -> tuple[PlaceGraph, _Stamp]:
        stamp = self._read_stamp()
        if graph is not None and cached is not None and stamp == cached:
            return graph, stamp
        if graph is not None and cached is not None and stamp.corrections == cached.corrections:
            changed = self._changed_since(cached, stamp)
            fresh = updated(graph, self.store, changed) if changed is not None else None
            if fresh is not None:
                self.graph_reads["changes"] += 1
                return fresh, stamp
        self.graph_reads["whole"] += 1
        if graph is not None:
            log.info("reading the whole place graph: %s", "a correction changed" if cached is not None and
                     stamp.corrections != cached.corrections else "the mirror's change log cannot tell what changed")
        return load_place_graph(self.store), stamp

    def _changed_since(self, cached: _Stamp, now: _Stamp) -> set[str] | None:
        """The places and rooms the mirror changed from ``cached``'s generation to ``now``'s, from its change
        log; None when the log cannot tell (a generation without an entry, or entries of another lineage)."""
        if not isinstance(cached.generation, int) or not isinstance(now.generation, int):
            return None
        if now.generation <= cached.generation:
            return None  # a reset or a restore
        entries = self.store.query(place_log.READ_CHANGES, {"after": cached.generation, "upto": now.generation})
        if [e["generation"] for e in entries] != list(range(cached.generation + 1, now.generation + 1)):
            return None
        if entries[0]["from_token"] != cached.token:
            return None
        return {symbol for entry in entries for symbol in entry["symbols"] or ()}

    def preload(self) -> threading.Thread:
        """Load the place graph in a background thread, so the first plan does not wait for it."""

        def load() -> None:
            try:
                self.place_graph()
            except HeraclesError as exc:  # the first plan loads it again and reports the problem
                log.warning("place graph not preloaded: %s", exc)

        thread = threading.Thread(target=load, name="place-graph-preload", daemon=True)
        thread.start()
        return thread

    def plan(self, goal: str, *, from_symbol: str | None = None) -> PlanResult:
        """Plan ``goal`` from the robot's recorded state (or ``from_symbol``).

        Never raises for goal or planning problems: those come back as a status
        (INVALID_GOAL / UNSOLVABLE / TIMEOUT / ERROR) with a reason. The whole call,
        reading and problem building included, stays within ``timeout_s``: Fast
        Downward gets what is left of it.
        """
        timings: dict[str, float] = {}
        started = time.perf_counter()
        result = PlanResult(PlanStatus.ERROR, goal, timings=timings)
        try:
            expr = parse_goal(goal)
            timings["parse"] = time.perf_counter() - started
            t = time.perf_counter()
            kinds = checked_goal(expr, self.store, self.domain).kinds
            timings["validate"] = time.perf_counter() - t
        except GoalError as exc:
            result.status = PlanStatus.INVALID_GOAL
            result.reason = "; ".join(exc.problems)
            timings["total"] = time.perf_counter() - started
            return result
        try:
            self._plan(expr, kinds, from_symbol, result, deadline=started + self.timeout_s)
        except PlanningError as exc:
            result.status = PlanStatus.ERROR
            result.reason = str(exc)
            log.warning("planning %s failed: %s", goal, exc)
        timings["total"] = time.perf_counter() - started
        return result

    # -- stages ------------------------------------------------------------------------
    def _plan(
        self, expr: GoalExpr, kinds: Kinds, from_symbol: str | None, result: PlanResult, *, deadline: float
    ) -> None:
        timings = result.timings
        t = time.perf_counter()
        named = symbols(expr)
        graph = self.place_graph()
        timings["graph"] = time.perf_counter() - t
        t = time.perf_counter()
        start = self._start(graph, from_symbol)
        result.start_symbol = graph.symbols[start.place]
        objects = self.object_infos(graph, [s for s in named if kinds.get(s) is Layer.OBJECT], start.holding)
        timings["state"] = time.perf_counter() - t
        notes = [start.note] if start.note else []

        t = time.perf_counter()
        prepared = self._problems(expr, graph, start, objects, kinds, deadline)
        timings["problem"] = time.perf_counter() - t
        left = deadline - time.perf_counter()
        if left <= 0:
            result.status = PlanStatus.TIMEOUT
            result.reason = "; ".join(
                [f"the {self.timeout_s:g} s planning limit ran out while reading the scene and building the problem",
                 *notes]
            )
            return
        problems = [problem for _, problem, _ in prepared if problem is not None]
        t = time.perf_counter()
        results = self._search(problems, left)
        if problems:
            timings["search"] = time.perf_counter() - t
        outcomes = [
            (group, problem, results.pop(0) if problem is not None else None, why) for group, problem, why in prepared
        ]
        if any(fd and problem and fd.ok for _, problem, fd, _ in outcomes):
            self._take_best(result, outcomes, graph, objects, notes)
        else:
            self._no_plan(result, outcomes, graph, start, objects, kinds, notes)

    def _problems(
        self, expr: GoalExpr, graph: PlaceGraph, start: Start, objects: dict[str, ObjectInfo], kinds: Kinds,
        deadline: float,
    ) -> list[tuple[AvoidanceGroup, CompactProblem | None, str]]:
        """A compact problem per avoidance group, or None and why where the robot starts inside what the group
        avoids; stops early at ``deadline``."""
        prepared: list[tuple[AvoidanceGroup, CompactProblem | None, str]] = []
        for number, group in enumerate(avoidance_groups(expr)):
            removed = removed_places(graph, group.avoid, objects)
            if start.place in removed:
                prepared.append((group, None, _starts_inside(graph, start, group)))
                continue
            problem = build_problem(
                graph, group.goal, start, objects, removed, kinds, name=f"goal{number}", domain_name=self.domain.name
            )
            prepared.append((group, problem, ""))
            if time.perf_counter() >= deadline:
                break
        return prepared

    def _take_best(
        self, result: PlanResult, outcomes: list[_Outcome], graph: PlaceGraph, objects: dict[str, ObjectInfo],
        notes: list[str],
    ) -> None:
        """The cheapest solved group's plan, expanded into waypoints; optimal only if every group either proved
        its best plan or proved it has none."""
        solved = [(fd.cost, problem, fd) for _, problem, fd, _ in outcomes if fd and problem and fd.ok]
        cost, problem, fd = min(solved, key=lambda item: item[0])
        t = time.perf_counter()
        result.actions = expand_plan(fd.steps, problem, graph, objects)
        result.timings["expand"] = time.perf_counter() - t
        result.total_cost = cost / COST_SCALE
        result.status = PlanStatus.SOLVED
        result.optimal = all(
            fd_.optimal or fd_.status is FDStatus.UNSOLVABLE for _, _, fd_, _ in outcomes if fd_ is not None
        )
        if not result.optimal:
            notes.append("cost-optimality not proved within the search budget: the best plan found is returned")
        result.reason = "; ".join(notes)

    def _no_plan(
        self, result: PlanResult, outcomes: list[_Outcome], graph: PlaceGraph, start: Start,
        objects: dict[str, ObjectInfo], kinds: Kinds, notes: list[str],
    ) -> None:
        """Why no group was solved: the search's time ran out, it failed, or the goal is unsolvable (and why)."""
        statuses = {fd.status for _, _, fd, _ in outcomes if fd is not None}
        if FDStatus.TIMEOUT in statuses:
            result.status = PlanStatus.TIMEOUT
            notes.insert(0, f"Fast Downward found no plan within {self.timeout_s:g} s")
        elif FDStatus.ERROR in statuses:
            result.status = PlanStatus.ERROR
            failed = next(fd for _, _, fd, _ in outcomes if fd and fd.status is FDStatus.ERROR)
            notes.insert(0, f"Fast Downward failed (exit code {failed.exit_code}): {_error_line(failed.log_tail)}")
        else:
            result.status = PlanStatus.UNSOLVABLE
            reason, unreachable = self._why_unsolvable(graph, start, objects, kinds, outcomes)
            result.unreachable = unreachable
            notes.insert(0, reason)
        result.reason = "; ".join(notes)

    def _search(self, problems: list[CompactProblem], timeout_s: float) -> list[FDResult]:
        """Fast Downward on each problem; several at once in threads (each run is its own process)."""

        def solve(problem: CompactProblem) -> FDResult:
            return run_fast_downward(self.domain.text, problem.text, timeout_s=timeout_s, search=self.search)

        if len(problems) <= 1:
            return [solve(p) for p in problems]
        with ThreadPoolExecutor(max_workers=min(len(problems), os.cpu_count() or 1)) as pool:
            return list(pool.map(solve, problems))

    def _start(self, graph: PlaceGraph, from_symbol: str | None) -> Start:
        if graph.size == 0:
            raise PlanningError("the database holds no places to plan over")
        state = self._robot.read()
        holding = state.holding if state is not None else ""
        if from_symbol:
            if from_symbol not in graph.index:
                raise PlanningError(f"start {from_symbol!r} is not a place with a position in the database")
            return Start(graph.index[from_symbol], holding)
        if state is not None and state.place in graph.index:
            return Start(graph.index[state.place], holding)
        if state is None:
            position, why, nearest = (0.0, 0.0, 0.0), "no robot state recorded", "the origin"
        else:
            position, why, nearest = state.position, "robot place unknown", "its recorded position"
        place = graph.nearest_place(position) or 0  # None only for a graph without places, refused above
        note = f"{why}: starting at {graph.symbols[place]}, the place nearest {nearest}"
        log.info(note)
        return Start(place, holding, note)

    def object_infos(self, graph: PlaceGraph, symbols: list[str], holding: str) -> dict[str, ObjectInfo]:
        """Where each object is now and where the robot reaches it (read per plan: objects move)."""
        wanted = list(dict.fromkeys([*symbols, *([holding] if holding else [])]))
        if not wanted:
            return {}
        objects: dict[str, ObjectInfo] = {}
        for row in self.store.query(cypher.OBJECTS, {"symbols": wanted}):
            if row["x"] is None:
                continue
            position = (float(row["x"]), float(row["y"]), float(row["z"] or 0.0))
            containers = [graph.index[c] for c in row["containers"] or [] if c in graph.index]
            container = containers[0] if containers else None
            if row["s"] == holding:
                reach = None
            else:
                reach = container if container is not None else graph.nearest_place(position)
            objects[row["s"]] = ObjectInfo(row["s"], position, container, reach)
        return objects

    def _why_unsolvable(
        self,
        graph: PlaceGraph,
        start: Start,
        objects: dict[str, ObjectInfo],
        kinds: Kinds,
        outcomes: list[_Outcome],
    ) -> tuple[str, list[str]]:
        """A reason naming the goal symbols the robot cannot reach, per avoidance group."""
        cut_off: list[str] = []
        blocked: list[str] = []
        other: list[str] = []
        for group, problem, _, why in outcomes:
            if problem is None:
                other.append(why)
                continue
            for symbol in positive_symbols(group.goal):
                if kinds.get(symbol) is Layer.OBJECT and symbol == start.holding:
                    continue
                places = symbol_places(graph, symbol, objects, kinds)
                if not places or not any(graph.component[p] == graph.component[start.place] for p in places):
                    cut_off.append(symbol)
                elif not problem.paths.reaches(start.place, places):
                    blocked.append(symbol)
        cut_off = list(dict.fromkeys(cut_off))
        blocked = [s for s in dict.fromkeys(blocked) if s not in cut_off]
        here = graph.symbols[start.place]
        parts = []
        if cut_off:
            parts.append(
                f"{', '.join(cut_off)} cannot be reached from {here}: "
                "not connected to it on the place graph"
            )
        if blocked:
            parts.append(f"{', '.join(blocked)} cannot be reached from {here} without visiting what the goal forbids")
        parts += other
        if not parts:
            parts.append("no sequence of actions satisfies the goal (its parts contradict each other)")
        return "unsolvable: " + "; ".join(parts), cut_off + blocked


_FD_CHATTER = ("INFO", "Driver aborting", "Planner time", "Peak memory", "Remove intermediate", "Usage error")


def _error_line(log_tail: str) -> str:
    """What FD said went wrong: the last lines of its output that are not its driver's chatter."""
    lines = [line.strip() for line in log_tail.splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(_FD_CHATTER) and "exit code" not in line]
    return " / ".join(said[-2:]) or "no output"


def _starts_inside(graph: PlaceGraph, start: Start, group: AvoidanceGroup) -> str:
    forbidden = " ".join(f"(not {atom})" for atom in sorted(group.avoid, key=str))
    return f"the robot starts at {graph.symbols[start.place]}, which {forbidden} forbids"
