"""Every declared parameter of every node reaches the code that uses it.

One table per node: for each parameter a non-default value and how its effect
is seen. The value is given at construction (parameter overrides) or, where the
node applies it while running, with ``set_parameters``; a read-only one must
then refuse a run-time change with a reason. The safety-relevant ones are seen
in the node's behaviour (plans refused by the limits, a lost client cancelling
its goal, an unconfirmed command refused, closing within the shutdown bound, a
bounded snapshot wait); the others in the object that consumes the value, read
off the live node (the mirror, the agent, the planner, the driver).

A parameter declared later without a row fails the coverage check that opens
each node's test. Real rclpy nodes over DDS, real FalkorDB, the sim driver, the
scripted model server; each node is built once or twice, not once per row.
"""
from __future__ import annotations

import inspect
import math
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from heracles_ros.action import ExecuteCommand, ExecutePlan
from heracles_ros.msg import DispatchResult, MirrorStatus, StopState
from heracles_ros.srv import Ask
from hydra_msgs.msg import DsgUpdate
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.parameter import Parameter
from support.actions import goal_result, send_goal
from support.closing import assert_close_gives_up
from support.mirror_checks import assert_mirrors
from support.ros import (
    Collector,
    action_client,
    call_service,
    qos,
    ros_session,
    spinning,
    wait_for_subscribers,
    wait_until,
)
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, say
from support.spot_driver import proto_to_ros
from support.tiny_scene import node_id, tiny_scene
from visualization_msgs.msg import MarkerArray

from heracles_ros.execution.robot_state import RobotStateStore
from heracles_ros.execution.sim import SimSpotDriver
from heracles_ros.graphdb.cypher import mirror as mirror_q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.nodes import dispatcher, dsg_mirror, language_server
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from heracles_ros.nodes.language_server import LanguageServerNode
from heracles_ros.nodes.markers import NS_MOVED, NS_OBJECTS
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner
from heracles_ros.ros.plan_msgs import plan_to_msg
from heracles_ros.ros.qos import latched
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.search.worlds import hide_objects
from heracles_ros.settings import Setting

# Node plumbing on FalkorDB (the backends' own tests cover Neo4j).
pytestmark = pytest.mark.backends("falkordb")

NS = "/spot1"
#: One robot symbol for both nodes that plan: not the default, and recorded away from the origin.
ROBOT = "spot_b"


#: A row whose value comes from the test's fixtures (the database URI, the scene file, a length of the scene).
FROM_FIXTURE = object()


@dataclass(frozen=True)
class Row:
    """A non-default value of one parameter and how its effect is seen (``observe`` raises when it is not)."""

    value: Any
    observe: Callable[[Any], object]
    #: Set with set_parameters on the running node (a run-time parameter), not at construction.
    runtime: bool = False


Table = dict[str, Row]


def declared_by_the_node(node: Node) -> set[str]:
    """The parameters ``node`` declared itself: all it holds, less what every rclpy node declares."""
    bare = rclpy.create_node("bare_for_parameters")
    try:
        return set(node.get_parameters_by_prefix("")) - set(bare.get_parameters_by_prefix(""))
    finally:
        bare.destroy_node()


def assert_covers(node: Node, *tables: Table) -> None:
    """Every parameter the live node declared has a row, and every row names one it declared."""
    rows = set().union(*tables)
    declared = declared_by_the_node(node)
    assert declared == rows, (f"declared without a row: {sorted(declared - rows)}; "
                              f"rows for no parameter: {sorted(rows - declared)}")


def overrides(table: Table, **extra: Any) -> list[Parameter]:
    values = {name: row.value for name, row in table.items() if not row.runtime}
    return [Parameter(name, value=value) for name, value in {**values, **extra}.items()]


def assert_read_only_refused(node: Node, specs: tuple[Setting, ...], table: Table) -> None:
    """A run-time change of a parameter the node reads only at start is refused, naming why; the value stays."""
    for spec in specs:
        if spec.name not in table or table[spec.name].runtime:
            continue
        before = node.get_parameter(spec.name).value
        other = spec.default if spec.default != [] else [1]
        (result,) = node.set_parameters([Parameter(spec.name, value=other)])
        assert not result.successful and "read-only" in result.reason, (spec.name, result.reason)
        assert node.get_parameter(spec.name).value == before, spec.name


def set_at_run_time(node: Node, table: Table) -> None:
    """Every run-time row's value set on the running node, each accepted."""
    for name, row in table.items():
        if row.runtime:
            (result,) = node.set_parameters([Parameter(name, value=row.value)])
            assert result.successful, (name, result.reason)


def observe_all(table: Table, live: Any) -> None:
    """Each row's observation, in table order (a row may rely on what an earlier one did to the node)."""
    for name, row in table.items():
        try:
            assert row.observe(live) is not False, "the observation came out false"
        except AssertionError as exc:
            raise AssertionError(f"parameter {name} = {row.value!r} did not reach its consumer: {exc}") from exc


def specs_of(module: Any) -> dict[str, Setting]:
    return {spec.name: spec for spec in module.PARAMETERS}


