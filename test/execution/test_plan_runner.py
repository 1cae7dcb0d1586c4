"""The dispatcher state machine with the simulator and a real database.

Plans are built from the real symbols and positions of the tiny scene mirrored
into FalkorDB (places P0..P5 on a line, O2 in P4). ``line_replanner`` plans the
two goals used here from whatever the database says about the robot, the way
the planner does, so replanning sees the state the dispatcher recorded.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import pytest
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.execution.driver import CancelToken, Pose
from heracles_ros.execution.plan_runner import DispatchConfig, PlanRunner, ProgressEvent
from heracles_ros.execution.remaining import SpeedBasis
from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.execution.sim import SimConfig, SimSpotDriver
from heracles_ros.mirror.additions import Additions
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import DispatchStatus, PlanStatus, StepState
from heracles_ros.plan_types import PlanAction, PlanResult

FAST = 100.0
FETCH_O2 = "(holding O2)"
BRING_O2_TO_P0 = "(object-in-place O2 P0)"


@pytest.fixture
def tiny_store(store):
    Mirror(store).reconcile(tiny_scene())
    return store


class LinePlanner:
    """Plans FETCH_O2 / BRING_O2_TO_P0 on the tiny scene's line of places, from the database."""

    def __init__(self, store, *, unsolvable: bool = False):
        self.states = RobotStateStore(store)
        self.unsolvable = unsolvable
        self.calls: list[tuple[str, str | None]] = []

    def goto(self, a: str, b: str) -> PlanAction:
        i, j = int(a[1:]), int(b[1:])
        step = 1 if j >= i else -1
        symbols = [f"P{k}" for k in range(i, j + step, step)]
        points = [self.states.position_of(s) for s in symbols]
        return PlanAction("goto", (a, b), b, points[-1], tuple(points), tuple(symbols), cost=abs(j - i))

    def obj(self, name: str, o: str, p: str) -> PlanAction:
        target = self.states.position_of(p if name == "place" else o)
        # Names and arguments are words of a plan step's text, as planning/expand.py reads Fast Downward's
        # plan: parsed strings, not the interned literals an 'is' comparison would get away with.
        name, *args = f"({name} {o} {p})".strip("()").split()
        return PlanAction(name, tuple(args), o, target)

    def plan(self, goal: str, start: str | None) -> PlanResult:
        state = self.states.read()
        start = start or (state.place if state else "P0")
        holding = state.holding if state else ""
        if self.unsolvable:
            return PlanResult(PlanStatus.UNSOLVABLE, goal, start, reason="O2 unreachable", unreachable=["O2"])
        actions: list[PlanAction] = []
        here = start
        if holding != "O2":
            actions += [self.goto(here, "P4"), self.obj("pick", "O2", "P4")]
            here = "P4"
        if goal == BRING_O2_TO_P0:
            actions += [self.goto(here, "P0"), self.obj("place", "O2", "P0")]
        return PlanResult(PlanStatus.SOLVED, goal, start, actions)

    def __call__(self, goal: str, start: str | None) -> PlanResult:
        self.calls.append((goal, start))
        return self.plan(goal, start)


@dataclass
class Rig:
    dispatcher: PlanRunner
    driver: SimSpotDriver
    #: Step events; the ``walking`` ones, which come by the clock while the robot walks, are in ``walks``.
    events: list[ProgressEvent]
    states: RobotStateStore
    walks: list[ProgressEvent]


def make_dispatcher(store, sim: SimConfig, *, replan=None, config: DispatchConfig | None = None) -> Rig:
    """A dispatcher on a started simulator, the robot recorded at P0."""
    start = RobotState((0.0, 0.0, 0.0), place="P0")
    driver = SimSpotDriver(sim, start=Pose(*start.position))
    driver.start()
    events: list[ProgressEvent] = []
    walks: list[ProgressEvent] = []

    def record(event: ProgressEvent) -> None:
        (walks if event.state is StepState.WALKING else events).append(event)

    states = RobotStateStore(store)
    states.write(start)
    dispatcher = PlanRunner(
        driver, state_store=states, replan=replan, config=config, on_progress=record, initial=start
    )
    return Rig(dispatcher, driver, events, states, walks)


