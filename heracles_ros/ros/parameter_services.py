"""rclpy's parameter services, less the ways one request ends the node.

rclpy serves ``~/set_parameters`` and ``~/set_parameters_atomically`` on every
node (``ros2 param set`` and ``ros2 param load`` call the first), and whatever a
service callback raises ends our executor, and the process with it (the
runner exits 1). rclpy's own callbacks raise on a value whose ``type`` is no
ParameterType (``Parameter.Type(77)``: ValueError), so any DDS participant could
end a node with one request. :class:`GuardedParameterService` answers every
request: a name the node has not declared, or may not change while it runs, is
refused with the node's own reason before rclpy sees it; a malformed value is
refused naming it; anything else rclpy raises is logged and refused.

What a change may be is still judged in the node's on-set callback
(:meth:`.node_base.HeraclesNode._on_set_parameters`), which every path reaches:
these services, an in-process ``set_parameters``. A node never applies
``/parameter_events`` to itself, so that topic is no way in.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from rclpy.parameter_service import ParameterService


def refused(reason: str) -> SetParametersResult:
    return SetParametersResult(successful=False, reason=reason)


class GuardedParameterService(ParameterService):
    """The node's parameter services; ``refusal(name)`` says why ``name`` may not change now ('' = it may).

    The two set callbacks override rclpy's of the same names (the same in Humble, Jazzy and Kilted); the get,
    list and describe services stay rclpy's.
    """

    def __init__(self, node: Any, refusal: Callable[[str], str]):
        self._refusal = refusal
        super().__init__(node)

    def _set_parameters_callback(self, request: Any, response: Any) -> Any:
        node = self._get_node()
        response.results = [self._set(node, [message]) for message in request.parameters]
        return response

    def _set_parameters_atomically_callback(self, request: Any, response: Any) -> Any:
        response.result = self._set(self._get_node(), request.parameters)
        return response

    def _set(self, node: Any, messages: Sequence[ParameterMsg]) -> SetParametersResult:
        """All of ``messages`` set at once, or none and the reason; never raises."""
        names = [message.name for message in messages]
        try:
            parameters = []
            for message in messages:
                problem = self._refusal(message.name)
                if problem:
                    return refused(problem)
                try:
                    parameters.append(Parameter.from_parameter_msg(message))
                except (ValueError, TypeError):
                    return refused(f"parameter {message.name}: value type {message.value.type} is not a "
                                   "rcl_interfaces/msg/ParameterType")
            result: SetParametersResult = node.set_parameters_atomically(parameters)
            return result
        except Exception as exc:  # one request must never end the node
            node.get_logger().error(f"setting parameters {names} failed: {exc!r}")
            return refused(f"setting {', '.join(names)} failed inside the node: {exc!r}")
