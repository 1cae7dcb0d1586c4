"""``heracles search WHAT``: go and look for what the map lacks, rooms ranked by how likely they hold it.

Without ``--execute`` it prints the rooms in the order it would look (nothing moves). With ``--execute`` each
room is one leg, planned (``(at-place VIEWPOINT)``) and sent to the robot's dispatcher like any plan, so the
plan check, ``heracles stop``, cancel and the client watch all apply; while a leg runs the database is read
every :data:`WATCH_S` for a thing of WHAT's classes the map did not hold at the start, and the leg is cancelled
as soon as one appears (the robot stops). ``--confirm`` asks once on the terminal before the first leg.
Ctrl-C cancels the running leg and exits 130. ``--json`` prints one object: ``outcome`` (found | not_found |
stopped | cancelled | failed | rejected), ``found`` (symbol or null), ``where``, ``visited`` (rooms, in order),
``ruled_out``, ``distance_m`` (from the robot's reported positions) and ``reason``. Exit status 0 found, 1 not
found or any other ending, 130 interrupted.

WHAT is read by meaning (:mod:`heracles_ros.search.target`, through ``heracles find``'s resolver and its offline
word vectors unless ``--embeddings`` names a provider): the map's classes like it make rooms likelier, and a newly
seen object is it when its class is WHAT's or ranks as WHAT's best word. ``--exact``: WHAT is its own class only.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.meaning.embeddings import KINDS
from heracles_ros.search.runner import XY, Leg, Search, SearchResult
from heracles_ros.search.target import Target, target_of

EXIT_FOUND, EXIT_NOT_FOUND, EXIT_INTERRUPTED = 0, 1, 130
#: Seconds between looks at the database for the thing while a leg runs.
WATCH_S = 0.25
#: Seconds a leg's goal may take to be answered, and a cancelled leg's result to come.
ANSWER_S = 10.0
#: A leg runs at most this long (wall-clock seconds) before it is cancelled.
LEG_LIMIT_S = 600.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "search", help="go and look for something the map lacks, likeliest rooms first",
        description="Rank the rooms by how likely they hold WHAT (room labels and similar things on the map, "
        "what is looked at already, the walk) and, with --execute, walk them one leg at a time through the "
        "robot's dispatcher until WHAT is seen in the mirror or nothing likely is left.",
    )
    parser.add_argument("what", metavar="WHAT", help="a class or words, e.g. 'fire extinguisher'")
    parser.add_argument("--execute", action="store_true", help="walk the tour (default: only print it)")
    parser.add_argument("--confirm", action="store_true", help="ask on the terminal before the robot moves")
    parser.add_argument("--namespace", default="/spot", metavar="NS", help="robot namespace (default /spot)")
    add_db_options(parser)
    parser.add_argument("--sensor-range", type=float, default=3.0, metavar="M",
                        help="how far the robot sees, metres (the simulated Hydra's sim_sensor_range_m; default 3)")
    parser.add_argument("--max-rooms", type=int, default=10, metavar="N", help="most rooms visited (default 10)")
    parser.add_argument("--timeout", type=float, default=900.0, metavar="S",
                        help="wall-clock seconds the whole search may take (default 900)")
    parser.add_argument("--exact", action="store_true",
                        help="WHAT is a class, matched word for word (case and plural folded): no word vectors")
    parser.add_argument("--embeddings", default="wordllama", choices=KINDS,
                        help="word vectors reading WHAT: wordllama (offline, default), openai or ollama")
    parser.add_argument("--embedding-model", default="", metavar="NAME", help="the provider's embedding model")
    parser.add_argument("--base-url", default=None, metavar="URL", help="the provider's server")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from heracles_ros.errors import ConfigError
    from heracles_ros.graphdb import open_store
    from heracles_ros.planning.planner import Planner
    from heracles_ros.robot_record import RobotRecord
    from heracles_ros.search.area import search_area, things_seen, walk_lengths

    if not args.what.strip():
        raise ConfigError("search needs WHAT to look for, e.g. 'fire extinguisher'")
    if args.sensor_range <= 0 or args.max_rooms < 1 or args.timeout <= 0:
        raise ConfigError("--sensor-range and --timeout must be > 0 and --max-rooms >= 1")
    with open_store(args.db, graph=args.graph) as store:
        target = _target(args, store)
        planner = Planner(store)
        graph = planner.place_graph()
        area = search_area(store, graph)
        robot = RobotRecord(store).read()
        start: XY = (robot.position[0], robot.position[1]) if robot is not None else (0.0, 0.0)
        search = Search(area, target.similarity, sensor_range_m=args.sensor_range, max_rooms=args.max_rooms,
                        timeout_s=args.timeout)
        before = things_seen(store, target, [])
        if before:
            return _report(args, SearchResult("found", before[0]["symbol"], reason="already on the map"))
        if not args.execute:
            return _show_tour(args, search, lambda xy: walk_lengths(graph, area, xy), start)
        if args.confirm and not _confirmed(args.what):
            return _report(args, SearchResult("refused", reason="the operator refused the tour; nothing moved"))
        legs = _Legs(args.namespace, store, planner, target)
        try:
            result = search.run(start, legs.walk, lambda xy: walk_lengths(graph, area, xy), feedback=_say)
        except KeyboardInterrupt:
            legs.cancel()
            print("search interrupted: the running leg was cancelled", file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            legs.close()
    return _report(args, result)


def _target(args: argparse.Namespace, store: Any) -> Target:
    """WHAT, read by meaning through the resolver over ``store`` unless ``--exact``."""
    if args.exact:
        return target_of(args.what)
    from heracles_ros.meaning.embeddings import open_embedder
    from heracles_ros.meaning.resolver import Resolver

    resolver = Resolver(store, open_embedder(args.embeddings, model=args.embedding_model, base_url=args.base_url))
    return target_of(args.what, resolver.rank_terms)


def _say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def _show_tour(args: argparse.Namespace, search: Search, lengths: Any, start: XY) -> int:
    """The order the rooms would be looked in from ``start`` if none held it (nothing moves)."""
    from heracles_ros.search.ranking import left_to_look, next_room

    order: list[str] = []
    here, ruled = start, {room: 1.0 for room in search.prior}
    while len(order) < search.max_rooms:
        room = next_room(left_to_look(search.prior, ruled), lengths(here))
        if room is None:
            break
        order.append(room)
        ruled[room] = 0.0
        here = search.area.place_xy[search.area.viewpoints[room]]
    tour = [{"room": room, "label": search.area.rooms[room], "p": round(search.prior[room], 4)} for room in order]
    if args.json:
        print_json({"outcome": "planned", "found": None, "visited": [], "tour": tour, "distance_m": 0.0})
    else:
        for stop in tour:
            print(f"{stop['room']} ({stop['label']}, p {stop['p']:.2f})")
    return EXIT_FOUND


def _confirmed(what: str) -> bool:
    print(f"walk the robot to look for {what}? [y/N] ", end="", flush=True, file=sys.stderr)
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _report(args: argparse.Namespace, result: SearchResult) -> int:
    if args.json:
        print_json(result.to_json())
    elif result.outcome == "found":
        print(f"found {result.found}" + (f" in {result.where}" if result.where else "")
              + f" after {len(result.visited)} room(s), {result.distance_m:.1f} m walked")
    else:
        print(f"{result.outcome}: {result.reason}; looked in {', '.join(result.visited) or 'no room'}, "
              f"{result.distance_m:.1f} m walked")
    return EXIT_FOUND if result.outcome == "found" else EXIT_NOT_FOUND


class _Legs:
    """Each leg as a plan at the robot's dispatcher, watched for the thing in the database."""

    def __init__(self, namespace: str, store: Any, planner: Any, target: Target):
        from heracles_ros.ros.client_context import ClientContext
        from heracles_ros.ros.interfaces import EXECUTE_PLAN
        from heracles_ros.search.area import map_objects

        self.store, self.planner, self.target = store, planner, target
        self.before = map_objects(store)
        self.ros = ClientContext("heracles_search", short_lease=True)
        self.actions = self.ros.action_client(EXECUTE_PLAN, namespace)
        self._goal_type = EXECUTE_PLAN.type.Goal
        self._handle: Any = None
        self._count = 0

    def walk(self, room: str, viewpoint: str) -> Leg:
        from heracles_ros.robot_record import RobotRecord
        from heracles_ros.ros.plan_msgs import plan_to_msg
        from heracles_ros.search.area import things_seen

        plan = self.planner.plan(f"(at-place {viewpoint})")
        if not plan.ok:
            return Leg("failed", [], reason=f"no plan to {viewpoint} in {room}: {plan.reason}")
        self._count += 1
        positions: list[XY] = []
        message = plan_to_msg(plan, plan_id=f"search-{int(time.time())}-{self._count}", frame_id="map")
        if not self.actions.wait_for_server(timeout_sec=ANSWER_S):
            return Leg("failed", [], reason="no dispatcher serves execute_plan in this namespace")
        answered = threading.Event()
        sent = self.actions.send_goal_async(
            self._goal_type(plan=message, client_node=self.ros.node.get_fully_qualified_name()),
            feedback_callback=lambda m: positions.append((m.feedback.progress.robot_position.x,
                                                          m.feedback.progress.robot_position.y)))
        sent.add_done_callback(lambda _: answered.set())
        if not answered.wait(ANSWER_S) or not sent.result().accepted:
            return Leg("rejected", [], reason="the dispatcher did not take the leg (stopped, busy or shutting "
                       "down: its dispatch_result says which)")
        self._handle = handle = sent.result()
        done = threading.Event()
        outcome = handle.get_result_async()
        outcome.add_done_callback(lambda _: done.set())
        deadline = time.monotonic() + LEG_LIMIT_S
        found: list[dict[str, Any]] = []
        while not done.wait(WATCH_S):
            found = things_seen(self.store, self.target, self.before)
            if found or time.monotonic() > deadline:
                handle.cancel_goal_async()
                done.wait(ANSWER_S)
                break
        if not found:
            found = things_seen(self.store, self.target, self.before)
        self._handle = None
        result = outcome.result().result.result if done.is_set() else None
        robot = RobotRecord(self.store).read()  # where the dispatcher recorded the robot at the leg's end
        if robot is not None:
            positions.append((robot.position[0], robot.position[1]))
        if found:
            return Leg("found", positions, found=str(found[0]["symbol"]), found_where=room)
        status = result.status if result is not None else "failed"
        return Leg("arrived" if status == "succeeded" else status, positions,
                   reason=result.reason if result is not None else "the leg's result did not come")

    def cancel(self) -> None:
        handle = self._handle
        if handle is not None:
            handle.cancel_goal_async()
            time.sleep(0.5)

    def close(self) -> None:
        self.ros.close()