def trace(events: list[ProgressEvent]) -> list[tuple[str, int, str]]:
    return [(e.state.value, e.step_index, e.target_symbol) for e in events]


def test_a_plan_runs_in_order_and_the_database_records_the_result(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    outcome = rig.dispatcher.run(planner.plan(BRING_O2_TO_P0, "P0"), plan_id="p1")

    assert outcome.status is DispatchStatus.SUCCEEDED, outcome.reason
    assert outcome.steps_completed == 4 and outcome.replans == 0
    assert trace(rig.events) == [
        ("started", 0, "P4"), ("succeeded", 0, "P4"),
        ("started", 1, "O2"), ("succeeded", 1, "O2"),
        ("started", 2, "P0"), ("succeeded", 2, "P0"),
        ("started", 3, "O2"), ("succeeded", 3, "O2"),
    ]  # fmt: skip
    assert all(e.plan_id == "p1" and e.step_count == 4 for e in rig.events)
    assert [e.message for e in rig.events if e.state is StepState.STARTED] == [
        "walking to P4 via 5 places", "picking up O2", "walking to P0 via 5 places", "placing O2 at P0"
    ]  # fmt: skip
    assert rig.states.read() == RobotState((0.0, 0.0, 0.0), place="P0", holding="")
    placed = tiny_store.query("MATCH (p)-[:CONTAINS]->(:Object {nodeSymbol: 'O2'}) RETURN p.nodeSymbol AS p")
    assert placed == [{"p": "P0"}]


def test_every_event_carries_the_walking_the_plan_has_left(tiny_store):
    """P0 -> P4 -> P0 on the line of places 1 m apart: 8 m, then 4 m after the first walk, then none."""
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    outcome = rig.dispatcher.run(LinePlanner(tiny_store).plan(BRING_O2_TO_P0, "P0"), plan_id="p1")

    assert outcome.success, outcome.reason
    assert [e.remaining.distance_m for e in rig.events] == pytest.approx([8, 4, 4, 4, 4, 0, 0, 0])
    # The sim walks 1 m per simulated second, 100 simulated seconds per second: 100 m/s.
    for event in rig.events:
        assert event.remaining.time_s == pytest.approx(event.remaining.distance_m / 100, rel=0.5, abs=1e-9)


def test_walking_events_follow_the_robot_with_the_distance_and_time_left(tiny_store):
    """A 4 m walk at 2 m/s, 4 times faster than real time (8 m/s): half a second, reported every 0.1 s."""
    rig = make_dispatcher(tiny_store, SimConfig(speed_mps=2.0, time_scale=4.0),
                          config=DispatchConfig(progress_period_s=0.1))
    outcome = rig.dispatcher.run(LinePlanner(tiny_store).plan(FETCH_O2, "P0"), plan_id="p1")

    assert outcome.success, outcome.reason
    assert len(rig.walks) >= 2
    assert all((e.step_index, e.target_symbol, e.message) == (0, "P4", "walking to P4 via 5 places")
               for e in rig.walks)
    left = [e.remaining.distance_m for e in rig.walks]
    assert left == sorted(left, reverse=True) and 0 <= left[-1] < left[0] <= 4
    for event in rig.walks:
        assert event.remaining.distance_m == pytest.approx(4 - event.position[0], abs=1e-9)  # P4 is at x = 4
        assert event.remaining.time_s == pytest.approx(event.remaining.distance_m / 8, rel=0.5, abs=0.05)
    assert {e.remaining.basis for e in rig.walks} <= {SpeedBasis.MEASURED, SpeedBasis.NOMINAL}


def test_holding_is_recorded_after_a_pick(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    outcome = rig.dispatcher.run(planner.plan(FETCH_O2, "P0"))
    assert outcome.success
    assert outcome.robot == RobotState((4.0, 0.0, 0.0), place="P4", holding="O2")
    assert rig.states.read() == outcome.robot
    held = tiny_store.query("MATCH (:Robot)-[:HOLDING]->(o) RETURN o.nodeSymbol AS o")
    assert held == [{"o": "O2"}] and rig.driver.holding == "O2"


def test_a_walk_straight_to_its_target_and_a_place_naming_no_place(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    p1 = planner.states.position_of("P1")
    one_edge = PlanAction("goto", ("P0", "P1"), "P1", p1, (p1,), ("P1",))  # no waypoint for where it starts
    put_down = PlanAction("place", ("O2",), "O2", p1)  # the robot's place is meant
    steps = [one_edge, planner.goto("P1", "P4"), planner.obj("pick", "O2", "P4"), planner.goto("P4", "P1"), put_down]
    outcome = rig.dispatcher.run(PlanResult(PlanStatus.SOLVED, BRING_O2_TO_P0, "P0", steps))

    assert outcome.success, outcome.reason
    assert [e.message for e in rig.events if e.state is StepState.STARTED] == [
        "walking to P1", "walking to P4 via 4 places", "picking up O2", "walking to P1 via 4 places", "placing O2"
    ]  # fmt: skip
    placed = tiny_store.query("MATCH (p)-[:CONTAINS]->(:Object {nodeSymbol: 'O2'}) RETURN p.nodeSymbol AS p")
    assert placed == [{"p": "P1"}]
    assert rig.states.read() == RobotState((1.0, 0.0, 0.0), place="P1", holding="")


def test_without_a_listener_no_event_is_sent_anywhere(tiny_store, caplog):
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    rig.dispatcher.on_progress = None
    with caplog.at_level(logging.WARNING, logger="heracles_ros.execution.plan_runner"):
        outcome = rig.dispatcher.run(LinePlanner(tiny_store).plan(FETCH_O2, "P0"))
    assert outcome.success and rig.events == []
    assert caplog.records == []  # not one "progress listener failed"


def test_a_blocked_walk_is_replanned_from_where_the_robot_got_to(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(
        tiny_store, SimConfig(time_scale=FAST, fail_steps=frozenset({0}), fail_fraction=0.6), replan=planner
    )
    outcome = rig.dispatcher.run(planner.plan(FETCH_O2, "P0"))

    assert outcome.success, outcome.reason
    assert outcome.replans == 1 and planner.calls == [(FETCH_O2, "P2")]  # 60% of 4 m: past P2
    states_seen = [e.state for e in rig.events]
    assert states_seen == [
        StepState.STARTED, StepState.FAILED, StepState.REPLANNING,
        StepState.STARTED, StepState.SUCCEEDED, StepState.STARTED, StepState.SUCCEEDED,
    ]  # fmt: skip
    failed = rig.events[1]
    assert "blocked" in failed.message and failed.replans == 0
    assert rig.events[3].replans == 1 and rig.events[3].plan.start_symbol == "P2"
    assert rig.states.read() == RobotState((4.0, 0.0, 0.0), place="P4", holding="O2")


def test_a_failed_pick_replans_with_the_recorded_state(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(
        tiny_store, SimConfig(time_scale=FAST, fail_steps=frozenset({1})), replan=planner
    )
    outcome = rig.dispatcher.run(planner.plan(BRING_O2_TO_P0, "P0"))
    assert outcome.success, outcome.reason
    assert planner.calls == [(BRING_O2_TO_P0, "P4")]
    assert outcome.robot == RobotState((0.0, 0.0, 0.0), place="P0", holding="")
    assert outcome.steps_completed == 1 + 4  # the first walk, then the whole new plan


def test_gives_up_after_the_allowed_replans_with_a_clear_reason(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(
        tiny_store, SimConfig(time_scale=FAST, fail_probability=1.0), replan=planner,
        config=DispatchConfig(max_replans=2),
    )
    outcome = rig.dispatcher.run(planner.plan(FETCH_O2, "P0"))
    assert outcome.status is DispatchStatus.FAILED
    assert outcome.replans == 2 and len(planner.calls) == 2
    assert "gave up after 2 replan(s)" in outcome.reason
    assert "step 0 (goto P4) failed" in outcome.reason
    assert [e.state for e in rig.events].count(StepState.REPLANNING) == 2


def test_an_unsolvable_replan_ends_the_plan_naming_why(tiny_store):
    planner = LinePlanner(tiny_store, unsolvable=True)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST, fail_steps=frozenset({0})), replan=planner)
    outcome = rig.dispatcher.run(LinePlanner(tiny_store).plan(FETCH_O2, "P0"))
    assert outcome.status is DispatchStatus.FAILED
    assert "replan 1 is unsolvable: O2 unreachable" in outcome.reason


def test_without_a_replanner_a_failure_ends_the_plan(tiny_store):
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST, fail_steps=frozenset({1})))
    outcome = rig.dispatcher.run(LinePlanner(tiny_store).plan(FETCH_O2, "P0"))
    assert outcome.status is DispatchStatus.FAILED
    assert outcome.steps_completed == 1 and "pick O2" in outcome.reason


def test_a_step_timeout_is_a_failure_named_as_such(tiny_store):
    # The pick (120 s) can never finish within its 5 s limit. The walk before it (4 m, 4 s) gets 4000 s more for
    # its metres: at 100x a 5 + 2 s/m limit was only 90 ms of wall time of slack, which a loaded machine stalled
    # through, timing out the walk instead of the pick.
    config = DispatchConfig(step_timeout_s=5.0, timeout_per_metre_s=1000.0, max_replans=0)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST, pick_s=120.0), config=config)
    outcome = rig.dispatcher.run(LinePlanner(tiny_store).plan(FETCH_O2, "P0"))
    assert outcome.status is DispatchStatus.FAILED
    assert outcome.reason == "step 1 (pick O2) timeout: step exceeded its 5.0 s limit"
    assert outcome.steps_completed == 1
    assert trace(rig.events)[-1] == ("failed", 1, "O2")
    assert rig.states.read() == RobotState((4.0, 0.0, 0.0), place="P4", holding="")