# === dsg_mirror =========================================================================================
@dataclass
class MirrorLive:
    node: DsgMirrorNode
    probe: Node
    store: GraphStore
    status: Collector[MirrorStatus]
    publisher: Any
    scene: Any
    markers: Collector[MarkerArray] | None = None
    scene_markers: Collector[MarkerArray] | None = None

    @property
    def mirror(self) -> Any:
        assert self.node.loop is not None
        return self.node.loop.mirror

    def publish(self, graph: Any, sequence: int, stamp_s: float = 0.0) -> MirrorStatus:
        msg = DsgUpdate(layer_contents=graph.to_binary(include_mesh=False), full_update=True,
                        sequence_number=sequence)
        msg.header.stamp.sec = int(stamp_s)
        after = self.status.count
        self.publisher.publish(msg)
        return self.status.wait(lambda s: s.sequence == sequence, 15.0, after=after, what=f"status of {sequence}")


MIRROR_TOPIC = "/params/dsg"


def _without_objects(count: int) -> Any:
    graph = tiny_scene()
    for index in range(count):
        graph.remove_node(node_id(f"O{index}"))
    return graph


def _suspect_policy(live: MirrorLive, sequence: int) -> None:
    """suspect_fraction 0.2 and suspect_min_nodes 5 hold back a snapshot removing 4 of 14 nodes (the defaults,
    0.5 and 20, would apply it); allow_mass_removal is checked after them (see the test).

    Each row sends its own sequence number: the held status of an earlier one, repeated every
    status_period_s, must not pass for this one's."""
    status = live.publish(_without_objects(4), sequence)
    assert status.suspect_held and "would remove 4 of 14" in status.last_error, status.last_error


def _mass_removal_allowed(live: MirrorLive) -> None:
    (result,) = live.node.set_parameters([Parameter("allow_mass_removal", value=True)])
    assert result.successful
    status = live.publish(_without_objects(4), 4)
    assert (status.suspect_held, status.last_error, status.nodes_removed) == (False, "", 4)


def _closing_is_bounded(live: MirrorLive) -> None:
    """shutdown_timeout_s 0.6: closing gives up on a snapshot stuck in its write within it (default: 3.5 s)."""
    assert_close_gives_up(live.node, lambda: live.publisher.publish(DsgUpdate(
        layer_contents=tiny_scene().to_binary(include_mesh=False), full_update=True, sequence_number=99)))


def _periodic_status(live: MirrorLive) -> None:
    """status_period_s 0.1: five repeats of the last status within 3 s, where the default (one per 5 s)
    gives at most one; the margin allows a loaded machine's pauses."""
    after = live.status.count
    last = live.status.messages[-1].sequence  # of whichever row published last
    wait_until(lambda: sum(s.sequence == last for s in live.status.messages[after:]) >= 5, 3.0,
               "five periodic statuses")


def _no_instance_look(live: MirrorLive) -> None:
    """instance_check_s 0: a mirror (in a namespace of its own, reading no scene file) starts without looking for
    another one; the default looks for 2 s before it starts."""
    started = time.monotonic()
    other = DsgMirrorNode(namespace="/elsewhere", parameter_overrides=overrides(
        MIRROR_A, db_uri=live.node.settings.db_uri, graph_name=live.node.settings.graph_name, scene_file=""))
    took = time.monotonic() - started
    other.destroy_node()
    assert took < 2.0, took


def _no_history(live: MirrorLive) -> None:
    live.publish(_moved(), 5)
    assert live.store.query("MATCH (c:Change) RETURN count(c) AS n")[0]["n"] == 0


def _large_snapshots_refused(live: MirrorLive) -> None:
    """A snapshot over the cap (the small synthetic scene, ~75 KB; the others here are a few KB) is refused, by
    its size, before it is decoded."""
    from heracles_ros.scene.synthetic import generate_scene

    status = live.publish(generate_scene("small", seed=0), 1)
    assert "larger than max_snapshot_bytes (20000)" in status.last_error, status.last_error


#: Build A: everything but what needs the history on (markers).
MIRROR_A: Table = {
    "db_uri": Row(FROM_FIXTURE, lambda live: assert_mirrors(live.store, live.scene)),
    "graph_name": Row(FROM_FIXTURE, lambda live: assert_mirrors(live.store, live.scene)),
    "scene_file": Row(FROM_FIXTURE, lambda live: assert_mirrors(live.store, live.scene)),
    "dsg_topic": Row(MIRROR_TOPIC, lambda live: live.publish(tiny_scene(), 1)),
    "suspect_fraction": Row(0.2, lambda live: _suspect_policy(live, 2), runtime=True),
    "suspect_min_nodes": Row(5, lambda live: _suspect_policy(live, 3), runtime=True),
    "allow_mass_removal": Row(True, _mass_removal_allowed, runtime=True),
    "retry_period_s": Row(0.35, lambda live: live.node.loop is not None
                          and _eq(live.node.loop.retry_period_s, 0.35), runtime=True),
    "batch_size": Row(7, lambda live: _eq(live.mirror.batch_size, 7)),
    "query_timeout_s": Row(7.5, lambda live: _eq(live.node.store.timeout_s, 7.5)),
    "history": Row(False, _no_history),
    "move_threshold_m": Row(1.25, lambda live: _eq(live.mirror.history.settings.move_threshold_m, 1.25)),
    "addition_merge_radius_m": Row(2.5, lambda live: _eq(live.mirror.corrections.additions.settings.merge_radius_m,
                                                        2.5)),
    "addition_confirm_snapshots": Row(5, lambda live: _eq(
        live.mirror.corrections.additions.settings.confirm_snapshots, 5)),
    "addition_confirm_s": Row(7.5, lambda live: _eq(live.mirror.corrections.additions.settings.confirm_s, 7.5)),
    "max_snapshot_bytes": Row(20_000, _large_snapshots_refused),
    "history_max_age_s": Row(3600.0, lambda live: _eq(live.mirror.history.settings.max_age_s, 3600.0)),
    "history_max_changes": Row(77, lambda live: _eq(live.mirror.history.settings.max_changes, 77)),
    "history_max_seen": Row(55, lambda live: _eq(live.mirror.history.settings.max_seen, 55)),
    "moved_markers_window_s": Row(0.0, lambda live: _eq(live.node.count_publishers("/history_markers"), 0)),
    "scene_markers_period_s": Row(0.0, lambda live: _eq(live.node.count_publishers("/scene_markers"), 0)),
    "status_period_s": Row(0.1, _periodic_status),
    "instance_check_s": Row(0.0, _no_instance_look),
    "shutdown_timeout_s": Row(0.6, _closing_is_bounded),
}


