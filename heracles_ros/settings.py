"""A typed, documented setting: the one shape of every ROS parameter and driver setting.

Node parameter tables (``PARAMETERS`` in each node module) and the driver
factory's tables use the same :class:`Setting`, so a driver setting becomes a
node parameter one-to-one, and every value is checked the same way with an
error that names it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConfigError


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    description: str
    #: Inclusive bounds for numbers and the elements of number lists (None: unbounded).
    minimum: float | None = None
    maximum: float | None = None
    #: Allowed values for strings (empty: any).
    choices: tuple[str, ...] = ()
    #: Element type of a list (an empty default cannot tell): int, float, str or bool.
    items: type | None = None

    @property
    def item_type(self) -> type:
        if self.items is not None:
            return self.items
        return type(self.default[0]) if isinstance(self.default, list) and self.default else str

    def check(self, value: Any, *, owner: str = "parameter") -> Any:
        """``value`` in the setting's type; ConfigError naming ``owner`` and the setting otherwise."""
        where = f"{owner} {self.name}"
        default = self.default
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{where} must be true or false, got {value!r}")
            return value
        if isinstance(default, (int, float)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{where} must be a number, got {value!r}")
            if isinstance(default, int) and value != int(value):
                raise ConfigError(f"{where} must be a whole number, got {value!r}")
            self._check_bounds(where, value)
            return int(value) if isinstance(default, int) else float(value)
        if isinstance(default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{where} must be a string, got {value!r}")
            if self.choices and value not in self.choices:
                raise ConfigError(f"{where} must be one of {', '.join(self.choices)}, got {value!r}")
            return value
        if isinstance(default, list):
            items = self.item_type
            if not isinstance(value, (list, tuple)) or not all(_is_item(v, items) for v in value):
                raise ConfigError(f"{where} must be a list of {items.__name__}, got {value!r}")
            for item in value:
                self._check_bounds(where, item)
            return [items(v) for v in value]
        raise ConfigError(f"{where} has a default of unsupported type {type(default).__name__}")

    def _check_bounds(self, where: str, value: Any) -> None:
        """Bounds apply to a number, and to every element of a list of numbers."""
        if self.minimum is not None and value < self.minimum:
            raise ConfigError(f"{where} must be >= {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{where} must be <= {self.maximum}, got {value}")


def _is_item(value: Any, items: type) -> bool:
    if items is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if items is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, items)
