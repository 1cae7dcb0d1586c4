"""Marker content: frames, namespaces, shapes, lifetimes, and deletion of stale markers."""
from __future__ import annotations

import math

import pytest
from visualization_msgs.msg import Marker

from heracles_ros.execution.driver import Pose
from heracles_ros.mirror.scene_view import DrawnLayer, DrawnNode, SceneView
from heracles_ros.nodes.markers import (
    ALL_NAMESPACES,
    NS_LABELS,
    NS_OBJECTS,
    NS_PATH,
    NS_ROBOT,
    NS_TARGETS,
    PLAN_NAMESPACES,
    ROBOT_LIFETIME_S,
    MarkerBook,
    plan_markers,
    remaining_path,
    robot_markers,
    scene_markers,
)
from heracles_ros.outcomes import PlanStatus
from heracles_ros.plan_types import PlanAction, PlanResult

# P0 (0,0) -> P1 (2,0) -> P2 (2,2) -> P3 (4,2); O7 next to P3; then back to P1 and put O7 down there.
PLAN = PlanResult(
    PlanStatus.SOLVED,
    "(object-in-place O7 P1)",
    "P0",
    [
        PlanAction("goto", ("P0", "P3"), "P3", (4.0, 2.0, 0.0),
                   ((0.0, 0.0, 0.0), (2.0, 0.0, 0.0), (2.0, 2.0, 0.0), (4.0, 2.0, 0.0)), ("P0", "P1", "P2", "P3")),
        PlanAction("pick", ("O7", "P3"), "O7", (4.5, 2.5, 0.4)),
        PlanAction("goto", ("P3", "P1"), "P1", (2.0, 0.0, 0.0),
                   ((4.0, 2.0, 0.0), (2.0, 2.0, 0.0), (2.0, 0.0, 0.0)), ("P3", "P2", "P1")),
        PlanAction("place", ("O7", "P1"), "O7", (2.0, 0.0, 0.0)),
    ],
)  # fmt: skip


def by_ns(markers: list[Marker], ns: str) -> dict[int, Marker]:
    return {m.id: m for m in markers if m.ns == ns}


def lifetime_s(marker: Marker) -> float:
    return marker.lifetime.sec + marker.lifetime.nanosec * 1e-9


def test_the_remaining_path_starts_at_the_robot_and_drops_passed_waypoints():
    # Robot half-way along the second segment (P1 -> P2) of the first walk.
    path = remaining_path(PLAN, 0, (2.0, 1.0, 0.0))
    assert path == [(2.0, 1.0, 0.0), (2.0, 2.0, 0.0), (4.0, 2.0, 0.0), (2.0, 2.0, 0.0), (2.0, 0.0, 0.0)]
    # At the start: only the robot's own position is dropped as a duplicate of P0.
    assert remaining_path(PLAN, 0, (0.0, 0.0, 0.0))[:2] == [(0.0, 0.0, 0.0), (2.0, 0.0, 0.0)]
    # During the pick (step 1) only the walk back is ahead; the finished walk is gone.
    assert remaining_path(PLAN, 1, (4.0, 2.0, 0.0)) == [(4.0, 2.0, 0.0), (2.0, 2.0, 0.0), (2.0, 0.0, 0.0)]
    # Nothing left to walk while placing.
    assert remaining_path(PLAN, 3, (2.0, 0.0, 0.0)) == [(2.0, 0.0, 0.0)]


