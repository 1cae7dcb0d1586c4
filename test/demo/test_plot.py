"""The demo's picture has metric axes: x and y in metres, numeric ticks, equal aspect."""
from __future__ import annotations

import pytest
from support.tiny_scene import tiny_scene

from heracles_ros.demo.plot import Overlay, scene_figure
from heracles_ros.scene.tables import extract_tables

pytest.importorskip("matplotlib")


def _number(label: str) -> float:
    return float(label.replace("\u2212", "-"))  # matplotlib writes a minus sign, not a hyphen


def test_the_picture_has_numeric_metric_axes_spanning_the_scene() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = scene_figure(extract_tables(tiny_scene()), Overlay("tiny"))
    FigureCanvasAgg(figure).draw()  # ticks are laid out when drawn
    (ax, *_) = figure.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (m)", "y (m)")
    assert ax.get_aspect() == 1.0
    xticks = [_number(t.get_text()) for t in ax.get_xticklabels() if t.get_text()]
    yticks = [_number(t.get_text()) for t in ax.get_yticklabels() if t.get_text()]
    assert len(xticks) >= 2 and len(yticks) >= 2
    # The tiny scene's mesh places stand at x = 0..5, y = 0 and its objects at y = 1: all inside the view.
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 < 0.0 and x1 > 5.0 and y0 < 0.0 and y1 > 1.0
    assert x1 - x0 < 12.0 and y1 - y0 < 12.0  # metres, not one slot per category
    drawn = {(float(x), float(y)) for c in ax.collections for x, y in c.get_offsets()}
    assert {(float(p), 0.0) for p in range(6)} <= drawn  # every mesh place where the scene puts it
