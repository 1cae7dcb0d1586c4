"""ROS node ``dsg_mirror``: keep the graph database equal to Hydra's newest scene graph.

Thin by design: the subscription callback copies the payload into the
:class:`MirrorLoop` mailbox and returns, the loop's worker thread decodes,
diffs and writes, and every outcome is published as ``mirror_status``, with the
snapshots the DsgUpdates' sequence numbers say never arrived or came late (none
can be told while Hydra-ROS leaves them at 0). The
``changes`` service (heracles_ros/srv/Changes) answers what the history
recorded since a time, corrections retired and returned with their nodes included
(as ``heracles changes``); each snapshot's time is its DsgUpdate header stamp. The
``scene_at`` service (heracles_ros/srv/SceneAt) answers where one node was, or which
objects were there, as of a time (:mod:`heracles_ros.mirror.as_of`, as ``heracles where``
and ``heracles scene --at``).
``history_markers`` (MarkerArray, namespace ``heracles/moved``) shows what
moved within ``moved_markers_window_s`` of the newest snapshot, and
``heracles/added`` the objects the operator added. ``scene_markers`` (MarkerArray, transient local)
draws what the database mirrors, rooms, places and perceived objects, for an RViz without Hydra's
visualizer (the simulator path); see :func:`~heracles_ros.nodes.markers.scene_markers`.

Each scene_markers message holds the whole drawn scene (with deletes of what is gone), because
a latched topic gives a late RViz only the last message: it is rebuilt only after a snapshot was
mirrored, at most every ``scene_markers_period_s``, and not sent when it came out equal.

One mirror per robot: a second one in the same namespace refuses to start before it opens or writes
anything, or stops once it finds the first's claim late (``instance_check_s``, :mod:`~heracles_ros.ros.claims`).

Parameters: :mod:`.mirror_settings`.
"""
from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import fields
from typing import Any

from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from heracles_ros.errors import ConfigError, DatabaseBusy, HeraclesError
from heracles_ros.graphdb import open_store, parse_db_uri
from heracles_ros.mirror.additions import Additions
from heracles_ros.mirror.as_of import OutOfRange, SceneAt, node_at, scene_at
from heracles_ros.mirror.history import read_changes, read_clock
from heracles_ros.mirror.loop import MirrorLoop, MirrorState, Snapshot
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.mirror.scene_view import read_scene_view
from heracles_ros.mirror.timeline import read_timeline
from heracles_ros.msg import MirrorStatus
from heracles_ros.nodes.markers import (
    NS_ADDED,
    NS_MOVED,
    SCENE_NAMESPACES,
    MarkerBook,
    added_markers,
    moved_markers,
    scene_markers,
)
from heracles_ros.nodes.mirror_settings import PARAMETERS, RUNTIME_PARAMETERS, MirrorSettings
from heracles_ros.ros import interfaces
from heracles_ros.ros.node_base import HeraclesNode
from heracles_ros.ros.node_settings import settings_from
from heracles_ros.ros.request_fields import at_problem, changes_limit, since_problem, text_problem
from heracles_ros.ros.runner import CLOSE_SHARE, SHUTDOWN_TIMEOUT
from heracles_ros.schema import is_scene_symbol

#: Library loggers whose records this node forwards to its ROS logger (not the whole package: other
#: nodes may share the process).
_LIBRARY_LOGGERS = ("heracles_ros.mirror.loop", "heracles_ros.mirror.reconcile")


def _dsg_update_type() -> Any:
    """Hydra's DsgUpdate; ConfigError naming the package where it cannot be imported."""
    try:
        return interfaces.DSG_UPDATE.type
    except ImportError as exc:
        raise ConfigError(
            "dsg_mirror needs the hydra_msgs interface package (from MIT-SPARK/Hydra-ROS) in the ROS "
            "workspace; build it next to heracles_ros and source the workspace"
        ) from exc


class _RosLogHandler(logging.Handler):
    """Forward the library's Python log records to this node's ROS logger."""

    def __init__(self, node: Node):
        super().__init__(logging.INFO)
        self._logger = node.get_logger()

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if record.levelno >= logging.ERROR:
            self._logger.error(text)
        elif record.levelno >= logging.WARNING:
            self._logger.warning(text)
        else:
            self._logger.info(text)


