"""The compact PDDL problem: only the places a goal needs, with shortest-path distances.

PDDL objects are the robot's start, the places the goal names, the places
where its objects can be reached, and a few entry places of its rooms; moves
between them cost their shortest-path length over the whole place graph (in
centimetres: Fast Downward wants integer costs). The problem's size depends on
the goal, not on the scene, and so, as far as a bound is sound, do its searches
(:mod:`.paths`: each stops once it has reached the places it must).

A goal that forbids visiting something (``(not (visited-room R1))``) must keep
every walk out of it, not just the PDDL moves' endpoints, so those places are
cut from the graph before distances are computed. When the disjuncts of a goal
forbid different things, each set of disjuncts gets its own problem
(:func:`avoidance_groups`) and the cheapest plan wins.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from heracles_ros.formats.goal_ast import And, Atom, GoalExpr, Not, Or, symbols
from heracles_ros.formats.pddl_goal import to_pddl_name
from heracles_ros.planning.paths import ShortestPaths
from heracles_ros.planning.places import PlaceGraph
from heracles_ros.schema import Layer

#: Centimetres per metre: PDDL action costs are integers.
COST_SCALE = 100
#: A room with at most this many entry places gets all of them (exact); a bigger one
#: gets the entries nearest to the other places of the problem.
MAX_ROOM_ENTRIES = 8
#: Disjunctive normal forms larger than this are not expanded (see avoidance_groups).
MAX_DNF_TERMS = 256

_VISITED = {"visited-place", "visited-object", "visited-room"}

Literal = tuple[Atom, bool]


@dataclass(frozen=True)
class ObjectInfo:
    """A goal object as the database has it now."""

    symbol: str
    position: tuple[float, float, float]
    #: Graph index of the place containing it (None for objects without one).
    container: int | None
    #: Graph index of the place the robot stands at to reach it (None: held, or no places).
    reach: int | None


@dataclass(frozen=True)
class Start:
    place: int
    holding: str = ""
    #: How the start was chosen, when it was not the robot's recorded place.
    note: str = ""


@dataclass(frozen=True)
class AvoidanceGroup:
    """Disjuncts of the goal that forbid visiting the same things."""

    goal: GoalExpr
    avoid: frozenset[Atom]


@dataclass
class CompactProblem:
    text: str
    #: Graph indices of the PDDL places, in object order.
    places: list[int]
    #: Shortest-path lengths between the PDDL places (rows and columns in ``places`` order; inf: no walk).
    dist: np.ndarray
    #: The searches over the graph minus ``removed`` (a goto's path comes from them).
    paths: ShortestPaths
    removed: frozenset[int]
    row_of: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.row_of = {place: row for row, place in enumerate(self.places)}


# --- goal analysis ------------------------------------------------------------------
def literals(expr: GoalExpr, positive: bool = True) -> list[Literal]:
    """Every atom with its polarity after pushing negations inwards."""
    if isinstance(expr, Atom):
        return [(expr, positive)]
    if isinstance(expr, Not):
        return literals(expr.item, not positive)
    return [lit for item in expr.items for lit in literals(item, positive)]


def _dnf(expr: GoalExpr, positive: bool = True) -> list[frozenset[Literal]] | None:
    """Disjunctive normal form as sets of literals; None when larger than MAX_DNF_TERMS."""
    if isinstance(expr, Atom):
        return [frozenset({(expr, positive)})]
    if isinstance(expr, Not):
        return _dnf(expr.item, not positive)
    parts = [_dnf(item, positive) for item in expr.items]
    if any(p is None for p in parts):
        return None
    conjunctive = isinstance(expr, And) == positive
    if not conjunctive:
        return [term for p in parts for term in p or []]
    terms: list[frozenset[Literal]] = [frozenset()]
    for p in parts:
        terms = [a | b for a in terms for b in p or []]
        if len(terms) > MAX_DNF_TERMS:
            return None
    return terms


def avoidance_groups(expr: GoalExpr) -> list[AvoidanceGroup]:
    """Split the goal where its disjuncts forbid visiting different places.

    The common case (nothing forbidden, or the same everywhere) is one group
    holding the goal unchanged. A goal too large to expand avoids every place
    any disjunct forbids: plans stay valid, possibly longer than needed.
    """
    negative = frozenset(a for a, pos in literals(expr) if not pos and a.predicate in _VISITED)
    if not negative:
        return [AvoidanceGroup(expr, frozenset())]
    terms = _dnf(expr)
    if terms is None:
        return [AvoidanceGroup(expr, negative)]
    groups: dict[frozenset[Atom], list[frozenset[Literal]]] = {}
    for term in terms:
        if any((atom, not pos) in term for atom, pos in term):
            continue  # contradicts itself
        key = frozenset(a for a, pos in term if not pos and a.predicate in _VISITED)
        groups.setdefault(key, []).append(term)
    if len(groups) <= 1:
        return [AvoidanceGroup(expr, next(iter(groups), negative))]
    return [AvoidanceGroup(_from_terms(terms_), avoid) for avoid, terms_ in groups.items()]


def _from_terms(terms: list[frozenset[Literal]]) -> GoalExpr:
    conjunctions: list[GoalExpr] = []
    for term in terms:
        items: list[GoalExpr] = [a if pos else Not(a) for a, pos in sorted(term, key=lambda lit: str(lit[0]))]
        conjunctions.append(items[0] if len(items) == 1 else And(tuple(items)))
    return conjunctions[0] if len(conjunctions) == 1 else Or(tuple(conjunctions))


def positive_symbols(expr: GoalExpr) -> list[str]:
    """Symbols the goal needs reached (those only under a negation are left out)."""
    return list(dict.fromkeys(arg for atom, pos in literals(expr) if pos for arg in atom.args))


# --- places of a problem -----------------------------------------------------------
def removed_places(graph: PlaceGraph, avoid: frozenset[Atom], objects: dict[str, ObjectInfo]) -> frozenset[int]:
    """Graph indices a walk must not cross to keep ``avoid``'s atoms false."""
    removed: set[int] = set()
    for atom in avoid:
        symbol = atom.args[0]
        if atom.predicate == "visited-room":
            removed.update(int(i) for i in graph.room_places.get(symbol, ()))
        elif atom.predicate == "visited-place" and symbol in graph.index:
            removed.add(graph.index[symbol])
        elif atom.predicate == "visited-object":
            info = objects.get(symbol)
            if info is not None and info.reach is not None:
                removed.add(info.reach)
    return frozenset(removed)