def test_cancel_stops_the_robot_and_records_where_it_stopped(tiny_store):
    plan = LinePlanner(tiny_store).plan(FETCH_O2, "P0")
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=1.0, speed_mps=1.0))
    cancel = CancelToken()

    def press_stop_once_walking() -> None:  # the operator sees the robot go, then stops it (not a wall-clock guess)
        deadline = time.monotonic() + 30.0
        while rig.driver.pose().x <= 0.2 and time.monotonic() < deadline:
            time.sleep(0.01)
        cancel.cancel("operator pressed stop")

    operator = threading.Thread(target=press_stop_once_walking)
    operator.start()
    outcome = rig.dispatcher.run(plan, cancel=cancel)
    operator.join(5.0)
    assert outcome.status is DispatchStatus.CANCELLED
    assert outcome.reason == "operator pressed stop"
    assert rig.events[-1].state is StepState.CANCELLED and rig.events[-1].step_index == 0
    x = rig.driver.pose().x
    assert 0.2 < x < 1.5  # stopped where it was, not walked on to P4
    recorded = rig.states.read()
    assert recorded is not None and recorded.position[0] == pytest.approx(x)


def test_a_cancel_during_a_replan_ends_the_dispatch_within_a_second(tiny_store):
    """The planner cannot be interrupted: a cancel while it runs must not wait for it."""
    planner = LinePlanner(tiny_store)
    replanning, release, replanned = threading.Event(), threading.Event(), threading.Event()

    def held_replan(goal: str, start: str | None) -> PlanResult:
        replanning.set()
        release.wait(30.0)  # a planner still working long after the cancel
        try:
            return planner(goal, start)
        finally:
            replanned.set()

    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST, fail_steps=frozenset({0})), replan=held_replan)
    cancel = CancelToken()
    outcomes: list = []
    worker = threading.Thread(target=lambda: outcomes.append(rig.dispatcher.run(planner.plan(FETCH_O2, "P0"),
                                                                                cancel=cancel)))  # fmt: skip
    worker.start()
    try:
        assert replanning.wait(10.0), "the replan never started"
        cancelled_at = time.monotonic()
        cancel.cancel("operator pressed stop")
        worker.join(5.0)
        assert outcomes, "the dispatch did not end while the replan was still running"
        assert time.monotonic() - cancelled_at < 1.0
    finally:
        release.set()
        worker.join(10.0)
        # The abandoned planner still reads the store: let it finish before the fixture closes the store.
        assert replanned.wait(10.0), "the abandoned replan never returned"
    (outcome,) = outcomes
    assert (outcome.status, outcome.reason, outcome.replans) == (DispatchStatus.CANCELLED, "operator pressed stop", 1)
    assert rig.driver.steps_executed == 1  # nothing ran after the failed walk