def test_plan_markers_are_in_the_map_frame_with_fixed_namespaces_shapes_and_no_expiry():
    markers = plan_markers(PLAN, 1, (4.0, 2.0, 0.0), frame_id="map")
    assert {m.header.frame_id for m in markers} == {"map"}
    assert {m.ns for m in markers} == set(PLAN_NAMESPACES)
    assert all(m.action == Marker.ADD and lifetime_s(m) == 0.0 for m in markers)  # stay until replaced

    (path,) = by_ns(markers, NS_PATH).values()
    assert path.type == Marker.LINE_STRIP and path.scale.x > 0 and path.color.a > 0
    assert [(p.x, p.y) for p in path.points] == [(4.0, 2.0), (2.0, 2.0), (2.0, 0.0)]

    targets = by_ns(markers, NS_TARGETS)
    assert sorted(targets) == [1, 2, 3]  # id = step index; the finished walk (0) is not shown
    assert [targets[i].type for i in (1, 2, 3)] == [Marker.SPHERE, Marker.CUBE, Marker.CYLINDER]
    assert (targets[1].pose.position.x, targets[1].pose.position.y, targets[1].pose.position.z) == (4.5, 2.5, 0.4)
    current, later = targets[1].color, targets[2].color
    assert (current.r, current.g, current.b) != (later.r, later.g, later.b)  # the step under way stands out

    labels = by_ns(markers, NS_LABELS)
    assert {i: m.text for i, m in labels.items()} == {1: "2/4 pick O7", 2: "3/4 goto P1", 3: "4/4 place O7"}
    assert all(m.type == Marker.TEXT_VIEW_FACING and m.scale.z > 0 for m in labels.values())
    # Steps 2 and 3 share a target (P1): their labels are stacked, not drawn on top of each other.
    assert labels[3].pose.position.z > labels[2].pose.position.z > targets[2].pose.position.z


def test_no_plan_means_no_plan_markers():
    assert plan_markers(None, 0, (0.0, 0.0, 0.0), frame_id="map") == []


def test_the_robot_is_an_arrow_along_its_heading_that_expires_without_refresh():
    arrow, text = robot_markers(Pose(1.0, 2.0, 0.0, yaw=math.pi / 2), label="spot holding O7", frame_id="odom")
    assert (arrow.ns, arrow.id, arrow.type) == (NS_ROBOT, 0, Marker.ARROW)
    assert (text.ns, text.id, text.type, text.text) == (NS_ROBOT, 1, Marker.TEXT_VIEW_FACING, "spot holding O7")
    assert arrow.header.frame_id == text.header.frame_id == "odom"
    assert lifetime_s(arrow) == lifetime_s(text) == ROBOT_LIFETIME_S > 0
    q = arrow.pose.orientation
    assert 2 * math.atan2(q.z, q.w) == pytest.approx(math.pi / 2)
    assert (arrow.pose.position.x, arrow.pose.position.y) == (1.0, 2.0)


def test_a_latched_stop_is_a_red_text_over_the_robot_that_goes_with_the_resume():
    pose = Pose(1.0, 2.0, 0.5)
    arrow, text, stop = robot_markers(pose, label="spot", frame_id="map", stop="STOPPED")
    assert (stop.ns, stop.id, stop.type, stop.text) == (NS_ROBOT, 2, Marker.TEXT_VIEW_FACING, "STOPPED")
    assert (stop.color.r, stop.color.g, stop.color.b) == (1.0, 0.0, 0.0)
    assert stop.pose.position.z > text.pose.position.z > pose.z  # above the robot's own label
    assert (stop.pose.position.x, stop.pose.position.y) == (1.0, 2.0)
    book = MarkerBook()
    book.update([arrow, text, stop])
    resumed = book.update(robot_markers(pose, label="spot", frame_id="map"))
    assert [(m.ns, m.id) for m in resumed.markers if m.action == Marker.DELETE] == [(NS_ROBOT, 2)]


