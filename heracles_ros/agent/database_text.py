"""What the prompt tells the model about the database: the classes present, each label with its properties and
what they mean, the relationships, how to ask the history, and where this backend's Cypher differs.

All of it is generated from the live database (:mod:`.schema_facts`) and the dialect, so it cannot go stale.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from heracles_ros.agent.schema_facts import SchemaFacts
from heracles_ros.graphdb.cypher import history as history_q
from heracles_ros.outcomes import ChangeKind
from heracles_ros.schema import (
    CHANGE_LABEL,
    HISTORY_CLOCK_LABEL,
    HISTORY_LABELS,
    SEEN_LABEL,
    Dialect,
    Layer,
)

#: Class names listed per label at most (a real labelspace can be long).
MAX_CLASSES = 80


def classes_text(facts: SchemaFacts) -> str:
    lines = [
        "<classes>",
        "Semantic classes present in the scene graph, per node label (the class property, spelled exactly as "
        "stored: case matters). Map the user's words, including synonyms and plurals, to these exact names.",
    ]
    for label in facts.labels:
        if label.label in HISTORY_LABELS:
            continue  # past classes; the present ones are listed under the scene's labels
        if not label.classes or [name for name, _ in label.classes] == [_words(label.label)]:
            continue  # no labelspace for this layer: every node got the layer's name as its class
        names = [name for name, _ in label.classes[:MAX_CLASSES]]
        more = len(label.classes) - len(names)
        tail = f", and {more} rarer classes" if more > 0 else ""
        lines.append(f"- {label.label}: {', '.join(names)}{tail}")
    if len(lines) == 2:
        lines.append("(the database holds no scene yet)")
    lines.append("</classes>")
    return "\n".join(lines)


def _words(label: str) -> str:
    """MeshPlace -> "mesh place" (the class a node gets when its layer has no labelspace)."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", label).lower()


_LABEL_MEANINGS = {
    Layer.OBJECT.value: "an object in the world",
    Layer.MESH_PLACE.value: "a 2D patch of ground the robot might move to (symbols like P<n> or Q<n>)",
    Layer.PLACE.value: "a 3D region of free space (symbols like p<n>)",
    Layer.ROOM.value: "a room or higher-level region",
    Layer.BUILDING.value: "a building",
    "Robot": "the robot itself",
    CHANGE_LABEL: "history: one thing that changed in the scene (linked to nothing; the node is named by symbol)",
    SEEN_LABEL: "history: when a scene node was first and last seen (one per node that appeared, changed or "
    "vanished since the history began)",
    HISTORY_CLOCK_LABEL: "history: the time and sequence of the newest scene snapshot (t, seq) and of the first "
    "(start_t, start_seq)",
}

_KINDS = list(ChangeKind)
_KEY_MEANINGS = {
    "nodeSymbol": "unique symbol, e.g. 'O12'",
    "class": "semantic class, spelled as the scene spells it (case matters)",
    "name": "a human-readable name",
    "x": "position in metres",
    "y": "position in metres",
    "z": "position in metres",
    "center": "the position as a 3D point",
    "bbox_center": "centre of the bounding box, a 3D point",
    "bbox_dim": "bounding-box size in metres (x, y, z), a 3D point",
    "place": "symbol of the place the robot stands at",
    "holding": "symbol of the object the robot holds ('' when none)",
    "symbol": "the nodeSymbol of the scene node a history entry is about",
    "kind": f"what happened: {', '.join(kind.value for kind in _KINDS[:-1])} or {_KINDS[-1].value}",
    "t": "time in seconds since the Unix epoch (UTC)",
    "first_t": "time in seconds since the Unix epoch (UTC)",
    "last_t": "time in seconds since the Unix epoch (UTC)",
    "gone_t": "time in seconds since the Unix epoch (UTC)",
    "seq": "snapshot sequence number",
    "first_seq": "snapshot sequence number",
    "last_seq": "snapshot sequence number",
    "from_x": "position before a move, in metres",
    "from_y": "position before a move, in metres",
    "from_z": "position before a move, in metres",
    "from_class": "class before a relabelling",
    "from_name": "name before a renaming",
    "room": "symbol of the room that held the node when it changed",
    "layer": "the label the node has (had) in the scene",
    "present": "true while the node is in the scene",
}


def interface_text(facts: SchemaFacts, dialect: Dialect, result_token_budget: int, *, time_tool: bool = False) -> str:
    """What the database holds and how to write Cypher for this backend (``time_tool``: the model has the
    ``scene_at`` tool, and the history's notes point to it)."""
    backend = "Neo4j" if dialect.name == "neo4j" else "FalkorDB"
    lines = [
        "<database>",
        f"The scene graph is mirrored live in a {backend} graph database, queried with Cypher. "
        "Node labels (node count): properties.",
        *_contents(facts, time_tool=time_tool),
        "(a)-[:CONTAINS]->(b) means b is inside a; (a)-[:CONTAINS*]->(b) matches containment transitively. "
        "*_CONNECTED relationships join neighbours within one layer and are stored in both directions, so "
        "(a)-[:MESH_PLACE_CONNECTED*1..5]->(b) reaches the same places as an undirected pattern "
        "(count neighbour pairs with DISTINCT or a.nodeSymbol < b.nodeSymbol).",
        "A node's kind is its label, not its symbol's first letter (mesh places may be P12 or Q12).",
        f"Cypher notes for {backend}:",
        f"- 3D distance between nodes a and b: {dialect.distance_expr('a', 'b')}",
        *_dialect_notes(dialect),
        "- Places within 6 hops of a: (a)-[:MESH_PLACE_CONNECTED*1..6]->(b).",
        "- Do not call procedures (APOC, GDS, algo.*).",
        "- Class names are strings spelled as the scene's labelspace (or a room's name) spells them, spaces and "
        "case included: {class: 'trash can'}; match case-insensitively with toLower(n.class) when unsure.",
        f"- The tool is read-only. Results longer than about {result_token_budget} tokens are cut: "
        "return symbols, counts or aggregates rather than whole nodes.",
        "</database>",
    ]
    return "\n".join(lines)


