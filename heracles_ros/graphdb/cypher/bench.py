"""Statements only the mirror benchmark sends (its floor reuses cypher.mirror's CREATE statements)."""
from __future__ import annotations

#: Empties a benchmark graph (never used on a real one).
DROP_ALL = "MATCH (n) DETACH DELETE n"