def test_the_book_deletes_markers_of_finished_steps_and_of_an_ended_plan():
    book = MarkerBook()
    robot = robot_markers(Pose(0.0, 0.0), label="robot", frame_id="map")
    first = book.update(plan_markers(PLAN, 0, (0.0, 0.0, 0.0), frame_id="map") + robot).markers
    assert all(m.action == Marker.ADD for m in first)
    assert len(first) == 1 + 4 + 4 + 2

    # Step 0 done: its target and label go, by namespace and id; nothing else is deleted.
    second = book.update(plan_markers(PLAN, 1, (4.0, 2.0, 0.0), frame_id="map") + robot).markers
    deleted = {(m.ns, m.id) for m in second if m.action == Marker.DELETE}
    assert deleted == {(NS_TARGETS, 0), (NS_LABELS, 0)}
    assert all(m.header.frame_id == "map" for m in second)
    assert second.index(next(m for m in second if m.action == Marker.ADD)) == len(deleted)  # deletes first

    # Plan ended: every plan marker still shown is deleted, the robot stays.
    third = book.update(robot).markers
    deleted = {(m.ns, m.id) for m in third if m.action == Marker.DELETE}
    assert deleted == {(NS_PATH, 0)} | {(ns, i) for ns in (NS_TARGETS, NS_LABELS) for i in (1, 2, 3)}
    assert book.shown == {(NS_ROBOT, 0), (NS_ROBOT, 1)}
    # Nothing stale is left: the next refresh deletes nothing.
    assert all(m.action == Marker.ADD for m in book.update(robot).markers)


def test_a_replan_with_fewer_steps_deletes_the_extra_ids():
    book = MarkerBook()
    book.update(plan_markers(PLAN, 0, (0.0, 0.0, 0.0), frame_id="map"), PLAN_NAMESPACES)
    shorter = PlanResult(PlanStatus.SOLVED, PLAN.goal, "P2", PLAN.actions[2:])
    array = book.update(plan_markers(shorter, 0, (2.0, 2.0, 0.0), frame_id="map"), PLAN_NAMESPACES)
    deleted = {(m.ns, m.id) for m in array.markers if m.action == Marker.DELETE}
    assert deleted == {(NS_TARGETS, 2), (NS_TARGETS, 3), (NS_LABELS, 2), (NS_LABELS, 3)}


def test_an_update_scoped_to_some_namespaces_leaves_the_others_alone():
    book = MarkerBook()
    book.update(plan_markers(PLAN, 0, (0.0, 0.0, 0.0), frame_id="map"), ALL_NAMESPACES)
    array = book.update(robot_markers(Pose(0.0, 0.0), label="robot", frame_id="map"), (NS_ROBOT,))
    assert not any(m.action == Marker.DELETE for m in array.markers)
    with pytest.raises(ValueError, match="heracles/path"):
        book.update(plan_markers(PLAN, 0, (0.0, 0.0, 0.0), frame_id="map"), (NS_ROBOT,))


def _objects(*symbols_and_classes: tuple[str, str]) -> DrawnLayer:
    return DrawnLayer(tuple(DrawnNode(symbol, cls, "", (float(k), 0.0, 0.0))
                            for k, (symbol, cls) in enumerate(symbols_and_classes)))


def test_scene_markers_are_capped_per_namespace_and_say_how_many_were_left_out():
    view = SceneView(objects=_objects(("O1", "box"), ("O2", "bag"), ("O3", "box")))
    built = scene_markers(view, frame_id="map", max_per_namespace=4)
    assert sorted(m.id for m in built.markers if m.ns == NS_OBJECTS) == [2, 3, 4, 5]  # O1 and O2, by symbol
    assert built.left_out == {NS_OBJECTS: 2}
    assert scene_markers(view, frame_id="map", max_per_namespace=6).left_out == {}


def test_an_object_class_has_one_colour_in_every_scene_and_two_symbols_of_one_number_do_not_share_markers():
    first = scene_markers(SceneView(objects=_objects(("O1", "box"))), frame_id="map", max_per_namespace=10)
    other = scene_markers(SceneView(objects=_objects(("O9", "bag"), ("O5", "box"))), frame_id="map",
                          max_per_namespace=10)
    colour = {m.id: m.color for m in other.markers if m.type == Marker.CUBE}
    assert first.markers[0].color == colour[10] != colour[18]
    clash = scene_markers(SceneView(objects=_objects(("O4", "box"), ("o4", "bag"))), frame_id="map",
                          max_per_namespace=10)
    assert [m.text for m in clash.markers if m.type == Marker.TEXT_VIEW_FACING] == ["box"]
    assert clash.left_out == {NS_OBJECTS: 2}