def _moved_markers_in(frame: str) -> Callable[[MirrorLive], None]:
    def observe(live: MirrorLive) -> None:
        assert live.markers is not None
        live.publish(tiny_scene(), 1, stamp_s=1_000_000.0)
        live.publish(_moved(), 2, stamp_s=1_000_010.0)
        shown = live.markers.wait(lambda a: any(m.ns == NS_MOVED and m.action == m.ADD for m in a.markers), 10.0,
                                  what="a moved marker")
        assert {m.header.frame_id for m in shown.markers if m.ns == NS_MOVED} == {frame}
    return observe


def _window(live: MirrorLive) -> None:
    """The move is 200 s before the newest snapshot: outside a 120 s window (inside the 600 s default)."""
    assert live.markers is not None
    after = live.markers.count
    live.publish(_moved(), 3, stamp_s=1_000_210.0)
    cleared = live.markers.wait(lambda a: any(m.ns == NS_MOVED for m in a.markers)
                                and all(m.action == m.DELETE for m in a.markers if m.ns == NS_MOVED),
                                10.0, after=after, what="the moved marker deleted")
    assert cleared


def _moved() -> Any:
    """The tiny scene with O1 9 m from where it was."""
    moved = tiny_scene()
    moved.get_node(node_id("O1")).attributes.position = np.array([9.0, 9.0, 0.5])
    return moved


def _scene_capped(live: MirrorLive) -> None:
    """scene_markers_max 4: two of the tiny scene's five objects drawn, a cube and a label each (default: all)."""
    assert live.scene_markers is not None
    shown = live.scene_markers.wait(lambda a: any(m.ns == NS_OBJECTS for m in a.markers), 10.0,
                                    what="the scene's markers")
    assert sorted(m.id for m in shown.markers if m.ns == NS_OBJECTS and m.action == m.ADD) == [0, 1, 2, 3]


#: Build B: the history and scene markers (history on, as by default).
MIRROR_B: Table = {
    "marker_frame": Row("odom_b", _moved_markers_in("odom_b")),
    "moved_markers_window_s": Row(120.0, _window),
    "scene_markers_max": Row(4, _scene_capped),
}
MIRROR_TABLES = (MIRROR_A, MIRROR_B)


def _eq(value: Any, expected: Any) -> bool:
    assert value == expected, f"{value!r} != {expected!r}"
    return True


@contextmanager
def mirror_live(domain: int, table: Table, scene: Any, store: GraphStore, **fixed: Any) -> Iterator[MirrorLive]:
    with ros_session(domain):
        node = DsgMirrorNode(parameter_overrides=overrides(table, **fixed))
        probe = rclpy.create_node("probe")
        live = MirrorLive(node, probe, store, Collector(probe, MirrorStatus, "/mirror_status", 100),
                          probe.create_publisher(DsgUpdate, fixed.get("dsg_topic", MIRROR_TOPIC), qos(1)), scene)
        if "marker_frame" in table:
            live.markers = Collector(probe, MarkerArray, "/history_markers", 100)
        if "scene_markers_max" in table:
            live.scene_markers = Collector(probe, MarkerArray, "/scene_markers", latched())
        with spinning(node, probe):
            wait_for_subscribers(live.publisher)
            wait_until(lambda: node.count_subscribers("/mirror_status") >= 1, 10.0, "the status subscriber")
            yield live


def test_every_dsg_mirror_parameter_reaches_its_consumer(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore, tmp_path: Path
) -> None:
    scene_file = tmp_path / "scene.json"
    scene = tiny_scene()
    scene.save(str(scene_file))
    fixed = {"db_uri": db_uri, "graph_name": graph_name, "scene_file": str(scene_file), "dsg_topic": MIRROR_TOPIC}
    with mirror_live(ros_domain_id, MIRROR_A, scene, store, **fixed) as live:
        assert_covers(live.node, MIRROR_A, MIRROR_B)
        wait_until(lambda: live.node.loop is not None and live.node.loop.state.snapshots_applied >= 1, 10.0,
                   "the scene file mirrored")
        assert_read_only_refused(live.node, dsg_mirror.PARAMETERS, MIRROR_A)
        set_at_run_time(live.node, {k: v for k, v in MIRROR_A.items() if k != "allow_mass_removal"})
        observe_all(MIRROR_A, live)
    store.write("MATCH (n) DETACH DELETE n")
    fixed = {"db_uri": db_uri, "graph_name": graph_name, "dsg_topic": MIRROR_TOPIC, "status_period_s": 0.0}
    with mirror_live(ros_domain_id, MIRROR_B, scene, store, **fixed) as live:
        observe_all(MIRROR_B, live)


