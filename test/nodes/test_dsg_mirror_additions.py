"""An operator's addition through the dsg_mirror node's snapshots over DDS: noise does not erase it.

Issue 39, N6: Hydra saw a same-class object within 1 m once, then lost it; the addition stayed
retired and the scene had neither. Here the snapshots go to the real node as Hydra's would (stamped
about a second apart), and the database is read after each status.
"""
from __future__ import annotations

from typing import Any

import pytest
from support.mirror_node import mirror_node
from support.tiny_scene import add_object, tiny_scene

from heracles_ros.errors import GoalError
from heracles_ros.formats.pddl_goal import check_goal
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections

T0 = 1_800_000_000.0


def bags(store: GraphStore) -> set[str]:
    rows = store.query("MATCH (o:Object) WHERE toLower(o.class) = 'bag' AND o.y > 1.5 RETURN o.nodeSymbol AS s")
    return {str(r["s"]) for r in rows}


def test_an_addition_survives_a_one_snapshot_detection_and_returns_when_its_replacement_goes(
    ros_domain_id: int, db_uri: str, graph_name: str, store: GraphStore
) -> None:
    params: dict[str, Any] = {"db_uri": db_uri, "graph_name": graph_name}
    scene = tiny_scene()
    seen = tiny_scene()
    add_object(seen, 9100, 1, (4.2, 2.3, 0.5), 4)  # a bag 0.36 m from the operator's
    with mirror_node(ros_domain_id, **params) as mirror:
        mirror.send(scene, 1, stamp_s=T0)
        [added] = Corrections(store).propose([], [{"add": "Bag", "at": [4.0, 2.0, 0.5], "near": "O2"}]).added
        assert added.symbol == "A1"

        mirror.send(seen, 2, stamp_s=T0 + 1)  # one detection ...
        mirror.send(scene, 3, stamp_s=T0 + 2)  # ... then lost
        assert bags(store) == {"A1"}
        assert check_goal("(visited-object A1)", store) is not None

        for sequence in (4, 5, 6):  # seen for three snapshots over two seconds: confirmed
            mirror.send(seen, sequence, stamp_s=T0 + sequence)
        assert bags(store) == {"O9100"}

        mirror.send(scene, 7, stamp_s=T0 + 7)  # the object that replaced it disappears: the addition is back
        assert bags(store) == {"A1"}
        assert check_goal("(visited-object A1)", store) is not None
        with pytest.raises(GoalError, match="unknown symbol 'O9100'"):
            check_goal("(visited-object O9100)", store)
