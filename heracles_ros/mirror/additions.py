"""Objects the operator says exist that perception has not mapped ("there is a fire hydrant by the rock").

The model proposes ``{"add": CLASS, "at": [x, y, z], "near": SYMBOL}``; this module, not the model,
decides what enters the graph: a clean class label, finite coordinates within a bounded distance of
``near`` and of a connected place (the mapped area), and no object of the same class already within
the merge radius (then nothing is added and the answer names the one that exists). An accepted
addition gets a symbol Hydra never emits (``A1``...), becomes an ``Object`` contained by its
nearest connected place (so in that place's room, as Hydra's objects are), and carries who added
it, when, from which request, and ``source: operator``. Its record lives in the corrections
overlay, so it outlasts Hydra's snapshots (the mirror leaves operator objects out of its baseline;
after each snapshot they are linked again when it took their place away, and written back when a
database reset took them) until a perceived object of the same class turns up within the merge
radius: then the addition is retired in favour of it, the record keeping ``replaced_by``.
"""
from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from heracles_ros.errors import CorrectionError, DatabaseError
from heracles_ros.graphdb.cypher import additions as q
from heracles_ros.graphdb.store import GraphStore, Params
from heracles_ros.mirror.history import iso_time
from heracles_ros.mirror.text_values import text_problem
from heracles_ros.schema import ADDITION_PREFIX, SCENE_SYMBOL, Layer, is_scene_symbol

log = logging.getLogger(__name__)

#: Coordinates beyond this (metres from the map origin) are refused outright.
MAX_COORDINATE_M = 100_000.0
#: Characters of the request text kept with an addition.
_MAX_REQUEST = 500

Point = tuple[float, float, float]


@dataclass(frozen=True)
class AdditionSettings:
    """Bounds on what an operator may add (parameters of the language server and the mirror)."""

    #: Farthest an addition may stand from the node it was placed by (``near``).
    max_distance_m: float = 5.0
    #: Farthest it may stand from a connected place: the edge of the mapped area.
    max_place_distance_m: float = 3.0
    #: An object of the same class this close is the same object (no duplicate; perception replaces it).
    merge_radius_m: float = 1.0
    #: Additions one answer may propose.
    max_per_request: int = 10


@dataclass(frozen=True)
class Proposal:
    """One addition as the model proposed it, checked for shape (class text, finite position)."""

    cls: str
    at: Point
    near: str = ""


@dataclass(frozen=True)
class Added:
    """An addition as applied: its new symbol and what it is linked to."""

    symbol: str
    cls: str
    at: Point
    place: str
    room: str
    near: str = ""

    def __str__(self) -> str:
        near = f" near {self.near}" if self.near else ""
        room = f", room {self.room}" if self.room else ""
        return f"{self.symbol} added: {self.cls!r} at {_xyz(self.at)}{near} (place {self.place}{room})"


@dataclass(frozen=True)
class Existing:
    """A proposed addition that an object already in the graph is (nothing added)."""

    cls: str
    at: Point
    symbol: str
    existing_class: str
    distance_m: float

    def __str__(self) -> str:
        return (f"{self.cls!r} at {_xyz(self.at)} exists already: {self.symbol} ({self.existing_class}), "
                f"{self.distance_m:.2f} m away; nothing added")


@dataclass(frozen=True)
class Removed:
    """An addition taken out of the scene by the operator (revert or clear)."""

    symbol: str
    cls: str

    def __str__(self) -> str:
        return f"{self.symbol} ({self.cls!r}, added by the operator) removed"


@dataclass(frozen=True)
class AdditionRecord:
    """The overlay's record of one addition; ``status`` active | retired (replaced by a perceived object) |
    reverted. Its id is its symbol."""

    symbol: str
    cls: str
    at: Point
    near: str
    place: str
    room: str
    status: str
    author: str
    request: str
    created_s: float
    updated_s: float = 0.0
    retired_s: float = 0.0
    replaced_by: str = ""
    retired_why: str = ""
    #: The token that claimed the symbol (what lets the node be written back after a reset).
    claim: str = ""

    @property
    def id(self) -> str:
        return self.symbol

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "symbol": self.symbol, "kind": "addition", "property": q.ADDED, "value": self.cls,
                "class": self.cls, "position": list(self.at), "near": self.near, "place": self.place,
                "room": self.room, "source": q.OPERATOR, "status": self.status, "author": self.author,
                "request": self.request, "created": _iso(self.created_s), "updated": _iso(self.updated_s),
                "retired": _iso(self.retired_s), "replaced_by": self.replaced_by, "retired_why": self.retired_why}


