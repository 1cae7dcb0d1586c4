"""Robot state in a real FalkorDB graph: the Robot node, AT / HOLDING links, placed objects."""
from __future__ import annotations

import pytest
from support.tiny_scene import tiny_scene

from heracles_ros.errors import ExecutionError
from heracles_ros.execution.robot_state import RobotState, RobotStateStore, starting_state
from heracles_ros.mirror.reconcile import Mirror


@pytest.fixture
def tiny_store(store):
    Mirror(store).reconcile(tiny_scene())
    return store


def links(store, rel: str) -> list[str]:
    rows = store.query(f"MATCH (:Robot {{nodeSymbol: 'robot'}})-[:{rel}]->(n) RETURN n.nodeSymbol AS s")
    return sorted(r["s"] for r in rows)


def test_write_then_read_round_trips_and_replaces_links(tiny_store):
    states = RobotStateStore(tiny_store)
    assert states.read() is None
    states.write(RobotState((1.0, 0.0, 0.0), place="P1", holding=""))
    assert states.read() == RobotState((1.0, 0.0, 0.0), place="P1", holding="")
    assert links(tiny_store, "AT") == ["P1"] and links(tiny_store, "HOLDING") == []

    states.write(RobotState((4.0, 0.2, 0.0), place="P4", holding="O2"))
    assert states.read() == RobotState((4.0, 0.2, 0.0), place="P4", holding="O2")
    assert links(tiny_store, "AT") == ["P4"]
    assert links(tiny_store, "HOLDING") == ["O2"]
    assert tiny_store.query("MATCH (r:Robot) RETURN count(r) AS n")[0]["n"] == 1

    states.write(RobotState((4.0, 0.2, 0.0), place="", holding=""))
    assert links(tiny_store, "AT") == [] and links(tiny_store, "HOLDING") == []


def test_placing_moves_the_object_to_the_place(tiny_store):
    states = RobotStateStore(tiny_store)
    states.record_placed("O2", "P0", (0.0, 0.0, 0.0))
    row = tiny_store.query(
        "MATCH (p)-[:CONTAINS]->(o:Object {nodeSymbol: 'O2'}) RETURN p.nodeSymbol AS p, o.x AS x, o.y AS y"
    )
    assert row == [{"p": "P0", "x": 0.0, "y": 0.0}]
    # The object no longer belongs to P4; O0 still does belong to P0.
    assert tiny_store.query("MATCH (:MeshPlace {nodeSymbol:'P4'})-[:CONTAINS]->(o) RETURN o.nodeSymbol AS o") == []
    contained = tiny_store.query("MATCH (:MeshPlace {nodeSymbol:'P0'})-[:CONTAINS]->(o) RETURN o.nodeSymbol AS o")
    assert sorted(r["o"] for r in contained) == ["O0", "O2"]


def test_positions_of_named_nodes(tiny_store):
    states = RobotStateStore(tiny_store)
    assert states.position_of("P3") == (3.0, 0.0, 0.0)
    assert states.position_of("O1") == (1.0, 1.0, 0.5)
    assert states.position_of("P99") is None
    assert states.position_of("kitchen") is None


def test_bad_symbols_are_refused_by_name(tiny_store):
    states = RobotStateStore(tiny_store)
    with pytest.raises(ExecutionError, match="'O1' is not a place symbol"):
        states.write(RobotState((0.0, 0.0, 0.0), place="O1"))
    with pytest.raises(ExecutionError, match="'P1' is not an object symbol"):
        states.write(RobotState((0.0, 0.0, 0.0), place="P1", holding="P1"))
    assert states.read() is None  # nothing half-written


def test_the_mirror_leaves_the_robot_alone(tiny_store):
    states = RobotStateStore(tiny_store)
    states.write(RobotState((2.0, 0.0, 0.0), place="P2", holding="O1"))
    Mirror(tiny_store).reconcile(tiny_scene())
    assert states.read() == RobotState((2.0, 0.0, 0.0), place="P2", holding="O1")
    assert links(tiny_store, "AT") == ["P2"] and links(tiny_store, "HOLDING") == ["O1"]


