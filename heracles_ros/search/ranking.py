"""Which room to look in next: how likely each room holds WHAT, from the map alone, against the walk to it.

Likelihood of room r (before looking): rooms of r's label held WHAT or similar things this often
(Laplace alpha = 1), spread over the rooms of that label, times (1 + 0.5 x similar things in r itself)::

    p(r) ~ (alpha + sum of similarity of the things in rooms labelled label(r)) / rooms labelled label(r)
           x (1 + beta x sum of similarity of the things in r)

"Similar" is a weight in [0, 1] per class of the map (1 for WHAT itself), from the meaning resolver where
there is one. Each room's likelihood is then scaled by the share of it not yet looked at (places within the
sensor range of where the robot has been, in that room, are ruled out; a visited room is ruled out whole).
The next room is the one with the best ``p / (d + D0_M)``, d the walk to its viewpoint (its place nearest the
room's centre): the ratio rule measured best on seeded floors (/work/proto notes: 91 % within 5 visits, 37 %
less walking than nearest-room-first).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from heracles_ros.meaning.text import normalise

#: Laplace smoothing of the label counts, and the weight of similar things in the room itself.
ALPHA = 1.0
BETA = 0.5
#: Metres added to every walk in the ratio rule, so that a room next door does not win on distance alone.
D0_M = 4.0
#: Below this share of the likelihood left unseen, there is nowhere worth looking.
NOTHING_LEFT = 0.05


@dataclass(frozen=True)
class MapObject:
    class_name: str
    room: str


def prior(rooms: Mapping[str, str], objects: Sequence[MapObject], similarity: Mapping[str, float]) -> dict[str, float]:
    """P(room holds WHAT) before looking, summing to 1; ``rooms``: symbol -> label, ``similarity``: class
    (normalised: :func:`~heracles_ros.meaning.text.normalise`) -> how alike WHAT it is (classes absent count 0)."""
    if not rooms:
        return {}
    by_label: dict[str, float] = {}
    in_room: dict[str, float] = {}
    for thing in objects:
        weight = max(0.0, min(1.0, similarity.get(normalise(thing.class_name), 0.0)))
        if weight and thing.room in rooms:
            by_label[rooms[thing.room]] = by_label.get(rooms[thing.room], 0.0) + weight
            in_room[thing.room] = in_room.get(thing.room, 0.0) + weight
    label_rooms: dict[str, int] = {}
    for label in rooms.values():
        label_rooms[label] = label_rooms.get(label, 0) + 1
    raw = {room: (ALPHA + by_label.get(label, 0.0)) / label_rooms[label] * (1.0 + BETA * in_room.get(room, 0.0))
           for room, label in rooms.items()}
    total = sum(raw.values())
    return {room: value / total for room, value in raw.items()}


def left_to_look(prior_p: Mapping[str, float], unseen: Mapping[str, float]) -> dict[str, float]:
    """Each room's likelihood times the share of it not yet looked at (rooms not in ``unseen``: all of it)."""
    return {room: p * max(0.0, min(1.0, unseen.get(room, 1.0))) for room, p in prior_p.items()}


def next_room(left: Mapping[str, float], walk_m: Mapping[str, float], *, nearest_first: bool = False) -> str | None:
    """The room to look in next: best ``p / (d + D0_M)`` among rooms with something left and a known walk;
    ``nearest_first``: the nearest such room (the baseline). None when nothing is worth looking at."""
    total = sum(left.values())
    if total <= 0:
        return None
    candidates = [room for room, p in left.items() if p > 0 and room in walk_m]
    if not candidates:
        return None
    if nearest_first:
        return min(candidates, key=lambda room: (walk_m[room], room))
    return max(candidates, key=lambda room: (left[room] / (walk_m[room] + D0_M), room))
