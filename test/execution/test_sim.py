"""The kinematic simulator: motion along waypoints, timing, failures, cancel."""
from __future__ import annotations

import math
import threading
import time

import pytest

from heracles_ros.errors import ConfigError, DriverError
from heracles_ros.execution.driver import COMMAND_HORIZON_S, CancelToken, Pose
from heracles_ros.execution.sim import SimConfig, SimSpotDriver
from heracles_ros.outcomes import DriverOutcome
from heracles_ros.plan_types import PlanAction

FAST = 200.0  # simulated seconds per wall-clock second


def goto(points, symbols) -> PlanAction:
    return PlanAction(
        name="goto",
        args=(symbols[0], symbols[-1]),
        target_symbol=symbols[-1],
        target=points[-1],
        waypoints=tuple(points),
        waypoint_symbols=tuple(symbols),
    )


def act(name: str, obj: str, target, place: str = "P1") -> PlanAction:
    return PlanAction(name=name, args=(obj, place), target_symbol=obj, target=target)


def started(config: SimConfig, **kwargs) -> SimSpotDriver:
    driver = SimSpotDriver(config, **kwargs)
    driver.start()
    return driver


def test_walks_the_waypoints_and_reports_poses_along_them():
    # 8 simulated seconds in 1 s: several ticks however late the machine runs them.
    driver = started(SimConfig(speed_mps=2.0, time_scale=8.0))
    poses: list[Pose] = []
    path = [(0.0, 0.0, 0.0), (10.0, 0.0, 0.0), (10.0, 6.0, 0.5)]
    out = driver.execute(goto(path, ["P1", "P2", "P3"]), cancel=CancelToken(), timeout_s=100, feedback=poses.append)
    assert out.outcome is DriverOutcome.SUCCEEDED
    assert out.reached_symbol == "P3"
    assert out.pose.position == pytest.approx((10.0, 6.0, 0.5))
    assert out.pose.yaw == pytest.approx(math.pi / 2)
    assert len(poses) >= 2
    # Every reported pose lies on the path: on the first leg (y=0) or the second (x=10).
    for p in poses:
        assert abs(p.y) < 1e-9 or abs(p.x - 10.0) < 1e-9
    xs = [p.x for p in poses]
    assert xs == sorted(xs)  # never walks backwards


def test_walk_takes_length_over_speed_in_simulated_time():
    driver = started(SimConfig(speed_mps=1.0, time_scale=20.0, tick_s=0.01))
    t0 = time.monotonic()
    out = driver.execute(
        goto([(0, 0, 0), (8.0, 0, 0)], ["P1", "P2"]), cancel=CancelToken(), timeout_s=100
    )
    wall = time.monotonic() - t0
    assert out.ok
    # 8 m at 1 m/s = 8 simulated s = 0.4 wall s at 20x.
    assert 0.35 <= wall < 1.5


def test_manipulation_changes_what_the_robot_holds():
    driver = started(SimConfig(time_scale=FAST, pick_s=2.0, place_s=2.0))
    cancel = CancelToken()
    assert driver.execute(act("place", "O1", (1, 0, 0)), cancel=cancel, timeout_s=60).outcome is DriverOutcome.FAILED
    out = driver.execute(act("pick", "O1", (1.0, 1.0, 0.3)), cancel=cancel, timeout_s=60)
    assert out.ok and driver.holding == "O1"
    assert out.pose.yaw == pytest.approx(math.pi / 4)  # turned to face the object
    refused = driver.execute(act("pick", "O2", (1, 0, 0)), cancel=cancel, timeout_s=60)
    assert refused.outcome is DriverOutcome.FAILED and "already holding O1" in refused.reason
    wrong = driver.execute(act("place", "O2", (1, 0, 0)), cancel=cancel, timeout_s=60)
    assert wrong.outcome is DriverOutcome.FAILED and "holds O1" in wrong.reason
    assert driver.execute(act("place", "O1", (1, 0, 0)), cancel=cancel, timeout_s=60).ok
    assert driver.holding == ""


def test_injected_failure_by_step_stops_part_way_and_names_the_last_place():
    driver = started(SimConfig(time_scale=FAST, fail_steps=frozenset({1}), fail_fraction=0.5))
    path = [(0.0, 0, 0), (4.0, 0, 0), (8.0, 0, 0), (12.0, 0, 0)]
    first = driver.execute(goto(path[:2], ["P1", "P2"]), cancel=CancelToken(), timeout_s=100)
    assert first.ok
    second = driver.execute(goto(path[1:], ["P2", "P3", "P4"]), cancel=CancelToken(), timeout_s=100)
    assert second.outcome is DriverOutcome.FAILED
    assert "injected failure" in second.reason
    assert second.pose.x == pytest.approx(8.0)  # half of the 8 m path
    assert second.reached_symbol == "P3"
    third = driver.execute(goto([(8.0, 0, 0), (12.0, 0, 0)], ["P3", "P4"]), cancel=CancelToken(), timeout_s=100)
    assert third.ok  # a retried step is a new count


def test_probability_failures_are_reproducible_with_a_seed():
    def pattern(seed: int) -> list[bool]:
        driver = started(SimConfig(time_scale=FAST, inspect_s=0.0, fail_probability=0.5, seed=seed))
        return [
            driver.execute(act("inspect", "O1", (1, 0, 0)), cancel=CancelToken(), timeout_s=10).ok
            for _ in range(20)
        ]

    assert pattern(7) == pattern(7)
    assert 0 < sum(pattern(7)) < 20
    assert pattern(7) != pattern(8)


