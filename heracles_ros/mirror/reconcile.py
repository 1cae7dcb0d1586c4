"""Keep the database equal to the newest scene graph by writing only differences.

The mirror remembers what it last wrote (its baseline, read back from the
database at start and after any failure, so the database stays the truth),
diffs each new snapshot against it, and sends batched MERGE/SET and DELETE
statements for what changed (CREATE into a layer the database holds none of,
as on a first load). It never wipes the database and never touches nodes it
does not own (robot state, corrections, the operator's additions, bookkeeping). Another writer's change
(its bump of the mirror generation), a ``heracles db reset`` or a restore leaves
another token on the MirrorMeta node than the one the mirror wrote last: it then
reads the database again, and when that happened during its own reconcile it
writes the whole snapshot again at once. A
reconcile that changes anything is bracketed by ``writing`` on the MirrorMeta
node and the generation bump, so readers can see the scene before or after it,
never between (:mod:`.snapshot_reads`).
"""
from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import spark_dsg as dsg

from heracles_ros.errors import DatabaseError, SuspectSnapshot
from heracles_ros.graphdb.cypher import mirror as q
from heracles_ros.graphdb.point_functions import ensure_point_functions
from heracles_ros.graphdb.store import GraphStore, Params
from heracles_ros.mirror import place_changes
from heracles_ros.mirror.additions import AdditionSettings
from heracles_ros.mirror.baseline import read_baseline
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.features import FeatureWriter
from heracles_ros.mirror.history import ChangeEvent, History, HistorySettings
from heracles_ros.mirror.indexes import ensure_indexes
from heracles_ros.mirror.payload_diff import AppliedPayload, payload_diff
from heracles_ros.mirror.scene_diff import SceneDiff, empty_layers, scene_diff, touches, within
from heracles_ros.mirror.snapshot_reads import read_stamp
from heracles_ros.scene.io import SnapshotDecoder
from heracles_ros.scene.tables import (
    NodeRow,
    SceneTables,
    extract_tables,
    group_edges,
    symbol_of,
)
from heracles_ros.schema import Layer

log = logging.getLogger(__name__)

#: Statements per transaction of a large diff: one, so the client builds and encodes the next
#: while the server runs it (measured on the kilometre-scale scene: 1 and 2 alike, 8 slower).
_STATEMENTS_PER_TRANSACTION = 1
#: Rows a diff may write in one transaction (a 1 % change of the kilometre-scale scene is ~800
#: rows; a first load of it is ~100,000 and goes in phases). What readers see does not depend on
#: it (FalkorDB's reader threads run between the statements of a MULTI/EXEC anyway:
#: docs/known-issues.md#falkordb-readers-inside-multi-exec): they wait
#: for the reconcile's end through snapshot_reads; it keeps a failed small diff all-or-nothing on Neo4j.
ATOMIC_ROWS = 20_000


@dataclass
class ReconcileReport:
    """What one reconcile found and wrote, and how long each stage took."""

    nodes_added: int = 0
    nodes_changed: int = 0
    nodes_removed: int = 0
    edges_added: int = 0
    edges_removed: int = 0
    #: Totals the database mirrors after this reconcile: nodes, scene edges, and the relationships
    #: they are stored as (connectivity edges are stored in both directions, so count twice).
    nodes: int = 0
    edges: int = 0
    relationships: int = 0
    corrections_reapplied: int = 0
    corrections_retired: list[str] = field(default_factory=list)
    #: The operator's additions a perceived object of their class replaced in this snapshot.
    additions_replaced: list[str] = field(default_factory=list)
    generation: int = 0
    #: Events the history recorded for this snapshot (empty when history is off).
    changes: list[ChangeEvent] = field(default_factory=list)
    #: Seconds: extract, read_baseline, diff, write, corrections, history, total.
    timings: dict[str, float] = field(default_factory=dict)
    #: Someone else reset, restored or wrote the graph while this reconcile ran (it is redone).
    interfered: bool = False

    @property
    def writes(self) -> int:
        return self.nodes_added + self.nodes_changed + self.nodes_removed + self.edges_added + self.edges_removed


