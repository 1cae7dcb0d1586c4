"""Node settings written once: the parameters several nodes declare with one meaning, and a node's typed
settings filled from its table by name.

A node's table (``PARAMETERS``) composes the shared :class:`~heracles_ros.settings.Setting` entries below with
its own, and its settings object is a frozen dataclass whose fields are the parameter names, built by
:func:`settings_from`: a parameter reaches the node's settings without a line copying it over, and one the
table declares but the dataclass lacks (or the reverse) stops the node at start, naming it.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S
from heracles_ros.ros.runner import SHUTDOWN_TIMEOUT
from heracles_ros.settings import Setting

DB_URI = Setting(
    "db_uri", "embedded",
    "Graph database: embedded[:DATA_DIR], falkordb://host:port, neo4j://host:port[/db] or bolt://host:port "
    "(credentials only from NEO4J_USERNAME / NEO4J_PASSWORD / FALKORDB_PASSWORD)",
)
GRAPH_NAME = Setting(
    "graph_name", "heracles",
    "FalkorDB graph holding the mirrored scene, the same in every node (ignored by Neo4j: the URI's path names "
    "the database)",
)
#: What every node of ours declares: the fields of :class:`NodeSettings`.
COMMON = (DB_URI, GRAPH_NAME, SHUTDOWN_TIMEOUT)

ROBOT_SYMBOL = Setting("robot_symbol", "robot", "nodeSymbol of the robot's node in the database (plans start from it)")
MAP_FRAME = Setting("map_frame", "map", "Frame of the node's plans, progress, poses and markers")
PLANNER_TIMEOUT = Setting(
    "planner_timeout_s", 10.0,
    "Time limit of planning one command or one replan (problem building and Fast Downward), seconds", minimum=0.1,
)
#: Shared by the nodes that read the scene (the language server's model and planner, the dispatcher's replans).
SNAPSHOT_WAIT = Setting(
    "snapshot_wait_s", DEFAULT_WAIT_S,
    "How long a read waits for a mirror update in progress to end; past it the rows may mix two snapshots "
    "(the model is told), seconds", minimum=0.0, maximum=600.0,
)
CLIENT_LOST = Setting(
    "client_lost_s", 3.0,
    "Seconds a goal's client_node may be gone from the ROS graph before the goal is cancelled with reason "
    "client_lost (a command and its plan, a plan and the robot's motion); 0 = never (plain ROS: it runs on)",
    minimum=0.0, maximum=3600.0,
)
INSTANCE_CHECK = Setting(
    "instance_check_s", 2.0,
    "At start, how long to look for another node of this kind's claim on this robot before opening or writing "
    "anything (discovery is not instant); an older one found = refuse to start, found later = stop, seconds; "
    "0 = not looked for (this one's claim is still announced)", minimum=0.0, maximum=60.0,
)
ADDITION_MERGE_RADIUS = Setting(
    "addition_merge_radius_m", 1.0,
    "An object the operator adds and a mapped one of its class this close are the same object: the language "
    "server adds nothing, the mirror retires the addition once Hydra perceives it; keep it equal in both nodes, "
    "metres", minimum=0.0, maximum=1000.0,
)


@dataclass(frozen=True)
class NodeSettings:
    """What every node's settings hold (:data:`COMMON`); a node's own dataclass adds its parameters as fields."""

    db_uri: str
    graph_name: str
    shutdown_timeout_s: float


S = TypeVar("S", bound=NodeSettings)


def settings_from(cls: type[S], values: Mapping[str, Any], *, read_elsewhere: Collection[str] = ()) -> S:
    """``cls`` with each field the checked value of the parameter of its name.

    Every parameter in ``values`` must be a field, unless the node reads it ``elsewhere`` (the dispatcher's
    driver settings); a field without a parameter, or a parameter nobody reads, is a TypeError naming it.
    """
    names = {field.name for field in fields(cls)}
    unread = set(values) - names - set(read_elsewhere)
    missing = names - set(values)
    if unread or missing:
        raise TypeError(f"{cls.__name__} does not match its parameter table: parameters without a field "
                        f"{sorted(unread)}, fields without a parameter {sorted(missing)}")
    return cls(**{name: values[name] for name in names})