def test_kinds_come_from_the_database_not_the_letter(store):
    from support.hydra_scene import hydra_scene

    Mirror(store).reconcile(hydra_scene())  # mesh places are Q0..Q7
    states = RobotStateStore(store)
    states.write(RobotState((3.0, 0.0, 0.0), place="Q3", holding="O0"))
    assert links(store, "AT") == ["Q3"] and links(store, "HOLDING") == ["O0"]
    states.record_placed("O0", "Q5", (5.0, 0.0, 0.0))
    rows = store.query("MATCH (p)-[:CONTAINS]->(o:Object {nodeSymbol: 'O0'}) "
                       "RETURN p.nodeSymbol AS p, o.center AS c, o.bbox_center AS bc")
    assert rows == [{"p": "Q5", "c": [5.0, 0.0, 0.0], "bc": [5.0, 0.0, 0.0]}]  # the points move with the object
    assert states.place_position("Q5") == (5.0, 0.0, 0.0) and states.place_position("Q99") is None
    with pytest.raises(ExecutionError, match="'O1' is not a place symbol: the database holds it as Object"):
        states.place_position("O1")


# --- where a dispatcher starts: pose and held object restored together or reset together ---------------
def test_with_no_record_the_robot_starts_at_the_origin_holding_nothing(tiny_store):
    start = starting_state(RobotStateStore(tiny_store), "")
    assert (start.state, start.restored) == (RobotState((0.0, 0.0, 0.0)), False)
    assert start.account == "reset at the map origin, holding nothing: the database has no record of it"


def test_a_record_whose_place_and_object_the_scene_holds_is_restored_whole(tiny_store):
    states = RobotStateStore(tiny_store)
    states.write(RobotState((4.0, 0.2, 0.0), place="P4", holding="O2"))
    start = starting_state(states, "")
    assert (start.state, start.restored) == (RobotState((4.0, 0.2, 0.0), place="P4", holding="O2"), True)
    assert start.account == "restored from its record: at P4 holding O2"


def test_a_start_place_resets_the_pose_and_empties_the_hand_together(tiny_store):
    """A robot put at a place again (heracles up's start) never keeps holding the last run's object."""
    states = RobotStateStore(tiny_store)
    states.write(RobotState((4.0, 0.2, 0.0), place="P4", holding="O2"))
    start = starting_state(states, "P1")
    assert (start.state, start.restored) == (RobotState((1.0, 0.0, 0.0), place="P1"), False)
    assert start.account == "reset at start_place P1, holding nothing (its record had it at P4 holding O2)"


@pytest.mark.parametrize(
    ("recorded", "lacking"),
    [
        (RobotState((40.0, 2.0, 0.0), place="P40", holding="O2"), "place P40"),
        (RobotState((4.0, 0.2, 0.0), place="P4", holding="O77"), "object O77"),
        (RobotState((40.0, 2.0, 0.0), place="P40", holding="O77"), "place P40 and object O77"),
    ],
)
def test_a_record_from_another_scene_is_reset_whole_never_half(tiny_store, recorded, lacking):
    states = RobotStateStore(tiny_store)
    states.write(recorded)
    start = starting_state(states, "")
    assert (start.state, start.restored) == (RobotState((0.0, 0.0, 0.0)), False)
    assert start.account == (f"reset at the map origin, holding nothing: its record names {lacking}, which the scene "
                             "lacks (another scene was loaded)")


def test_a_start_place_the_database_lacks_or_that_is_no_place_is_refused(tiny_store):
    states = RobotStateStore(tiny_store)
    with pytest.raises(ExecutionError, match="no place 'P99' in the database"):
        starting_state(states, "P99")
    with pytest.raises(ExecutionError, match="'O1' is not a place symbol"):
        starting_state(states, "O1")
