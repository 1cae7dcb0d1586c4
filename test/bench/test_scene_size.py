"""``--scale``: every benchmark that measures a stage takes it, with one meaning (the large scene times F)."""
from __future__ import annotations

import pytest

from heracles_ros.bench.scene_size import SCALE_100K_PLACES, scene_name
from heracles_ros.cli import build_parser
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables
from heracles_ros.schema import Layer

#: The benchmarks that measure a stage of the system on a scene.
STAGES = ("mirror", "plan", "db", "read-path", "console", "as-of", "find")


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_benchmark_takes_the_scale(stage: str) -> None:
    parser = build_parser()
    assert parser.parse_args(["bench", stage]).scale == 1.0
    assert parser.parse_args(["bench", stage, "--scale", "6.272"]).scale == SCALE_100K_PLACES


def test_the_scale_of_a_hundred_thousand_places_is_named_for_it() -> None:
    # The mesh places grow in proportion to the scale: a tenth of the scene, times 62.72, is 10^5 of them.
    small = sum(row[0] is Layer.MESH_PLACE for row in extract_tables(generate_scene("large", 0, scale=0.1)).nodes
                .values())
    assert 0.9e5 < small / 0.1 * SCALE_100K_PLACES < 1.1e5


def test_the_scene_is_named_with_its_scale_only_where_it_has_one() -> None:
    assert scene_name("large", 3, 6.272) == "large seed 3 scale 6.272"
    assert scene_name("small", 3, 6.272) == "small seed 3"
