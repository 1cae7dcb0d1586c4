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
database reset took them) until perception confirms an object of the same class within the merge
radius: the same perceived object in ``confirm_snapshots`` snapshots in a row spanning at least
``confirm_s`` seconds. Then the addition is retired in favour of it, the record keeping
``replaced_by``; one spurious detection retires nothing. When the object that replaced it
disappears again, the addition comes back.

Adding costs the same however many additions exist: the symbol comes from a counter, records are
found by symbol and objects by position through indexes (it read every record for each new one:
1,840 additions took 400 s).
"""
from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import CorrectionError, DatabaseError
from heracles_ros.graphdb.cypher import additions as q
from heracles_ros.graphdb.store import GraphStore, Params
from heracles_ros.mirror.history import iso_time, record_time
from heracles_ros.mirror.indexes import ensure_indexes
from heracles_ros.mirror.text_values import text_problem
from heracles_ros.outcomes import OverlayEventKind, RecordStatus
from heracles_ros.schema import ADDITION_PREFIX, SCENE_SYMBOL, Layer, is_scene_symbol

log = logging.getLogger(__name__)

#: Coordinates beyond this (metres from the map origin) are refused outright.
MAX_COORDINATE_M = 100_000.0
#: Characters of the request text kept with an addition.
_MAX_REQUEST = 500
#: How far a stamp read back from the database may be from the one written (FalkorDB returns
#: 1.8e9 s to about the microsecond).
_STAMP_ROUNDING_S = 1e-3

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
    #: A perceived object replaces an addition once seen in this many snapshots in a row...
    confirm_snapshots: int = 3
    #: ... spanning at least this many seconds (their stamps): one spurious detection replaces nothing.
    confirm_s: float = 2.0


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
    status: RecordStatus
    author: str
    request: str
    created_s: float
    updated_s: float = 0.0
    retired_s: float = 0.0
    replaced_by: str = ""
    retired_why: str = ""
    #: The token that claimed the symbol (what lets the node be written back after a reset).
    claim: str = ""
    #: The perceived object of its class within the merge radius, while one is (not yet confirmed).
    candidate: str = ""
    #: Stamp of the first snapshot that showed ``candidate``, and how many in a row have.
    candidate_first_s: float = 0.0
    candidate_seen: int = 0
    #: When it came back after the object that replaced it disappeared (0: never).
    returned_s: float = 0.0

    @property
    def id(self) -> str:
        return self.symbol

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "symbol": self.symbol, "kind": "addition", "property": q.ADDED, "value": self.cls,
                "class": self.cls, "position": list(self.at), "near": self.near, "place": self.place,
                "room": self.room, "source": q.OPERATOR, "status": self.status.value, "author": self.author,
                "request": self.request, "created": record_time(self.created_s),
                "updated": record_time(self.updated_s), "retired": record_time(self.retired_s),
                "replaced_by": self.replaced_by, "retired_why": self.retired_why,
                "returned": record_time(self.returned_s)}


@dataclass(frozen=True)
class AdditionEvent:
    """For the scene's history: an operator added an object, a perceived one replaced it, or it came back
    because that one disappeared."""

    kind: OverlayEventKind  # one of the ADDITION_ kinds
    record: AdditionRecord
    t: float

    def to_json(self) -> dict[str, Any]:
        r = self.record
        out = {"kind": self.kind.value, "symbol": r.symbol, "class": r.cls, "position": list(r.at),
               "author": r.author, "source": q.OPERATOR, "room": r.room, "status": r.status.value, "t": self.t,
               "time": iso_time(self.t), "text": str(self)}
        if self.kind in (OverlayEventKind.ADDITION_REPLACED, OverlayEventKind.ADDITION_RETURNED):
            out["replaced_by"] = r.replaced_by
            out["why"] = r.retired_why
        return out

    def __str__(self) -> str:
        r = self.record
        if self.kind is OverlayEventKind.ADDITION_REPLACED:
            return f"addition {r.symbol} ({r.cls}) retired, replaced by {r.replaced_by}: {r.retired_why}"
        if self.kind is OverlayEventKind.ADDITION_RETURNED:
            return f"addition {r.symbol} ({r.cls}) back: {r.replaced_by}, which had replaced it, disappeared"
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
        self._indexed = False

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
        existing_objects = self._objects_near([p for _, p in shaped])
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
        self._ensure_indexes()
        added: list[Added] = []
        for item in checked:
            added.append(self._write(item, author=author, request=request[:_MAX_REQUEST]))
        return added

    # -- records -------------------------------------------------------------------------
    def all(self) -> list[AdditionRecord]:
        return [_record(r) for r in self.store.query(q.ALL_ADDITIONS) if r["status"] != RecordStatus.CLAIMED.value]

    def active(self) -> list[AdditionRecord]:
        return [_record(r) for r in self.store.query(q.ACTIVE_ADDITIONS)]

    def records(self, symbols: Iterable[str]) -> dict[str, AdditionRecord]:
        wanted = [s for s in dict.fromkeys(symbols) if is_scene_symbol(s)]
        if not wanted:
            return {}
        rows = self.store.query(q.SOME_ADDITIONS, {"symbols": wanted})
        return {str(r["symbol"]): _record(r) for r in rows if r["status"] != RecordStatus.CLAIMED.value}

    def events(self, *, since: float) -> list[AdditionEvent]:
        found = []
        for record in self.all():
            if record.created_s >= since:
                found.append(AdditionEvent(OverlayEventKind.ADDITION_ADDED, record, record.created_s))
            if record.replaced_by and record.retired_s >= since:
                found.append(AdditionEvent(OverlayEventKind.ADDITION_REPLACED, record, record.retired_s))
            if record.returned_s and record.returned_s >= since:
                found.append(AdditionEvent(OverlayEventKind.ADDITION_RETURNED, record, record.returned_s))
        return sorted(found, key=lambda event: event.t)

    def revert(self, symbol: str, *, author: str) -> Removed:
        """Take an addition out of the scene; its record stays, reverted."""
        record = self.records([symbol]).get(symbol)
        if record is None:
            raise CorrectionError(f"there is no addition {symbol!r}; 'heracles corrections list' shows them")
        if record.status is not RecordStatus.ACTIVE:
            why = f"replaced by {record.replaced_by}" if record.replaced_by else "reverted before"
            raise CorrectionError(f"addition {symbol} is {record.status.value} ({why}); there is nothing to revert")
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
        """After a snapshot: bring back the additions whose replacing object disappeared, retire those a
        perceived object of their class has now stood in for long enough, and write back what a snapshot
        or a reset took from the others (the link to a removed place, the node itself). Returns the
        retired additions' symbols."""
        self._ensure_indexes()
        self._bring_back(stamp_s)
        active = self.active()
        if not active:
            return []
        present = {str(r["symbol"]): r for r in self.store.query(q.ADDED_OBJECTS)}
        retired = self._watch(active, present, [s for s in touched if is_scene_symbol(s)], stamp_s)
        self._keep([record for record in active if record.symbol not in retired], present)
        return retired

    # -- internals ------------------------------------------------------------------------
    def _bring_back(self, stamp_s: float) -> None:
        """Make active again each retired addition whose replacing object is no longer in the scene."""
        replaced = {str(r["symbol"]): str(r["replaced_by"]) for r in self.store.query(q.REPLACED_ADDITIONS)}
        if not replaced:
            return
        still = self._positions(replaced.values())
        back = [symbol for symbol, by in replaced.items() if by not in still]
        if back:
            self.store.write(q.MARK_RETURNED, {"symbols": back, "now": time.time(), "stamp": stamp_s})
            log.info("operator's additions back, the objects that replaced them disappeared: %s", ", ".join(back))

    def _watch(
        self, active: list[AdditionRecord], present: dict[str, dict[str, Any]], touched: list[str], stamp_s: float
    ) -> list[str]:
        """Follow, for each addition, the perceived object of its class within the merge radius (class and
        position as the addition's node has them now: an operator may have corrected them); retire it once
        one and the same object has been there for ``confirm_snapshots`` snapshots and ``confirm_s``
        seconds. Looked at: the objects this snapshot wrote, and each addition's candidate so far."""
        looked_at = [*touched, *(r.candidate for r in active if r.candidate)]
        perceived = [(str(r["symbol"]), str(r["class"] or ""), _point(r))
                     for r in self.store.query(q.PERCEIVED_OBJECTS, {"symbols": list(dict.fromkeys(looked_at))})]
        settings = self.settings
        candidates: list[dict[str, Any]] = []
        replaced: list[dict[str, Any]] = []
        for record in active:
            node = present.get(record.symbol, {})
            own_class = str(node.get("class") or record.cls).strip().lower()
            own_at = _point(node) or record.at
            near = {symbol: math.dist(at, own_at) for symbol, cls, at in perceived
                    if at is not None and cls.strip().lower() == own_class
                    and math.dist(at, own_at) <= settings.merge_radius_m}
            if not near:
                if record.candidate:
                    candidates.append({"symbol": record.symbol, "candidate": None, "first_s": None, "seen": None})
                continue
            if record.candidate in near:  # the same object again: one more snapshot of it
                symbol, first_s, seen = record.candidate, record.candidate_first_s, record.candidate_seen + 1
            else:
                symbol, first_s, seen = min(near, key=near.__getitem__), stamp_s, 1
            if seen >= settings.confirm_snapshots and stamp_s - first_s >= settings.confirm_s - _STAMP_ROUNDING_S:
                why = (f"Hydra perceived {symbol} ({record.cls}) {near[symbol]:.2f} m away in {seen} snapshots "
                       f"from {record_time(first_s)} to {record_time(stamp_s)}")
                replaced.append({"symbol": record.symbol, "by": symbol, "why": why})
            else:
                candidates.append({"symbol": record.symbol, "candidate": symbol, "first_s": first_s, "seen": seen})
        statements: list[tuple[str, Params]] = [(q.DELETE_OBJECT, {"symbol": r["symbol"]}) for r in replaced]
        if replaced:
            statements.append((q.MARK_REPLACED, {"rows": replaced, "now": time.time(), "stamp": stamp_s}))
        if candidates:
            statements.append((q.MARK_CANDIDATES, {"rows": candidates}))
        if statements:
            self.store.write_many(statements)
        for row in replaced:
            log.info("operator's addition %s replaced by perceived %s", row["symbol"], row["by"])
        return [str(r["symbol"]) for r in replaced]

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
        restart = False
        for _ in range(1000):
            symbol = f"{ADDITION_PREFIX}{self._take_index(restart)}"
            restart = False
            if self._positions([symbol]):
                continue  # a scene node has it (a Hydra configured with this prefix)
            rows = self.store.write(q.CLAIM_SYMBOL, {"symbol": symbol, "token": token, "now": time.time()})
            if rows and rows[0]["claim"] == token:
                return symbol, token
            restart = True  # a record has it: the counter is behind the records (a reset dropped it)
        raise CorrectionError("no free symbol for an addition was found")

    def _take_index(self, restart: bool) -> int:
        """The next symbol number from the counter; restarted past the records' highest when it is missing or
        behind."""
        rows = [] if restart else self.store.write(q.TAKE_INDEX)
        if not rows:
            top = self.store.query(q.HIGHEST_INDEX, {"prefix": ADDITION_PREFIX})
            highest = int(top[0]["top"]) if top and top[0]["top"] is not None else 0
            rows = self.store.write(q.RESTART_INDEX, {"next": highest + 1})
        return int(rows[0]["index"])

    def _ensure_indexes(self) -> None:
        if not self._indexed:
            ensure_indexes(self.store, q.ADDITION_INDEXES)
            self._indexed = True

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

    def _objects_near(self, proposals: list[Proposal]) -> list[tuple[str, str, Point]]:
        """Objects of each proposal's class within the merge radius of it (in x and y: a box), perceived or
        added."""
        if not proposals:
            return []
        r = self.settings.merge_radius_m
        boxes = [{"class": p.cls.lower(), "x0": p.at[0] - r, "x1": p.at[0] + r, "y0": p.at[1] - r, "y1": p.at[1] + r}
                 for p in proposals]
        rows = self.store.query(q.OBJECTS_IN_BOXES, {"boxes": boxes})
        found = {str(r["symbol"]): (str(r["symbol"]), str(r["class"]), at)
                 for r in rows if (at := _point(r)) is not None}
        return list(found.values())

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
    additions = Additions(store)
    records = additions.records(symbols)
    still = additions._positions(r.replaced_by for r in records.values()
                                 if r.status is RecordStatus.RETIRED and r.replaced_by)
    fates: dict[str, str] = {}
    for symbol, record in records.items():
        if record.status is RecordStatus.RETIRED and record.replaced_by in still:
            fates[symbol] = (f"{symbol} was the operator's {record.cls!r}, replaced by the perceived object "
                             f"{record.replaced_by}: use {record.replaced_by}")
        elif record.status is RecordStatus.RETIRED and record.replaced_by:  # back with the mirror's next snapshot
            fates[symbol] = (f"{symbol} was the operator's {record.cls!r}, replaced by {record.replaced_by}, which "
                             "is no longer in the scene either")
        elif record.status is RecordStatus.REVERTED:
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
        status=RecordStatus(row.get("status") or RecordStatus.ACTIVE), author=str(row.get("author") or ""),
        request=str(row.get("request") or ""), created_s=float(row.get("created_s") or 0.0),
        updated_s=float(row.get("updated_s") or 0.0), retired_s=float(row.get("retired_s") or 0.0),
        replaced_by=str(row.get("replaced_by") or ""), retired_why=str(row.get("retired_why") or ""),
        claim=str(row.get("claim") or ""), candidate=str(row.get("candidate") or ""),
        candidate_first_s=float(row.get("candidate_first_s") or 0.0),
        candidate_seen=int(row.get("candidate_seen") or 0), returned_s=float(row.get("returned_s") or 0.0),
    )


def _xyz(at: Point) -> str:
    return "(" + ", ".join(f"{v:.2f}" for v in at) + ")"

