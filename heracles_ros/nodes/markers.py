"""What RViz shows of a running plan: remaining path, targets, step labels, the robot.

Pure functions from (plan, current step, robot pose) to ``visualization_msgs``
markers, plus :class:`MarkerBook`, which turns "what should be on screen now"
into one ``MarkerArray`` that also deletes, by namespace and id, every marker
shown before and no longer wanted (per-id DELETE rather than DELETEALL, whose
scope differs between RViz versions and which would also wipe other
publishers' markers on the same display).

Namespaces are fixed so an RViz config can toggle them: ``heracles/path``
(one LINE_STRIP from the robot through every waypoint still ahead),
``heracles/targets`` (one marker per remaining step, id = step index: CUBE for
a place to walk to, SPHERE for an object to inspect or pick, CYLINDER for
where an object is put down; the current step is yellow, later ones blue),
``heracles/labels`` (TEXT_VIEW_FACING "3/5 pick O2" above each target, stacked
when steps share a target) and ``heracles/robot`` (an ARROW at the body pose,
id 0, a text naming the robot and what it holds, id 1, and while the latched
stop holds, a large red "STOPPED" / "HARD STOP" above it, id 2). The dsg_mirror node
shows what moved recently in ``heracles/moved`` (per move, an ARROW from where
the node was to where it is, id 2k, and a text "O12 bag 3.0 m", id 2k+1), and the
objects the operator added in ``heracles/added`` (per addition, a translucent magenta
CUBE where it stands, id 2k, and a text "A1 fire hydrant (operator-added)", id 2k+1):
not perceived, so not drawn as Hydra draws its objects.

The dsg_mirror also draws what it mirrored (:func:`scene_markers`), for RViz without Hydra's
visualizer: ``heracles/scene/rooms`` (per room a translucent disc tinted by its class, id 2n, and
its class or name as text, id 2n+1, n the number in its symbol), ``heracles/scene/places`` (the
mesh places as POINTS, id 0, their connections as a LINE_LIST, id 1; the 3D places likewise, ids 2
and 3) and ``heracles/scene/objects`` (per perceived object a cube in a colour fixed by its class
name, id 2n, and its class as text, id 2n+1). Stable ids keep a node's markers its own from one
snapshot to the next, so a node that is gone is deleted by id.

Lifetimes: plan markers have lifetime 0, i.e. they stay until replaced or
deleted. They describe the plan, not a measurement, and a long manipulation
step publishes nothing new, so a finite lifetime would make them blink out
mid-plan; the dispatcher deletes them explicitly when the plan ends or is
replaced by a replan. The robot markers are a measurement: they live
:data:`ROBOT_LIFETIME_S` and the node refreshes them several times within it,
so if the dispatcher dies the robot vanishes instead of standing still on
screen as if it were live.
"""
from __future__ import annotations

import colorsys
import math
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from heracles_ros.execution.driver import Pose as RobotPose
from heracles_ros.mirror.additions import AdditionRecord
from heracles_ros.mirror.history import ChangeEvent
from heracles_ros.mirror.scene_view import DrawnLayer, DrawnNode, SceneView
from heracles_ros.outcomes import ChangeKind
from heracles_ros.plan_types import PlanAction, PlanResult, Point3
from heracles_ros.planar import segment_distance
from heracles_ros.ros.plan_msgs import point_msg

NS_PATH = "heracles/path"
NS_TARGETS = "heracles/targets"
NS_LABELS = "heracles/labels"
NS_ROBOT = "heracles/robot"
NS_MOVED = "heracles/moved"
NS_ADDED = "heracles/added"
NS_ROOMS = "heracles/scene/rooms"
NS_PLACES = "heracles/scene/places"
NS_OBJECTS = "heracles/scene/objects"
SCENE_NAMESPACES: tuple[str, ...] = (NS_ROOMS, NS_PLACES, NS_OBJECTS)
PLAN_NAMESPACES: tuple[str, ...] = (NS_PATH, NS_TARGETS, NS_LABELS)
ALL_NAMESPACES: tuple[str, ...] = (*PLAN_NAMESPACES, NS_ROBOT)