#: Symbol -> its database label (see mirror.symbols): what decides whether a symbol is an object,
#: a place or a room.
Kinds = Mapping[str, Layer]
_PLACE_LAYERS = (Layer.MESH_PLACE, Layer.PLACE)


def symbol_places(graph: PlaceGraph, symbol: str, objects: dict[str, ObjectInfo], kinds: Kinds) -> list[int]:
    """Graph indices where the robot stands to act on ``symbol`` (a room: all its places)."""
    layer = kinds.get(symbol)
    if layer is Layer.OBJECT:
        info = objects.get(symbol)
        return [info.reach] if info is not None and info.reach is not None else []
    if layer is Layer.ROOM:
        return [int(i) for i in graph.room_places.get(symbol, ())]
    return [graph.index[symbol]] if symbol in graph.index else []


def build_problem(
    graph: PlaceGraph,
    expr: GoalExpr,
    start: Start,
    objects: dict[str, ObjectInfo],
    removed: frozenset[int],
    kinds: Kinds,
    *,
    name: str = "goal",
    domain_name: str = "heracles",
) -> CompactProblem:
    """The compact problem for ``expr`` over the graph without ``removed``."""
    paths = ShortestPaths(graph, graph.without(removed))
    goal_symbols = symbols(expr)
    rooms = [s for s in goal_symbols if kinds.get(s) is Layer.ROOM]
    base = [start.place]
    for symbol in goal_symbols:
        if kinds.get(symbol) is not Layer.ROOM:
            base.extend(symbol_places(graph, symbol, objects, kinds))
    base = list(dict.fromkeys(base))
    pools = {room: _entry_pool(graph, room, removed) for room in rooms}
    big = {room: pool for room, pool in pools.items() if pool.size > MAX_ROOM_ENTRIES}
    # Each base place's search reaches every place a room may be entered through (a room is small beside the
    # walks between rooms) and the base places no search before it reached; each entry's search then what
    # none reached (the graph is undirected).
    pooled = [int(i) for pool in pools.values() for i in pool]
    rows = [paths.search(b, [p for p in base if not paths.knows(b, p)] + pooled) for b in base]
    # Distance from each room to every place, so a big room can pick the entries facing the others.
    reach = {
        room: paths.nearest_of(pool, [p for other, p in big.items() if other != room])
        for room, pool in pools.items() if big and pool.size
    }
    entries = [e for room in rooms for e in _room_entries(graph, room, pools, base, rows, reach)]
    places = base + [e for e in dict.fromkeys(entries) if e not in set(base)]
    for place in places[len(base) :]:
        paths.search(place, [p for p in places if not paths.knows(place, p)])
    dist = np.array([[paths.distance(a, b) for b in places] for a in places]).reshape(len(places), len(places))
    text = render_problem(
        graph, expr, start, objects, places, dist, rooms, kinds, name=name, domain_name=domain_name
    )
    return CompactProblem(text, places, dist, paths, removed)