# === language_server and dispatcher ===================================================================
def _place_near(store: GraphStore, x: float, y: float) -> str:
    rows = store.query("MATCH (p:MeshPlace) RETURN p.nodeSymbol AS p, (p.x - $x) * (p.x - $x) + (p.y - $y) * "
                       "(p.y - $y) AS d ORDER BY d, p LIMIT 1", {"x": x, "y": y})
    return str(rows[0]["p"])


@dataclass
class Scene:
    """What the rows need to know of the small scene: where the robot starts, two fetches and their walks."""

    start: str
    start_position: tuple[float, float, float]
    near: PlanResult
    far: PlanResult
    near_walk_m: float
    far_walk_m: float

    @property
    def path_limit_m(self) -> float:
        return (self.near_walk_m + self.far_walk_m) / 2


def _walk_m(plan: PlanResult, start: tuple[float, float, float]) -> float:
    here, total = start, 0.0
    for action in plan.actions:
        if action.name == "goto":
            for point in list(action.waypoints) or [action.target]:
                total += math.hypot(point[0] - here[0], point[1] - here[1])
                here = point
    return total


def scene_for(store: GraphStore) -> Scene:
    start = _place_near(store, 3.0, 3.0)
    position = RobotStateStore(store).place_position(start)
    assert position is not None
    objects = store.query("MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object) WHERE p.x < 12 AND p.nodeSymbol <> $start "
                          "RETURN o.nodeSymbol AS o, (p.x - $x) * (p.x - $x) + (p.y - $y) * (p.y - $y) AS d "
                          "ORDER BY d, o", {"x": position[0], "y": position[1], "start": start})
    planner = Planner(store)
    plans = [planner.plan(f"(holding {row['o']})", from_symbol=start) for row in (objects[0], objects[-1])]
    assert all(plan.ok for plan in plans)
    near, far = plans
    walks = _walk_m(near, position), _walk_m(far, position)
    assert walks[0] + 1.0 < walks[1], walks
    return Scene(start, position, near, far, *walks)


@dataclass
class Live:
    """Both nodes in one namespace (execute_command needs the dispatcher), a probe, the model server."""

    language: LanguageServerNode
    dispatcher: DispatcherNode
    probe: Node
    server: ScriptedLLMServer
    scene: Scene
    store: GraphStore
    results: Collector[DispatchResult]
    stop_state: Collector[StopState]
    answer_markers: Collector[MarkerArray]
    plans: ActionClient
    commands: ActionClient

    def ask(self) -> Any:
        return call_service(self.probe.create_client(Ask, f"{NS}/ask"), Ask.Request(question="How many boxes?"),
                            30.0)

    def plan(self, plan: PlanResult, plan_id: str, client_node: str = "") -> DispatchResult:
        goal = send_goal(self.plans, ExecutePlan.Goal(plan=plan_to_msg(plan, plan_id=plan_id, frame_id="map"),
                                                      client_node=client_node))
        assert goal.accepted, plan_id
        return self.results.wait(lambda r: r.plan_id == plan_id, 30.0, what=f"the result of {plan_id}")

    def command(self, **options: Any) -> tuple[int, Any, float]:
        started = time.monotonic()
        goal = send_goal(self.commands, ExecuteCommand.Goal(instruction="Fetch O1.", execute=True, **options))
        assert goal.accepted
        status, result = goal_result(goal, 60.0)
        return status, result, time.monotonic() - started


def _model(request: RecordedRequest) -> Turn:
    return say("<answer>(holding O1)</answer>" if "Instruction:" in request.text() else "<answer>3</answer>")


# -- language_server rows -------------------------------------------------------------------------------
def _the_model_was_asked(check: Callable[[RecordedRequest, Live], Any]) -> Callable[[Live], None]:
    """``check`` holds for the request the scripted model server got for the question."""
    def observe(live: Live) -> None:
        asked = [r for r in live.server.requests if "Question:" in r.text()]
        assert asked, "the model got no question"
        assert check(asked[-1], live), (asked[-1].headers, asked[-1].body)
    return observe


def _answer_marker(live: Live) -> Any:
    array = live.answer_markers.wait(lambda a: any("How many boxes?" in m.text for m in a.markers), 10.0,
                                     what="the answer marker")
    return array.markers[0]


def _busy_with_one_worker(live: Live) -> None:
    """request_workers 1: with its one slot taken, a request is refused as busy (4 by default: answered)."""
    assert live.language._slots.acquire(blocking=False)
    try:
        reply = live.ask()
    finally:
        live.language._slots.release()
    assert reply.error.startswith("busy: all 1 request workers"), reply.error


def _not_confirmed_in_time(live: Live) -> None:
    status, result, took = live.command()
    assert (status, result.outcome) == (GoalStatus.STATUS_ABORTED, "refused"), result
    assert result.reason == "not confirmed within 2.5 s; nothing moved" and took < 20.0, (result.reason, took)


def _client_lost(live: Live) -> None:
    """client_lost_s 0.4: a command from a node that is not in the graph ends before its confirmation is due
    (while grounding, when the model's turn outlasts 0.4 s on a loaded machine, or while waiting for it)."""
    status, result, _ = live.command(client_node="/ghost_operator")
    assert result.reason.startswith("client_lost: /ghost_operator has been gone from the ROS graph for 0.4 s "
                                    "(while "), result.reason
    assert result.outcome == "cancelled" and status != GoalStatus.STATUS_SUCCEEDED, (status, result.outcome)