#: Seconds a robot marker stays without a refresh (the node refreshes it every few tenths).
ROBOT_LIFETIME_S = 1.0
#: Height of label text and the gap between labels stacked on one target, metres.
LABEL_HEIGHT_M = 0.3
LABEL_LIFT_M = 0.6
LABEL_GAP_M = 0.35

_SHAPES = {"goto": Marker.CUBE, "inspect": Marker.SPHERE, "pick": Marker.SPHERE, "place": Marker.CYLINDER}
_PATH_COLOUR = (0.1, 0.8, 0.2, 0.9)
_CURRENT_COLOUR = (1.0, 0.8, 0.0, 1.0)
_LATER_COLOUR = (0.2, 0.5, 1.0, 0.8)
_TEXT_COLOUR = (1.0, 1.0, 1.0, 1.0)
_ROBOT_COLOUR = (1.0, 0.45, 0.0, 1.0)
_STOP_COLOUR = (1.0, 0.0, 0.0, 1.0)
#: Height of the STOPPED text and how far above the robot's label it floats, metres.
STOP_HEIGHT_M = 0.6
STOP_LIFT_M = 1.3


def remaining_path(plan: PlanResult, step_index: int, robot: Point3) -> list[Point3]:
    """The robot's position, then every waypoint of steps ``step_index``.. it has not passed.

    On the current walk the robot is somewhere along its waypoints: the
    waypoints up to the start of the path segment nearest to it are behind it.
    """
    points: list[Point3] = [robot]
    for i, action in enumerate(plan.actions[step_index:], start=step_index):
        if action.name != "goto":
            continue
        waypoints = list(action.waypoints) or [action.target]
        if i == step_index and len(waypoints) > 1:
            waypoints = waypoints[_nearest_segment(waypoints, robot) + 1 :]
        points.extend(waypoints)
    return [p for k, p in enumerate(points) if k == 0 or p != points[k - 1]]


def _nearest_segment(points: list[Point3], robot: Point3) -> int:
    """Index of the planar segment nearest ``robot`` (ties go to the later one)."""
    best, best_d = 0, math.inf
    for i in range(len(points) - 1):
        d = segment_distance(robot, points[i], points[i + 1])
        if d <= best_d + 1e-9:
            best, best_d = i, min(d, best_d)
    return best


def plan_markers(
    plan: PlanResult | None, step_index: int, robot: Point3, *, frame_id: str, stamp: Time | None = None
) -> list[Marker]:
    """Path, target and label markers of the steps from ``step_index`` on (none without a plan)."""
    if plan is None:
        return []
    header = Header(frame_id=frame_id, stamp=stamp or Time())
    markers: list[Marker] = []
    path = remaining_path(plan, step_index, robot)
    if len(path) >= 2:  # a LINE_STRIP needs two points
        markers.append(
            make_marker(header, NS_PATH, 0, Marker.LINE_STRIP, (0.0, 0.0, 0.0), (0.12, 0.0, 0.0), _PATH_COLOUR,
                        points=[point_msg(p) for p in path])
        )  # fmt: skip
    stacked: dict[tuple[float, float, float], int] = {}
    count = len(plan.actions)
    for i, action in enumerate(plan.actions[step_index:], start=step_index):
        colour = _CURRENT_COLOUR if i == step_index else _LATER_COLOUR
        markers.append(
            make_marker(header, NS_TARGETS, i, _SHAPES.get(action.name, Marker.SPHERE), action.target,
                        (0.4, 0.4, 0.4), colour)
        )  # fmt: skip
        key = (round(action.target[0], 2), round(action.target[1], 2), round(action.target[2], 2))
        level = stacked.get(key, 0)
        stacked[key] = level + 1
        lifted = (action.target[0], action.target[1], action.target[2] + LABEL_LIFT_M + LABEL_GAP_M * level)
        markers.append(
            make_marker(header, NS_LABELS, i, Marker.TEXT_VIEW_FACING, lifted, (0.0, 0.0, LABEL_HEIGHT_M),
                        _CURRENT_COLOUR if i == step_index else _TEXT_COLOUR, text=step_label(i, count, action))
        )  # fmt: skip
    return markers