def test_cancel_stops_a_walk_promptly():
    driver = started(SimConfig(speed_mps=1.0, time_scale=1.0))
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel, args=("operator stop",)).start()
    t0 = time.monotonic()
    out = driver.execute(goto([(0, 0, 0), (100.0, 0, 0)], ["P1", "P2"]), cancel=cancel, timeout_s=1000)
    assert out.outcome is DriverOutcome.CANCELLED
    assert out.reason == "operator stop"
    assert time.monotonic() - t0 < 0.6
    assert 0.1 < out.pose.x < 1.0  # stopped where it was, about 0.3 m along
    assert driver.pose() == out.pose


def test_stop_from_another_thread_ends_the_running_step_and_is_harmless_when_idle():
    driver = started(SimConfig(speed_mps=1.0, time_scale=1.0))
    driver.stop()  # nothing runs: nothing to do, no error
    threading.Timer(0.3, driver.stop, kwargs={"hard": True}).start()
    t0 = time.monotonic()
    out = driver.execute(goto([(0, 0, 0), (100.0, 0, 0)], ["P1", "P2"]), cancel=CancelToken(), timeout_s=1000)
    assert (out.outcome, out.reason) == (DriverOutcome.CANCELLED, "stopped (hard)")
    assert time.monotonic() - t0 < 0.6 and 0.1 < out.pose.x < 1.0
    driver.stop()
    driver.stop(hard=True)  # twice, after the step: still harmless
    after = driver.execute(goto([out.pose.position, (out.pose.x + 0.5, 0, 0)], ["", "P3"]), cancel=CancelToken(),
                           timeout_s=100)  # fmt: skip
    assert after.ok  # a stop ends the step it caught, not the next one


def test_a_step_that_ended_before_its_limit_succeeds_even_when_the_check_comes_late():
    """A loaded machine wakes the simulator late (forced here: one tick is twice the limit)."""
    driver = started(SimConfig(speed_mps=1.0, time_scale=1.0, tick_s=0.2, inspect_s=0.05))
    assert driver.execute(act("inspect", "O1", (1, 0, 0)), cancel=CancelToken(), timeout_s=0.1).ok
    short = driver.execute(goto([(0, 0, 0), (0.05, 0, 0)], ["P1", "P2"]), cancel=CancelToken(), timeout_s=0.1)
    assert short.ok and short.pose.x == pytest.approx(0.05)
    long = driver.execute(goto([(0.05, 0, 0), (5.0, 0, 0)], ["P2", "P3"]), cancel=CancelToken(), timeout_s=0.1)
    assert long.outcome is DriverOutcome.TIMEOUT
    assert long.pose.x == pytest.approx(0.15)  # where it was at the limit, not where the late tick would put it


def test_timeout_is_in_simulated_seconds():
    driver = started(SimConfig(time_scale=FAST, pick_s=30.0))
    out = driver.execute(act("pick", "O1", (1, 0, 0)), cancel=CancelToken(), timeout_s=5.0)
    assert out.outcome is DriverOutcome.TIMEOUT
    assert "5.0 s" in out.reason
    assert driver.holding == ""


def test_unknown_action_fails_with_its_name_and_use_before_start_is_an_error():
    driver = started(SimConfig(time_scale=FAST))
    out = driver.execute(act("dance", "O1", (0, 0, 0)), cancel=CancelToken(), timeout_s=5)
    assert out.outcome is DriverOutcome.FAILED and "'dance'" in out.reason
    with pytest.raises(DriverError, match="before start"):
        SimSpotDriver(SimConfig()).execute(act("pick", "O1", (0, 0, 0)), cancel=CancelToken(), timeout_s=5)


@pytest.mark.parametrize(
    ("field", "value"),
    [("speed_mps", 0.0), ("time_scale", -1.0), ("fail_probability", 1.5), ("fail_fraction", -0.1), ("pick_s", -1.0)],
)
def test_bad_configuration_names_the_parameter(field, value):
    with pytest.raises(ConfigError, match=field):
        SimConfig(**{field: value})


def test_the_nominal_walking_speed_is_in_wall_clock_time():
    """2 simulated metres per simulated second, 4 simulated seconds per second: 8 m per second."""
    assert SimSpotDriver(SimConfig(speed_mps=2.0, time_scale=4.0)).nominal_speed_mps() == 8.0


def test_a_walk_loop_held_up_finds_the_robot_at_most_one_horizon_further_on():
    """The controller's loop stalls 2.5 s (a frozen process, a callback that hangs): the robot walked on for
    its last command's second only, not for the whole stall as the clock alone would have it."""
    driver = started(SimConfig(speed_mps=2.0, time_scale=1.0, tick_s=0.02))
    poses: list[Pose] = []
    stalled: list[int] = []

    def feedback(pose: Pose) -> None:
        poses.append(pose)
        if pose.x > 1.0 and not stalled:
            stalled.append(len(poses))
            time.sleep(2.5)

    out = driver.execute(goto([(0.0, 0.0, 0.0), (6.0, 0.0, 0.0)], ["P1", "P2"]), cancel=CancelToken(),
                         timeout_s=20.0, feedback=feedback)  # fmt: skip
    assert out.ok, out.reason
    before, after = poses[stalled[0] - 1], poses[stalled[0]]
    assert 1.0 < after.x - before.x <= 2.0 * COMMAND_HORIZON_S + 0.05  # one second at 2 m/s (and a tick)