def _second_instance_allowed(live: Live) -> None:
    """instance_check_s 0: a second language_server in the namespace starts (the 2 s default looks and refuses)."""
    second = LanguageServerNode(namespace=NS, parameter_overrides=overrides(
        LANGUAGE_STATIC, db_uri=live.language.settings.db_uri, graph_name=live.language.settings.graph_name,
        base_url=live.server.ollama_host))
    second.destroy_node()


def _close_budget(live: Live) -> None:
    """shutdown_timeout_s 2.5: closing gives the running command 2.5 * 0.7 * 0.8 s (5 s by default: 2.8 s)."""
    budgets: list[float] = []
    real_close = live.language.commands.close

    def close(timeout_s: float = 0.0) -> bool:
        budgets.append(timeout_s)
        return real_close(timeout_s)

    live.language.commands.close = close  # type: ignore[method-assign]
    try:
        live.language.close()
    finally:
        live.language.commands.close = real_close  # type: ignore[method-assign]
    assert budgets == [pytest.approx(2.5 * 0.7 * 0.8)], budgets


def _agent(live: Live) -> Any:
    return live.language._get_agent()


def _additions(live: Live) -> Any:
    """The bounds the agent's corrections check additions against."""
    return _agent(live).settings.additions


def _snapshot_wait(live: Live) -> None:
    """snapshot_wait_s 0.2: a query during a stuck mirror update waits 0.2 s, not the 3 s default, and says so."""
    tool = _agent(live).tool
    live.store.write(mirror_q.BEGIN_UPDATE)
    try:
        started = time.monotonic()
        output = tool.run("MATCH (o:Object) RETURN count(o) AS n")
        assert time.monotonic() - started < 2.0 and "may mix two of them" in output.text, output
    finally:
        live.store.write(mirror_q.BUMP_GENERATION, {"sequence": 0, "now": time.time()})  # the update ends
    assert _eq(live.language._planner.snapshot_wait_s, 0.2)


def _words(live: Live) -> Any:
    """The word vectors of the node's find service and of the model's find_objects tool (made, not called)."""
    return live.language._get_resolver().embedder


#: The embedding model and host the rows set (never called: the rows read the embedder the node made).
EMBEDDING_MODEL = "heracles-param-embed"
EMBEDDING_HOST = "http://127.0.0.1:9"
#: The model name the rows set (the scripted server answers to any).
MODEL = "heracles-param-model"
OBJECTS = "MATCH (o:Object) RETURN o.nodeSymbol AS o ORDER BY o"


def _reads_the_scene(store: GraphStore, live: Live) -> bool:
    """``store`` (a node's) holds the test's scene: the same objects as the test's own store, and some."""
    objects = live.store.query(OBJECTS)
    assert objects, "the test's scene has no objects"
    return _eq(store.query(OBJECTS), objects)


LANGUAGE_STATIC: Table = {
    "db_uri": Row(FROM_FIXTURE, lambda live: _reads_the_scene(live.language.store, live)
                  and _reads_the_scene(live.language.query_store, live)),
    "graph_name": Row(FROM_FIXTURE, lambda live: _reads_the_scene(live.language.store, live)
                      and _reads_the_scene(live.language.query_store, live)),
    "robot_symbol": Row(ROBOT, lambda live: _eq(  # the marker floats above that robot's record (not the origin)
        (_answer_marker(live).pose.position.x, _answer_marker(live).pose.position.y), live.scene.start_position[:2])),
    "llm": Row("ollama", _the_model_was_asked(lambda r, live: r.protocol == "ollama")),
    "model": Row(MODEL, _the_model_was_asked(lambda r, live: r.body.get("model") == MODEL)),
    "base_url": Row(FROM_FIXTURE, _the_model_was_asked(
        lambda r, live: r.headers.get("host") and r.headers["host"] in live.server.ollama_host)),
    "temperature": Row(0.7, _the_model_was_asked(lambda r, live: r.body["options"]["temperature"] == 0.7)),
    "llm_timeout_s": Row(33.0, lambda live: _eq(_agent(live).llm.settings.timeout_s, 33.0)),
    "request_timeout_s": Row(99.0, lambda live: _eq(_agent(live).settings.request_timeout_s, 99.0)),
    "max_tool_calls": Row(3, lambda live: _eq(_agent(live).max_tool_calls, 3)),
    "method": Row("single", lambda live: _eq(_agent(live).settings.method, "single")),
    "max_goal_retries": Row(4, lambda live: _eq(_agent(live).settings.retries["goal"], 4)),
    "query_timeout_s": Row(4.5, lambda live: _eq(_agent(live).tool.timeout_s, 4.5)),
    "addition_max_distance_m": Row(7.5, lambda live: _eq(_additions(live).max_distance_m, 7.5)),
    "addition_max_place_distance_m": Row(2.5, lambda live: _eq(_additions(live).max_place_distance_m, 2.5)),
    "addition_merge_radius_m": Row(0.75, lambda live: _eq(_additions(live).merge_radius_m, 0.75)),
    "addition_max_per_request": Row(3, lambda live: _eq(_additions(live).max_per_request, 3)),
    "snapshot_wait_s": Row(0.2, _snapshot_wait),
    "result_token_budget": Row(300, lambda live: _eq(_agent(live).tool.token_budget, 300)),
    "planner_timeout_s": Row(8.5, lambda live: _eq(live.language._planner.timeout_s, 8.5)),
    "map_frame": Row("world", lambda live: _eq(_answer_marker(live).header.frame_id, "world")),
    "request_workers": Row(1, _busy_with_one_worker),
    "require_confirmation": Row(True, _not_confirmed_in_time),
    "confirm_timeout_s": Row(2.5, _not_confirmed_in_time),
    "session_exchanges": Row(2, lambda live: _eq(_agent(live).sessions.max_exchanges, 2)),
    "max_sessions": Row(9, lambda live: _eq(_agent(live).sessions.max_sessions, 9)),
    "embeddings": Row("ollama", lambda live: _eq(_words(live).model_id, f"ollama/{EMBEDDING_MODEL}")),
    "embedding_model": Row(EMBEDDING_MODEL, lambda live: _eq(_words(live).inner.model, EMBEDDING_MODEL)),
    "embedding_base_url": Row(EMBEDDING_HOST, lambda live: EMBEDDING_HOST in _words(live).inner._where),
    "client_lost_s": Row(0.4, _client_lost),
    "instance_check_s": Row(0.0, _second_instance_allowed),
    "shutdown_timeout_s": Row(2.5, _close_budget),
}