def step_label(index: int, count: int, action: PlanAction) -> str:
    return f"{index + 1}/{count} {action.name} {action.target_symbol}"


def robot_markers(
    pose: RobotPose, *, label: str, frame_id: str, stamp: Time | None = None, stop: str = ""
) -> list[Marker]:
    """The robot's body pose as an arrow along its heading, a text naming it, and ``stop`` in red above it."""
    header = Header(frame_id=frame_id, stamp=stamp or Time())
    lifetime = ROBOT_LIFETIME_S
    arrow = make_marker(header, NS_ROBOT, 0, Marker.ARROW, pose.position, (0.9, 0.25, 0.25), _ROBOT_COLOUR,
                        yaw=pose.yaw, lifetime_s=lifetime)  # fmt: skip
    above = (pose.x, pose.y, pose.z + LABEL_LIFT_M)
    text = make_marker(header, NS_ROBOT, 1, Marker.TEXT_VIEW_FACING, above, (0.0, 0.0, LABEL_HEIGHT_M),
                       _ROBOT_COLOUR, text=label, lifetime_s=lifetime)  # fmt: skip
    if not stop:
        return [arrow, text]
    high = (pose.x, pose.y, pose.z + STOP_LIFT_M)
    stopped = make_marker(header, NS_ROBOT, 2, Marker.TEXT_VIEW_FACING, high, (0.0, 0.0, STOP_HEIGHT_M),
                          _STOP_COLOUR, text=stop, lifetime_s=lifetime)  # fmt: skip
    return [arrow, text, stopped]


_MOVED_COLOUR = (1.0, 0.4, 0.1, 0.9)


def moved_markers(events: Iterable[ChangeEvent], *, frame_id: str, stamp: Time | None = None) -> list[Marker]:
    """An arrow from where each moved node was to where it went, and a label; the newest move of a node wins."""
    header = Header(frame_id=frame_id, stamp=stamp or Time())
    latest: dict[str, ChangeEvent] = {}
    for event in events:
        if event.kind == ChangeKind.MOVED and event.from_position is not None:
            latest[event.symbol] = event
    markers: list[Marker] = []
    for index, event in enumerate(sorted(latest.values(), key=lambda e: e.symbol)):
        start, end = event.from_position, event.position
        assert start is not None
        arrow = make_marker(header, NS_MOVED, 2 * index, Marker.ARROW, (0.0, 0.0, 0.0), (0.08, 0.2, 0.3),
                            _MOVED_COLOUR, points=[point_msg(start), point_msg(end)])  # fmt: skip
        metres = math.dist(start, end)
        above = (end[0], end[1], end[2] + LABEL_LIFT_M)
        label = make_marker(header, NS_MOVED, 2 * index + 1, Marker.TEXT_VIEW_FACING, above,
                            (0.0, 0.0, LABEL_HEIGHT_M), _TEXT_COLOUR,
                            text=f"{event.symbol} {event.cls} {metres:.1f} m")  # fmt: skip
        markers += [arrow, label]
    return markers


_ADDED_COLOUR = (0.9, 0.2, 0.9, 0.6)
_ADDED_TEXT_COLOUR = (0.9, 0.2, 0.9, 1.0)
#: Edge of the cube drawn for an added object (its size is unknown), metres.
ADDED_SIZE_M = 0.4


def added_markers(records: Iterable[AdditionRecord], *, frame_id: str, stamp: Time | None = None) -> list[Marker]:
    """A cube and a label per object the operator added (records as :class:`~heracles_ros.mirror.additions.Additions`
    lists the active ones), in symbol order."""
    header = Header(frame_id=frame_id, stamp=stamp or Time())
    markers: list[Marker] = []
    for index, record in enumerate(sorted(records, key=lambda r: (len(r.symbol), r.symbol))):
        size = (ADDED_SIZE_M, ADDED_SIZE_M, ADDED_SIZE_M)
        cube = make_marker(header, NS_ADDED, 2 * index, Marker.CUBE, record.at, size, _ADDED_COLOUR)
        above = (record.at[0], record.at[1], record.at[2] + LABEL_LIFT_M)
        label = make_marker(header, NS_ADDED, 2 * index + 1, Marker.TEXT_VIEW_FACING, above,
                            (0.0, 0.0, LABEL_HEIGHT_M), _ADDED_TEXT_COLOUR,
                            text=f"{record.symbol} {record.cls} (operator-added)")  # fmt: skip
        markers += [cube, label]
    return markers


