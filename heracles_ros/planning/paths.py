"""Shortest paths between the few places one problem needs, each search stopped once it has what it must.

A Dijkstra from a key place over the whole place graph costs the graph (~15 ms at 10^5 places), and a
goal with rooms needs a dozen. A search here stops at a distance ``limit`` (scipy's ``limit``): every
place within it has its exact distance and predecessor, none beyond it is reached. Its first limit is
a little above the farthest straight line to what it must reach (a walk is never shorter than the
straight line); while something it must reach, in the source's component, is still beyond, the limit
doubles, and after :data:`DOUBLINGS` the search runs unbounded, so a place cut off by what a goal
forbids is known unreachable. "What it must reach" is a list of targets and, for rooms, pools of which
only the nearest place matters: the nearest place of a pool that a bounded search reached is the
nearest of all, as every place beyond the limit is farther than every place within it.

The graph is undirected, so a distance or a path found from either end serves both: a problem's
places search only for the distances no search before them found.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from heracles_ros.planning.places import PlaceGraph, path_indices

#: First limit = this times the farthest straight line to what a search must reach, plus SLACK_M
#: (walks on the synthetic and Hydra's mesh-place graphs measured 1.04-1.3 times the straight line).
STRETCH = 1.3
SLACK_M = 2.0
#: Doublings of the limit before a search runs unbounded.
DOUBLINGS = 2


@dataclass(frozen=True)
class _Row:
    """One search's result: exact within ``limit``, inf beyond it."""

    dist: np.ndarray
    pred: np.ndarray
    limit: float

    def knows(self, place: int) -> bool:
        """The distance to ``place`` is exact: reached, or known unreachable by an unbounded search."""
        return bool(np.isfinite(self.dist[place])) or self.limit == np.inf


class ShortestPaths:
    """Bounded searches over one matrix (the place graph, possibly without forbidden places), kept per source."""

    def __init__(self, graph: PlaceGraph, matrix: csr_matrix):
        self.graph = graph
        self.matrix = matrix
        self._rows: dict[int, _Row] = {}
        #: Places reached, summed over every search run so far: what the searches cost.
        self.reached = 0

    def search(self, source: int, targets: Sequence[int] = (), pools: Sequence[np.ndarray] = ()) -> np.ndarray:
        """Distances from ``source``, exact for every target and the nearest place of every pool; inf where
        not reached."""
        same = self.graph.component == self.graph.component[source]
        need = np.array([t for t in targets if same[t]], dtype=np.int64)
        wanted = [pool[same[pool]] for pool in pools]
        wanted = [pool for pool in wanted if pool.size]
        row = self._rows.get(source)
        if row is None or not _covers(row, need, wanted):
            row = self._bounded(source, need, wanted, row.limit if row is not None else 0.0)
            self._rows[source] = row
        return row.dist

    def knows(self, a: int, b: int) -> bool:
        """A search so far has the distance between ``a`` and ``b`` (from either end)."""
        return any((row := self._rows.get(s)) is not None and row.knows(t) for s, t in ((a, b), (b, a)))

    def distance(self, a: int, b: int) -> float:
        """Length of the shortest walk from ``a`` to ``b`` (inf when none)."""
        for source, target in ((a, b), (b, a)):
            row = self._rows.get(source)
            if row is not None and row.knows(target):
                return float(row.dist[target])
        return float(self.search(a, [b])[b])

    def path(self, a: int, b: int) -> list[int]:
        """Places of a shortest walk from ``a`` to ``b`` (empty when none): from a search from either end (the
        graph is undirected), or from one bounded by what a walk from ``a`` must reach."""
        for source, target in ((a, b), (b, a)):
            row = self._rows.get(source)
            if row is not None and row.knows(target):
                found = path_indices(row.pred, source, target) if np.isfinite(row.dist[target]) else []
                return found if source == a else found[::-1]
        if not np.isfinite(self.search(a, [b])[b]):  # another component
            return []
        return path_indices(self._rows[a].pred, a, b)

    def reaches(self, source: int, places: Sequence[int]) -> bool:
        """Whether a walk from ``source`` reaches any of ``places``."""
        pool = np.array(places, dtype=np.int64)
        return bool(pool.size) and bool(np.isfinite(self.search(source, pools=[pool])[pool]).any())

    def nearest_of(self, sources: np.ndarray, pools: Sequence[np.ndarray]) -> np.ndarray:
        """Distance from the nearest of ``sources`` to every place, exact for the nearest place of each pool."""
        sources = np.asarray(sources, dtype=np.int64)
        same = np.isin(self.graph.component, self.graph.component[sources])
        wanted = [pool[same[pool]] for pool in pools]
        wanted = [pool for pool in wanted if pool.size]
        limit = self._first_limit(sources, np.zeros(0, dtype=np.int64), wanted)
        for attempt in range(DOUBLINGS + 1):
            bound = limit * 2**attempt if attempt < DOUBLINGS else np.inf
            dist = dijkstra(self.matrix, directed=True, indices=sources, min_only=True, limit=bound)
            self.reached += int(np.isfinite(dist).sum())
            if all(np.isfinite(dist[pool]).any() for pool in wanted):
                break
        return np.asarray(dist)

    # -- internals ---------------------------------------------------------------------
    def _bounded(self, source: int, need: np.ndarray, pools: list[np.ndarray], at_least: float) -> _Row:
        limit = max(self._first_limit(np.array([source]), need, pools), at_least)
        for _ in range(DOUBLINGS):
            row = self._run(source, limit)
            if _covers(row, need, pools):
                return row
            limit *= 2
        return self._run(source, np.inf)

    def _first_limit(self, sources: np.ndarray, need: np.ndarray, pools: list[np.ndarray]) -> float:
        """STRETCH times the farthest straight line from ``sources`` to a target or to a pool's nearest place."""
        positions = self.graph.positions
        here = positions[sources]

        def gaps(places: np.ndarray) -> np.ndarray:  # each place's straight line to its nearest source
            return np.linalg.norm(positions[places][:, None, :] - here[None, :, :], axis=2).min(axis=1)

        farthest = float(gaps(need).max()) if need.size else 0.0
        for pool in pools:
            farthest = max(farthest, float(gaps(pool).min()))
        return STRETCH * farthest + SLACK_M

    def _run(self, source: int, limit: float) -> _Row:
        dist, pred = dijkstra(self.matrix, directed=True, indices=source, limit=limit, return_predecessors=True)
        self.reached += int(np.isfinite(dist).sum())
        return _Row(np.asarray(dist), np.asarray(pred), limit)


def _covers(row: _Row, need: np.ndarray, pools: list[np.ndarray]) -> bool:
    """``row`` knows every place in ``need`` and has reached a place of every pool (an unbounded one knows all)."""
    if row.limit == np.inf:
        return True
    return bool(np.isfinite(row.dist[need]).all()) and all(np.isfinite(row.dist[pool]).any() for pool in pools)
