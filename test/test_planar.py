"""Planar distances: heights never count, and a segment's nearest point stays on the segment."""
from __future__ import annotations

import pytest

from heracles_ros.planar import path_length, planar_distance, segment_distance


def test_a_distance_on_the_floor_ignores_height() -> None:
    assert planar_distance((0.0, 0.0, 0.0), (3.0, 4.0, 9.0)) == 5.0
    assert planar_distance((1.0, 1.0), (1.0, 1.0)) == 0.0


def test_a_path_is_the_sum_of_its_hops_in_order() -> None:
    assert path_length([(0.0, 0.0, 0.0), (3.0, 4.0, 1.0), (3.0, 0.0, 2.0)]) == 9.0
    assert path_length([(2.0, 2.0, 0.0)]) == 0.0


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        ((5.0, 3.0, 7.0), 3.0),  # beside the middle: straight across, height ignored
        ((-3.0, 4.0, 0.0), 5.0),  # before the start: to the start, not to the line
        ((13.0, -4.0, 0.0), 5.0),  # past the end: to the end
        ((10.0, 0.0, 0.0), 0.0),  # on it
    ],
)
def test_a_segment_is_as_near_as_its_nearest_point(point: tuple[float, ...], expected: float) -> None:
    assert segment_distance(point, (0.0, 0.0, 0.0), (10.0, 0.0, 0.0)) == pytest.approx(expected)


def test_a_segment_of_no_length_is_its_point() -> None:
    assert segment_distance((4.0, 3.0), (0.0, 0.0), (0.0, 0.0)) == 5.0