#: Sizes of the scene markers, metres: room disc diameter and thickness, object cube edge, place point.
ROOM_DISC_M = 3.0
ROOM_DISC_THICKNESS_M = 0.05
ROOM_LABEL_HEIGHT_M = 0.6
OBJECT_SIZE_M = 0.3
PLACE_POINT_M = 0.12
_MESH_PLACE_COLOUR = (0.55, 0.6, 0.65, 0.8)
_PLACE_COLOUR = (0.35, 0.75, 0.75, 0.8)
_CONNECTION_M = 0.03


@dataclass(frozen=True)
class SceneMarkers:
    """The markers of a mirrored scene and, per namespace, how many were left out by the cap."""

    markers: list[Marker]
    left_out: dict[str, int] = field(default_factory=dict)


def class_colour(cls: str, alpha: float = 1.0) -> tuple[float, float, float, float]:
    """A colour fixed by the class name alone (the same in every run and on every machine)."""
    hue = (zlib.crc32(cls.encode()) % 360) / 360.0
    r, g, b = colorsys.hsv_to_rgb(hue, 0.65, 0.95)
    return (r, g, b, alpha)


def scene_markers(view: SceneView, *, frame_id: str, max_per_namespace: int) -> SceneMarkers:
    """Rooms, places and perceived objects as markers; at most ``max_per_namespace`` in each namespace.

    Stamped zero (the newest transform of ``frame_id``): they stand in the map, and
    equal scenes give equal markers, so the node can tell when nothing changed.
    """
    header = Header(frame_id=frame_id)
    rooms = _per_node(view.rooms.nodes, max_per_namespace, lambda n, k: _room(header, n, k))
    perceived = tuple(n for n in view.objects.nodes if not n.operator)
    objects = _per_node(perceived, max_per_namespace, lambda n, k: _object(header, n, k))
    places = [*_place_layer(header, view.mesh_places, 0, _MESH_PLACE_COLOUR),
              *_place_layer(header, view.places, 2, _PLACE_COLOUR)]
    left_out = {ns: count for ns, count in ((NS_ROOMS, rooms[1]), (NS_OBJECTS, objects[1])) if count}
    return SceneMarkers([*rooms[0], *places, *objects[0]], left_out)


def _per_node(nodes: Iterable[DrawnNode], cap: int, draw: Callable[[DrawnNode, int], list[Marker]]
              ) -> tuple[list[Marker], int]:
    """Two markers per node (ids 2n, 2n+1 from its symbol's number), the first ``cap`` markers; and how many
    were left out (a node whose symbol carries no usable number, or the number of an earlier one, counts as
    left out)."""
    markers: list[Marker] = []
    used: set[int] = set()
    left_out = 0
    for node in nodes:
        index = _symbol_index(node.symbol)
        if index is None or index in used or len(markers) + 2 > cap:
            left_out += 2
            continue
        used.add(index)
        markers += draw(node, index)
    return markers, left_out


def _symbol_index(symbol: str) -> int | None:
    """The number of a scene symbol ("O12" -> 12) when two marker ids fit it in an int32."""
    digits = symbol[1:]
    if not digits.isdigit() or int(digits) >= 2**30:
        return None
    return int(digits)


def _room(header: Header, node: DrawnNode, index: int) -> list[Marker]:
    x, y, z = node.position
    disc = make_marker(header, NS_ROOMS, 2 * index, Marker.CYLINDER, node.position,
                       (ROOM_DISC_M, ROOM_DISC_M, ROOM_DISC_THICKNESS_M), class_colour(node.cls or node.name, 0.3))
    label = make_marker(header, NS_ROOMS, 2 * index + 1, Marker.TEXT_VIEW_FACING, (x, y, z + 2 * LABEL_LIFT_M),
                        (0.0, 0.0, ROOM_LABEL_HEIGHT_M), _TEXT_COLOUR, text=node.cls or node.name)
    return [disc, label]


