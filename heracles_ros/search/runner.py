"""A search: rooms looked in one leg at a time, ranked again after every leg, until WHAT is seen or nothing
worth looking at is left.

rclpy-free: the caller walks each leg (:data:`WalkLeg`: through the dispatcher, watching the mirror) and tells
the walk to every room's viewpoint (:data:`WalkLengths`). The search ends

- ``found`` as soon as a leg reports the thing seen (its symbol and where);
- ``not_found`` when the likelihood left unseen is below :data:`~.ranking.NOTHING_LEFT` of the whole, no room
  is reachable, or a bound is hit (``max_rooms`` legs, ``max_distance_m`` walked, ``timeout_s``);
- with the leg's own ending when a leg does not arrive (stopped, cancelled, failed, rejected): a stopped robot
  is never sent on to the next room.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from heracles_ros.search.ranking import NOTHING_LEFT, MapObject, left_to_look, next_room, prior

XY = tuple[float, float]


@dataclass(frozen=True)
class SearchArea:
    """The map as a search reads it."""

    #: Room symbol -> its label (Hydra's room name, e.g. kitchen).
    rooms: dict[str, str]
    objects: list[MapObject]
    #: Place symbol -> (x, y) and -> its room ('' none).
    place_xy: dict[str, XY]
    place_room: dict[str, str]
    #: Room symbol -> the place a leg walks to (nearest the room's centre).
    viewpoints: dict[str, str]

    def nearest_place(self, xy: XY) -> str:
        return min(self.place_xy, key=lambda place: math.dist(self.place_xy[place], xy))

    def room_at(self, xy: XY) -> str:
        """The room of the place nearest ``xy`` ('' none)."""
        return self.place_room.get(self.nearest_place(xy), "")


@dataclass(frozen=True)
class Leg:
    """How one leg ended: ``arrived``, ``found`` or anything else (the dispatcher's word: stopped, ...)."""

    ending: str
    #: Positions the robot was reported at during the leg, in order (the last is where it ended).
    positions: list[XY]
    found: str = ""
    found_where: str = ""
    reason: str = ""


@dataclass
class SearchResult:
    outcome: str  # found | not_found | stopped | cancelled | failed | rejected ...
    found: str | None = None
    where: str = ""
    visited: list[str] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)
    distance_m: float = 0.0
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "found": self.found, "where": self.where, "visited": self.visited,
                "ruled_out": self.ruled_out, "distance_m": round(self.distance_m, 2), "reason": self.reason}


#: ``walk(room, viewpoint)``: one leg, ending early when the thing is seen.
WalkLeg = Callable[[str, str], Leg]
#: ``lengths(start_xy)``: the walk from there to each room's viewpoint, metres (unreachable rooms absent).
WalkLengths = Callable[[XY], Mapping[str, float]]
#: ``feedback(text)``: where the search looks next and what it has ruled out.
Feedback = Callable[[str], None]


class Search:
    """One search over ``area`` for things of ``similarity`` (class -> weight; WHAT itself 1)."""

    def __init__(self, area: SearchArea, similarity: Mapping[str, float], *, sensor_range_m: float = 3.0,
                 max_rooms: int = 10, max_distance_m: float = math.inf, timeout_s: float = math.inf,
                 nearest_first: bool = False):
        self.area = area
        self.prior = prior(area.rooms, area.objects, similarity)
        self.sensor_range_m = sensor_range_m
        self.max_rooms = max_rooms
        self.max_distance_m = max_distance_m
        self.timeout_s = timeout_s
        self.nearest_first = nearest_first
        self._covered: set[str] = set()
        self._visited_rooms: set[str] = set()

    def unseen(self) -> dict[str, float]:
        """Each room's share of places not yet looked at (a visited room: none)."""
        total: dict[str, int] = {}
        seen: dict[str, int] = {}
        for place, room in self.area.place_room.items():
            total[room] = total.get(room, 0) + 1
            if place in self._covered:
                seen[room] = seen.get(room, 0) + 1
        return {room: 0.0 if room in self._visited_rooms else 1.0 - seen.get(room, 0) / total[room]
                for room in total if room}

    def look_from(self, xy: XY) -> None:
        """Rule out the places within sensor range of ``xy`` in the room there."""
        room = self.area.room_at(xy)
        for place, pxy in self.area.place_xy.items():
            if self.area.place_room.get(place) == room and math.dist(pxy, xy) <= self.sensor_range_m:
                self._covered.add(place)

    def run(self, start: XY, walk: WalkLeg, lengths: WalkLengths, feedback: Feedback | None = None) -> SearchResult:
        result = SearchResult("not_found")
        deadline = time.monotonic() + self.timeout_s
        here = start
        self.look_from(here)
        while True:
            left = left_to_look(self.prior, self.unseen())
            result.ruled_out = sorted(room for room, p in left.items() if p == 0.0)
            if sum(left.values()) < NOTHING_LEFT:
                result.reason = "every likely room has been looked at"
                return result
            if len(result.visited) >= self.max_rooms:
                result.reason = f"search_max_rooms ({self.max_rooms}) rooms looked at"
                return result
            if result.distance_m >= self.max_distance_m or time.monotonic() >= deadline:
                result.reason = "search_max_distance_m or search_timeout_s reached"
                return result
            room = next_room(left, lengths(here), nearest_first=self.nearest_first)
            if room is None:
                result.reason = "no room left to look at can be reached"
                return result
            if feedback is not None:
                share = left[room] / sum(left.values())
                feedback(f"looking in {room} ({self.area.rooms[room]}, {share:.0%} of what is left)"
                         + (f"; ruled out {', '.join(result.ruled_out)}" if result.ruled_out else ""))
            leg = walk(room, self.area.viewpoints[room])
            for xy in leg.positions:
                result.distance_m += math.dist(here, xy)
                here = xy
                self.look_from(xy)
            result.visited.append(room)
            if leg.ending == "found":
                result.outcome, result.found, result.where = "found", leg.found, leg.found_where
                return result
            if leg.ending != "arrived":
                result.outcome, result.reason = leg.ending, leg.reason
                return result
            self._visited_rooms.add(room)