def _entry_pool(graph: PlaceGraph, room: str, removed: frozenset[int]) -> np.ndarray:
    """A room's places a walk can enter it through (its boundary; all its places if it has none)."""
    members = graph.room_places.get(room, np.zeros(0, dtype=np.int64))
    boundary = graph.room_boundary.get(room, np.zeros(0, dtype=np.int64))
    return np.array([i for i in (boundary if boundary.size else members) if int(i) not in removed], dtype=np.int64)


def _room_entries(
    graph: PlaceGraph,
    room: str,
    pools: dict[str, np.ndarray],
    base: list[int],
    rows: list[np.ndarray],
    reach: dict[str, np.ndarray],
) -> list[int]:
    """Entry places of ``room``: all of them if few, else the ones nearest the problem's other places."""
    pool = pools[room]
    member_set = set(graph.room_places.get(room, np.zeros(0, dtype=np.int64)).tolist())
    inside = [p for p in base if p in member_set]  # e.g. the robot starts in the room
    if pool.size <= MAX_ROOM_ENTRIES:
        return [*inside, *(int(i) for i in pool)]
    chosen: list[int] = list(inside)
    for d_all in [*rows, *(d for other, d in reach.items() if other != room)]:
        d = d_all[pool]
        if np.isfinite(d).any():
            chosen.append(int(pool[int(np.argmin(d))]))
    if not chosen:  # nothing reaches the room: keep one place to name it by
        centre = np.asarray(graph.room_positions.get(room, (0.0, 0.0, 0.0)))
        chosen.append(int(pool[int(np.argmin(np.linalg.norm(graph.positions[pool] - centre, axis=1)))]))
    return list(dict.fromkeys(chosen))


# --- PDDL text ---------------------------------------------------------------------
def render_goal(expr: GoalExpr) -> str:
    if isinstance(expr, Atom):
        return f"({' '.join((expr.predicate, *(to_pddl_name(a) for a in expr.args)))})"
    if isinstance(expr, Not):
        return f"(not {render_goal(expr.item)})"
    keyword = "and" if isinstance(expr, And) else "or"
    return f"({keyword} {' '.join(render_goal(item) for item in expr.items)})"


def render_problem(
    graph: PlaceGraph,
    expr: GoalExpr,
    start: Start,
    objects: dict[str, ObjectInfo],
    places: list[int],
    dist: np.ndarray,
    rooms: list[str],
    kinds: Kinds,
    *,
    name: str,
    domain_name: str,
) -> str:
    """PDDL text; ``dist``'s rows and columns are ``places`` in order."""
    goal_symbols = symbols(expr)
    place_names = {p: to_pddl_name(graph.symbols[p]) for p in places}
    # Goal places missing from the graph (no position) still need a PDDL object.
    loose_places = [s for s in goal_symbols if kinds.get(s) in _PLACE_LAYERS and s not in graph.index]
    items = [s for s in goal_symbols if kinds.get(s) is Layer.OBJECT]
    if start.holding and start.holding not in items:
        items.append(start.holding)
    init: list[str] = ["(= (total-cost) 0)"]
    here = place_names[start.place]
    init += [f"(at-place {here})", f"(visited-place {here})"]
    init.append(f"(holding {to_pddl_name(start.holding)})" if start.holding else "(hand-empty)")
    for room in rooms:
        r = to_pddl_name(room)
        for p in places:
            if graph.room_symbol_of(p) == room:
                init.append(f"(place-in-room {place_names[p]} {r})")
                if p == start.place:
                    init += [f"(in-room {r})", f"(visited-room {r})"]
    for symbol in items:
        info = objects.get(symbol)
        if symbol == start.holding or info is None or info.reach is None:
            continue
        o = to_pddl_name(symbol)
        init.append(f"(object-at {o} {place_names[info.reach]})")
        if info.container is not None and info.container in place_names:
            init.append(f"(object-in-place {o} {place_names[info.container]})")
        if info.reach == start.place:
            init += [f"(at-object {o})", f"(visited-object {o})"]
    for row, a in enumerate(places):
        for b, d in zip(places, dist[row], strict=True):
            if b != a and np.isfinite(d):
                na, nb = place_names[a], place_names[b]
                init += [f"(road {na} {nb})", f"(= (distance {na} {nb}) {max(1, round(float(d) * COST_SCALE))})"]
    objects_text = " ".join([*dict.fromkeys(place_names.values()), *map(to_pddl_name, loose_places)])
    declarations = [f"{objects_text} - place"]
    if items:
        declarations.append(f"{' '.join(map(to_pddl_name, items))} - item")
    if rooms:
        declarations.append(f"{' '.join(map(to_pddl_name, rooms))} - room")
    body = "\n    ".join(init)
    return (
        f"(define (problem {name}) (:domain {domain_name})\n"
        f"  (:objects {' '.join(declarations)})\n"
        f"  (:init\n    {body})\n"
        f"  (:goal {render_goal(expr)})\n"
        "  (:metric minimize (total-cost)))\n"
    )
