"""Planar distances, the way the robot's walks are measured: on the floor, heights ignored.

A plan's waypoints, the robot's pose and a simulated sensor's reach are all compared in x and y only; these
are the three measures they share, written once so the dispatcher's checks, its progress estimate, the
simulated Hydra and RViz's path all agree on what "near" is.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence


def planar_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """Metres from ``a`` to ``b`` on the floor."""
    return math.hypot(b[0] - a[0], b[1] - a[1])


def path_length(points: Iterable[Sequence[float]]) -> float:
    """Metres along ``points`` in order, on the floor."""
    return sum(planar_distance(a, b) for a, b in itertools.pairwise(points))


def segment_distance(point: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float:
    """Metres on the floor from ``point`` to the nearest point of the segment ``a``-``b``."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    span = dx * dx + dy * dy
    t = 0.0 if span == 0 else min(1.0, max(0.0, ((point[0] - a[0]) * dx + (point[1] - a[1]) * dy) / span))
    return math.hypot(point[0] - (a[0] + t * dx), point[1] - (a[1] + t * dy))