# -- dispatcher rows --------------------------------------------------------------------------------------
def _refused(live: Live, plan: PlanResult, plan_id: str, says: str) -> None:
    result = live.plan(plan, plan_id)
    assert result.status == "rejected" and says in result.reason, (result.status, result.reason)


def _too_many_steps(live: Live) -> None:
    plan = live.scene.near
    _refused(live, replace(plan, actions=[*plan.actions, *plan.actions]), "steps",
             f"the plan has {2 * len(plan.actions)} steps, more than max_plan_steps (3)")


def _too_long(live: Live) -> None:
    _refused(live, live.scene.far, "long", f"more than max_plan_path_m ({live.scene.path_limit_m:g})")


def _off_target(live: Live) -> None:
    """plan_tolerance_m 0.2: a walk target 0.5 m from its place is refused (1 m by default: it would run)."""
    plan = live.scene.near
    walk = plan.actions[0]
    assert walk.name == "goto"
    off = (walk.target[0] + 0.5, walk.target[1], walk.target[2])
    moved = replace(walk, target=off, waypoints=(*walk.waypoints[:-1], off) if walk.waypoints else ())
    _refused(live, replace(plan, actions=[moved, *plan.actions[1:]]), "off", "from where the database has it")


def _plan_of_a_lost_client(live: Live) -> None:
    """client_lost_s 0.4: the plan of a client that is not in the graph is cancelled (the 3 s default: later)."""
    result = live.plan(live.scene.near, "ghost", client_node="/ghost_dispatcher_client")
    assert result.status == "cancelled" and result.reason.startswith(
        "client_lost: /ghost_dispatcher_client, which sent this plan, has been gone from the ROS graph for 0.4 s"
    ), (result.status, result.reason)


def _closing_within(live: Live) -> None:
    """shutdown_timeout_s 1.0: closing ends within it although the driver's shutdown hangs (5 s by default)."""
    driver, hung = live.dispatcher.driver, threading.Event()
    driver.shutdown = lambda: hung.wait(30.0)  # type: ignore[method-assign]  # a lease return that never returns
    started = time.monotonic()
    try:
        live.dispatcher.close()
        took = time.monotonic() - started
    finally:
        hung.set()
    assert 0.5 < took < 1.0 + 1.0, took


def _replanner(live: Live) -> Planner:
    replan = live.dispatcher.dispatcher.replan
    assert replan is not None
    planner: Planner = inspect.getclosurevars(replan).nonlocals["planner"]
    return planner


def _sim(name: str) -> Callable[[Live], Any]:
    def value(live: Live) -> Any:
        driver = live.dispatcher.driver
        assert isinstance(driver, SimSpotDriver)
        return getattr(driver.config, name)
    return value


def _sim_row(name: str, value: Any, expected: Any = None) -> Row:
    return Row(value, lambda live: _eq(_sim(name)(live), value if expected is None else expected))


#: The simulated Hydra's rows: its topic (nothing else listens there) and the one object its world hides.
HYDRA_TOPIC = f"{NS}/param_hydra/dsg"
HIDDEN = "O900"


def _hydra(live: Live) -> Any:
    feed = live.dispatcher.hydra_feed
    assert feed is not None, "no simulated Hydra started"
    return feed


def _hydra_publishes(live: Live) -> None:
    """sim_dsg_topic: a full snapshot arrives on that topic."""
    updates = Collector(live.probe, DsgUpdate, HYDRA_TOPIC, qos(1))
    update = updates.wait(lambda m: m.full_update, 10.0, what=f"a DsgUpdate on {HYDRA_TOPIC}")
    assert update.header.frame_id == "map" and update.sequence_number >= 1, update.header