class DsgMirrorNode(HeraclesNode):
    """Subscribes to DsgUpdate snapshots and mirrors them into the graph database."""

    NODE_NAME = "dsg_mirror"
    PARAMETERS = PARAMETERS
    RUNTIME_PARAMETERS = RUNTIME_PARAMETERS

    def __init__(self, **kwargs: Any):
        self.loop: MirrorLoop | None = None
        super().__init__(**kwargs)

    def setup(self, values: dict[str, Any]) -> None:
        self.settings = settings = settings_from(MirrorSettings, values)
        self.claim_robot(interfaces.MIRROR_CLAIM, settings.instance_check_s)  # before anything is opened or written
        self._log_handler = _RosLogHandler(self)
        for name in _LIBRARY_LOGGERS:  # the node's ROS logger is their one output while it runs
            library = logging.getLogger(name)
            library.addHandler(self._log_handler)
            library.setLevel(logging.INFO)
            library.propagate = False
        self._target = parse_db_uri(settings.db_uri)  # a malformed URI fails here, naming the value
        _dsg_update_type()  # before anything is opened: without Hydra's messages the mirror has nothing to read
        # One store for everything this node reads and writes: it follows the database through a stop,
        # a crash and a restart (never starting it itself), and its connections are reused.
        self.store = open_store(settings.db_uri, graph=settings.graph_name, timeout_s=settings.query_timeout_s)
        mirror = Mirror(
            self.store,
            batch_size=settings.batch_size,
            suspect_fraction=settings.suspect_fraction,
            suspect_min_nodes=settings.suspect_min_nodes,
            allow_mass_removal=settings.allow_mass_removal,
            history=settings.history_settings(),
            additions=settings.addition_settings(),
        )
        self._status = interfaces.MIRROR_STATUS.publisher(self)
        self.loop = MirrorLoop(mirror, on_state=self._publish, retry_period_s=settings.retry_period_s,
                               max_snapshot_bytes=settings.max_snapshot_bytes)
        self.get_logger().info(
            f"mirroring {settings.dsg_topic} into {self.store.description}"
            + (f", starting from {settings.scene_file}" if settings.scene_file else "")
        )
        self.loop.start()
        if settings.scene_file:
            self.loop.submit_file(settings.scene_file)
        interfaces.DSG_UPDATE.subscription(self, self._on_update, name=settings.dsg_topic)
        interfaces.CHANGES.serve(self, self._on_changes)
        interfaces.SCENE_AT.serve(self, self._on_scene_at)
        self._start_timers(settings)

    def _start_timers(self, settings: MirrorSettings) -> None:
        """The markers' and the status's refreshes, on the steady clock: a ROS clock on simulated time
        (use_sim_time given at start) with no /clock stands still, and the status (the console's health) must not."""
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        if settings.moved_markers_window_s > 0:
            self._markers = interfaces.HISTORY_MARKERS.publisher(self)
            self._marker_book = MarkerBook()
            self.create_timer(_MARKER_PERIOD_S, self._refresh_markers, clock=steady)
        if settings.scene_markers_period_s > 0:
            self._scene_pub = interfaces.SCENE_MARKERS.publisher(self)
            self._scene_book = MarkerBook()
            self._scene_drawn_after = -1  # snapshots_applied when the scene was last drawn
            self._scene_shown: list[Any] | None = None
            self._scene_left_out: dict[str, int] = {}
            self.create_timer(settings.scene_markers_period_s, self._refresh_scene_markers, clock=steady)
        if settings.status_period_s > 0:
            self.create_timer(settings.status_period_s, lambda: self._publish(self._current_state()), clock=steady)

    def apply_parameter(self, name: str, value: Any) -> None:
        """Suspect-snapshot policy and retry period may change at run time (the rest is read-only)."""
        if self.loop is None:
            return
        if name == "retry_period_s":
            self.loop.retry_period_s = float(value)
        else:
            setattr(self.loop.mirror, name, value)

    def _on_update(self, msg: Any) -> None:
        """Hand the payload over and return: decoding and writing happen in the worker."""
        if self.loop is None:  # shutting down
            return
        self.loop.submit(
            Snapshot(
                payload=msg.layer_contents.tobytes(),
                sequence=int(msg.sequence_number),  # 0 from Hydra-ROS: docs/known-issues.md#hydra-sequence-number
                full_update=bool(msg.full_update),
                stamp_s=_stamp_seconds(msg.header.stamp),
            )
        )

    def _on_changes(self, request: Any, response: Any) -> Any:
        """History events since a time; a bad request or an unreachable database is answered in ``error``."""
        since = float(request.since_s)
        limit, problem = changes_limit(int(request.limit))
        problem = since_problem(since) or text_problem(room=request.room) or problem
        if problem:
            response.error = problem
            return response
        if since <= 0:
            since = time.time() - (-since if since < 0 else 3600.0)
        try:
            with self._between_reconciles(_READ_WAIT_S) as free:
                if not free:
                    raise DatabaseBusy(f"the mirror has been writing a snapshot for {_READ_WAIT_S:g} s; "
                                       "ask again")
                events = read_timeline(self.store, since=since, room=request.room or None, limit=limit)
        except HeraclesError as exc:
            response.error = str(exc)
            return response
        response.changes = [json.dumps(e.to_json()) for e in events]
        return response

    def _on_scene_at(self, request: Any, response: Any) -> Any:
        """One node, or the objects, as of a time; a bad request, a time before what the history keeps, an unknown
        symbol or an unreachable database is answered in ``error``."""
        problem = scene_at_problem(request)
        if problem:
            response.error = problem
            return response
        at_s = float(request.at_s)
        at = at_s if at_s > 0 else time.time() + at_s if at_s < 0 else None
        try:
            with self._between_reconciles(_READ_WAIT_S) as free:
                if not free:
                    raise DatabaseBusy(f"the mirror has been writing a snapshot for {_READ_WAIT_S:g} s; "
                                       "ask again")
                # No reconcile runs while the lock is held: the read sees one snapshot without waiting.
                found = (node_at(self.store, request.symbol, at, wait_s=0.0) if request.symbol else
                         scene_at(self.store, at, cls=request.class_name or None, room=request.room or None,
                                  wait_s=0.0, timeout_s=self.settings.query_timeout_s))
        except HeraclesError as exc:
            response.error = str(exc)
            return response
        if isinstance(found, OutOfRange):
            response.error = found.message
        elif found is None:
            response.error = f"{request.symbol}: no such node in the scene, nor in the history it keeps"
        elif isinstance(found, SceneAt):
            response.nodes = [json.dumps(node.to_json()) for node in found.objects]
            kept = found.range
            response.kept_from_s = kept.earliest(objects=True) if kept is not None else math.nan
            response.newest_s = kept.newest_t if kept is not None else math.nan
            response.whole = found.whole
        else:
            response.nodes = [json.dumps(found.to_json())]
            response.kept_from_s = response.newest_s = math.nan
        return response

    @contextlib.contextmanager
    def _between_reconciles(self, wait_s: float) -> Iterator[bool]:
        """Whether the mirror's database lock was had within ``wait_s`` (held meanwhile).

        Reads share the mirror's store and never run during a reconcile: no fresh
        connection's first command reaches a MULTI/EXEC (it crashed the embedded server:
        docs/known-issues.md#redis-loading-in-exec).
        """
        loop = self.loop
        if loop is None:
            yield False
            return
        got = loop.database_lock.acquire(timeout=wait_s) if wait_s > 0 else loop.database_lock.acquire(False)
        try:
            yield got
        finally:
            if got:
                loop.database_lock.release()

    def _refresh_markers(self) -> None:
        """What moved within the window before the newest snapshot, and the operator's additions; a database
        problem or a reconcile in progress only skips a refresh."""
        try:
            with self._between_reconciles(0.0) as free:
                if not free:
                    return
                newest = read_clock(self.store)
                since = (newest or 0.0) - self.settings.moved_markers_window_s
                events = read_changes(self.store, since=since, limit=1000) if newest is not None else []
                added = Additions(self.store).active()
        except HeraclesError as exc:
            self.get_logger().debug(f"history markers not refreshed: {exc}")
            return
        frame, stamp = self.settings.marker_frame, self.get_clock().now().to_msg()
        markers = [*moved_markers(events, frame_id=frame, stamp=stamp), *added_markers(added, frame_id=frame,
                                                                                       stamp=stamp)]
        self._markers.publish(self._marker_book.update(markers, (NS_MOVED, NS_ADDED)))

    def _refresh_scene_markers(self) -> None:
        """The mirrored scene as markers, once per applied snapshot; a reconcile in progress or a database
        problem only delays it to the next tick."""
        loop = self.loop
        if loop is None:
            return
        applied = loop.state.snapshots_applied
        if applied == self._scene_drawn_after:
            return
        try:
            with self._between_reconciles(0.0) as free:
                if not free:
                    return
                view = read_scene_view(self.store, timeout_s=self.settings.query_timeout_s)
        except HeraclesError as exc:
            self.get_logger().debug(f"scene markers not refreshed: {exc}")
            return
        self._scene_drawn_after = applied
        built = scene_markers(view, frame_id=self.settings.marker_frame,
                              max_per_namespace=self.settings.scene_markers_max)
        if built.left_out != self._scene_left_out:
            self._scene_left_out = built.left_out
            for ns, count in built.left_out.items():
                self.get_logger().warning(
                    f"scene_markers: {count} markers of {ns} left out (scene_markers_max = "
                    f"{self.settings.scene_markers_max} per namespace)")
        if built.markers == self._scene_shown:
            return
        self._scene_shown = built.markers
        self._scene_pub.publish(self._scene_book.update(built.markers, SCENE_NAMESPACES))

    def _current_state(self) -> MirrorState:
        return self.loop.state if self.loop is not None else MirrorState()

    def _publish(self, state: MirrorState) -> None:
        self._status.publish(status_msg(state, self.get_clock().now().to_msg()))

    def finish(self) -> None:
        """On SIGINT/SIGTERM (the runner closes the node): the snapshot being written may finish within most
        of ``shutdown_timeout_s``; past that it is dropped, marked half-written until the next start."""
        self._stop_loop(CLOSE_SHARE * self.shutdown_timeout_s)

    def _stop_loop(self, timeout_s: float) -> None:
        loop, self.loop = self.loop, None
        if loop is not None:
            loop.stop(timeout_s)

    def release(self) -> None:
        self._stop_loop(getattr(self, "shutdown_timeout_s", SHUTDOWN_TIMEOUT.default))
        store = getattr(self, "store", None)
        if store is not None:
            store.close()
        handler: logging.Handler | None = getattr(self, "_log_handler", None)
        if handler is None:
            return
        for name in _LIBRARY_LOGGERS:
            library = logging.getLogger(name)
            library.removeHandler(handler)
            library.propagate = True


