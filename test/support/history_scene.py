"""The issue's history scenario on the tiny scene: one object moved 3 m, one nudged 0.1 m, one gone, one new."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import spark_dsg as dsg

from support.cli import heracles
from support.tiny_scene import add_object, node_id, tiny_scene

#: When the tiny scene is loaded; the changed one comes a minute later.
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z

#: Before and after of the 3 m move (O0) and the 0.1 m nudge (O1).
MOVED_FROM = (0.0, 1.0, 0.5)
MOVED_TO = (3.0, 1.0, 0.5)
NUDGED_TO = (1.1, 1.0, 0.5)


def changed_scene() -> dsg.DynamicSceneGraph:
    """tiny_scene with O0 moved 3 m, O1 moved 0.1 m, O3 removed and O5 (a chair on P2, room R0) added."""
    graph = tiny_scene()
    for symbol, position in (("O0", MOVED_TO), ("O1", NUDGED_TO)):
        attrs = graph.get_node(node_id(symbol)).attributes
        attrs.position = np.array(position)
        attrs.bounding_box = dsg.BoundingBox(np.array([0.5, 0.4, 0.3]), np.array(position))
    graph.remove_node(node_id("O3"))
    add_object(graph, 5, 3, (2.0, 1.0, 0.5), 2)
    return graph


def load_both(capsys: pytest.CaptureFixture[str], db: list[str], folder: Path) -> None:
    """``heracles load`` of the tiny scene at T0, then of the changed one at T0 + 60, into the graph the --db/--graph
    options ``db`` name (the files are written to ``folder``)."""
    for name, graph, stamp in (("before.json", tiny_scene(), T0), ("after.json", changed_scene(), T0 + 60)):
        path = folder / name
        graph.save(str(path), include_mesh=False)
        status, _, err = heracles(capsys, "load", str(path), "--time", str(stamp), *db)
        assert status == 0, err
