"""``heracles bench plan``: goal text to expanded plan on the kilometre-scale scene.

The large synthetic scene (~16,000 mesh places; ``--scale`` 6.272: 10^5) is mirrored into a throwaway
embedded FalkorDB; seeded random goals of 1-5 symbols (a third of them ``or``
goals, some forbidding a room) are planned from random start places, timing
each ``Planner.plan`` call from goal text to expanded plan (the place graph is
loaded once, before timing, as a running system would have it).

``--churn S``: the same goals planned again while another process mirrors a
snapshot with 1 % of the nodes changed every S seconds (moved 1 m, removed, or
back), as Hydra's feed does: each plan follows the mirror's changes
(``graph_changes`` counts the updates followed, ``graph_whole_reads`` the whole
reads; neither bounded nor asserted, only reported).

For contrast, the naive encoding (every place a PDDL object, roads only
between neighbouring places) is run through the same Fast Downward search on
a ~1,600-place scene, next to the compact planner on that scene; runs cut off
by the time limit make the ratio a lower bound.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import spark_dsg as dsg

from heracles_ros.bench.scene_size import add_scale_argument, scene_name
from heracles_ros.embedded.server import temporary_server
from heracles_ros.errors import ConfigError
from heracles_ros.formats.goal_ast import symbols
from heracles_ros.formats.pddl_goal import parse_goal, to_pddl_name
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.mirror.symbols import symbol_layers
from heracles_ros.outcomes import FDStatus
from heracles_ros.planning.fast_downward import run_fast_downward
from heracles_ros.planning.places import PlaceGraph
from heracles_ros.planning.planner import Planner
from heracles_ros.planning.problem import COST_SCALE, render_goal
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import SceneTables, extract_tables, symbol_of
from heracles_ros.schema import Layer

log = logging.getLogger(__name__)

#: The issue's target for the 95th percentile, seconds.
TARGET_P95_S = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="scene and goal seed (default: 0)")
    add_scale_argument(parser)
    parser.add_argument("--goals", type=int, default=60, help="goals to plan on the large scene (default: 60)")
    parser.add_argument("--prove", type=float, default=1.0, metavar="S",
                        help="planner's budget for proving a plan optimal (default: 1)")
    parser.add_argument("--naive-scale", type=float, default=0.1,
                        help="scale of the scene for the naive contrast (default: 0.1, ~1,600 places)")
    parser.add_argument("--naive-goals", type=int, default=2, help="goals for the naive contrast (default: 2)")
    parser.add_argument("--naive-timeout", type=float, default=120.0, metavar="S",
                        help="time limit of one naive Fast Downward run (default: 120)")
    parser.add_argument("--skip-naive", action="store_true", help="measure the compact planner only")
    parser.add_argument("--churn", type=float, default=0.0, metavar="S",
                        help="plan the goals again while the mirror writes a 1 %%-changed snapshot every S seconds "
                        "(default 0: not)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.goals < 1 or args.naive_goals < 1:
        raise ConfigError("--goals and --naive-goals must be at least 1")
    if args.churn < 0:
        raise ConfigError(f"--churn must be a period in seconds >= 0, got {args.churn:g}")
    figures: dict[str, Any] = {"scene": scene_name("large", args.seed, args.scale)}
    with temporary_server("heracles-bench-plan-") as uri:
        with _mirrored(uri, generate_scene("large", args.seed, scale=args.scale)) as (store, scene):
            planner = Planner(store, prove_s=args.prove, timeout_s=30.0)
            figures.update(_compact_figures(planner, scene, args))
            if args.churn:
                figures.update(_churn_figures(uri, planner, scene, args))
        if not args.skip_naive:
            with _mirrored(uri, generate_scene("large", args.seed, scale=args.naive_scale)) as (store, scene):
                figures.update(_naive_figures(Planner(store, prove_s=args.prove, timeout_s=30.0), scene, args))
    return figures


# --- the compact planner on the large scene ----------------------------------------
def _compact_figures(planner: Planner, scene: dsg.DynamicSceneGraph, args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    graph = planner.place_graph()
    load_s = time.perf_counter() - started
    rng = np.random.default_rng(args.seed)
    goals = random_goals(rng, graph, _objects(scene), args.goals)
    seconds: list[float] = []
    searches: list[float] = []
    statuses: dict[str, int] = {}
    optimal = 0
    or_seconds: list[float] = []
    for goal in goals:
        start = graph.symbols[int(rng.integers(graph.nav_count))]
        t = time.perf_counter()
        result = planner.plan(goal, from_symbol=start)
        elapsed = time.perf_counter() - t
        seconds.append(elapsed)
        searches.append(result.timings.get("search", 0.0))
        statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
        optimal += int(result.optimal)
        if goal.startswith("(or"):
            or_seconds.append(elapsed)
        log.info("%.3f s %s %s from %s", elapsed, result.status.value, goal, start)
    p95 = _percentile(seconds, 95)
    return {
        "scene_places": graph.size,
        "scene_nav_places": graph.nav_count,
        "place_graph_load_s": load_s,
        "goals": len(goals),
        "statuses": statuses,
        "proved_optimal": optimal,
        "median_s": statistics.median(seconds),
        "p95_s": p95,
        "max_s": max(seconds),
        "or_goals": len(or_seconds),
        "or_median_s": statistics.median(or_seconds) if or_seconds else 0.0,
        "search_median_s": statistics.median(searches),
        "target_p95_s": TARGET_P95_S,
        "meets_target": p95 <= TARGET_P95_S,
    }


def _churn_figures(
    uri: str, planner: Planner, scene: dsg.DynamicSceneGraph, args: argparse.Namespace
) -> dict[str, Any]:
    """The goals again, each plan timed while a process of its own (as the mirror node is) mirrors 1 %-changed
    snapshots."""
    graph = planner.place_graph()
    rng = np.random.default_rng(args.seed + 2)
    goals = random_goals(rng, graph, _objects(scene), args.goals)
    starts = [graph.symbols[int(rng.integers(graph.nav_count))] for _ in goals]
    reads_before = dict(planner.graph_reads)
    command = [sys.executable, "-m", "heracles_ros.bench.plan", uri, planner.store.graph_name, str(args.seed),
               str(args.scale), str(args.churn)]  # fmt: skip
    writer = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert writer.stdin is not None and writer.stdout is not None
    reconciles: list[float] = []
    seconds: list[float] = []
    graph_s: list[float] = []
    statuses: dict[str, int] = {}
    try:
        first = writer.stdout.readline()  # from the first changed snapshot on
        if not first:
            raise ConfigError(f"the churning mirror ended before its first snapshot (exit code {writer.wait()})")
        reconciles.append(float(first))
        for goal, start in zip(goals, starts, strict=True):
            t = time.perf_counter()
            result = planner.plan(goal, from_symbol=start)
            seconds.append(time.perf_counter() - t)
            graph_s.append(result.timings.get("graph", 0.0))
            statuses[result.status.value] = statuses.get(result.status.value, 0) + 1
    finally:
        try:  # closing its standard input ends it after the snapshot it is writing
            rest, _ = writer.communicate(timeout=120.0)
        except subprocess.TimeoutExpired:
            writer.kill()
            rest, _ = writer.communicate()
        reconciles += [float(line) for line in rest.split()]
    return {
        "churn_period_s": args.churn,
        "churn_snapshots": len(reconciles),
        "churn_reconcile_median_s": statistics.median(reconciles) if reconciles else 0.0,
        "churn_statuses": statuses,
        "churn_median_s": statistics.median(seconds),
        "churn_p95_s": _percentile(seconds, 95),
        "churn_max_s": max(seconds),
        "churn_graph_median_s": statistics.median(graph_s),
        "churn_graph_p95_s": _percentile(graph_s, 95),
        "graph_changes": planner.graph_reads["changes"] - reads_before["changes"],
        "graph_whole_reads": planner.graph_reads["whole"] - reads_before["whole"],
        "churn_meets_target": _percentile(seconds, 95) <= TARGET_P95_S,
    }


def _churn(uri: str, graph_name: str, seed: int, scale: float, period_s: float) -> None:
    """Mirror the scene with 1 % of the nodes changed every ``period_s`` (moved 1 m, removed, or back where it
    was), printing each reconcile's seconds, until standard input closes."""
    tables = extract_tables(generate_scene("large", seed, scale=scale))
    stop = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    rng = np.random.default_rng(seed + 3)
    nodes = dict(tables.nodes)
    removed: dict[int, Any] = {}
    ids = sorted(nodes)
    per_snapshot = max(1, round(0.01 * len(ids)))
    store = open_store(uri, graph=graph_name, timeout_s=300.0)
    mirror = Mirror(store)
    sequence = 0
    low = (1 << 64) - 1
    while not stop.wait(period_s):
        for index in rng.choice(len(ids), size=per_snapshot, replace=False):
            node_id = ids[index]
            row = nodes.get(node_id)
            if row is None:
                nodes[node_id] = removed.pop(node_id)
            elif rng.random() < 0.25 and row[0] is not Layer.BUILDING:
                removed[node_id] = nodes.pop(node_id)
            else:
                nodes[node_id] = (*row[:3], row[3] + 1.0, *row[4:])
        kept = {key for key in tables.edges if key >> 64 in nodes and key & low in nodes}
        t = time.perf_counter()
        mirror.reconcile(SceneTables(nodes=dict(nodes), edges=kept), sequence=sequence, force=True)
        print(time.perf_counter() - t, flush=True)
        sequence += 1
    store.close()


