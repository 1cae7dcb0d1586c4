"""``heracles bench as-of``: after churn, the as-of reads are timed and checked against the benchmark's own truth."""
from __future__ import annotations

import json

import pytest

from heracles_ros.cli import main
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables
from heracles_ros.schema import Layer


def test_the_small_scene_after_churn_is_read_back_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "as-of", "--kind", "small", "--snapshots", "130", "--reads", "2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["objects"] == 33 and figures["history_object_changes"] > 130
    # Nothing pruned under the default retention: the history answers back to its start, 130 s before the newest.
    assert figures["objects_horizon_s"] == figures["places_horizon_s"] == 130
    assert figures["checked_times"] == 4  # snapshots 0, 60, 120 and the last
    assert (figures["presence_errors"], figures["class_errors"]) == (0, 0)
    assert 0 < figures["max_position_error_m"] <= 1.0  # the drifts: within twice the 0.5 m move threshold
    assert figures["scene_at_p95_ms"] > 0 and figures["where_p95_ms"] > 0 and "target_met" in figures


def test_the_large_scene_is_churned_at_the_scale_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "as-of", "--scale", "0.05", "--snapshots", "12", "--reads", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    layers = [row[0] for row in extract_tables(generate_scene("large", 0, scale=0.05)).nodes.values()]
    assert figures["scene"] == "large seed 0 scale 0.05"
    assert (figures["nodes"], figures["objects"]) == (len(layers), layers.count(Layer.OBJECT))
    assert (figures["presence_errors"], figures["class_errors"]) == (0, 0)


def test_a_run_without_snapshots_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "as-of", "--snapshots", "0"]) == 1
    assert "--snapshots and --reads must be >= 1" in capsys.readouterr().err
