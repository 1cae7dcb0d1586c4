"""Feed snapshots to the mirror from a worker thread, newest first, never queueing without bound.

The ROS callback only drops the payload into a one-slot mailbox and returns;
the worker decodes and reconciles. When the mirror is slower than Hydra, older
waiting snapshots are replaced (and counted as dropped): every snapshot is a
full graph, so only the newest matters. When the database is down the newest
snapshot is kept and retried, so nothing is lost when it comes back. The
snapshots' sequence numbers tell of those the transport lost or reordered
(:mod:`.sequence_gaps`): counted, reported, and a late one is not applied.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from heracles_ros.errors import DatabaseUnavailable, HeraclesError, SceneError, SuspectSnapshot
from heracles_ros.mirror.reconcile import Mirror, ReconcileReport
from heracles_ros.mirror.sequence_gaps import SequenceWatch
from heracles_ros.scene.io import DEFAULT_MAX_SNAPSHOT_BYTES, SnapshotDecoder, load_scene

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    """One DsgUpdate as received: the spark_dsg payload and its header fields."""

    payload: bytes
    sequence: int = -1
    full_update: bool = True
    #: The DsgUpdate header stamp, seconds since the epoch (None: the time it is applied).
    stamp_s: float | None = None
    received_s: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class SceneFile:
    """A request to mirror a scene file (applied even if it shrinks the mirror: the operator chose it)."""

    path: str
    received_s: float = field(default_factory=time.monotonic)


Work = Snapshot | SceneFile


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
    snapshots_missed: int = 0
    snapshots_late: int = 0
    gaps_detectable: bool = False
    last_gap: str = ""
    suspect_held: bool = False
    corrections_active: int = 0
    corrections_retired: tuple[str, ...] = ()
    last_error: str = ""


#: The MirrorState fields a reconcile sets from its report, by the same names.
REPORTED_FIELDS = (
    "nodes", "edges", "nodes_added", "nodes_changed", "nodes_removed", "edges_added", "edges_removed",
    "corrections_retired",
)


def report_counts(report: ReconcileReport) -> dict[str, Any]:
    """What one reconcile wrote and what the mirror holds after it, as MirrorState fields."""
    counts: dict[str, Any] = {name: getattr(report, name) for name in REPORTED_FIELDS}
    counts["corrections_retired"] = tuple(report.corrections_retired)
    return counts


class MirrorLoop:
    """Owns the worker thread that applies snapshots to a :class:`Mirror`.

    ``on_state`` is called from the worker thread after every piece of work
    handled (applied, rejected, held back or failed), and from :meth:`submit`
    for a snapshot refused as late, with the new state.
    ``reconnect`` is called before each retry after the database was
    unavailable (e.g. to find an embedded server that came back on a new port).
    """

    def __init__(
        self,
        mirror: Mirror,
        *,
        on_state: Callable[[MirrorState], None] = lambda state: None,
        retry_period_s: float = 2.0,
        reconnect: Callable[[], None] = lambda: None,
        max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES,
    ):
        self.mirror = mirror
        self.on_state = on_state
        self.retry_period_s = retry_period_s
        self.reconnect = reconnect
        self.max_snapshot_bytes = max_snapshot_bytes
        self._decoder = SnapshotDecoder(max_snapshot_bytes)
        self._state = MirrorState()
        self._state_lock = threading.Lock()
        self._pending: Work | None = None
        self._sequences = SequenceWatch()
        self._sequence_lock = threading.Lock()
        #: Set at a gap: the next snapshot is decoded whole, not compared with the one applied last.
        self._whole_next = threading.Event()
        self._wake = threading.Condition()
        self._stopping = False
        self._idle = threading.Event()
        self._idle.set()
        #: Held while the worker talks to the database: others sharing the mirror's store take it
        #: so that nothing of this process sends a command (on a fresh connection, whose first
        #: command during a long MULTI/EXEC crashes the embedded server) into a reconcile.
        #: docs/known-issues.md#redis-loading-in-exec
        self.database_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="dsg-mirror", daemon=True)

    # -- control ----------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the work in hand (a reconcile is not interrupted half-way)."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def state(self) -> MirrorState:
        with self._state_lock:
            return self._state

    def submit(self, snapshot: Snapshot) -> None:
        """Hand over a snapshot (returns at once); a waiting older one is dropped, a late one refused."""
        with self._sequence_lock:  # the transport's order, whichever thread delivers
            verdict = self._sequences.see(snapshot.sequence)
            if verdict.missed:
                self._whole_next.set()
            if verdict.apply:
                self._put(snapshot)
            late = {} if verdict.apply else {"sequence": snapshot.sequence}  # handled: refused, as a bad one is
            self._update(publish=not verdict.apply, received=1, missed=verdict.missed, late=int(not verdict.apply),
                         gaps_detectable=verdict.detectable, last_gap=verdict.note or self.state.last_gap, **late)
        if verdict.note:
            log.warning("%s", verdict.note)

    def submit_file(self, path: str | Path) -> None:
        """Mirror a scene file in the worker (the node's ``scene_file`` parameter)."""
        self._put(SceneFile(str(path)))

    def wait_idle(self, timeout_s: float) -> bool:
        """True once every submitted piece of work has been handled (for tests and shutdown).

        Work kept for a retry (database down) counts as not handled.
        """
        return self._idle.wait(timeout_s)

    # -- worker ---------------------------------------------------------------------
    def _put(self, work: Work) -> None:
        with self._wake:
            dropped = isinstance(self._pending, Snapshot)
            self._pending = work
            self._idle.clear()
            self._wake.notify_all()
        if dropped:
            self._update(publish=False, dropped=1)

    def _run(self) -> None:
        retry: Work | None = None
        while True:
            with self._wake:
                if self._pending is None and not self._stopping:
                    self._wake.wait(self.retry_period_s if retry else None)
                if self._stopping:
                    return
                work, self._pending = self._pending, None
            work = work or retry  # a newer snapshot supersedes the one waiting for a retry
            if work is None:
                self._idle.set()
                continue
            try:
                with self.database_lock:
                    if retry is not None:
                        retry = None
                        self.reconnect()
                    self._apply(work)
            except DatabaseUnavailable as exc:
                retry = work  # keep the newest; try again when the database answers
                self._fail(f"database unavailable, will retry every {self.retry_period_s:g} s: {exc}", work)
            except SuspectSnapshot as exc:
                self._fail(str(exc), work, suspect_held=True)
            except SceneError as exc:
                self._fail(str(exc), work)
            except HeraclesError as exc:
                self._fail(f"mirror failed: {exc}", work)
            except Exception as exc:  # keep the worker alive whatever happens; the error is reported
                log.exception("unexpected error while mirroring %s", _describe(work))
                self._fail(f"unexpected error: {exc!r}", work)
            with self._wake:
                if self._pending is None and retry is None:
                    self._idle.set()

    def _apply(self, work: Work) -> None:
        if isinstance(work, SceneFile):
            scene = load_scene(work.path, max_bytes=self.max_snapshot_bytes)
            report = self.mirror.reconcile(scene, force=True, stamp_s=_file_time(work.path))
            log.info("mirrored scene file %s: %d nodes, %d edges", work.path, report.nodes, report.edges)
            self._applied(report, sequence=self.state.sequence, started=work.received_s)
            return
        if not work.full_update:
            raise SceneError(
                f"snapshot {work.sequence} is incremental (full_update=false); the mirror needs full "
                "snapshots (Hydra's default), so it was ignored"
            )
        whole = self._whole_next.is_set()
        self._whole_next.clear()
        report = self.mirror.reconcile_payload(work.payload, self._decoder, sequence=work.sequence,
                                               stamp_s=work.stamp_s, compare=not whole)
        self._applied(report, sequence=work.sequence, started=work.received_s)

    def _applied(self, report: ReconcileReport, *, sequence: int, started: float) -> None:
        active = len(self.mirror.corrections.active())
        self._update(
            applied=1,
            sequence=sequence,
            **report_counts(report),
            last_latency_s=time.monotonic() - started,
            suspect_held=False,
            corrections_active=active,
            last_error="",
        )
        if report.corrections_retired:
            log.warning("corrections retired, their nodes disappeared: %s", ", ".join(report.corrections_retired))

    def _fail(self, message: str, work: Work, *, suspect_held: bool = False) -> None:
        log.error("%s not applied: %s", _describe(work), message)
        sequence = work.sequence if isinstance(work, Snapshot) else self.state.sequence
        self._update(sequence=sequence, last_error=message, suspect_held=suspect_held)

    def _update(
        self, *, publish: bool = True, received: int = 0, applied: int = 0, dropped: int = 0, missed: int = 0,
        late: int = 0, **changes: object
    ) -> None:
        with self._state_lock:
            state = self._state
            self._state = replace(
                state,
                snapshots_received=state.snapshots_received + received,
                snapshots_applied=state.snapshots_applied + applied,
                snapshots_dropped=state.snapshots_dropped + dropped,
                snapshots_missed=state.snapshots_missed + missed,
                snapshots_late=state.snapshots_late + late,
                **changes,  # type: ignore[arg-type]
            )
            state = self._state
        if not publish:
            return
        try:
            self.on_state(state)
        except Exception:  # a failing status publisher must not stop the mirror
            log.exception("status callback failed")


def _file_time(path: str) -> float | None:
    try:
        return Path(path).stat().st_mtime
    except OSError:
        return None  # load_scene has said what is wrong with the path


def _describe(work: Work) -> str:
    return f"scene file {work.path}" if isinstance(work, SceneFile) else f"snapshot {work.sequence}"