def random_goals(rng: np.random.Generator, graph: PlaceGraph, objects: list[str], count: int) -> list[str]:
    """Goals of 1-5 symbols cycling through the goal predicates; every third one an ``or``."""
    places = graph.symbols[: graph.nav_count]
    rooms = [r for r in graph.room_names if graph.room_places[r].size]
    goals = []
    for i in range(count):
        wanted = 1 + i % 5
        disjunctive = i % 3 == 1
        parts: list[str] = []
        used = 0
        held = False
        while used < wanted:
            kind = int(rng.integers(8))
            o = objects[int(rng.integers(len(objects)))]
            p = places[int(rng.integers(len(places)))]
            r = rooms[int(rng.integers(len(rooms)))]
            if kind == 7 and wanted - used >= 2:
                parts.append(f"(object-in-place {o} {p})")
                used += 2
                continue
            if kind == 6 and (disjunctive or not held):
                held = True
                parts.append(f"(holding {o})")
            else:
                parts.append(
                    [f"(visited-place {p})", f"(at-place {p})", f"(visited-object {o})", f"(safe {o})",
                     f"(visited-room {r})", f"(in-room {r})", f"(visited-object {o})", f"(safe {o})"][kind]
                )
            used += 1
        if not disjunctive and i % 10 == 3:
            parts.append(f"(not (visited-room {rooms[int(rng.integers(len(rooms)))]}))")
        if len(parts) == 1:
            goals.append(parts[0])
        else:
            goals.append(f"({'or' if disjunctive else 'and'} {' '.join(parts)})")
    return goals