def _object(header: Header, node: DrawnNode, index: int) -> list[Marker]:
    x, y, z = node.position
    size = (OBJECT_SIZE_M, OBJECT_SIZE_M, OBJECT_SIZE_M)
    cube = make_marker(header, NS_OBJECTS, 2 * index, Marker.CUBE, node.position, size, class_colour(node.cls))
    label = make_marker(header, NS_OBJECTS, 2 * index + 1, Marker.TEXT_VIEW_FACING, (x, y, z + LABEL_LIFT_M),
                        (0.0, 0.0, LABEL_HEIGHT_M), _TEXT_COLOUR, text=node.cls)
    return [cube, label]


def _place_layer(header: Header, layer: DrawnLayer, first_id: int, colour: tuple[float, float, float, float]
                 ) -> list[Marker]:
    """The layer's places as one POINTS marker and its connections as one LINE_LIST (none when empty)."""
    markers: list[Marker] = []
    if layer.nodes:
        markers.append(make_marker(header, NS_PLACES, first_id, Marker.POINTS, (0.0, 0.0, 0.0),
                                   (PLACE_POINT_M, PLACE_POINT_M, 0.0), colour,
                                   points=[point_msg(n.position) for n in layer.nodes]))
    if layer.connections:
        ends = [point_msg(p) for pair in layer.connections for p in pair]
        markers.append(make_marker(header, NS_PLACES, first_id + 1, Marker.LINE_LIST, (0.0, 0.0, 0.0),
                                   (_CONNECTION_M, 0.0, 0.0), colour, points=ends))
    return markers


def make_marker(
    header: Header,
    ns: str,
    marker_id: int,
    kind: int,
    position: Point3,
    scale: Point3,
    colour: tuple[float, float, float, float],
    *,
    points: list[Point] | None = None,
    text: str = "",
    yaw: float = 0.0,
    lifetime_s: float = 0.0,
) -> Marker:
    """One ADD marker; ``yaw`` turns it about z, and lifetime 0 keeps it until replaced or deleted."""
    seconds = int(lifetime_s)
    return Marker(
        header=header,
        ns=ns,
        id=marker_id,
        type=kind,
        action=Marker.ADD,
        pose=Pose(position=point_msg(position), orientation=Quaternion(z=math.sin(yaw / 2), w=math.cos(yaw / 2))),
        scale=Vector3(x=scale[0], y=scale[1], z=scale[2]),
        color=ColorRGBA(r=colour[0], g=colour[1], b=colour[2], a=colour[3]),
        lifetime=Duration(sec=seconds, nanosec=round((lifetime_s - seconds) * 1e9)),
        points=points or [],
        text=text,
    )


class MarkerBook:
    """Remembers which (namespace, id) are on screen, to delete the stale ones.

    Not thread-safe: the node calls it under its own lock.
    """

    def __init__(self) -> None:
        self._shown: dict[tuple[str, int], str] = {}  # -> frame_id it was shown in

    @property
    def shown(self) -> set[tuple[str, int]]:
        return set(self._shown)

    def update(self, markers: list[Marker], namespaces: Iterable[str] = ALL_NAMESPACES) -> MarkerArray:
        """``markers`` become what ``namespaces`` show: DELETEs for the rest of those, then ``markers``."""
        scope = set(namespaces)
        outside = [m for m in markers if m.ns not in scope]
        if outside:
            raise ValueError(f"marker namespace {outside[0].ns!r} is outside {sorted(scope)}")
        wanted = {(m.ns, m.id): m.header.frame_id for m in markers}
        deletes = [
            Marker(header=Header(frame_id=frame), ns=ns, id=marker_id, action=Marker.DELETE)
            for (ns, marker_id), frame in sorted(self._shown.items())
            if ns in scope and (ns, marker_id) not in wanted
        ]
        self._shown = {key: frame for key, frame in self._shown.items() if key[0] not in scope}
        self._shown.update(wanted)
        return MarkerArray(markers=[*deletes, *markers])
