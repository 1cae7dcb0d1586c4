"""The ``point`` function library FalkorDB loads, so the reference system's point queries run there.

FalkorDB has no 3D points (its ``point()`` takes latitude/longitude only;
docs/known-issues.md#falkordb-no-3d-points), so
the mirror stores ``center``, ``bbox_center`` and ``bbox_dim`` as [x, y, z]
arrays and registers these JavaScript functions (``GRAPH.UDF LOAD``) under
the names Neo4j's Cypher uses: ``point.distance(a, b)`` (Euclidean, any number
of coordinates; null when either is null) and ``point.withinBBox(p, lower,
upper)`` (every coordinate within the corners, inclusive).
"""
from __future__ import annotations

LIBRARY = "point"

SCRIPT = """
function distance(a, b) {
  if (a === null || b === null || a === undefined || b === undefined) return null;
  const n = Math.min(a.length, b.length);
  let sum = 0;
  for (let i = 0; i < n; i++) { const d = a[i] - b[i]; sum += d * d; }
  return Math.sqrt(sum);
}
function withinBBox(p, lower, upper) {
  if (p === null || lower === null || upper === null || p === undefined || lower === undefined || upper === undefined) {
    return null;
  }
  for (let i = 0; i < p.length; i++) {
    if (p[i] < lower[i] || p[i] > upper[i]) return false;
  }
  return true;
}
falkor.register('distance', distance);
falkor.register('withinBBox', withinBBox);
""".strip()