@dataclass(frozen=True)
class AdditionEvent:
    """For the scene's history: an operator added an object, or a perceived one replaced it."""

    kind: str  # "added" | "replaced"
    record: AdditionRecord
    t: float

    def to_json(self) -> dict[str, Any]:
        r = self.record
        out = {"kind": f"addition {self.kind}", "symbol": r.symbol, "class": r.cls, "position": list(r.at),
               "author": r.author, "source": q.OPERATOR, "room": r.room, "status": r.status, "t": self.t,
               "time": iso_time(self.t), "text": str(self)}
        if self.kind == "replaced":
            out["replaced_by"] = r.replaced_by
            out["why"] = r.retired_why
        return out

    def __str__(self) -> str:
        r = self.record
        if self.kind == "replaced":
            return f"addition {r.symbol} ({r.cls}) retired, replaced by {r.replaced_by}: {r.retired_why}"
        return f"addition {r.symbol} ({r.cls}) added by {r.author or 'the operator'} at {_xyz(r.at)}"


@dataclass(frozen=True)
class _Checked:
    proposal: Proposal
    place: str
    place_layer: Layer
    room: str


class Additions:
    """The operator additions of one graph store."""

    def __init__(self, store: GraphStore, settings: AdditionSettings | None = None):
        self.store = store
        self.settings = settings or AdditionSettings()

    # -- checking and applying ---------------------------------------------------------
    def check(self, proposals: Sequence[Any]) -> tuple[list[str], list[_Checked], list[Existing]]:
        """(problems, additions to make, proposals that exist already); nothing is written."""
        problems: list[str] = []
        limit = self.settings.max_per_request
        if len(proposals) > limit:
            return [f"an answer may add at most {limit} objects; this one proposes {len(proposals)}"], [], []
        shaped: list[tuple[int, Proposal]] = []
        for index, item in enumerate(proposals, start=1):
            problem, proposal = parse_proposal(item)
            if proposal is None:
                problems.append(f"addition {index}: {problem}")
            else:
                shaped.append((index, proposal))
        nears = self._positions([p.near for _, p in shaped if p.near])
        existing_objects = self._objects_of({p.cls.lower() for _, p in shaped})
        to_add: list[_Checked] = []
        existing: list[Existing] = []
        for index, proposal in shaped:
            where = f"addition {index} ({proposal.cls!r} at {_xyz(proposal.at)})"
            if proposal.near:
                near_at = nears.get(proposal.near)
                if near_at is None:
                    problems.append(f"{where}: near {proposal.near!r} is not a node of the scene graph")
                    continue
                gap = math.dist(near_at, proposal.at)
                if gap > self.settings.max_distance_m:
                    problems.append(f"{where}: {gap:.1f} m from {proposal.near}, farther than the "
                                    f"{self.settings.max_distance_m:g} m an addition may stand from its 'near' node")
                    continue
            same = _nearest_same_class(proposal, existing_objects)
            if same is not None and same[1] <= self.settings.merge_radius_m:
                (symbol, cls, _), gap = same
                existing.append(Existing(proposal.cls, proposal.at, symbol, cls, gap))
                continue
            place = self._nearest_place(proposal.at)
            if place is None:
                problems.append(f"{where}: outside the mapped area (no connected place within "
                                f"{self.settings.max_place_distance_m:g} m)")
                continue
            for other in to_add:
                if (other.proposal.cls.lower() == proposal.cls.lower()
                        and math.dist(other.proposal.at, proposal.at) <= self.settings.merge_radius_m):
                    problems.append(f"{where}: the same object as an earlier addition of this answer")
                    break
            else:
                to_add.append(_Checked(proposal, *place))
        return problems, to_add, existing

    def add(self, checked: Sequence[_Checked], *, author: str, request: str) -> list[Added]:
        """Write checked additions, each under a fresh symbol (see :meth:`check`)."""
        added: list[Added] = []
        for item in checked:
            added.append(self._write(item, author=author, request=request[:_MAX_REQUEST]))
        return added

    # -- records -------------------------------------------------------------------------
    def all(self) -> list[AdditionRecord]:
        return [_record(r) for r in self.store.query(q.ALL_ADDITIONS) if r["status"] != "claimed"]

    def active(self) -> list[AdditionRecord]:
        return [_record(r) for r in self.store.query(q.ACTIVE_ADDITIONS)]

    def records(self, symbols: Iterable[str]) -> dict[str, AdditionRecord]:
        wanted = [s for s in dict.fromkeys(symbols) if is_scene_symbol(s)]
        if not wanted:
            return {}
        rows = self.store.query(q.SOME_ADDITIONS, {"symbols": wanted})
        return {str(r["symbol"]): _record(r) for r in rows if r["status"] != "claimed"}

    def events(self, *, since: float) -> list[AdditionEvent]:
        found = []
        for record in self.all():
            if record.created_s >= since:
                found.append(AdditionEvent("added", record, record.created_s))
            if record.replaced_by and record.retired_s >= since:
                found.append(AdditionEvent("replaced", record, record.retired_s))
        return sorted(found, key=lambda event: event.t)

    def revert(self, symbol: str, *, author: str) -> Removed:
        """Take an addition out of the scene; its record stays, reverted."""
        record = self.records([symbol]).get(symbol)
        if record is None:
            raise CorrectionError(f"there is no addition {symbol!r}; 'heracles corrections list' shows them")
        if record.status != "active":
            why = f"replaced by {record.replaced_by}" if record.replaced_by else "reverted before"
            raise CorrectionError(f"addition {symbol} is {record.status} ({why}); there is nothing to revert")
        self.store.write_many([
            (q.DELETE_OBJECT, {"symbol": symbol}),
            (q.MARK_REVERTED, {"symbol": symbol, "now": time.time(), "author": author}),
        ])
        return Removed(symbol, record.cls)

    def remove_all(self) -> list[Removed]:
        """Take every active addition out of the scene (the records are the caller's to delete)."""
        records = self.active()
        if records:
            self.store.write_many([(q.DELETE_OBJECT, {"symbol": r.symbol}) for r in records])
        return [Removed(r.symbol, r.cls) for r in records]

    # -- after a snapshot ----------------------------------------------------------------------
    def after_reconcile(self, *, touched: Iterable[str], stamp_s: float) -> list[str]:
        """Retire additions a newly perceived object of their class replaces; write back what a snapshot or a
        reset took from the others (the link to a removed place, the node itself). Returns the retired
        additions' symbols."""
        active = self.active()
        if not active:
            return []
        present = {str(r["symbol"]): r for r in self.store.query(q.ADDED_OBJECTS)}
        retired = self._replace(active, present, [s for s in touched if is_scene_symbol(s)], stamp_s)
        self._keep([record for record in active if record.symbol not in retired], present)
        return retired

    # -- internals ------------------------------------------------------------------------
    def _replace(
        self, active: list[AdditionRecord], present: dict[str, dict[str, Any]], touched: list[str], stamp_s: float
    ) -> list[str]:
        """Retire the additions a perceived object among ``touched`` of their class is within the merge radius
        of (class and position as the node has them now: an operator may have corrected them)."""
        if not touched:
            return []
        perceived = [(str(r["symbol"]), str(r["class"] or ""), _point(r))
                     for r in self.store.query(q.PERCEIVED_OBJECTS, {"symbols": touched})]
        rows: list[dict[str, Any]] = []
        for record in active:
            node = present.get(record.symbol, {})
            own_class = str(node.get("class") or record.cls).strip().lower()
            own_at = _point(node) or record.at
            best: tuple[float, str] | None = None
            for symbol, cls, at in perceived:
                if at is None or cls.strip().lower() != own_class:
                    continue
                gap = math.dist(at, own_at)
                if gap <= self.settings.merge_radius_m and (best is None or gap < best[0]):
                    best = (gap, symbol)
            if best is not None:
                why = (f"Hydra perceived {best[1]} ({record.cls}) {best[0]:.2f} m away in its snapshot of "
                       f"{_iso(stamp_s)}")
                rows.append({"symbol": record.symbol, "by": best[1], "why": why})
        if not rows:
            return []
        statements: list[tuple[str, Params]] = [(q.DELETE_OBJECT, {"symbol": r["symbol"]}) for r in rows]
        statements.append((q.MARK_REPLACED, {"rows": rows, "now": time.time(), "stamp": stamp_s}))
        self.store.write_many(statements)
        for row in rows:
            log.info("operator's addition %s replaced by perceived %s", row["symbol"], row["by"])
        return [str(r["symbol"]) for r in rows]

    def _keep(self, records: list[AdditionRecord], present: dict[str, dict[str, Any]]) -> None:
        rows: list[dict[str, Any]] = []
        statements: list[tuple[str, Params]] = []
        for record in records:
            node = present.get(record.symbol)
            held = None if node is None else int(node["containers"] or 0)
            if held:  # the node is there, in a place
                continue
            found = self._nearest_place(record.at, bounded=False)
            place, layer, room = found if found is not None else ("", Layer.MESH_PLACE, "")
            if held is None:  # the node is gone (a database reset keeps the overlay's records only)
                x, y, z = record.at
                statements.append((q.create_object(self.store.dialect), {
                    "symbol": record.symbol, "token": record.claim, "class": record.cls, "x": x, "y": y, "z": z,
                    "author": record.author, "now": record.created_s, "request": record.request}))
            else:
                statements.append((q.UNLINK_OBJECT, {"symbol": record.symbol}))
            if place:
                statements.append(self._link(record.symbol, place, layer))
            rows.append({"symbol": record.symbol, "place": place, "room": room})
        if rows:
            statements.append((q.RELINKED, {"rows": rows}))
            self.store.write_many(statements)
            log.info("operator additions written back or linked again: %s", ", ".join(r["symbol"] for r in rows))

    def _write(self, item: _Checked, *, author: str, request: str) -> Added:
        symbol, token = self._claim()
        p = item.proposal
        x, y, z = p.at
        params = {"symbol": symbol, "token": token, "class": p.cls, "x": x, "y": y, "z": z, "near": p.near,
                  "place": item.place, "room": item.room, "now": time.time(), "author": author, "request": request}
        try:
            self.store.write_many([
                (q.WRITE_RECORD, params),
                (q.create_object(self.store.dialect), params),
                self._link(symbol, item.place, item.place_layer),
            ])
        except DatabaseError:
            self.store.write(q.DROP_CLAIM, {"symbol": symbol, "token": token})
            raise
        return Added(symbol, p.cls, p.at, item.place, item.room, p.near)

    def _link(self, symbol: str, place: str, layer: Layer) -> tuple[str, Params]:
        return q.link_object(layer), {"symbol": symbol, "containers": [place]}

    def _claim(self) -> tuple[str, str]:
        """A symbol no record and no scene node holds, reserved for this caller."""
        token = uuid.uuid4().hex
        taken = {str(r["symbol"]) for r in self.store.query(q.ALL_ADDITIONS)}
        index = 1 + max((_index(s) for s in taken), default=0)
        for _ in range(1000):
            symbol = f"{ADDITION_PREFIX}{index}"
            index += 1
            if self._positions([symbol]):
                continue  # a scene node has it (a Hydra configured with this prefix)
            rows = self.store.write(q.CLAIM_SYMBOL, {"symbol": symbol, "token": token, "now": time.time()})
            if rows and rows[0]["claim"] == token:
                return symbol, token
        raise CorrectionError("no free symbol for an addition was found")

    def _positions(self, symbols: Iterable[str]) -> dict[str, Point]:
        wanted = [s for s in dict.fromkeys(symbols) if is_scene_symbol(s)]
        if not wanted:
            return {}
        found: dict[str, Point] = {}
        for row in self.store.query(q.NODE_POSITIONS, {"symbols": wanted}):
            at = _point(row)
            if at is not None:
                found.setdefault(str(row["symbol"]), at)
        return found

    def _objects_of(self, classes: set[str]) -> list[tuple[str, str, Point]]:
        if not classes:
            return []
        rows = self.store.query(q.OBJECTS_OF_CLASSES, {"classes": sorted(classes)})
        return [(str(r["symbol"]), str(r["class"]), at) for r in rows if (at := _point(r)) is not None]

    def _nearest_place(self, at: Point, *, bounded: bool = True) -> tuple[str, Layer, str] | None:
        """(place, its layer, its room or '') of the connected navigation place nearest ``at``."""
        layer = Layer.MESH_PLACE if self.store.query(q.ANY_MESH_PLACE) else Layer.PLACE
        x, y, z = at
        rows = self.store.query(q.nearest_place(layer), {"x": x, "y": y, "z": z})
        if not rows:
            return None
        [best] = rows
        limit = self.settings.max_place_distance_m
        if bounded and float(best["d2"]) > limit * limit:
            return None
        rooms = sorted(str(r) for r in best["rooms"] or [] if r)
        return str(best["place"]), layer, rooms[0] if rooms else ""


