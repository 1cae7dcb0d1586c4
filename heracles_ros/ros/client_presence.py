"""Whether the node that sent a goal is still on the ROS graph.

ROS 2 never tells an action server that its client died: the goal runs on.
For a goal that moves the robot that is the wrong default, so a goal may name
its sender (``client_node``, a fully qualified node name) and the server gives
it up once that node has been absent from the graph for ``lost_after_s``.
``lost_after_s <= 0`` or an empty name keeps plain ROS behaviour.

The bookkeeping (:class:`Absences`) is plain Python so that it is tested
without ROS; :class:`ClientPresence` feeds it the graph's node names.

A process that dies without leaving (kill -9, a crash) stays on the graph until
its DDS participant's lease runs out; :mod:`.fastdds_profile` gives our processes a
short one.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

#: The graph's node list is read at most this often (each read walks DDS discovery data).
GRAPH_READ_PERIOD_S = 0.2

def fully_qualified(name: str, namespace: str) -> str:
    """``/ns/name`` as rclpy's ``get_fully_qualified_name`` spells it."""
    return f"{namespace.rstrip('/')}/{name}"


class Absences:
    """When each watched name was first missed; a name seen again starts over."""

    def __init__(self, lost_after_s: float):
        self.lost_after_s = lost_after_s
        self._missing_since: dict[str, float] = {}

    def observe(self, present: set[str], watched: Iterable[str], now: float) -> None:
        """Record one look at the graph at time ``now`` for the ``watched`` names."""
        for name in watched:
            if name in present:
                self._missing_since.pop(name, None)
            else:
                self._missing_since.setdefault(name, now)

    def lost(self, name: str, now: float) -> bool:
        """True once ``name`` has been missing for ``lost_after_s`` (never for '' or a non-positive bound)."""
        if not name or self.lost_after_s <= 0:
            return False
        since = self._missing_since.get(name)
        return since is not None and now - since >= self.lost_after_s

    def forget(self, name: str) -> None:
        self._missing_since.pop(name, None)


class ClientPresence:
    """Answers "has this goal's sender been gone for ``lost_after_s``?" from the node's own graph view.

    Thread-safe; callers poll :meth:`lost` from their waiting loops (it reads the graph
    at most every :data:`GRAPH_READ_PERIOD_S`).
    """

    def __init__(self, node: Any, lost_after_s: float, *, clock: Callable[[], float] = time.monotonic):
        self._node = node
        self._clock = clock
        self._absences = Absences(lost_after_s)
        self._lock = threading.Lock()
        self._last_read = float("-inf")
        self._present: set[str] = set()

    @property
    def lost_after_s(self) -> float:
        return self._absences.lost_after_s

    @lost_after_s.setter
    def lost_after_s(self, value: float) -> None:
        self._absences.lost_after_s = value

    def lost(self, client_node: str) -> bool:
        if not client_node or self._absences.lost_after_s <= 0:
            return False
        with self._lock:
            now = self._clock()
            if now - self._last_read >= GRAPH_READ_PERIOD_S:
                self._present = {fully_qualified(n, ns) for n, ns in self._node.get_node_names_and_namespaces()}
                self._last_read = now
            self._absences.observe(self._present, (client_node,), now)
            return self._absences.lost(client_node, now)

    def forget(self, client_node: str) -> None:
        """Drop the record of a finished goal's sender."""
        with self._lock:
            self._absences.forget(client_node)
