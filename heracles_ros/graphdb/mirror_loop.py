"""Feed snapshots to the mirror from a worker thread, newest first, never queueing without bound.

The ROS callback only drops the payload into a one-slot mailbox and returns;
the worker decodes and reconciles. When the mirror is slower than Hydra, older
waiting snapshots are replaced (and counted as dropped): every snapshot is a
full graph, so only the newest matters. When the database is down the newest
snapshot is kept and retried, so nothing is lost when it comes back.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from heracles_ros.errors import DatabaseUnavailable, HeraclesError, SceneError, SuspectSnapshot
from heracles_ros.graphdb.mirror import Mirror, ReconcileReport
from heracles_ros.scene.io import SnapshotDecoder, load_scene

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    payload: bytes
    sequence: int = -1
    full_update: bool = True
    received_s: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class MirrorState:
    """What the status message reports (fields as in msg/MirrorStatus.msg)."""

    sequence: int = -1
    nodes: int = 0
    edges: int = 0
    nodes_added: int = 0
    nodes_changed: int = 0
    nodes_removed: int = 0
    edges_added: int = 0
    edges_removed: int = 0
    last_latency_s: float = 0.0
    snapshots_received: int = 0
    snapshots_applied: int = 0
    snapshots_dropped: int = 0
    suspect_held: bool = False
    corrections_active: int = 0
    corrections_retired: tuple[str, ...] = ()
    last_error: str = ""


class MirrorLoop:
    """Owns the worker thread that applies snapshots to a :class:`Mirror`."""

    def __init__(
        self,
        mirror: Mirror,
        *,
        on_state: Callable[[MirrorState], None] = lambda state: None,
        retry_period_s: float = 2.0,
    ):
        self.mirror = mirror
        self.on_state = on_state
        self.retry_period_s = retry_period_s
        self._decoder = SnapshotDecoder()
        self._state = MirrorState()
        self._pending: Snapshot | None = None
        self._wake = threading.Condition()
        self._stopping = False
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="dsg-mirror", daemon=True)

    # -- control ----------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def state(self) -> MirrorState:
        return self._state

    def submit(self, snapshot: Snapshot) -> None:
        """Hand over a snapshot (returns at once); a waiting older one is dropped."""
        with self._wake:
            dropped = self._pending is not None
            self._pending = snapshot
            self._idle.clear()
            self._update(
                snapshots_received=self._state.snapshots_received + 1,
                snapshots_dropped=self._state.snapshots_dropped + int(dropped),
            )
            self._wake.notify_all()

    def load_file(self, path: str) -> ReconcileReport:
        """Mirror a scene file now (the node's ``scene_file`` parameter), in the caller's thread."""
        started = time.monotonic()
        report = self.mirror.reconcile(load_scene(path), force=True)
        self._applied(report, sequence=self._state.sequence, started=started)
        return report

    def wait_idle(self, timeout_s: float) -> bool:
        """True once every submitted snapshot has been handled (for tests and shutdown)."""
        return self._idle.wait(timeout_s)

    # -- worker ---------------------------------------------------------------------
    def _run(self) -> None:
        retry: Snapshot | None = None
        while True:
            with self._wake:
                if self._pending is None and not self._stopping:
                    self._wake.wait(self.retry_period_s if retry else None)
                if self._stopping:
                    return
                snapshot, self._pending = self._pending, None
            snapshot = snapshot or retry
            if snapshot is None:
                self._idle.set()
                continue
            retry = None
            try:
                self._apply(snapshot)
            except DatabaseUnavailable as exc:
                retry = snapshot  # keep the newest; try again when the database answers
                self._fail(f"database unavailable, will retry every {self.retry_period_s:g} s: {exc}", snapshot)
            except SuspectSnapshot as exc:
                self._fail(str(exc), snapshot, suspect_held=True)
            except SceneError as exc:
                self._fail(str(exc), snapshot)
            except HeraclesError as exc:
                self._fail(f"mirror failed: {exc}", snapshot)
            except Exception as exc:  # keep the worker alive whatever happens; the error is reported
                log.exception("unexpected error while mirroring snapshot %d", snapshot.sequence)
                self._fail(f"unexpected error: {exc!r}", snapshot)
            with self._wake:
                if self._pending is None and retry is None:
                    self._idle.set()

    def _apply(self, snapshot: Snapshot) -> None:
        if not snapshot.full_update:
            raise SceneError(
                f"snapshot {snapshot.sequence} is incremental (full_update=false); the mirror needs full "
                "snapshots (Hydra's default), so it was ignored"
            )
        graph = self._decoder.decode(snapshot.payload)
        report = self.mirror.reconcile(graph, sequence=snapshot.sequence)
        self._applied(report, sequence=snapshot.sequence, started=snapshot.received_s)

    def _applied(self, report: ReconcileReport, *, sequence: int, started: float) -> None:
        active = len(self.mirror.corrections.active())
        self._update(
            sequence=sequence,
            nodes=report.nodes,
            edges=report.edges,
            nodes_added=report.nodes_added,
            nodes_changed=report.nodes_changed,
            nodes_removed=report.nodes_removed,
            edges_added=report.edges_added,
            edges_removed=report.edges_removed,
            last_latency_s=time.monotonic() - started,
            snapshots_applied=self._state.snapshots_applied + 1,
            suspect_held=False,
            corrections_active=active,
            corrections_retired=tuple(report.corrections_retired),
            last_error="",
        )
        if report.corrections_retired:
            log.warning("corrections retired, their nodes disappeared: %s", ", ".join(report.corrections_retired))

    def _fail(self, message: str, snapshot: Snapshot, *, suspect_held: bool = False) -> None:
        log.error("snapshot %d not applied: %s", snapshot.sequence, message)
        self._update(sequence=snapshot.sequence, last_error=message, suspect_held=suspect_held)

    def _update(self, **changes: object) -> None:
        self._state = replace(self._state, **changes)  # type: ignore[arg-type]
        try:
            self.on_state(self._state)
        except Exception:  # a failing status publisher must not stop the mirror
            log.exception("status callback failed")