# --- naive contrast ------------------------------------------------------------------
def _naive_figures(planner: Planner, scene: dsg.DynamicSceneGraph, args: argparse.Namespace) -> dict[str, Any]:
    graph = planner.place_graph()
    rng = np.random.default_rng(args.seed + 1)
    objects = _objects(scene)
    goals = [
        f"(or (safe {objects[0]}) (visited-place {graph.symbols[graph.nav_count - 1]}))",
        f"(and (holding {objects[1]}) (visited-room {graph.room_names[len(graph.room_names) // 2]}))",
        *random_goals(rng, graph, objects, max(0, args.naive_goals - 2)),
    ][: args.naive_goals]
    start = graph.symbols[0]
    compact: list[float] = []
    naive: list[float] = []
    capped = 0
    for goal in goals:
        t = time.perf_counter()
        result = planner.plan(goal, from_symbol=start)
        compact.append(time.perf_counter() - t)
        t = time.perf_counter()
        text = naive_problem(graph, planner, goal, start)
        fd = run_fast_downward(
            planner.domain.text, text, timeout_s=args.naive_timeout, search=planner.search
        )
        naive.append(time.perf_counter() - t)
        capped += int(fd.status is FDStatus.TIMEOUT)
        log.info("naive %.1f s (%s) vs compact %.3f s (%s): %s", naive[-1], fd.status.value, compact[-1],
                 result.status.value, goal)
    ratio = statistics.median(naive) / statistics.median(compact)
    return {
        "naive_places": graph.size,
        "naive_goals": len(goals),
        "naive_median_s": statistics.median(naive),
        "naive_timed_out": capped,
        "naive_compact_median_s": statistics.median(compact),
        "naive_ratio": ratio,
        "naive_ratio_is_lower_bound": capped > 0,
    }


