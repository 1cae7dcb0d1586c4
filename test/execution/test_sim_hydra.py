"""The simulated Hydra's perception rule and its snapshots, on the small scene with hidden fire extinguishers."""
from __future__ import annotations

import pytest
import spark_dsg as dsg

from heracles_ros.errors import ConfigError
from heracles_ros.execution.sim_hydra import SimHydra, World
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables, symbol_of
from heracles_ros.schema import Layer
from heracles_ros.search.worlds import hide_objects, map_of


@pytest.fixture
def hydra() -> SimHydra:
    """Hidden: O900 at P77 (7, 7) in R3, O901 at P12 (2, 1) in R0; the map's objects known."""
    world = generate_scene("small", 0)
    hidden = hide_objects(world, "fire extinguisher", ["P77", "P12"])
    known = [symbol_of(i) for i, row in extract_tables(map_of(world, hidden)).nodes.items() if row[0] is Layer.OBJECT]
    return SimHydra(World(world), known, sensor_range_m=3.0)


def mirrored_objects(payload: bytes) -> dict[str, str]:
    tables = extract_tables(dsg.DynamicSceneGraph.from_binary(payload))
    return {symbol_of(i): row[1] for i, row in tables.nodes.items() if row[0] is Layer.OBJECT}


def test_an_object_is_seen_within_range_in_the_robots_room_and_stays_seen(hydra):
    assert hydra.observe((0.0, 4.0, 0.0), (0.0, 4.0, 0.0)) == []  # 3.6 m from O901 at (2, 1): out of range
    assert hydra.observe((0.0, 4.0, 0.0), (1.0, 3.0, 0.0)) == ["O901"]  # 2.2 m, same room
    assert hydra.seen == ["O901"]
    assert hydra.observe((9.0, 0.5, 0.0), (9.0, 0.5, 0.0)) == []  # far from both: nothing forgotten
    assert hydra.seen == ["O901"]


def test_nothing_is_seen_through_a_wall(hydra):
    # (4, 7) is in R2, 3 m from O900 at (7, 7) in R3 across the wall between x = 4 and x = 5.
    assert hydra.observe((4.0, 7.0, 0.0), (4.0, 7.0, 0.0)) == []
    assert hydra.observe((4.0, 7.0, 0.0), (5.0, 7.0, 0.0)) == ["O900"]  # through the doorway into R3


def test_a_fast_step_past_an_object_still_sees_it(hydra):
    # From (4, 9) to (9, 4) in one tick: both ends 3.6 m from O900 at (7, 7), the segment 1.4 m.
    assert hydra.observe((9.0, 9.5, 0.0), (9.0, 9.5, 0.0)) == []
    assert hydra.observe((4.6, 9.0, 0.0), (9.0, 4.6, 0.0)) == ["O900"]


def test_the_snapshot_holds_the_map_and_what_was_seen_with_its_class_named(hydra):
    before = mirrored_objects(hydra.snapshot())
    assert "O900" not in before and "O901" not in before
    assert len(before) == 33  # the small scene's objects, all of them
    version = hydra.version
    hydra.observe((6.0, 6.0, 0.0), (6.5, 6.5, 0.0))
    assert hydra.version == version + 1
    after = mirrored_objects(hydra.snapshot())
    assert after["O900"] == "fire extinguisher" and "O901" not in after
    assert set(after) - {"O900"} == set(before)


def test_a_world_lacking_an_object_of_the_map_is_refused_with_a_count():
    world = generate_scene("small", 0)
    with pytest.raises(ConfigError, match=r"sim_world lacks 2 of the map.s 35 objects .*O998, O999"):
        SimHydra(World(world), [*(symbol_of(i) for i, r in extract_tables(world).nodes.items()
                                  if r[0] is Layer.OBJECT), "O998", "O999"])
