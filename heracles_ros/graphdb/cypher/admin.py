"""Statements behind the admin commands (``heracles db status|reset``, ``load``, ``summary``)."""
from __future__ import annotations

from heracles_ros.schema import CORRECTION_LABEL, MIRRORED_LABELS, ROBOT_LABEL

_MIRRORED = " OR ".join(f"n:{label}" for label in MIRRORED_LABELS)

#: Nodes per mirrored label (every label listed, zero included).
COUNT_NODES = " UNION ALL ".join(
    f"MATCH (n:{label}) RETURN '{label}' AS label, count(n) AS n" for label in MIRRORED_LABELS
)
#: Relationships per type, robot state excluded.
COUNT_EDGES = (
    f"MATCH (a)-[e]->(b) WHERE NOT a:{ROBOT_LABEL} AND NOT b:{ROBOT_LABEL} RETURN type(e) AS type, count(e) AS n"
)
#: Nodes per (label, class), most frequent first within a label.
SUMMARY_CLASSES = (
    f"MATCH (n) WHERE {_MIRRORED} RETURN labels(n)[0] AS label, n.class AS class, count(n) AS n "
    "ORDER BY label, n DESC"
)
#: Whether the graph holds any mirrored scene node (robot state, corrections and history are not a scene).
#: One label scan per layer, each stopped at its first node (a WHERE over labels scans every node on ArcadeDB).
ANY_SCENE_NODE = " UNION ALL ".join(
    f"MATCH (n:{label}) RETURN n.nodeSymbol AS symbol LIMIT 1" for label in MIRRORED_LABELS
)
#: Every node of the graph (``heracles db status`` per graph).
COUNT_ALL_NODES = "MATCH (n) RETURN count(n) AS n"
#: ``heracles db reset``: the whole graph, or all but the corrections overlay (indexes stay).
DELETE_ALL_NODES = "MATCH (n) DETACH DELETE n"
DELETE_ALL_BUT_CORRECTIONS = f"MATCH (n) WHERE NOT n:{CORRECTION_LABEL} DETACH DELETE n"
