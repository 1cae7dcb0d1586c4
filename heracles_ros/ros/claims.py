"""One node of a kind per robot: the oldest claim wins, a newer node refuses to start or steps down.

Two dispatchers would both drive the robot, two mirrors would both write its graph (a second one
re-mirrored its scene file into a running system's database before anything refused it), two
language servers would both take its commands. So each of these nodes, before it opens or writes
anything, publishes a latched claim on its kind's claim topic (:mod:`.interfaces`: start time, a random
id, host:pid) and listens for a while: an older claim means another node of its kind already runs for
this robot (this namespace, on this machine or another), and this one refuses to start, having done
nothing. Claims order the same way for every node (time, then the id), so of two started at once
exactly one runs. The node keeps listening once started: an older claim found late (discovery on a
loaded network can outlast the look) makes it step down.

A node that does not look (``look_s`` 0) still announces its claim, so one that does look finds it.
"""
from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from heracles_ros.errors import ConfigError
from heracles_ros.ros.interfaces import Topic

#: Seconds between the looks' turns of the node's private executor.
SPIN_S = 0.1


def claim_order(claim: str) -> tuple[float, str]:
    """Claims ``"<unix time> <uuid> <host:pid>"`` sort oldest first; ties by uuid, so every node agrees."""
    stamp, _, rest = claim.partition(" ")
    try:
        return float(stamp), rest
    except ValueError:
        return float("inf"), rest


def holder(claim: str) -> str:
    """Who holds a claim: ``host:pid``."""
    return claim.split(" ", 2)[-1]


class RobotClaim:
    """``node``'s claim on its robot on ``topic`` (see the module's docstring).

    :meth:`look` refuses a start that another node's older claim forbids; :meth:`arm` hands an older
    claim found after that to ``on_superseded`` (with its holder), once.
    """

    def __init__(self, node: Node, topic: Topic, look_s: float):
        from std_msgs.msg import String

        self._node = node
        self.look_s = look_s
        self.mine = f"{time.time():.6f} {uuid.uuid4().hex} {socket.gethostname()}:{os.getpid()}"
        self._lock = threading.Lock()
        self._older: list[str] = []
        self._on_superseded: Callable[[str], None] | None = None
        self._publisher = topic.publisher(node)
        if look_s > 0:
            self._subscription = topic.subscription(node, self._on_claim)
        self._publisher.publish(String(data=self.mine))

    def look(self) -> None:
        """Listen for ``look_s`` (the node's own executor is not spinning yet); ConfigError on an older claim."""
        if self.look_s <= 0:
            return
        executor = SingleThreadedExecutor(context=self._node.context)
        executor.add_node(self._node)
        try:
            deadline = time.monotonic() + self.look_s
            while time.monotonic() < deadline and not self._older:
                executor.spin_once(timeout_sec=SPIN_S)
        finally:
            executor.remove_node(self._node)
            executor.shutdown(timeout_sec=1.0)
        self._refuse_if_older()

    def arm(self, on_superseded: Callable[[str], None]) -> None:
        """From now on an older claim goes to ``on_superseded``; ConfigError for one that came before."""
        self._refuse_if_older()
        with self._lock:
            self._on_superseded = on_superseded

    def _refuse_if_older(self) -> None:
        with self._lock:
            older = sorted(self._older, key=claim_order)
        if older:
            kind = self._node.get_name()
            raise ConfigError(
                f"another {kind} already runs for this robot ({self._node.get_fully_qualified_name()}, on "
                f"{holder(older[0])}): one {kind} per robot; stop that one first, or start this one in another "
                "namespace; this one started nothing and wrote nothing"
            )

    def _on_claim(self, message: object) -> None:
        claim = str(getattr(message, "data", ""))
        if claim == self.mine or claim_order(claim) > claim_order(self.mine):
            return
        with self._lock:
            self._older.append(claim)
            on_superseded, self._on_superseded = self._on_superseded, None
        if on_superseded is not None:
            on_superseded(holder(claim))
