"""One goal at a time on an rclpy action server: the part both of our action servers share.

``execute_command`` (language server) and ``execute_plan`` (dispatcher) each
run one goal at a time for one robot, and both need the same things of rclpy:

- acceptance decided at once in the goal callback (a refused goal's reason goes
  out on the node's own topic, since a goal response carries none), and an
  accepted goal bound to its own job when rclpy hands it over, never through
  rclpy's shared execute callback (which only aborts a goal that has no job);
- goal, cancel and result services that queue a burst instead of dropping it,
  and a finished goal's result kept for a late or reconnecting client;
- a running goal that watches for what must end it (its cancel, its
  ``client_node`` gone from the graph, the node closing) in bounded polls, so
  the executor thread it holds is never held past the node's shutdown bound;
- the goal's end state from how it ended: CANCELED only for a cancel the
  client asked for, SUCCEEDED for success, ABORTED otherwise.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node

from heracles_ros.ros.interfaces import Action

#: Seconds between a running goal's looks for what must end it.
POLL_S = 0.05


class SingleGoalServer:
    """An action server whose goals are judged at once and each run by the job :meth:`start` binds it to.

    ``action`` gives the name, the type, the depth of the request queues and how long a result is kept.
    ``judge(request)`` accepts (True) or refuses (False, having published why) a goal;
    ``start(handle)`` returns the callable that runs an accepted goal to its result
    (on an executor thread of ``callback_group``); ``cancel(handle)`` answers a cancel request.
    """

    def __init__(
        self,
        node: Node,
        action: Action,
        *,
        judge: Callable[[Any], bool],
        start: Callable[[ServerGoalHandle], Callable[[ServerGoalHandle], Any]],
        cancel: Callable[[ServerGoalHandle], CancelResponse],
        callback_group: CallbackGroup,
    ):
        self._action_type = action.type
        self._judge = judge
        self._start = start
        requests = action.queue_qos()
        self.server = ActionServer(
            node, self._action_type, action.name, self._execute_unbound,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=cancel, callback_group=callback_group,
            goal_service_qos_profile=requests, cancel_service_qos_profile=requests,
            result_service_qos_profile=requests, result_timeout=action.result_keep_s,
        )  # fmt: skip

    def _on_goal(self, request: Any) -> GoalResponse:
        return GoalResponse.ACCEPT if self._judge(request) else GoalResponse.REJECT

    def _on_accepted(self, goal: ServerGoalHandle) -> None:
        goal.execute(self._start(goal))

    def _execute_unbound(self, goal: ServerGoalHandle) -> Any:
        goal.abort()  # every accepted goal is executed by its own job (see _on_accepted)
        return self._action_type.Result()

    def destroy(self) -> None:
        self.server.destroy()


def end_goal(goal: ServerGoalHandle, *, cancelled: bool, succeeded: bool) -> None:
    """Mark the goal finished (just before its result is returned): CANCELED for a cancel its client
    asked for, SUCCEEDED, or ABORTED."""
    if cancelled and goal.is_cancel_requested:
        goal.canceled()
    elif succeeded:
        goal.succeed()
    else:
        goal.abort()


def wait_until_done(
    done: threading.Event, *, poll_s: float = POLL_S, check: Callable[[], bool] = lambda: False,
    deadline: Callable[[], float | None] = lambda: None,
) -> bool:
    """Wait for ``done`` in bounded polls, calling ``check`` between them (True: stop waiting), and
    giving up once ``deadline()`` (a monotonic time, or None) has passed; whether ``done`` was set."""
    while not done.wait(poll_s):
        if check():
            return done.is_set()
        until = deadline()
        if until is not None and time.monotonic() > until:
            return done.is_set()
    return True