def test_malformed_plans_are_rejected_before_the_robot_moves(tiny_store):
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    unsolved = PlanResult(PlanStatus.UNSOLVABLE, FETCH_O2, reason="O2 unreachable")
    outcome = rig.dispatcher.run(unsolved)
    assert outcome.status is DispatchStatus.REJECTED and "unsolvable" in outcome.reason
    bad = PlanResult(
        PlanStatus.SOLVED,
        FETCH_O2,
        "P0",
        [
            PlanAction("fly", ("P0", "P4"), "P4", (4.0, 0.0, 0.0)),
            PlanAction("goto", ("P0", "O1"), "O1", (1.0, 0.0, 0.0)),
            PlanAction("goto", ("P0", "P1"), "P1", (1.0, 0.0, 0.0), ((0.0, 0.0, 0.0),), ("P0", "P1")),
            PlanAction("pick", ("bag", "P4"), "bag", (4.0, 1.0, 0.5)),  # the place is no object to pick
        ],
    )
    outcome = rig.dispatcher.run(bad)
    assert outcome.status is DispatchStatus.REJECTED
    assert "step 0 (fly P4): unknown action 'fly'" in outcome.reason
    assert "goto target 'O1' is not a place symbol" in outcome.reason
    assert "2 waypoint symbols for 1 waypoints" in outcome.reason
    assert "step 3 (pick bag): names no object symbol" in outcome.reason
    assert rig.events == [] and rig.driver.steps_executed == 0


