"""Candidates of a clarification described from the live graph (real FalkorDB, small synthetic scene)."""
from __future__ import annotations

import pytest

from heracles_ros.agent.referents import Referents
from heracles_ros.execution.robot_state import RobotState, RobotStateStore


def test_symbols_are_described_from_the_graph_and_made_up_ones_are_reported(small_store):
    row = small_store.query(
        "MATCH (r:Room)-[:CONTAINS]->(p:MeshPlace)-[:CONTAINS]->(o:Object) "
        "RETURN o.nodeSymbol AS o, o.class AS c, o.x AS x, o.y AS y, r.nodeSymbol AS r, r.class AS rc, "
        "p.nodeSymbol AS p ORDER BY o LIMIT 1")[0]
    referents = Referents(small_store, robot_symbol="robot")
    (candidate,), missing = referents.describe([row["o"], "O99999", "robot"])
    assert missing == ["O99999", "robot"]
    assert (candidate.symbol, candidate.class_name, candidate.room, candidate.room_class) == (
        row["o"], row["c"], row["r"], row["rc"])
    assert candidate.distance_m is None  # no robot recorded yet: no distance to tell
    assert candidate.description == f"{row['o']} ({row['c']}) in {row['r']} ({row['rc']})"

    RobotStateStore(small_store).write(RobotState((1.0, 2.0, 0.0)))
    (candidate,), _ = referents.describe([row["o"]])
    assert candidate.distance_m == pytest.approx(((row["x"] - 1.0) ** 2 + (row["y"] - 2.0) ** 2) ** 0.5)
    assert candidate.description.endswith(f", {candidate.distance_m:.1f} m from the robot")
    (place,), _ = referents.describe([row["p"]])
    assert (place.room, place.class_name) == (row["r"], "mesh place")
    assert referents.classes([row["o"], "O99999"]) == {row["o"]: row["c"]}