def _contents(facts: SchemaFacts, *, time_tool: bool = False) -> list[str]:
    """Each label with its count, meaning and properties; what the properties mean; the relationships; and how
    to ask the history once it holds something."""
    lines: list[str] = []
    seen_keys: list[str] = []
    has_history = any(label.label == CHANGE_LABEL for label in facts.labels)
    for label in facts.labels:
        if label.label in HISTORY_LABELS and not has_history:
            continue  # nothing has changed since the history started: nothing to ask it yet
        meaning = _LABEL_MEANINGS.get(label.label, "")
        head = f"- {label.label} ({label.count}){': ' + meaning if meaning else ''}"
        lines.append(f"{head}. Properties: {', '.join(label.keys)}")
        seen_keys += [k for k in label.keys if k not in seen_keys]
    glossary = _glossary(seen_keys)
    if glossary:
        lines.append("Property meanings: " + "; ".join(glossary) + ".")
    if facts.relationships:
        lines.append("Relationships, (source)-[:TYPE]->(target):")
        lines += [f"- (:{a})-[:{rel}]->(:{b})" for a, rel, b in facts.relationships]
    if has_history:
        lines += history_notes(time_tool=time_tool)
    return lines


def _dialect_notes(dialect: Dialect) -> list[str]:
    """Where this backend's Cypher differs: points, shortest paths, variable-length patterns."""
    if dialect.has_points:
        return [
            "- `distance` has been replaced by `point.distance`; a point literal is point({x: 1.0, y: 2.0, z: 0.0}).",
            "- Fewest hops between two places: MATCH (a:MeshPlace {nodeSymbol: 'P1'}), "
            "(b:MeshPlace {nodeSymbol: 'P9'}) MATCH p = shortestPath((a)-[:MESH_PLACE_CONNECTED*]-(b)) "
            "RETURN length(p) AS hops",
        ]
    return [
        "- center, bbox_center and bbox_dim are [x, y, z] lists, not point values: point.distance(p, q) and "
        "point.withinBBox(p, lower, upper) work on them, but write a point literal as a list [1.0, 2.0, 0.0] "
        "(point({x: ..}) does not work here) and read a coordinate as center[0] (not center.x).",
        # docs/known-issues.md#falkordb-directed-ranges
        "- Variable-length *_CONNECTED patterns run undirected here (they reach the same nodes); a node is "
        "reached by many paths, so count nodes with DISTINCT, never paths.",
        "- Count hops with a bounded variable-length match (long bounds time out): "
        "MATCH p = (a:MeshPlace {nodeSymbol: 'P1'})-[:MESH_PLACE_CONNECTED*1..10]->"
        "(b:MeshPlace {nodeSymbol: 'P9'}) RETURN min(length(p)) AS hops",
    ]


def history_notes(*, time_tool: bool = False) -> list[str]:
    """How to ask the history (shown when the database holds one); with the ``scene_at`` tool, where it helps."""
    tool = [
        "- The scene at a past time (where a node was, which objects were in a room, whether it was there): the "
        "scene_at tool, which undoes every change after that time exactly; prefer it to reading Change entries "
        "for positions or presence.",
    ] if time_tool else []
    return [
        "History: the scene labels above hold the present only. Questions about the past (where was, when, what "
        f"changed, since when) are answered from {CHANGE_LABEL}, {SEEN_LABEL} and {HISTORY_CLOCK_LABEL}, which "
        "name scene nodes by `symbol` (equal to their nodeSymbol) and share no relationships with them. A move "
        "is recorded only beyond a threshold (0.5 m by default). Times are epoch seconds; \"now\" is the newest "
        f"snapshot, {HISTORY_CLOCK_LABEL}.t. A node still present has {SEEN_LABEL}.present = true; a node "
        f"there since the history began ({HISTORY_CLOCK_LABEL}.start_t) and never changed has no {SEEN_LABEL} "
        "entry (it is in the scene labels): it was first seen at start_t.",
        f"- What changed in room R2 in the last hour: {history_q.EXAMPLE_ROOM_LAST_HOUR}",
        f"- Where was O12 before it moved, and when: {history_q.EXAMPLE_WHERE_BEFORE} "
        "(answer with the time where asked, e.g. {position: POINT(1.5 -2 0.4), t: 1795000000.5})",
        *tool,
    ]


def _glossary(keys: Iterable[str]) -> list[str]:
    """"x, y, z: position in metres" style entries, grouping keys that mean the same."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        meaning = _KEY_MEANINGS.get(key)
        if meaning:
            groups.setdefault(meaning, []).append(key)
    return [f"{', '.join(names)}: {meaning}" for meaning, names in groups.items()]
