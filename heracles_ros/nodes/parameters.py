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
        return value


def declare(node: Any, specs: Sequence[ParamSpec]) -> dict[str, Any]:
    """Declare every spec on ``node`` (an rclpy Node) and return the checked values by name."""
    from rcl_interfaces.msg import ParameterDescriptor

    values: dict[str, Any] = {}
    for spec in specs:
        descriptor = ParameterDescriptor(description=spec.description)
        if isinstance(spec.default, list) and not spec.default:
            # rclpy cannot infer a type from an empty list: declare it as a string array.
            from rcl_interfaces.msg import ParameterType

            descriptor.type = ParameterType.PARAMETER_STRING_ARRAY
            descriptor.dynamic_typing = False
        value = node.declare_parameter(spec.name, spec.default, descriptor).value
        if isinstance(spec.default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        values[spec.name] = spec.check(value)
    return values