DISPATCHER_SIM: Table = {
    "db_uri": Row(FROM_FIXTURE, lambda live: _reads_the_scene(live.dispatcher.store, live)),
    "graph_name": Row(FROM_FIXTURE, lambda live: _eq(
        RobotStateStore(live.store, symbol=ROBOT).read() is not None, True)),
    "robot_symbol": Row(ROBOT, lambda live: _eq(RobotStateStore(live.store, symbol=ROBOT).read().place,
                                                live.scene.start)),
    "start_place": Row(FROM_FIXTURE, lambda live: _eq(live.dispatcher.dispatcher.robot.place, live.scene.start)),
    "start_robot_at_launch": Row(True, lambda live: wait_until(lambda: live.dispatcher._started, 10.0,
                                                               "the robot started at launch")),
    "map_frame": Row("odom_map", lambda live: _eq(
        live.stop_state.wait(timeout_s=10.0, what="the latched stop state").header.frame_id, "odom_map")),
    "step_timeout_s": Row(45.0, lambda live: _eq(live.dispatcher.dispatcher.config.step_timeout_s, 45.0)),
    "timeout_per_metre_s": Row(3.5, lambda live: _eq(live.dispatcher.dispatcher.config.timeout_per_metre_s, 3.5)),
    "max_replans": Row(5, lambda live: _eq(live.dispatcher.dispatcher.config.max_replans, 5)),
    "planner_timeout_s": Row(7.0, lambda live: _eq(_replanner(live).timeout_s, 7.0)),
    "snapshot_wait_s": Row(0.25, lambda live: _eq(_replanner(live).snapshot_wait_s, 0.25)),
    "max_plan_steps": Row(3, _too_many_steps),
    "max_plan_path_m": Row(FROM_FIXTURE, _too_long),
    "plan_tolerance_m": Row(0.2, _off_target),
    "plan_max_hop_m": Row(2.5, lambda live: _eq(live.dispatcher.dispatcher.config.limits.max_hop_m, 2.5)),
    "client_lost_s": Row(0.4, _plan_of_a_lost_client),
    "sim_speed_mps": _sim_row("speed_mps", 0.5),
    "sim_pick_s": _sim_row("pick_s", 30.0),
    "sim_place_s": _sim_row("place_s", 4.5),
    "sim_inspect_s": _sim_row("inspect_s", 3.5),
    "sim_time_scale": _sim_row("time_scale", 2.0),
    "sim_tick_s": _sim_row("tick_s", 0.03),
    "sim_fail_steps": _sim_row("fail_steps", [40], frozenset({40})),
    "sim_fail_probability": _sim_row("fail_probability", 1e-12),
    "sim_fail_fraction": _sim_row("fail_fraction", 0.25),
    "sim_seed": _sim_row("seed", 17),
    "sim_world": Row(FROM_FIXTURE, lambda live: _eq(_hydra(live).hydra.hidden, [HIDDEN])),
    "sim_sensor_range_m": Row(2.25, lambda live: _eq(_hydra(live).hydra.sensor_range_m, 2.25)),
    "sim_dsg_topic": Row(HYDRA_TOPIC, _hydra_publishes),
    "sim_hydra_period_s": Row(0.35, lambda live: _eq(_hydra(live).timer.timer_period_ns, 350_000_000)),
    "shutdown_timeout_s": Row(1.0, _closing_within),
}


def _spot(name: str, value: Any, expected: Any = None) -> Row:
    def observe(live: Live) -> None:
        driver = live.dispatcher.driver
        assert driver.name == "spot_ros2", driver.name
        _eq(getattr(driver.config, name), value if expected is None else expected)
    return Row(value, observe)


def _spot_map_to_frame(live: Live) -> None:
    transform = live.dispatcher.driver.config.map_to_frame  # type: ignore[attr-defined]
    assert (transform.x, transform.y, transform.yaw) == (1.0, 2.0, 0.5), transform


DISPATCHER_SPOT: Table = {
    "driver": Row("spot_ros2", lambda live: _eq(live.dispatcher.driver.name, "spot_ros2")),
    "spot_name": Row("spot7", lambda live: _eq(live.dispatcher.driver.namespace, "/spot7")),  # type: ignore[attr-defined]
    "spot_frame": _spot("frame", "vision"),
    "spot_map_frame_source": _spot("map_frame_source", "fixed"),
    "spot_tf_map_frame": _spot("tf_map_frame", "hydra_map"),
    "spot_tf_odom_frame": _spot("tf_odom_frame", "spot7/vision"),
    "spot_map_frame_max_age_s": _spot("map_frame_max_age_s", 4.5),
    "spot_map_to_frame": Row([1.0, 2.0, 0.5], _spot_map_to_frame),
    "spot_arrival_tolerance_m": _spot("arrival_tolerance_m", 0.4),
    "spot_waypoint_tolerance_m": _spot("waypoint_tolerance_m", 0.85),
    "spot_yaw_tolerance_rad": _spot("yaw_tolerance_rad", 0.45),
    "spot_expected_speed_mps": _spot("expected_speed_mps", 0.65),
    "spot_walk_margin_s": _spot("walk_margin_s", 12.5),
    "spot_max_speed_mps": _spot("max_speed_mps", 0.9),
    "spot_service_timeout_s": _spot("service_timeout_s", 6.5),
    "spot_power_on_timeout_s": _spot("power_on_timeout_s", 21.0),
    "spot_accept_timeout_s": _spot("accept_timeout_s", 3.5),
    "spot_pose_timeout_s": _spot("pose_timeout_s", 2.5),
    "spot_arm_timeout_s": _spot("arm_timeout_s", 11.0),
    "spot_pick_timeout_s": _spot("pick_timeout_s", 41.0),
    "spot_inspect_dwell_s": _spot("inspect_dwell_s", 1.75),
    "spot_hand_height_m": _spot("hand_height_m", 0.15),
    "spot_min_reach_m": _spot("min_reach_m", 0.45),
    "spot_max_reach_m": _spot("max_reach_m", 0.95),
    "spot_ray_back_m": _spot("ray_back_m", 0.55),
    "spot_ray_up_m": _spot("ray_up_m", 0.65),
    "spot_release_pause_s": _spot("release_pause_s", 0.85),
    "spot_sit_on_shutdown": _spot("sit_on_shutdown", False),
    "spot_tick_s": _spot("tick_s", 0.07),
}
DISPATCHER_STATIC = (DISPATCHER_SIM, DISPATCHER_SPOT)


