"""The robot a dispatcher runs, put together at start: its record in the database, its driver, and the plan
runner over both with the replanner; with ``sim_world``, the simulated Hydra the simulated robot feeds.

What the robot holds and where it starts come from its record, restored together, or are reset together (at
``start_place``, or when there is no record or it names what the scene lacks), never from parameters; the log
says which (:func:`~heracles_ros.execution.robot_state.starting_state`). The driver starts from that state.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConfigError, ExecutionError
from heracles_ros.execution.driver import Pose, RobotDriver
from heracles_ros.execution.driver_factory import SimHydraSettings, make_driver, sim_hydra_settings
from heracles_ros.execution.plan_runner import PlanRunner, ProgressEvent, Replanner
from heracles_ros.execution.robot_state import RobotState, RobotStateStore, StartingState, starting_state
from heracles_ros.execution.sim import SimSpotDriver
from heracles_ros.execution.sim_hydra import SimHydra
from heracles_ros.graphdb.scene_presence import misspelt_graph_suspected, wait_for_graph
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.nodes.dispatcher_settings import DispatcherSettings
from heracles_ros.nodes.sim_hydra_feed import open_sim_hydra
from heracles_ros.ros.node_base import HeraclesNode

#: How long a starting dispatcher waits for its graph when the database holds other graphs but not its own
#: (a mirror started beside it creates it); past it a misspelt graph_name stops the dispatcher instead of
#: creating a stray graph.
GRAPH_WAIT_S = 30.0


@dataclass(frozen=True)
class DispatcherRobot:
    """The robot's record, its driver, the plan runner over both, and how the robot started."""

    states: RobotStateStore
    driver: RobotDriver
    runner: PlanRunner
    start: StartingState
    #: The simulated Hydra the sim driver feeds, with its settings (None: no sim_world).
    hydra: tuple[SimHydra, SimHydraSettings] | None = None


def open_robot(node: HeraclesNode, store: GraphStore, settings: DispatcherSettings,
               drivers: dict[str, dict[str, Any]], *,
               on_progress: Callable[[ProgressEvent], None]) -> DispatcherRobot:
    """The robot's starting state recorded, its driver made (of ``settings.driver``, with its kind's ``drivers``
    settings) and the plan runner over both; ConfigError naming ``start_place`` when the scene lacks it."""
    # The robot's state is written next, which would create a misspelt graph beside the real one:
    # wait for the mirror's (a fresh database, holding no graph yet, is the mirror's to fill).
    if misspelt_graph_suspected(store):
        node.get_logger().info(f"waiting up to {GRAPH_WAIT_S:g} s for {store.description}: the mirror "
                               "creates it (graph_name must match the mirror's)")
        wait_for_graph(store, GRAPH_WAIT_S, reader=f"no graph after {GRAPH_WAIT_S:g} s",
                       stopping=lambda: not node.context.ok())
    states = RobotStateStore(store, symbol=settings.robot_symbol)
    try:
        start = starting_state(states, settings.start_place)
    except ExecutionError as exc:
        raise ConfigError(f"parameter start_place: {exc}") from exc
    initial = start.state
    driver = _make_driver(node, settings.driver, drivers[settings.driver], initial)
    hydra = _sim_hydra(node, store, driver, drivers["sim"]) if settings.driver == "sim" else None
    states.write(initial)
    runner = PlanRunner(driver, state_store=states, replan=_replanner(store, settings), config=settings.dispatch,
                        on_progress=on_progress, initial=initial)
    return DispatcherRobot(states, driver, runner, start, hydra)


def _sim_hydra(node: HeraclesNode, store: GraphStore, driver: RobotDriver,
               settings: dict[str, Any]) -> tuple[SimHydra, SimHydraSettings] | None:
    """With ``sim_world``: the simulated Hydra, told every move of the simulated robot."""
    hydra_settings = sim_hydra_settings(settings)
    if hydra_settings is None or not isinstance(driver, SimSpotDriver):
        return None
    hydra = open_sim_hydra(store, hydra_settings)
    logger = node.get_logger()

    def look(before: Pose, after: Pose) -> None:
        for symbol in hydra.observe(before.position, after.position):
            logger.info(f"simulated Hydra: {symbol} ({hydra.world.objects[symbol].class_name}) seen")

    driver.observer = look
    return hydra, hydra_settings


def _make_driver(node: HeraclesNode, kind: str, settings: dict[str, Any], initial: RobotState) -> RobotDriver:
    """The driver of ``kind``, holding what the robot's state says (the simulator also starts where it says)."""
    values = {**settings, "holding": initial.holding}
    if kind == "sim":
        values["start_pose"] = list(initial.position)
    return make_driver(kind, node=node, **values)


def _replanner(store: GraphStore, settings: DispatcherSettings) -> Replanner:
    # Imported here: the planner pulls in Fast Downward's runner, which only this path needs.
    from heracles_ros.planning.planner import Planner

    planner = Planner(
        store, timeout_s=settings.planner_timeout_s, robot_symbol=settings.robot_symbol,
        snapshot_wait_s=settings.snapshot_wait_s,
    )
    planner.preload()  # a replan must not wait seconds for a kilometre-scale place graph
    return lambda goal, start: planner.plan(goal, from_symbol=start)
