"""What every node of ours does the same way: parameters, start, the closing order, and ``main``.

A node names its parameter table (``PARAMETERS``, with ``shutdown_timeout_s``)
and fills in three steps: :meth:`HeraclesNode.setup` (given the checked
parameter values), :meth:`HeraclesNode.finish` (end the work in flight: cancel
a plan, stop the robot, let a snapshot finish) and
:meth:`HeraclesNode.release` (close the database and the clients). The base
runs them in that order, each once:

- a setup that raises releases what it had opened and destroys the node, so a
  node that cannot start leaves nothing behind (the runner then exits 1);
- :meth:`~HeraclesNode.close` (the runner calls it on SIGINT/SIGTERM, within
  ``shutdown_timeout_s``, while the executor still serves what closing needs)
  finishes, then releases; a second call does nothing;
- ``destroy_node`` closes first, then destroys the node's action servers and
  clients (:meth:`~HeraclesNode.destroyed_with_node`) and the node.

A node of which one per robot may run calls :meth:`~HeraclesNode.claim_robot` in
its setup before it opens or writes anything
(:mod:`.claims`): another node of its kind found refuses the start, one found
later makes the node step down (:meth:`~HeraclesNode.on_superseded`, then
``exit_code`` 1 and :attr:`~HeraclesNode.stop_requested`, which the runner
closes it on).

While the node runs, only the parameters it names in ``RUNTIME_PARAMETERS``
change; every other set (rclpy's own ``use_sim_time``, a name the node lacks)
is refused with the reason, and no request reaches the node's parameter
services in a form that raises (:mod:`.parameter_services`).

:meth:`HeraclesNode.main` is the one rclpy bring-up: :func:`~.runner.run_node`
with the node's executor threads.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from typing import Any, ClassVar, Protocol

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from heracles_ros.errors import ConfigError
from heracles_ros.ros.claims import RobotClaim
from heracles_ros.ros.interfaces import Topic
from heracles_ros.ros.parameter_services import GuardedParameterService
from heracles_ros.ros.parameters import change_refusal, declare
from heracles_ros.ros.runner import SHUTDOWN_TIMEOUT, run_node
from heracles_ros.settings import Setting


class _Destroyable(Protocol):
    def destroy(self) -> Any: ...


class HeraclesNode(Node):
    """An rclpy node with our parameter table, start-or-release, and the closing order."""

    #: The node's ROS name (also its name in the runner's log lines).
    NODE_NAME: ClassVar[str]
    #: Every parameter the node declares; must include ``shutdown_timeout_s`` (:data:`.runner.SHUTDOWN_TIMEOUT`).
    PARAMETERS: ClassVar[tuple[Setting, ...]]
    #: Parameters that may change while the node runs; each change is checked against its Setting, then handed
    #: to :meth:`apply_parameter`. Every other set is refused with the reason, rclpy's own use_sim_time included.
    RUNTIME_PARAMETERS: ClassVar[Collection[str]] = ()

    def __init__(self, **kwargs: Any):
        #: Guards the node's own state; subclasses use it for theirs, so closing flips under the same lock.
        self._lock = threading.Lock()
        self._closed = True  # until setup completes there is nothing to finish
        self._destroy_with_node: list[_Destroyable] = []
        self._claim: RobotClaim | None = None
        #: What the process exits with once closed (the runner reads it): 1 when the node stepped down.
        self.exit_code = 0
        #: Another node of this kind turned out to hold the robot: this one is stepping down.
        self.superseded = False
        #: Set when the node asks to be closed (it stepped down); the runner then closes it as on SIGINT.
        self.stop_requested = threading.Event()
        services = kwargs.pop("start_parameter_services", True)
        super().__init__(self.NODE_NAME, start_parameter_services=False, **kwargs)
        try:
            values = declare(self, self.PARAMETERS, runtime=self.RUNTIME_PARAMETERS)
            #: Seconds SIGINT/SIGTERM leave the node to end (the runner's bound, read by the closing steps).
            self.shutdown_timeout_s = float(values[SHUTDOWN_TIMEOUT.name])
            # Added after rclpy's own (use_sim_time's), so it judges first; a refusal ends the set there.
            self.add_on_set_parameters_callback(self._on_set_parameters)
            if services:
                GuardedParameterService(self, self._change_refusal)
            self.setup(values)
            if self._claim is not None:
                self._claim.arm(self._on_older_claim)
        except BaseException:
            self.release()
            super().destroy_node()
            raise
        with self._lock:
            self._closed = False

    # -- what a node fills in ----------------------------------------------------------
    def setup(self, values: dict[str, Any]) -> None:
        """Open what the node needs and create its interfaces, from the checked parameter ``values``."""
        raise NotImplementedError

    def finish(self) -> None:
        """End the work in flight within the shutdown budget (the executor still serves meanwhile)."""

    def release(self) -> None:
        """Close what :meth:`setup` opened; also called after a setup that failed half-way, so it
        looks for what exists."""

    def apply_parameter(self, name: str, value: Any) -> None:
        """Apply one checked change of a run-time parameter."""

    def on_superseded(self) -> None:
        """Another node of this kind holds the robot after all: end what must not wait for closing."""

    def executor_threads(self) -> int | None:
        """Threads of the node's MultiThreadedExecutor (None: rclpy's default)."""
        return None

    # -- the shared skeleton -------------------------------------------------------------
    def claim_robot(self, topic: Topic, look_s: float) -> None:
        """Claim the robot for this node on its kind's claim ``topic``, looking ``look_s`` for an older claim (0:
        announce only); ConfigError when another node of this kind holds it. Call in :meth:`setup` before
        anything is opened or written."""
        self._claim = RobotClaim(self, topic, look_s)
        self._claim.look()

    def _on_older_claim(self, holder: str) -> None:
        """An older claim found while running: this node steps down, the process exits 1."""
        with self._lock:
            if self._closed:
                return
            self.superseded = True
        kind = self.get_name()
        self.get_logger().error(
            f"another {kind} for this robot ({self.get_fully_qualified_name()}) started before this one, on "
            f"{holder}: one {kind} per robot; this one stops and exits"
        )
        self.exit_code = 1
        self.on_superseded()
        self.stop_requested.set()

    @property
    def closed(self) -> bool:
        """True before the node has started and once it began closing: no new work is taken."""
        return self._closed

    def destroyed_with_node(self, entity: _Destroyable) -> Any:
        """Destroy ``entity`` (an action server or client) after closing, as the node goes; returns it."""
        self._destroy_with_node.append(entity)
        return entity

    def close(self) -> None:
        """Finish the work in flight, then release; once (a second call returns at once)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self.finish()
        finally:
            self.release()

    def destroy_node(self) -> None:
        self.close()
        for entity in self._destroy_with_node:
            entity.destroy()
        super().destroy_node()

    def _change_refusal(self, name: str) -> str:
        return change_refusal(self, name, self.RUNTIME_PARAMETERS)

    def _on_set_parameters(self, changes: list[Parameter]) -> SetParametersResult:
        """Judge a set, whichever way it came (``ros2 param set`` or ``load``, either set service, an in-process
        ``set_parameters``): only :attr:`RUNTIME_PARAMETERS` change, each checked against its Setting, all or
        none. Never raises: an exception here would end the executor, and the node with it."""
        try:
            specs = {spec.name: spec for spec in self.PARAMETERS}
            checked: list[tuple[str, Any]] = []
            for change in changes:
                problem = self._change_refusal(change.name)
                if problem:
                    return SetParametersResult(successful=False, reason=problem)
                try:
                    checked.append((change.name, specs[change.name].check(change.value)))
                except ConfigError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
            for name, value in checked:
                self.apply_parameter(name, value)
        except Exception as exc:  # a set must never end the node
            names = ", ".join(change.name for change in changes)
            self.get_logger().error(f"setting {names} failed: {exc!r}")
            return SetParametersResult(successful=False, reason=f"setting {names} failed inside the node: {exc!r}")
        return SetParametersResult(successful=True)

    @classmethod
    def main(cls, args: list[str] | None = None) -> int:
        """Run the node until SIGINT/SIGTERM or ROS shutdown; the process's exit code."""
        make: Callable[[], HeraclesNode] = cls
        return run_node(cls.NODE_NAME, make, args, threads=lambda node: node.executor_threads())
