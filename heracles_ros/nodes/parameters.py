"""Declared ROS parameters, one table per node.

Each node module lists its parameters as :class:`~heracles_ros.settings.Setting` entries
(``PARAMETERS``); :func:`declare` declares them all with descriptions, and the
same table lets tests check ``config/*.yaml`` and the launch files statically
(every key set is declared, every default documented). rclpy is imported only
when a node actually declares, so the tables can be read without ROS.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from heracles_ros.errors import ConfigError
from heracles_ros.settings import Setting


def declare(node: Any, specs: Sequence[Setting]) -> dict[str, Any]:
    """Declare every spec on ``node`` (an rclpy Node) and return the checked values by name.

    A value of the wrong type (refused by rclpy) or out of bounds raises ConfigError naming it.
    """
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

    values: dict[str, Any] = {}
    for spec in specs:
        try:
            value = _declare_one(node, spec)
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            raise ConfigError(f"{node.get_name()} parameter {spec.name}: {exc}") from exc
        values[spec.name] = spec.check(value)
    return values


def _declare_one(node: Any, spec: Setting) -> Any:
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.parameter import Parameter

    descriptor = ParameterDescriptor(description=spec.description)
    if isinstance(spec.default, list) and not spec.default:
        # rclpy infers BYTE_ARRAY from an empty list, which then refuses any real value:
        # declare the array type instead (the value is None until a value is given).
        array_type = {
            int: Parameter.Type.INTEGER_ARRAY,
            float: Parameter.Type.DOUBLE_ARRAY,
            str: Parameter.Type.STRING_ARRAY,
            bool: Parameter.Type.BOOL_ARRAY,
        }[spec.item_type]
        declared = node.declare_parameter(spec.name, array_type, descriptor).value
        return [] if declared is None else list(declared)
    value = node.declare_parameter(spec.name, spec.default, descriptor).value
    if isinstance(spec.default, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return value
