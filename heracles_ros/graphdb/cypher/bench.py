"""Statements only the mirror benchmark sends (its floor reuses cypher.mirror's CREATE statements)."""
from __future__ import annotations

#: Empties a benchmark graph (never used on a real one).
DROP_ALL = "MATCH (n) DETACH DELETE n"
#: Whether a Neo4j database is empty before the benchmark writes to it (Neo4j has no separate graphs).
COUNT_ALL = "MATCH (n) RETURN count(n) AS n"
#: The stop benchmark's two walk ends: the places at the scene's opposite corners.
PLACES_ALONG_DIAGONAL = "MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s ORDER BY p.x + p.y, s"
