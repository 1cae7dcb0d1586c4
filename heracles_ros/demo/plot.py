"""A top-down picture of a scene with the robot's executed path, for people who would rather look.

Drawn from the same rows the database mirrors (:class:`SceneTables`): mesh
places as a faint floor coloured by room, their edges as faint lines, rooms
labelled, objects by class; on top, the path the robot walked, where it
started and ended, and the targets of the plan, labelled. matplotlib's Agg
backend is used, so no display is needed.
"""
from __future__ import annotations

import itertools
import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from heracles_ros.errors import ConfigError
from heracles_ros.extras import tool_library
from heracles_ros.plan_types import Point3
from heracles_ros.scene.tables import NodeRow, SceneTables, edge_ends, relation_of, symbol_of
from heracles_ros.schema import CONTAINS, Layer

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

#: Pale room colours (floor), strong enough to tell rooms apart, faint enough to read over.
_ROOM_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7", "#9c755f")
#: Object classes: a colour and a marker each, cycling.
_CLASS_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                  "#bcbd22", "#7f7f7f")
_CLASS_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h", "<", ">")
_PATH_COLOUR = "#c2185b"


@dataclass(frozen=True)
class Target:
    """Something the plan acted on, e.g. ``Target("O14", "pick O14 (box)", (6.1, 6.8, 0.9))``."""

    symbol: str
    label: str
    position: Point3


@dataclass
class Overlay:
    """What the run did, drawn over the scene."""

    title: str
    #: Where the robot went, in order (the executed path).
    path: list[Point3] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    start: Point3 | None = None
    end: Point3 | None = None
    #: One line under the title, e.g. the goal.
    subtitle: str = ""


def render_scene(tables: SceneTables, overlay: Overlay, out: Path, *, dpi: int = 150) -> Path:
    """Write the picture to ``out`` (PNG) and return its path."""
    fig = scene_figure(tables, overlay, dpi=dpi)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=dpi)
    except OSError as exc:
        raise ConfigError(f"cannot write the picture {out}: {exc}") from exc
    return out


def scene_figure(tables: SceneTables, overlay: Overlay, *, dpi: int = 150) -> Figure:
    """The picture as a matplotlib Figure with metric axes (x and y in metres, equal aspect).

    A bare Figure, not pyplot's: nothing global to close, and Agg draws it without a display.
    """
    tool_library("matplotlib", "the demo's picture")
    from matplotlib.figure import Figure

    scene = _Scene.of(tables)
    cell = _cell_size(scene.mesh_edges)
    drawn = [*scene.mesh.values(), *scene.objects.values()]
    xs = [row[3] for row in drawn] + [p[0] for p in overlay.path]
    ys = [row[4] for row in drawn] + [p[1] for p in overlay.path]
    margin = 1.5 * cell
    x0, x1, y0, y1 = min(xs) - margin, max(xs) + margin, min(ys) - margin, max(ys) + margin
    width = 11.0
    height = max(4.0, min(11.0, width * (y1 - y0) / max(x1 - x0, 1e-6) + 1.2))
    fig = Figure(figsize=(width + 3.2, height), dpi=dpi)
    ax = fig.subplots()
    _draw_floor(ax, scene, cell)
    handles = _draw_objects(ax, scene.objects)
    _draw_overlay(ax, overlay, cell)
    handles += _overlay_legend(overlay)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.grid(False)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False,
              title="objects (by class) and run", title_fontsize=10, alignment="left")
    title = overlay.title + (f"\n{overlay.subtitle}" if overlay.subtitle else "")
    ax.set_title(title, fontsize=12, loc="left")
    fig.tight_layout()
    return fig