class Mirror:
    """Reconcile one graph store to successive scene graphs.

    ``suspect_fraction``: a snapshot that would remove more than this share of
    the mirrored nodes (e.g. an empty graph from a restarting Hydra) raises
    SuspectSnapshot instead of being applied, unless ``allow_mass_removal``.
    A diff of at most ``atomic_rows`` rows is written in one transaction (see
    ATOMIC_ROWS for what readers see); a larger one (a first load) in phases.
    """

    def __init__(
        self,
        store: GraphStore,
        *,
        batch_size: int = 5000,
        suspect_fraction: float = 0.5,
        suspect_min_nodes: int = 20,
        allow_mass_removal: bool = False,
        atomic_rows: int = ATOMIC_ROWS,
        history: HistorySettings | None = None,
        additions: AdditionSettings | None = None,
    ):
        self.store = store
        self.batch_size = batch_size
        self.atomic_rows = atomic_rows
        self.suspect_fraction = suspect_fraction
        self.suspect_min_nodes = suspect_min_nodes
        self.allow_mass_removal = allow_mass_removal
        self.corrections = Corrections(store, additions)
        self.history = History(store, history)
        self.features = FeatureWriter()
        self._baseline: SceneTables | None = None
        #: The payload ``_baseline`` was extracted from (None: it was read from the database, or came from a graph
        #: or tables): the next payload is compared with it.
        self._applied: AppliedPayload | None = None
        #: The MirrorMeta token this instance wrote last. Whoever else writes the node (a second mirror,
        #: ``heracles load``), deletes it (``heracles db reset``) or brings back an older one (a
        #: restore) leaves another token, which makes the cached baseline stale.
        self._token: str | None = None
        self._schema_ready = False

    # -- public -------------------------------------------------------------
    def reconcile(
        self,
        scene: dsg.DynamicSceneGraph | SceneTables,
        *,
        sequence: int = -1,
        force: bool = False,
        stamp_s: float | None = None,
    ) -> ReconcileReport:
        """Make the database mirror ``scene``; ``force`` applies a suspect snapshot anyway.

        ``stamp_s`` is the snapshot's time for the history (seconds since the
        epoch; default: now).

        The cyclic garbage collector is paused meanwhile: a reconcile allocates
        tens of thousands of rows and no cycles, and the collections those
        allocations would trigger cost about 5 % of a reconcile.
        """
        with _gc_paused():
            started = time.perf_counter()
            tables = scene if isinstance(scene, SceneTables) else extract_tables(scene)
            incoming = _Incoming(tables=tables, extract_s=time.perf_counter() - started)
            return self._apply(incoming, sequence=sequence, force=force, stamp_s=stamp_s)

    def reconcile_payload(
        self,
        payload: bytes,
        decoder: SnapshotDecoder,
        *,
        sequence: int = -1,
        force: bool = False,
        stamp_s: float | None = None,
        compare: bool = True,
    ) -> ReconcileReport:
        """Make the database mirror a snapshot's spark_dsg payload (SceneDecodeError if it is not one).

        While the baseline is the tables of the payload applied last, ``payload`` is compared with that one
        (:mod:`.payload_diff`): only what differs is decoded. Otherwise, or with ``compare`` false (after a
        gap in the snapshots' numbers), ``decoder`` decodes it whole.
        """
        with _gc_paused():
            incoming = _Incoming(payload=decoder.admit(payload), decoder=decoder, compare=compare)
            return self._apply(incoming, sequence=sequence, force=force, stamp_s=stamp_s)

    def _apply(
        self, incoming: _Incoming, *, sequence: int, force: bool, stamp_s: float | None
    ) -> ReconcileReport:
        stamp = time.time() if stamp_s is None else stamp_s
        report = self._reconcile(incoming, sequence=sequence, force=force, stamp_s=stamp)
        if report.interfered:  # once: the whole snapshot again, over whatever the other writer left
            log.warning("the mirrored graph was reset, restored or written by someone else during this "
                        "reconcile; writing the whole snapshot again")
            report = self._reconcile(incoming, sequence=sequence, force=force, stamp_s=stamp)
        report.timings["extract"] = incoming.extract_s
        report.timings["total"] = report.timings.get("total", 0.0) + incoming.extract_s
        return report

    def _reconcile(
        self, incoming: _Incoming, *, sequence: int, force: bool, stamp_s: float
    ) -> ReconcileReport:
        started = time.perf_counter()
        report = ReconcileReport()
        try:
            self._ensure_schema()
            token = self._db_token()
            baseline, from_db = self._current_baseline(token)
            # Read back over a reconcile stopped half-way: what it wrote is in no entry of the place-change log.
            unlogged = from_db and read_stamp(self.store).writing
            # Only a baseline read just now may vouch that a layer is empty (another writer could
            # have added nodes since an older one).
            empty = empty_layers(baseline) if from_db else frozenset()
            t_diff0 = time.perf_counter()
            extracted_before = incoming.extract_s
            diff = incoming.diff(baseline, self._applied, from_db=from_db)
            extracting = incoming.extract_s - extracted_before  # a payload is read here (reported apart)
            tables = incoming.tables
            assert tables is not None
            t_diff = time.perf_counter()
            replaces = self._replaces(baseline, diff, token, force=force)
            if diff.any:  # readers wait from here until the generation bump (snapshot_reads)
                self.store.write(q.BEGIN_UPDATE)
            self._write(diff, empty_layers=empty, whole=replaces)
            self.features.write(self.store, tables, reread=from_db)
            t_write = time.perf_counter()
            touched = {symbol_of(i) for i in diff.upserted_ids}
            gone = [symbol_of(i) for i in diff.removed_nodes]
            report.corrections_reapplied, report.corrections_retired = self.corrections.after_reconcile(
                touched=touched, removed=gone, sequence=sequence, stamp_s=stamp_s
            )
            report.additions_replaced = self.corrections.additions.after_reconcile(touched=touched, stamp_s=stamp_s)
            t_corrections = time.perf_counter()
            report.changes = self.history.record(
                baseline, tables, added=diff.added_nodes, changed=diff.changed_nodes, removed=diff.removed_nodes,
                stamp_s=stamp_s, sequence=sequence,
            )
            bumps = diff.any or self._baseline is None
            if bumps:  # what the generation changed in the place graph, for its readers' caches
                place_changes.record(self.store, diff, token, whole=replaces or unlogged)
            if bumps and self._bumped_over_another(report, token, sequence):
                return report
        except DatabaseError:
            self._forget_baseline()  # re-read the truth next time: part of the diff may have landed
            raise
        self._baseline, self._applied = tables, incoming.applied
        _count(report, diff, tables)
        end = time.perf_counter()
        report.timings = {
            "read_baseline": t_diff0 - started,
            "diff": t_diff - t_diff0 - extracting,
            "write": t_write - t_diff,
            "corrections": t_corrections - t_write,
            "history": end - t_corrections,
            "total": end - started - extracting,
        }
        return report

    def _forget_baseline(self) -> None:
        """Read the database before the next diff (and decode the next payload whole)."""
        self._baseline = None
        self._applied = None
        self.history.forget()

    def _current_baseline(self, token: str | None) -> tuple[SceneTables, bool]:
        """The baseline to diff against, and whether it was read from the database just now (it is when none is
        kept, or when another writer's token says the kept one is stale)."""
        if self._baseline is not None and token != self._token:
            log.info("the mirrored graph was reset, restored or written by someone else; reading it again "
                     "before the diff")
            self._forget_baseline()
        if self._baseline is not None:
            return self._baseline, False
        return self.read_baseline(), True

    def _replaces(self, baseline: SceneTables, diff: SceneDiff, token: str | None, *, force: bool) -> bool:
        """Whether the snapshot replaces most of the mirror (a switch to another scene, or a restarting Hydra's
        empty graph); SuspectSnapshot, the baseline kept, unless forced or allowed."""
        removed = len(diff.removed_nodes)
        replaces = (len(baseline.nodes) >= self.suspect_min_nodes
                    and removed > self.suspect_fraction * len(baseline.nodes))
        if replaces and not (force or self.allow_mass_removal):
            self._baseline = baseline
            self._token = token
            raise SuspectSnapshot(
                f"snapshot would remove {removed} of {len(baseline.nodes)} mirrored nodes "
                f"(more than {self.suspect_fraction:.0%}); held back. Set allow_mass_removal "
                "(or send it again with force) if the scene really shrank."
            )
        return replaces

    def _bumped_over_another(self, report: ReconcileReport, token: str | None, sequence: int) -> bool:
        """Bump the generation (readers see the new scene from here); True when the token it replaced is not the
        one read before the diff: another writer reset, restored or wrote the graph meanwhile."""
        rows = self.store.write(q.BUMP_GENERATION, {"sequence": sequence, "now": time.time()})
        report.generation = int(rows[0]["generation"]) if rows else 0
        self._token = str(rows[0]["token"]) if rows else None
        if rows and rows[0]["previous"] != token:
            report.interfered = True
            self._forget_baseline()
            return True
        return False

    def read_baseline(self) -> SceneTables:
        """What the database mirrors now, in the diff's shape, corrected properties at Hydra's values
        (:func:`~heracles_ros.mirror.baseline.read_baseline`)."""
        return read_baseline(self.store, self.corrections.active())

    def use_store(self, store: GraphStore) -> None:
        """Write to ``store`` from now on (the server moved); its contents are read again before the next diff."""
        self.store = store
        self.corrections = Corrections(store, self.corrections.additions.settings)
        self.history.use_store(store)
        self._baseline = None
        self._applied = None
        self._schema_ready = False

    # -- internals -------------------------------------------------------------
    def _db_token(self) -> str | None:
        rows = self.store.query(q.READ_META)
        return str(rows[0]["token"]) if rows and rows[0]["token"] is not None else None

    def _ensure_schema(self) -> None:
        if self._schema_ready:
            return
        ensure_point_functions(self.store)
        ensure_indexes(self.store, [(layer.value, "nodeSymbol") for layer in Layer])
        self._schema_ready = True

    def _write(self, diff: SceneDiff, *, empty_layers: frozenset[Layer], whole: bool) -> None:
        """Send the diff as deletions, node upserts, then edges: in one transaction when it is small.

        A larger diff (a first load) goes as a stream of transactions in that
        order, the edge rows built while the server inserts the nodes. A diff that
        replaces the scene (``whole``: a switch to another scene, applied with force)
        goes in one transaction whatever its size, so the database, its files and a
        replica hold the old scene or the new one, never a mix, even if this process
        or the server dies mid-way; as a bulk write (the embedded server compacts after it).
        """
        deletions = self._deletions(diff)
        upserts = self._upserts(diff, empty_layers)
        if whole:
            self.store.write_batches([[*deletions, *upserts, *self._edges(diff)]], timeout_s=120)
        elif diff.rows_written <= self.atomic_rows:
            self.store.write_many([*deletions, *upserts, *self._edges(diff)], timeout_s=120)
        else:
            self.store.write_batches(_transactions(deletions, upserts, self._edges(diff)), timeout_s=120)

    def _deletions(self, diff: SceneDiff) -> list[tuple[str, Params]]:
        statements: list[tuple[str, Params]] = []
        removed = diff.removed_nodes
        # Edges whose end node goes away vanish with DETACH DELETE.
        kept = (e for e in diff.removed_edges if not touches(e, removed))
        for kind, rows in group_edges(kept, diff.old_rows).items():
            statements += self._batched(
                q.delete_edges(kind.source, kind.target, kind.relation, both_ways=kind.both_ways), rows
            )
        for gone_layer, symbols in _group_ids(removed, diff.old_rows).items():
            deletions = (q.delete_links(gone_layer, outgoing=True), q.delete_links(gone_layer, outgoing=False),
                         q.delete_nodes(gone_layer))
            statements += [(cypher, {"symbols": chunk}) for chunk in self._chunks(symbols) for cypher in deletions]
        return statements

    def _upserts(self, diff: SceneDiff, empty_layers: frozenset[Layer]) -> list[tuple[str, Params]]:
        """Nodes added to a layer that held no mirrored node when the baseline was read from the
        database (a first load) are CREATEd rather than MERGEd."""
        dialect = self.store.dialect
        statements: list[tuple[str, Params]] = []
        changed: dict[Layer, list[list[Any]]] = defaultdict(list)
        added: dict[Layer, list[list[Any]]] = defaultdict(list)
        rows_of = diff.rows
        for target, ids in ((changed, diff.changed_nodes), (added, diff.added_nodes)):
            for node_id in ids:
                row = rows_of[node_id]
                target[row[0]].append(node_params(node_id, row))
        for layer, rows in changed.items():
            statements += self._batched(q.upsert_nodes(dialect, layer), rows)
        for layer, rows in added.items():
            build = q.create_nodes if layer in empty_layers else q.upsert_nodes
            statements += self._batched(build(dialect, layer), rows)
        return statements

    def _edges(self, diff: SceneDiff) -> Iterator[tuple[str, Params]]:
        new_ids = diff.added_nodes
        fresh = [e for e in diff.added_edges if within(e, new_ids)]
        linking = [e for e in diff.added_edges if not within(e, new_ids)]
        for keys, build_edges in ((fresh, q.create_edges), (linking, q.merge_edges)):
            for kind, rows in group_edges(keys, diff.rows).items():
                yield from self._batched(
                    build_edges(kind.source, kind.target, kind.relation, both_ways=kind.both_ways), rows
                )

    def _batched(self, cypher: str, rows: list[Any]) -> list[tuple[str, Params]]:
        return [(cypher, {"rows": chunk}) for chunk in self._chunks(rows)]

    def _chunks(self, rows: list[Any]) -> Iterable[list[Any]]:
        for start in range(0, len(rows), self.batch_size):
            yield rows[start : start + self.batch_size]


@dataclass
class _Incoming:
    """A snapshot on its way in: its tables, or the payload they are read from (then, once read, the payload
    to keep for comparing the next one)."""

    tables: SceneTables | None = None
    payload: bytes = b""
    decoder: SnapshotDecoder | None = None
    compare: bool = True
    applied: AppliedPayload | None = None
    #: Seconds spent decoding and extracting (or comparing with the payload applied last).
    extract_s: float = 0.0

    def diff(self, baseline: SceneTables, applied: AppliedPayload | None, *, from_db: bool) -> SceneDiff:
        """The diff against ``baseline``; ``applied``: the payload it was extracted from, if any. A baseline read
        back from the database (``from_db``) carries 15 digits, not 17: floats are compared to 1e-12 then."""
        if self.tables is None:
            started = time.perf_counter()
            found = None
            if applied is not None and self.compare and not from_db:
                found = payload_diff(applied, baseline, self.payload)
            if found is not None:
                self.tables, self.applied = found.tables, found.applied
                self.extract_s = time.perf_counter() - started
                return found.diff
            assert self.decoder is not None
            self.tables = extract_tables(self.decoder.decode(self.payload))
            assert self.decoder.layout is not None
            self.applied = AppliedPayload(self.payload, self.decoder.layout)
            self.extract_s = time.perf_counter() - started
        return scene_diff(baseline, self.tables, tolerant=from_db)


