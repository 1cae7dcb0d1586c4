"""The language server (a scripted model) and the dispatcher (the simulated Spot) running in this process.

What a client, the CLI's live forms or the console talk to: both nodes under one robot namespace over a real
graph, the robot recorded at ``start_place``, the language server free to send plans without an operator's
confirmation, and the dispatcher's ``execute_plan`` found before the block begins.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rclpy.parameter import Parameter

from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.language_server import LanguageServerNode
from support.ros import ros_session, spinning, wait_until
from support.scripted_llm import Script, ScriptedLLMServer


@dataclass
class RunningNodes:
    language: LanguageServerNode
    robot: DispatcherNode
    #: The scripted model the language server asks.
    model: ScriptedLLMServer


def overrides(values: dict[str, Any]) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in values.items()]


@contextlib.contextmanager
def running_nodes(domain: int, db: dict[str, str], store: GraphStore, script: Script, *, namespace: str,
                  start_place: str, sim_time_scale: float = 1.0) -> Iterator[RunningNodes]:
    """Both nodes on ``db`` (``db_uri`` and ``graph_name``, the graph ``store`` holds) in a ROS session on
    ``domain``; the simulated Spot walks 1 m/s at ``sim_time_scale`` times real time."""
    states = RobotStateStore(store)
    states.write(RobotState(states.position_of(start_place), place=start_place))
    with contextlib.ExitStack() as stack:
        model = stack.enter_context(ScriptedLLMServer(script))
        stack.enter_context(ros_session(domain))
        language = LanguageServerNode(namespace=namespace, parameter_overrides=overrides({
            **db, "llm": "openai", "model": model.model, "base_url": model.openai_base_url, "instance_check_s": 0.0,
            "require_confirmation": False}))
        robot = DispatcherNode(namespace=namespace, parameter_overrides=overrides({
            **db, "start_place": start_place, "sim_time_scale": sim_time_scale, "sim_speed_mps": 1.0}))
        stack.enter_context(spinning(language, robot, num_threads=8))
        wait_until(lambda: language.commands.plans.server_is_ready(), 20.0, "the dispatcher's execute_plan")
        yield RunningNodes(language, robot, model)