@dataclass(frozen=True)
class _Scene:
    """What the picture draws of the tables: mesh places, objects, rooms, which room holds each mesh place,
    and the mesh places' edges as line segments."""

    mesh: dict[int, NodeRow]
    objects: dict[int, NodeRow]
    rooms: dict[int, NodeRow]
    room_of: dict[int, int]
    mesh_edges: list[tuple[tuple[float, float], tuple[float, float]]]

    @classmethod
    def of(cls, tables: SceneTables) -> _Scene:
        mesh = {i: row for i, row in tables.nodes.items() if row[0] is Layer.MESH_PLACE}
        objects = {i: row for i, row in tables.nodes.items() if row[0] is Layer.OBJECT}
        rooms = {i: row for i, row in tables.nodes.items() if row[0] is Layer.ROOM}
        if not mesh:
            raise ConfigError("the scene has no mesh places to draw")
        room_of: dict[int, int] = {}
        mesh_edges: list[tuple[tuple[float, float], tuple[float, float]]] = []
        for key in tables.edges:
            a, b = edge_ends(key)
            relation = relation_of(a, b, tables.nodes)
            if relation is None:
                continue
            source, target, kind = relation
            if kind == CONTAINS and source in rooms and target in mesh:
                room_of[target] = source
            elif kind == Layer.MESH_PLACE.connected:
                mesh_edges.append(((mesh[a][3], mesh[a][4]), (mesh[b][3], mesh[b][4])))
        return cls(mesh, objects, rooms, room_of, mesh_edges)


def _draw_floor(ax: Axes, scene: _Scene, cell: float) -> None:
    """One pale square per mesh place, coloured by room, the places' edges, and each room's name."""
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Rectangle

    mesh, rooms, room_of = scene.mesh, scene.rooms, scene.room_of
    room_ids = sorted(rooms, key=symbol_of)
    colour_of_room = {r: _ROOM_COLOURS[k % len(_ROOM_COLOURS)] for k, r in enumerate(room_ids)}
    squares, colours = [], []
    for i, row in mesh.items():
        squares.append(Rectangle((row[3] - cell / 2, row[4] - cell / 2), cell, cell))
        colours.append(colour_of_room.get(room_of.get(i, -1), "#dddddd"))
    ax.add_collection(PatchCollection(squares, facecolors=colours, edgecolors="none", alpha=0.16, zorder=0))
    ax.add_collection(LineCollection(scene.mesh_edges, colors="#9e9e9e", linewidths=0.6, alpha=0.55, zorder=1))
    ax.scatter([r[3] for r in mesh.values()], [r[4] for r in mesh.values()], s=5, c="#9e9e9e", zorder=1,
               linewidths=0)
    # Room names at the middle of their places (the room node's own position may sit elsewhere).
    members: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for place, room in room_of.items():
        members[room].append((mesh[place][3], mesh[place][4]))
    for room in room_ids:
        points = members.get(room)
        if points:
            left = min(p[0] for p in points) - 0.45 * cell
            top = max(p[1] for p in points) + 0.45 * cell
        else:
            left, top = rooms[room][3], rooms[room][4]
        # Inside the room's top-left corner: paths tend to run through rooms' middles.
        ax.text(left, top, f"{rooms[room][1]} ({symbol_of(room)})", ha="left", va="top",
                fontsize=11, fontweight="bold", color=colour_of_room[room], zorder=3,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.6})


def _draw_objects(ax: Axes, objects: dict[int, NodeRow]) -> list[Line2D]:
    """Objects by class, a colour and a marker each; their legend entries."""
    from matplotlib.lines import Line2D

    by_class: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in objects.values():
        by_class[str(row[1])].append((row[3], row[4]))
    handles = []
    for k, cls in enumerate(sorted(by_class)):
        colour, marker = _CLASS_COLOURS[k % len(_CLASS_COLOURS)], _CLASS_MARKERS[k % len(_CLASS_MARKERS)]
        pts = by_class[cls]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=46, c=colour, marker=marker,
                   edgecolors="black", linewidths=0.5, zorder=4)
        handles.append(Line2D([], [], color=colour, marker=marker, markeredgecolor="black", linestyle="",
                              markersize=8, label=f"{cls} ({len(pts)})"))
    return handles