def test_a_broken_driver_ends_the_plan_without_replanning(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST), replan=planner)
    rig.driver.shutdown()  # a driver that cannot work at all: no replan can help
    outcome = rig.dispatcher.run(planner.plan(FETCH_O2, "P0"))
    assert outcome.status is DispatchStatus.FAILED
    assert "driver error: sim driver used before start()" in outcome.reason
    assert planner.calls == [] and outcome.replans == 0
    assert rig.states.read() == RobotState((0.0, 0.0, 0.0), place="P0", holding="")


@pytest.mark.parametrize(
    ("real", "recorded_place", "place"),
    [((2.2, 0.1), "P2", "P2"), ((4.0, 0.0), "P2", ""), ((4.0, 0.0), "", "")],
)
def test_the_robot_is_recorded_where_its_driver_says_it_really_is(tiny_store, real, recorded_place, place):
    states = RobotStateStore(tiny_store)
    recorded = RobotState((0.0, 0.0, 0.0), place=recorded_place, holding="O1")
    states.write(recorded)
    driver = SimSpotDriver(SimConfig(), start=Pose(real[0], real[1]))
    dispatcher = PlanRunner(driver, state_store=states, initial=recorded)
    dispatcher.adopt_real_pose(1.0)
    # The recorded place stays only if the robot really stands at it; what it holds is kept.
    expected = RobotState((real[0], real[1], 0.0), place=place, holding="O1")
    assert dispatcher.robot == expected
    assert states.read() == expected


def test_a_plan_that_jumps_off_the_place_graph_is_refused_before_the_robot_moves(tiny_store):
    """Issue 39, N5: every waypoint where the database has its place, but P1 to P5 is no edge (a 4 m straight line)."""
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    jump = planner.goto("P0", "P1")
    jump = PlanAction("goto", ("P0", "P5"), "P5", planner.states.position_of("P5"),
                      (*jump.waypoints, planner.states.position_of("P5")), (*jump.waypoint_symbols, "P5"))  # fmt: skip
    outcome = rig.dispatcher.run(PlanResult(PlanStatus.SOLVED, "(visited-place P5)", "P0", [jump]))
    assert outcome.status is DispatchStatus.REJECTED
    assert "step 0 (goto P5): P1 to P5 is not an edge of the place graph" in outcome.reason
    assert rig.events == [] and rig.driver.steps_executed == 0 and rig.driver.pose().x == 0.0
    assert outcome.robot == RobotState((0.0, 0.0, 0.0), place="P0")