def naive_problem(graph: PlaceGraph, planner: Planner, goal: str, start: str) -> str:
    """Every place a PDDL object; roads only along the place graph's own edges."""
    expr = parse_goal(goal)
    names = [to_pddl_name(s) for s in graph.symbols]
    coo = graph.matrix.tocoo()
    init = ["(= (total-cost) 0)", f"(at-place {to_pddl_name(start)})", f"(visited-place {to_pddl_name(start)})",
            "(hand-empty)"]
    for a, b, d in zip(coo.row, coo.col, coo.data, strict=True):
        init += [f"(road {names[a]} {names[b]})",
                 f"(= (distance {names[a]} {names[b]}) {max(1, round(float(d) * COST_SCALE))})"]
    for room in graph.room_names:
        init += [f"(place-in-room {names[i]} {to_pddl_name(room)})" for i in graph.room_places[room]]
    kinds = symbol_layers(planner.store, symbols(expr))
    items = [s for s in symbols(expr) if kinds.get(s) is Layer.OBJECT]
    objects = planner.object_infos(graph, items, "")
    for symbol, info in objects.items():
        if info.reach is not None:
            init.append(f"(object-at {to_pddl_name(symbol)} {names[info.reach]})")
    body = "\n    ".join(init)
    declarations = [f"{' '.join(names)} - place", f"{' '.join(map(to_pddl_name, graph.room_names))} - room"]
    if items:
        declarations.append(f"{' '.join(map(to_pddl_name, items))} - item")
    return (
        f"(define (problem naive) (:domain {planner.domain.name})\n  (:objects {' '.join(declarations)})\n"
        f"  (:init\n    {body})\n  (:goal {render_goal(expr)})\n  (:metric minimize (total-cost)))\n"
    )


# --- helpers ---------------------------------------------------------------------------
def _objects(scene: dsg.DynamicSceneGraph) -> list[str]:
    return sorted(
        (symbol_of(node.id.value) for node in scene.get_layer(dsg.DsgLayers.OBJECTS).nodes),
        key=lambda s: int(s[1:]),
    )


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


@contextlib.contextmanager
def _mirrored(uri: str, scene: dsg.DynamicSceneGraph) -> Iterator[tuple[GraphStore, dsg.DynamicSceneGraph]]:
    store = open_store(uri, graph=f"bench_plan_{uuid.uuid4().hex[:8]}", timeout_s=300.0)
    try:
        Mirror(store).reconcile(scene)
        yield store, scene
    finally:
        store.close()


if __name__ == "__main__":  # the churning mirror of --churn, a process of its own as the mirror node is
    _churn(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