def _overlay_legend(overlay: Overlay) -> list[Line2D]:
    """Legend entries for what the overlay drew."""
    from matplotlib.lines import Line2D

    handles = []
    if overlay.path:
        handles.append(Line2D([], [], color=_PATH_COLOUR, linewidth=3, label="robot path"))
    if overlay.start:
        handles.append(Line2D([], [], color="#2e7d32", marker="o", markersize=11, linestyle="",
                              markeredgecolor="white", label="start"))
    if overlay.end:
        handles.append(Line2D([], [], color=_PATH_COLOUR, marker="*", markersize=15, linestyle="",
                              markeredgecolor="white", label="end"))
    if overlay.targets:
        handles.append(Line2D([], [], color=_PATH_COLOUR, marker="o", markersize=15, linestyle="",
                              markerfacecolor="none", markeredgewidth=2, label="plan target"))
    return handles


def _draw_overlay(ax: Axes, overlay: Overlay, cell: float) -> None:
    """The path with direction arrows, start and end, and labelled targets."""
    path = _dedupe(overlay.path)
    if len(path) >= 2:
        ax.plot([p[0] for p in path], [p[1] for p in path], color="white", linewidth=6,
                solid_capstyle="round", zorder=7)
        ax.plot([p[0] for p in path], [p[1] for p in path], color=_PATH_COLOUR,
                linewidth=3, solid_capstyle="round", zorder=8)
        travelled = 0.0
        next_arrow = 1.5 * cell
        for a, b in itertools.pairwise(path):
            seg = math.dist(a[:2], b[:2])
            if seg <= 0:
                continue
            while travelled + seg >= next_arrow:
                t = (next_arrow - travelled) / seg
                mx, my = a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])
                dx, dy = (b[0] - a[0]) / seg * 0.01, (b[1] - a[1]) / seg * 0.01
                ax.annotate("", xy=(mx + dx, my + dy), xytext=(mx, my), zorder=9,
                            arrowprops={"arrowstyle": "-|>", "color": _PATH_COLOUR, "mutation_scale": 16,
                                        "linewidth": 0})
                next_arrow += 2.5 * cell
            travelled += seg
    if overlay.start:
        ax.scatter([overlay.start[0]], [overlay.start[1]], s=170, c="#2e7d32", edgecolors="white",
                   linewidths=1.5, zorder=10)
        ax.annotate("start", (overlay.start[0], overlay.start[1]), xytext=(-12, -16),
                    textcoords="offset points", fontsize=10, fontweight="bold", color="#2e7d32", zorder=11)
    if overlay.end:
        ax.scatter([overlay.end[0]], [overlay.end[1]], s=320, c=_PATH_COLOUR, marker="*",
                   edgecolors="white", linewidths=1.2, zorder=10)
    for k, target in enumerate(overlay.targets):
        x, y = target.position[0], target.position[1]
        ax.scatter([x], [y], s=420, facecolors="none", edgecolors=_PATH_COLOUR, linewidths=2.2,
                   zorder=9)
        offset = (28, 22) if k % 2 == 0 else (28, -30)
        ax.annotate(target.label, (x, y), xytext=offset, textcoords="offset points", fontsize=10,
                    fontweight="bold", color=_PATH_COLOUR, zorder=12,
                    bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": _PATH_COLOUR, "lw": 1},
                    arrowprops={"arrowstyle": "-", "color": _PATH_COLOUR, "lw": 1.2})


def _cell_size(edges: Sequence[tuple[tuple[float, float], tuple[float, float]]]) -> float:
    """Typical spacing of mesh places (median edge length), to size the floor squares."""
    lengths = [math.dist(a, b) for a, b in edges if math.dist(a, b) > 0]
    return statistics.median(lengths) if lengths else 1.0


def _dedupe(points: Sequence[Point3]) -> list[Point3]:
    """Drop consecutive repeats (progress reports while standing still)."""
    out: list[Point3] = []
    for p in points:
        if not out or math.dist(out[-1], p) > 1e-6:
            out.append(p)
    return out