def test_an_object_hydra_lost_mid_plan_fails_its_pick_with_a_reason(tiny_store):
    """The plan was checked when it came; while the robot walks, Hydra's next snapshot no longer has O2."""
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    without_o2 = tiny_scene()
    without_o2.remove_node(node_id("O2"))

    def lose_o2(event: ProgressEvent) -> None:
        # Walking updates apart, as make_dispatcher keeps them (a slow reconcile here lets the walk report one).
        (rig.walks if event.state is StepState.WALKING else rig.events).append(event)
        if (event.state, event.step_index) == (StepState.STARTED, 0):
            Mirror(tiny_store).reconcile(without_o2)

    rig.dispatcher.on_progress = lose_o2
    outcome = rig.dispatcher.run(planner.plan(FETCH_O2, "P0"))
    assert outcome.status is DispatchStatus.FAILED and outcome.steps_completed == 1
    assert outcome.reason == (
        "step 1 (pick O2): target 'O2' is not in the database (the world changed since the plan was made)"
    )
    assert trace(rig.events) == [("started", 0, "P4"), ("succeeded", 0, "P4"), ("failed", 1, "O2")]
    assert rig.driver.steps_executed == 1 and rig.driver.holding == ""  # the pick never reached the robot
    assert rig.states.read() == RobotState((4.0, 0.0, 0.0), place="P4", holding="")


def test_a_pick_of_an_addition_reverted_mid_plan_fails_and_the_replan_is_refused(tiny_store):
    """Issue 39: a pick "succeeded" on an operator's addition an operator reverted while the robot walked to it."""
    additions = Additions(tiny_store)
    problems, checked, _ = additions.check([{"add": "fire extinguisher", "at": [2.0, 0.4, 0.3]}])
    assert problems == []
    [added] = additions.add(checked, author="ana", request="there is an extinguisher by P2")
    planner = LinePlanner(tiny_store)
    fetch = [planner.goto("P0", "P2"), PlanAction("pick", (added.symbol, "P2"), added.symbol, added.at)]
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST), replan=lambda goal, start: PlanResult(
        PlanStatus.SOLVED, goal, start or "", [PlanAction("pick", (added.symbol, "P2"), added.symbol, added.at)]))

    def revert_it(event: ProgressEvent) -> None:
        rig.events.append(event)
        if (event.state, event.step_index, event.replans) == (StepState.STARTED, 0, 0):
            additions.revert(added.symbol, author="ben")

    rig.dispatcher.on_progress = revert_it
    outcome = rig.dispatcher.run(PlanResult(PlanStatus.SOLVED, f"(holding {added.symbol})", "P0", fetch))
    assert outcome.status is DispatchStatus.FAILED
    assert f"step 1 (pick {added.symbol}): target '{added.symbol}' is not in the database" in outcome.reason
    assert f"replan 1 cannot be executed: step 0 (pick {added.symbol})" in outcome.reason  # the same stale pick
    assert rig.driver.holding == "" and outcome.robot.holding == ""
    assert tiny_store.query("MATCH (:Robot)-[:HOLDING]->(o) RETURN o.nodeSymbol AS o") == []


def test_an_object_hydra_loses_while_the_robot_carries_it_is_still_put_down(tiny_store):
    planner = LinePlanner(tiny_store)
    rig = make_dispatcher(tiny_store, SimConfig(time_scale=FAST))
    without_o2 = tiny_scene()
    without_o2.remove_node(node_id("O2"))

    def lose_o2(event: ProgressEvent) -> None:
        rig.events.append(event)
        if (event.state, event.step_index) == (StepState.STARTED, 2):  # walking back with it
            Mirror(tiny_store).reconcile(without_o2)

    rig.dispatcher.on_progress = lose_o2
    outcome = rig.dispatcher.run(planner.plan(BRING_O2_TO_P0, "P0"))
    assert outcome.success, outcome.reason
    assert rig.driver.holding == "" and outcome.robot == RobotState((0.0, 0.0, 0.0), place="P0", holding="")