#: The fields of MirrorState, each published under its own name in MirrorStatus.
MIRROR_STATE_FIELDS = tuple(f.name for f in fields(MirrorState))
#: Seconds between refreshes of the history markers.
_MARKER_PERIOD_S = 2.0
#: Longest wait of the ``changes`` and ``scene_at`` services for a reconcile in progress.
_READ_WAIT_S = 5.0


def scene_at_problem(request: Any) -> str:
    """Why a SceneAt request is refused, or '': a time out of bounds, a field longer than a line or holding a
    control character, a symbol that is not a scene symbol, filters beside a symbol."""
    problem = at_problem(request.at_s) or text_problem(symbol=request.symbol, room=request.room,
                                                       class_name=request.class_name)
    if problem:
        return problem
    if request.symbol and not is_scene_symbol(request.symbol):
        return f"symbol {request.symbol!r} is not a scene symbol (a letter and a number, e.g. O12)"
    if request.symbol and (request.class_name or request.room):
        return "class_name and room filter the objects of a scene; with a symbol leave them empty"
    return ""


def status_msg(state: MirrorState, stamp: Any) -> MirrorStatus:
    """The status message of ``state``: every MirrorState field onto the message field of its name."""
    msg = MirrorStatus()
    msg.header.stamp = stamp
    for name in MIRROR_STATE_FIELDS:
        value = getattr(state, name)
        setattr(msg, name, list(value) if isinstance(value, tuple) else value)
    return msg


def _stamp_seconds(stamp: Any) -> float | None:
    """Header stamp -> epoch seconds; None for an unset (zero) stamp, which the mirror replaces by its clock."""
    seconds = int(stamp.sec) + int(stamp.nanosec) * 1e-9
    return seconds if seconds > 0 else None


main = DsgMirrorNode.main


if __name__ == "__main__":
    raise SystemExit(main())
