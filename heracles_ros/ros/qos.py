"""The two QoS profiles our topics use (each link's is named in :mod:`.interfaces`, for both its ends)."""
from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def reliable(depth: int) -> QoSProfile:
    """Every message delivered to those listening now (Hydra's DsgUpdate uses depth 1 of this)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


def latched(depth: int = 1) -> QoSProfile:
    """The last ``depth`` messages kept for late joiners (RViz started after the answer, say)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )
