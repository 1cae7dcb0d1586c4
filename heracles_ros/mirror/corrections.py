"""Operator corrections that outlive Hydra snapshots, and their management.

A correction ("O43.class is bag") is stored as a ``Correction`` node and set on
the target; the mirror calls :meth:`Corrections.after_reconcile` after every
write, which re-applies corrections to nodes the snapshot rewrote (keeping the
value Hydra gave as the one a revert gives back) and retires those whose node
disappeared. A retired correction returns with its node: one missed detection
must not undo what the operator said; the record keeps when and why it was
retired. Only narrow, typed property updates of existing nodes are accepted
(a coordinate within the mapped scene's box and :data:`EXTENT_MARGIN_M`),
and objects the operator says exist (checked and written by :mod:`.additions`,
whose records live in this overlay too: listed, reverted and cleared here).
Each record keeps who made it, from which request, and when; an operator can
list them, revert one (the node gets back the value Hydra gave it; a retired
one will not return) or clear them all.
"""
from __future__ import annotations

import builtins
import logging
import math
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import CorrectionError
from heracles_ros.graphdb.cypher import corrections as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.additions import Added, AdditionRecord, Additions, AdditionSettings, Existing, Removed
from heracles_ros.mirror.history import iso_time, record_time
from heracles_ros.mirror.symbols import symbol_layers
from heracles_ros.mirror.text_values import has_control, text_problem
from heracles_ros.outcomes import OverlayEventKind, RecordStatus
from heracles_ros.schema import ADDITION_PROPERTY, CORRECTABLE_PROPERTIES, Layer, is_scene_symbol

log = logging.getLogger(__name__)

#: The coordinate properties a correction may set.
_AXES = ("x", "y", "z")

#: Characters of the request text kept with a correction.
_MAX_REQUEST = 500
#: Nodes one answer may correct, unless the caller says otherwise: a model's answer touching more is more
#: likely a misreading of the request than what the operator meant.
MAX_NODES = 10
#: A coordinate correction must stay within the box the mapped scene spans, widened by this much on every side,
#: metres: room for an object at the edge of the map, none for a position that is no place at all (1.7e308).
EXTENT_MARGIN_M = 10.0


@dataclass(frozen=True)
class Change:
    """One property update as applied: ``old`` is what the node held before; ``new`` None when nothing was set
    (a retired correction withdrawn while its node is gone)."""

    symbol: str
    property: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.symbol}.{self.property}: {self.old!r} -> {self.new!r}"


@dataclass(frozen=True)
class Correction:
    """One correction record; ``status`` is active, retired (its node vanished; it returns with it) or reverted."""

    symbol: str
    property: str
    value: Any
    original: Any
    created_s: float
    status: RecordStatus
    author: str
    request: str
    updated_s: float
    #: The last retirement: the time of the snapshot that lacked the node, and why; and when the node came back.
    retired_s: float
    retired_why: str
    times_retired: int
    returned_s: float

    @builtins.property  # the field ``property`` shadows the builtin inside the class body
    def id(self) -> str:
        """``O43.class``: one record per node property, so the pair names it."""
        return f"{self.symbol}.{self.property}"

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "symbol": self.symbol, "property": self.property, "value": self.value,
                "original": self.original, "status": self.status.value, "author": self.author, "request": self.request,
                "created": record_time(self.created_s), "updated": record_time(self.updated_s),
                "retired": record_time(self.retired_s), "retired_why": self.retired_why,
                "times_retired": self.times_retired, "returned": record_time(self.returned_s)}


