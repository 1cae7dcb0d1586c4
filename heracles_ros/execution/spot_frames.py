"""Spot's command frames and the map->frame transform: plain geometry, no bosdyn.

Split from spot_commands so the driver settings (and the simulated driver that
shares them) need neither bosdyn nor grpc, which spot_commands imports.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from heracles_ros.errors import ConfigError
from heracles_ros.execution.driver import Pose
from heracles_ros.plan_types import Point3

#: Spot's world frames an SE2 trajectory goal may be given in (bosdyn frame names).
FRAMES: tuple[str, ...] = ("odom", "vision")


def check_frame(frame: str) -> str:
    if frame not in FRAMES:
        raise ConfigError(f"spot command frame must be one of {', '.join(FRAMES)}, got {frame!r}")
    return frame


def wrap_angle(angle: float) -> float:
    """Angle in [-pi, pi)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def yaw_from_quaternion(x: float, y: float, z: float, w: float) -> float:
    """Heading (rotation about z) of an orientation quaternion."""
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


@dataclass(frozen=True)
class SE2Transform:
    """Pose of Spot's command frame (odom or vision) in the map frame, plus a height offset.

    ``to_frame`` maps a map point into the command frame; ``to_map`` goes back.
    """

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0
    z: float = 0.0

    @classmethod
    def from_values(cls, values: Sequence[float]) -> SE2Transform:
        """From ``[x, y, yaw]`` or ``[x, y, yaw, z]`` (a parameter list)."""
        if len(values) not in (3, 4) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values
        ):
            raise ConfigError(
                f"map_to_frame must be [x, y, yaw] or [x, y, yaw, z] finite numbers, got {list(values)!r}"
            )
        return cls(*(float(v) for v in values))

    def to_frame(self, point: Point3) -> Point3:
        dx, dy = point[0] - self.x, point[1] - self.y
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (c * dx + s * dy, -s * dx + c * dy, point[2] - self.z)

    def to_map(self, point: Point3) -> Point3:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        return (self.x + c * point[0] - s * point[1], self.y + s * point[0] + c * point[1], point[2] + self.z)

    def yaw_to_frame(self, yaw: float) -> float:
        return wrap_angle(yaw - self.yaw)

    def pose_to_map(self, x: float, y: float, z: float, yaw: float) -> Pose:
        """A body pose reported in the command frame (odometry), in the map frame."""
        mx, my, mz = self.to_map((x, y, z))
        return Pose(mx, my, mz, wrap_angle(yaw + self.yaw))


#: The command frame coincides with the map frame.
IDENTITY = SE2Transform()