def parse_proposal(item: Any) -> tuple[str, Proposal | None]:
    """('', Proposal) for ``{"add": CLASS, "at": [x, y, z], "near": SYMBOL}``, else (problem, None)."""
    if not isinstance(item, dict):
        return f"expected {{\"add\": CLASS, \"at\": [x, y, z], \"near\": SYMBOL}}, got {item!r}", None
    unknown = set(item) - {"add", "at", "near"}
    if unknown:
        return f"unknown keys {sorted(unknown)} (an addition has add, at and near)", None
    cls = item.get("add")
    problem = text_problem(cls, what="the class")
    if problem or not isinstance(cls, str):
        return f"{problem} (an addition needs a class, e.g. \"fire hydrant\")", None
    at = item.get("at")
    if not isinstance(at, list | tuple) or len(at) != 3:
        return f"'at' must be [x, y, z] in metres, got {at!r}", None
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in at):
        return f"'at' must hold three numbers, got {at!r}", None
    if not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE_M for v in at):
        return f"'at' must hold finite coordinates within {MAX_COORDINATE_M:g} m of the origin, got {at!r}", None
    near = item.get("near") or ""
    if not isinstance(near, str) or (near and not is_scene_symbol(near.strip())):
        return f"'near' must be a scene symbol such as O3, got {near!r}", None
    return "", Proposal(cls.strip(), (float(at[0]), float(at[1]), float(at[2])), near.strip())