@dataclass(frozen=True)
class CorrectionEvent:
    """A correction's node left the scene (CORRECTION_RETIRED) or came back (CORRECTION_RETURNED), for the scene's
    history."""

    kind: OverlayEventKind
    correction: Correction
    t: float

    def to_json(self) -> dict[str, Any]:
        c = self.correction
        out = {"kind": self.kind.value, "symbol": c.symbol, "correction": c.id, "value": c.value,
               "status": c.status.value, "t": self.t, "time": iso_time(self.t)}
        if self.kind is OverlayEventKind.CORRECTION_RETIRED:
            out["why"] = c.retired_why
        return out

    def __str__(self) -> str:
        c = self.correction
        if self.kind is OverlayEventKind.CORRECTION_RETIRED:
            return f"correction {c.id} = {c.value!r} retired: {c.retired_why}"
        return f"correction {c.id} = {c.value!r} returned with its node"


@dataclass(frozen=True)
class Applied:
    """What one answer changed: property updates, objects added, and proposed objects that existed already."""

    changes: list[Change]
    added: list[Added]
    existing: list[Existing]

    def lines(self) -> list[str]:
        """One line per property update and per addition (what changed)."""
        return [str(item) for item in (*self.changes, *self.added)]


class Corrections:
    """The corrections overlay of one graph store (property corrections and the operator's additions)."""

    def __init__(self, store: GraphStore, additions: AdditionSettings | None = None):
        self.store = store
        self.additions = Additions(store, additions)

    def apply(
        self, changes: Sequence[Any], *, max_nodes: int = MAX_NODES, author: str = "operator", request: str = "",
    ) -> list[Change | Added]:
        """Validate every change (all problems reported at once), then store and apply them.

        ``changes`` is a model's answer list: (symbol, property, value) triples, and additions as dicts
        (``{"add": CLASS, "at": [x, y, z], "near": SYMBOL}``); :meth:`propose` also tells which proposed
        additions existed already.
        """
        triples = [item for item in changes if not isinstance(item, dict)]
        additions = [item for item in changes if isinstance(item, dict)]
        applied = self.propose(triples, additions, max_nodes=max_nodes, author=author, request=request)
        return [*applied.changes, *applied.added]

    def propose(
        self, changes: Sequence[Any], additions: Sequence[Any], *, max_nodes: int = MAX_NODES, author: str = "operator",
        request: str = "",
    ) -> Applied:
        """Property updates and additions of one answer: all checked (every problem reported at once), then
        all written, or none when anything is wrong."""
        problems, clean = self._validated(changes, max_nodes=max_nodes)
        addition_problems, to_add, existing = self.additions.check(additions)
        problems += addition_problems
        if not changes and not additions:
            problems.append("no change was proposed")
        if problems:
            raise CorrectionError("; ".join(problems))
        applied = self._store(clean, author=author, request=request) if clean else []
        added = self.additions.add(to_add, author=author, request=request)
        return Applied(applied, added, existing)

    def _validated(self, changes: Sequence[Any], *, max_nodes: int) -> tuple[list[str], list[tuple[str, str, Any]]]:
        problems: list[str] = []
        clean: list[tuple[str, str, Any]] = []
        for index, item in enumerate(changes):
            try:
                symbol, prop, value = item
            except (TypeError, ValueError):
                problems.append(f"change {index + 1} is not a (symbol, property, value) triple: {item!r}")
                continue
            problem, coerced = _check(symbol, prop, value)
            if problem:
                problems.append(problem)
            else:
                clean.append((symbol, prop, coerced))
        problems += self._outside_extent([(symbol, prop, value) for symbol, prop, value in clean
                                          if prop in _AXES])
        symbols = sorted({symbol for symbol, _, _ in clean})
        if len(symbols) > max_nodes:
            problems.append(f"a correction may touch at most {max_nodes} nodes; this one touches {len(symbols)}")
        missing = set(symbols) - self._existing(symbols)
        problems += [f"node {symbol} does not exist in the scene graph" for symbol in sorted(missing)]
        return problems, clean

    def _outside_extent(self, coordinates: list[tuple[str, str, float]]) -> list[str]:
        """A problem for each coordinate beyond the mapped scene's box and :data:`EXTENT_MARGIN_M`.

        The box is where Hydra put its nodes: a corrected node counts at the value Hydra gave it (the record's
        original) on its corrected axis, additions not at all; so no chain of corrections walks it away."""
        if not coordinates:
            return []
        corrected = [record for record in self.active() if record.property in _AXES]
        rows = self.store.query(q.SCENE_EXTENT, {"corrected": sorted({record.symbol for record in corrected})})
        problems = []
        for symbol, prop, value in coordinates:
            hydra = [float(r.original) for r in corrected if r.property == prop and _is_number(r.original)]
            lows = [row[f"min_{prop}"] for row in rows if row[f"min_{prop}"] is not None] + hydra
            highs = [row[f"max_{prop}"] for row in rows if row[f"max_{prop}"] is not None] + hydra
            if not lows:
                problems.append(f"{symbol}.{prop}: the scene graph has no positions yet to check {value:g} against")
                continue
            low, high = min(lows) - EXTENT_MARGIN_M, max(highs) + EXTENT_MARGIN_M
            if not low <= value <= high:
                problems.append(f"{symbol}.{prop}: {value:g} is outside the mapped scene ({prop} from {low:g} to "
                                f"{high:g} m, its extent and a {EXTENT_MARGIN_M:g} m margin)")
        return problems

    def _store(self, clean: list[tuple[str, str, Any]], *, author: str, request: str) -> list[Change]:
        now = time.time()
        applied: list[Change] = []
        for symbol, prop, value in clean:
            rows = self.store.query(q.NODE_PROPERTY, {"symbol": symbol, "property": prop})
            old = rows[0]["value"] if rows else None
            # The statement records ``original`` only when it creates the correction, so the
            # value Hydra gave is kept from the first correction of this property.
            self.store.write(
                q.UPSERT_CORRECTION,
                {"symbol": symbol, "property": prop, "value": value, "original": old, "now": now,
                 "author": author, "request": request[:_MAX_REQUEST]},
            )
            applied.append(Change(symbol, prop, old, value))
        self._set(clean)
        return applied

    def active(self) -> list[Correction]:
        return [_record(r) for r in self.store.query(q.ACTIVE_CORRECTIONS)]

    def all(self) -> list[Correction]:
        """Every record, active, retired and reverted, oldest first."""
        return [_record(r) for r in self.store.query(q.ALL_CORRECTIONS)]

    def events(self, *, since: float) -> list[CorrectionEvent]:
        """The last retirement and return of each record at or after ``since``, oldest first."""
        found = []
        for record in self.all():
            if record.retired_s and record.retired_s >= since:
                found.append(CorrectionEvent(OverlayEventKind.CORRECTION_RETIRED, record, record.retired_s))
            if record.returned_s and record.returned_s >= since:
                found.append(CorrectionEvent(OverlayEventKind.CORRECTION_RETURNED, record, record.returned_s))
        return sorted(found, key=lambda event: event.t)

    def counts(self) -> dict[str, int]:
        """Records per status."""
        return {str(r["status"]): int(r["n"]) for r in self.store.query(q.COUNT_BY_STATUS)}

    def revert(self, correction_id: str, *, author: str = "operator") -> Change | Removed:
        """Give the node back the value Hydra gave it; the record stays, reverted.

        A retired correction (its node is gone) is only marked reverted, so it
        does not return with its node; its change has no new value. An
        addition's id is its symbol (``A1``): reverting it removes the object.
        """
        symbol, prop = parse_id(correction_id)
        if prop == ADDITION_PROPERTY:
            return self.additions.revert(symbol, author=author)
        rows = self.store.query(q.ONE_CORRECTION, {"symbol": symbol, "property": prop})
        if not rows:
            raise CorrectionError(
                f"there is no correction {correction_id.strip()!r}; 'heracles corrections list' shows them"
            )
        record = _record(rows[0])
        if record.status is RecordStatus.REVERTED:
            raise CorrectionError(f"correction {record.id} is reverted (it was reverted before); there is nothing to "
                                  "revert")
        if record.status is RecordStatus.RETIRED:
            change = Change(record.symbol, record.property, record.value, None)
        else:
            change = self._restore(record)
        self.store.write(q.MARK_REVERTED, {"symbol": symbol, "property": prop, "now": time.time(), "author": author})
        return change

    def clear(self, *, author: str = "operator") -> list[Change | Removed]:
        """Revert every active correction and remove every active addition, then delete all records (the
        history goes too)."""
        changes: list[Change | Removed] = [self._restore(record) for record in self.active()]
        changes += self.additions.remove_all()
        self.store.write(q.DELETE_CORRECTIONS)
        if changes:
            log.info("%s cleared the corrections, reverted: %s", author, "; ".join(map(str, changes)))
        return changes

    def after_reconcile(
        self, *, touched: set[str], removed: Iterable[str], sequence: int, stamp_s: float | None = None
    ) -> tuple[int, list[str]]:
        """Retire corrections of removed nodes; re-apply those on rewritten nodes, retired ones included.

        ``sequence`` and ``stamp_s`` name the snapshot, for the record of a
        retirement. Returns (corrections re-applied, symbols whose corrections
        were retired).
        """
        now = time.time()
        stamp = now if stamp_s is None else stamp_s
        removed = list(removed)
        retired: list[str] = []
        if removed:
            number = f" {sequence}" if sequence >= 0 else ""
            snapshot = f"Hydra's snapshot{number} of {record_time(stamp)}"
            gone = self.store.write(
                q.RETIRE_CORRECTIONS, {"symbols": removed, "now": now, "stamp": stamp, "snapshot": snapshot}
            )
            retired = sorted(str(r["symbol"]) for r in gone)
        if not touched:
            return 0, retired
        due: dict[str, list[str]] = defaultdict(list)
        for row in self.store.query(q.LIVE_CORRECTIONS):
            if row["symbol"] in touched and row["property"] in CORRECTABLE_PROPERTIES:
                due[str(row["property"])].append(str(row["symbol"]))
        if not due:
            return 0, retired
        kinds = symbol_layers(self.store, [s for symbols in due.values() for s in symbols])
        rows: list[dict[str, Any]] = []
        for prop, symbols in due.items():
            by_layer: dict[Layer, list[str]] = defaultdict(list)
            for symbol in symbols:
                if symbol in kinds:
                    by_layer[kinds[symbol]].append(symbol)
            for layer, group in by_layer.items():
                params = {"symbols": group, "stamp": stamp, "now": now}
                rows += self.store.write(q.reapply_correction(layer, prop, self.store.dialect), params)
        returned = sorted({str(r["symbol"]) for r in rows if r["returning"]})
        if returned:
            log.info("corrections returned with their nodes: %s", ", ".join(returned))
        return len(rows), retired

    def records(self, *, active_only: bool = False) -> list[Correction | AdditionRecord]:
        """Property corrections and additions, oldest first (what ``heracles corrections list`` shows)."""
        found: list[Correction | AdditionRecord] = []
        found += self.active() if active_only else self.all()
        found += self.additions.active() if active_only else self.additions.all()
        return sorted(found, key=lambda record: record.created_s)

    def manage(self, action: str, correction_id: str = "", *, active_only: bool = False,
               author: str = "operator") -> tuple[list[Correction | AdditionRecord], list[Change | Removed]]:
        """``list`` | ``revert`` | ``clear`` by name (the ``corrections`` service): (records listed, changes made)."""
        action = action.strip().lower()
        if action == "list":
            return self.records(active_only=active_only), []
        if action == "revert":
            if not correction_id.strip():
                raise CorrectionError("revert needs the id of a correction, e.g. O14.class, or of an addition, "
                                      "e.g. A1")
            return [], [self.revert(correction_id, author=author)]
        if action == "clear":
            return [], self.clear(author=author)
        raise CorrectionError(f"unknown corrections action {action!r}; use list, revert or clear")

    # -- internals ---------------------------------------------------------------
    def _restore(self, record: Correction) -> Change:
        rows = self.store.query(q.NODE_PROPERTY, {"symbol": record.symbol, "property": record.property})
        current = rows[0]["value"] if rows else None
        if rows:
            self._set([(record.symbol, record.property, record.original)])
        return Change(record.symbol, record.property, current, record.original)

    def _set(self, changes: Iterable[tuple[str, str, Any]]) -> None:
        groups: dict[tuple[Layer, str], list[dict[str, Any]]] = defaultdict(list)
        changes = list(changes)
        kinds = symbol_layers(self.store, [symbol for symbol, _, _ in changes])
        for symbol, prop, value in changes:
            layer = kinds.get(symbol)
            if layer is not None:  # a node gone since it was read is left alone
                groups[(layer, prop)].append({"s": symbol, "v": value})
        statements = [
            (q.apply_correction(layer, prop, self.store.dialect), {"rows": rows})
            for (layer, prop), rows in groups.items()
        ]
        self.store.write_many(statements)

    def _existing(self, symbols: Sequence[str]) -> set[str]:
        return set(symbol_layers(self.store, symbols))


