"""``heracles bench read-path``: the model's expensive reads on the replica, the mirror's reconciles beside them."""
from __future__ import annotations

import json

import pytest

from heracles_ros.cli import main
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables


def test_the_large_scene_is_measured_at_the_scale_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "read-path", "--scale", "0.03", "--expensive", "1", "--seconds", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["scene"] == "large seed 0 scale 0.03"
    scene = len(extract_tables(generate_scene("large", 0, scale=0.03)).nodes)
    # The database's count: the mirror's own state, its history and the planner's change log too.
    assert scene <= figures["nodes"] <= scene + 5
    assert figures["idle_reconciles"] >= 1 and figures["replica_loaded_reconciles"] >= 1
    assert figures["replica_loaded_expensive_outcomes"] and figures["primary_pid_unchanged"] is True