def _count(report: ReconcileReport, diff: SceneDiff, tables: SceneTables) -> None:
    """What the reconcile wrote, and what the database mirrors after it."""
    report.nodes_added = len(diff.added_nodes)
    report.nodes_changed = len(diff.changed_nodes)
    report.nodes_removed = len(diff.removed_nodes)
    report.edges_added = len(diff.added_edges)
    report.edges_removed = len(diff.removed_edges)
    report.nodes = len(tables.nodes)
    report.edges = len(tables.edges)
    report.relationships = tables.relationships()


def _transactions(*phases: Iterable[tuple[str, Params]]) -> Iterator[list[tuple[str, Params]]]:
    """The phases' statements in order, a few per transaction (GraphStore.write_batches)."""
    batch: list[tuple[str, Params]] = []
    for phase in phases:
        for statement in phase:
            batch.append(statement)
            if len(batch) == _STATEMENTS_PER_TRANSACTION:
                yield batch
                batch = []
    if batch:
        yield batch


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def node_params(node_id: int, row: NodeRow) -> list[Any]:
    """Statement row of one node: [symbol, class, name, x, y, z] (+ bbox centre and size for objects)."""
    return [symbol_of(node_id), *row[1:]]


def _group_ids(ids: Iterable[int], rows: dict[int, NodeRow]) -> dict[Layer, list[str]]:
    groups: dict[Layer, list[str]] = defaultdict(list)
    for node_id in ids:
        row = rows.get(node_id)
        if row is not None:
            groups[row[0]].append(symbol_of(node_id))
    return groups
