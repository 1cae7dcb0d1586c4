"""Declared ROS parameters, one table per node.

Each node module lists its parameters as :class:`ParamSpec` entries
(``PARAMETERS``); :func:`declare` declares them all with descriptions, and the
same table lets tests check ``config/*.yaml`` and the launch files statically
(every key set is declared, every default documented). rclpy is imported only
when a node actually declares, so the tables can be read without ROS.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConfigError


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: Any
    description: str
    #: Inclusive bounds for numbers (None: unbounded).
    minimum: float | None = None
    maximum: float | None = None
    #: Allowed values for strings (empty: any).
    choices: tuple[str, ...] = ()
    #: Element type of a list parameter (an empty default cannot tell rclpy): int, float, str or bool.
    items: type = str

    def check(self, value: Any) -> Any:
        """Return ``value`` if acceptable, else raise ConfigError naming the parameter."""
        if isinstance(self.default, bool) and not isinstance(value, bool):
            raise ConfigError(f"parameter {self.name} must be true or false, got {value!r}")
        if isinstance(self.default, (int, float)) and not isinstance(self.default, bool):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"parameter {self.name} must be a number, got {value!r}")
            if self.minimum is not None and value < self.minimum:
                raise ConfigError(f"parameter {self.name} must be >= {self.minimum}, got {value}")
            if self.maximum is not None and value > self.maximum:
                raise ConfigError(f"parameter {self.name} must be <= {self.maximum}, got {value}")
        if isinstance(self.default, str):
            if not isinstance(value, str):
                raise ConfigError(f"parameter {self.name} must be a string, got {value!r}")
            if self.choices and value not in self.choices:
                raise ConfigError(f"parameter {self.name} must be one of {', '.join(self.choices)}, got {value!r}")
        if isinstance(self.default, list):
            if not isinstance(value, (list, tuple)) or not all(_is_item(v, self.items) for v in value):
                raise ConfigError(f"parameter {self.name} must be a list of {self.items.__name__}, got {value!r}")
            value = [self.items(v) for v in value]
        return value


def _is_item(value: Any, items: type) -> bool:
    if items is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if items is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, items)


def declare(node: Any, specs: Sequence[ParamSpec]) -> dict[str, Any]:
    """Declare every spec on ``node`` (an rclpy Node) and return the checked values by name."""
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.parameter import Parameter

    array_types = {
        int: Parameter.Type.INTEGER_ARRAY,
        float: Parameter.Type.DOUBLE_ARRAY,
        str: Parameter.Type.STRING_ARRAY,
        bool: Parameter.Type.BOOL_ARRAY,
    }
    values: dict[str, Any] = {}
    for spec in specs:
        descriptor = ParameterDescriptor(description=spec.description)
        if isinstance(spec.default, list) and not spec.default:
            # rclpy infers BYTE_ARRAY from an empty list, which then refuses any real value:
            # declare the array type instead (the value is None until a value is given).
            declared = node.declare_parameter(spec.name, array_types[spec.items], descriptor).value
            value = [] if declared is None else list(declared)
        else:
            value = node.declare_parameter(spec.name, spec.default, descriptor).value
        if isinstance(spec.default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        values[spec.name] = spec.check(value)
    return values