def parse_id(correction_id: str) -> tuple[str, str]:
    """``"O14.class"`` -> ("O14", "class"), matched exactly: no control characters, a known property;
    an addition's ``"A1"`` -> ("A1", "added")."""
    text = correction_id.strip() if isinstance(correction_id, str) else ""
    if has_control(text):
        raise CorrectionError(f"correction id {correction_id!r} contains a control character; ids are SYMBOL.PROPERTY, "
                              "e.g. O14.class")
    symbol, dot, prop = text.partition(".")
    if not dot and is_scene_symbol(symbol):
        return symbol, ADDITION_PROPERTY  # an addition's id is its symbol
    if not dot or not is_scene_symbol(symbol) or prop not in CORRECTABLE_PROPERTIES:
        raise CorrectionError(f"{correction_id!r} is not a correction id: expected SYMBOL.PROPERTY with a property "
                              f"among {', '.join(sorted(CORRECTABLE_PROPERTIES))}, e.g. O14.class, or the symbol "
                              "of an addition, e.g. A1")
    return symbol, prop


def _check(symbol: Any, prop: Any, value: Any) -> tuple[str, Any]:
    """('' , coerced value) when acceptable, else (problem, None)."""
    if not is_scene_symbol(symbol):
        return f"{symbol!r} is not a scene-graph node symbol (e.g. O12, P3, p4, R1)", None
    if prop not in CORRECTABLE_PROPERTIES:
        allowed = ", ".join(sorted(CORRECTABLE_PROPERTIES))
        return f"{symbol}.{prop}: property {prop!r} cannot be corrected (allowed: {allowed})", None
    expected = CORRECTABLE_PROPERTIES[prop]
    if expected is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{symbol}.{prop}: expected a number, got {value!r}", None
        if not math.isfinite(value):
            return f"{symbol}.{prop}: expected a finite number, got {value!r}", None
        return "", float(value)
    problem = text_problem(value, what=f"{symbol}.{prop}")
    return (problem, None) if problem else ("", value.strip())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _record(row: dict[str, Any]) -> Correction:
    return Correction(
        symbol=str(row["symbol"]), property=str(row["property"]), value=row["value"], original=row["original"],
        created_s=float(row["created_s"]), status=RecordStatus(row["status"]), author=str(row["author"]),
        request=str(row["request"]), updated_s=float(row["updated_s"]),
        # Set by the first retirement only:
        retired_s=float(row.get("retired_s") or 0.0),
        retired_why=str(row.get("retired_why") or ""), times_retired=int(row.get("times_retired") or 0),
        returned_s=float(row.get("returned_s") or 0.0),
    )


def operator_name() -> str:
    """Who runs this process, for the record of a correction made from a shell."""
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "unknown user"