@dataclass
class DispatcherOnly:
    """What the spot_ros2 rows look at: the dispatcher alone."""

    dispatcher: DispatcherNode


@pytest.fixture
def live_factory(ros_domain_id: int, falkordb_uri: str, graph_name: str, small_store: GraphStore,
                 tmp_path: Path) -> Iterator:
    stack = ExitStack()
    world = generate_scene("small", 0)  # small_store's scene, and one object the map lacks
    assert hide_objects(world, "fire extinguisher", ["P77"]) == [HIDDEN]
    world.save(str(tmp_path / "world.json"))

    def start() -> Live:
        scene = scene_for(small_store)
        server = ScriptedLLMServer(_model).start()
        stack.callback(server.stop)
        db = {"db_uri": falkordb_uri, "graph_name": graph_name}
        robot = DispatcherNode(namespace=NS, parameter_overrides=overrides(
            DISPATCHER_SIM, **db, start_place=scene.start, max_plan_path_m=scene.path_limit_m,
            sim_world=str(tmp_path / "world.json")))
        stack.callback(robot.destroy_node)
        language = LanguageServerNode(namespace=NS, parameter_overrides=overrides(
            LANGUAGE_STATIC, **db, base_url=server.ollama_host))
        stack.callback(language.destroy_node)
        probe = rclpy.create_node("probe")
        live = Live(
            language, robot, probe, server, scene, small_store,
            Collector(probe, DispatchResult, f"{NS}/dispatch_result", 100),
            Collector(probe, StopState, f"{NS}/stop_state", latched()),
            Collector(probe, MarkerArray, f"{NS}/answer_marker", qos(10, transient_local=True)),
            action_client(probe, ExecutePlan, f"{NS}/execute_plan"),
            action_client(probe, ExecuteCommand, f"{NS}/execute_command"),
        )
        stack.enter_context(spinning(robot, language, probe, num_threads=10, destroy=False))
        stack.callback(probe.destroy_node)
        assert live.plans.wait_for_server(timeout_sec=10.0) and live.commands.wait_for_server(timeout_sec=10.0)
        wait_until(lambda: language.commands.plans.server_is_ready(), 10.0, "the dispatcher's execute_plan")
        wait_until(lambda: robot.count_subscribers("dispatch_result") >= 1, 10.0, "the probe on dispatch_result")
        return live

    with ros_session(ros_domain_id), stack:
        yield start


def test_every_language_server_and_dispatcher_parameter_reaches_its_consumer(live_factory: Any) -> None:
    live = live_factory()
    assert_covers(live.language, LANGUAGE_STATIC)
    assert_covers(live.dispatcher, DISPATCHER_SIM, DISPATCHER_SPOT)
    assert_read_only_refused(live.language, language_server.PARAMETERS, LANGUAGE_STATIC)
    assert_read_only_refused(live.dispatcher, dispatcher.PARAMETERS, {**DISPATCHER_SIM, **DISPATCHER_SPOT})
    reply = live.ask()
    assert reply.error == "", reply.error
    # Closing rows last: each ends its node.
    last = ("shutdown_timeout_s",)
    observe_all({k: v for k, v in DISPATCHER_SIM.items() if k not in last}, live)
    observe_all({k: v for k, v in LANGUAGE_STATIC.items() if k not in last}, live)
    observe_all({k: v for k, v in DISPATCHER_SIM.items() if k in last}, live)
    observe_all({k: v for k, v in LANGUAGE_STATIC.items() if k in last}, live)


def test_every_spot_ros2_driver_parameter_reaches_the_driver(
    ros_domain_id: int, falkordb_uri: str, graph_name: str, small_store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spot_ros2 adapter is built (nothing answers it here) with every spot_* value; the rest is as above.

    bosdyn_msgs.conversions is generated by proto2ros in a robot's workspace: the test suite's by-name converter
    (support.spot_driver) stands in for it, as in the adapter's own tests.
    """
    conversions = types.ModuleType("bosdyn_msgs.conversions")
    conversions.convert = proto_to_ros  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bosdyn_msgs.conversions", conversions)
    values = overrides(DISPATCHER_SPOT, db_uri=falkordb_uri, graph_name=graph_name, shutdown_timeout_s=1.0)
    with ros_session(ros_domain_id):
        node = DispatcherNode(namespace="/spot7ns", parameter_overrides=values)
        try:
            assert_read_only_refused(node, dispatcher.PARAMETERS, DISPATCHER_SPOT)
            observe_all(DISPATCHER_SPOT, DispatcherOnly(node))
        finally:
            node.destroy_node()


def test_every_table_row_is_a_non_default_value() -> None:
    """A row that sets the default could not tell a dropped value from a passed one."""
    for module, tables in ((dsg_mirror, MIRROR_TABLES), (language_server, (LANGUAGE_STATIC,)),
                           (dispatcher, DISPATCHER_STATIC)):
        specs = specs_of(module)
        for table in tables:
            for name, row in table.items():
                assert name in specs, f"a row for {name}, which {module.__name__} does not declare"
                if row.value is not FROM_FIXTURE:
                    assert specs[name].check(row.value) != specs[name].default, name