def replacements(store: GraphStore, symbols: Iterable[str]) -> dict[str, str]:
    """What became of additions among ``symbols`` that are no longer in the scene, in words
    (for a goal that names one)."""
    fates: dict[str, str] = {}
    for symbol, record in Additions(store).records(symbols).items():
        if record.status == "retired" and record.replaced_by:
            fates[symbol] = (f"{symbol} was the operator's {record.cls!r}, replaced by the perceived object "
                             f"{record.replaced_by}: use {record.replaced_by}")
        elif record.status == "reverted":
            fates[symbol] = f"{symbol} was the operator's {record.cls!r}, removed by an operator"
    return fates


def _nearest_same_class(
    proposal: Proposal, objects: list[tuple[str, str, Point]]
) -> tuple[tuple[str, str, Point], float] | None:
    same = [(obj, math.dist(obj[2], proposal.at)) for obj in objects if obj[1].strip().lower() == proposal.cls.lower()]
    return min(same, key=lambda pair: pair[1]) if same else None


def _point(row: dict[str, Any]) -> Point | None:
    values = (row.get("x"), row.get("y"), row.get("z"))
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return None
    return (float(values[0]), float(values[1]), float(values[2]))  # type: ignore[arg-type]


def _index(symbol: str) -> int:
    return int(symbol[1:]) if SCENE_SYMBOL.fullmatch(symbol) and symbol.startswith(ADDITION_PREFIX) else 0


def _record(row: dict[str, Any]) -> AdditionRecord:
    return AdditionRecord(
        symbol=str(row["symbol"]), cls=str(row["class"] or ""), at=_point(row) or (math.nan,) * 3,
        near=str(row.get("near") or ""), place=str(row.get("place") or ""), room=str(row.get("room") or ""),
        status=str(row.get("status") or "active"), author=str(row.get("author") or ""),
        request=str(row.get("request") or ""), created_s=float(row.get("created_s") or 0.0),
        updated_s=float(row.get("updated_s") or 0.0), retired_s=float(row.get("retired_s") or 0.0),
        replaced_by=str(row.get("replaced_by") or ""), retired_why=str(row.get("retired_why") or ""),
        claim=str(row.get("claim") or ""),
    )


def _xyz(at: Point) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in at) + ")"


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds") if seconds else ""

