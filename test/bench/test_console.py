"""``heracles bench console``: the map's messages and the page's paint, measured on the small scene."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from heracles_ros.cli import main
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables
from heracles_ros.schema import Layer

BROWSER = Path("/usr/bin/chromium").is_file() and Path("/usr/bin/chromedriver").is_file()


@pytest.mark.skipif(not BROWSER, reason="no /usr/bin/chromium and chromedriver (./run.sh test installs them)")
def test_the_small_scene_is_measured_from_the_database_to_the_page(ros_domain_id, capsys) -> None:
    assert main(["bench", "console", "--kind", "small", "--repeat", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    layers = [row[0] for row in extract_tables(generate_scene("small", 0)).nodes.values()]
    assert (figures["rooms"], figures["places"], figures["objects"]) == (
        layers.count(Layer.ROOM), layers.count(Layer.MESH_PLACE), layers.count(Layer.OBJECT))
    assert figures["full_message_mb"] > 0 and figures["full_build_ms"] > 0
    assert figures["update_items"] == 1 and 0 < figures["update_message_bytes"] < 1000  # the moved object alone
    assert figures["page_first_scene_ms"] > 0 and figures["page_whole_scene_ms"] >= figures["page_first_scene_ms"]
    assert figures["page_frame_ms"] > 0 and figures["full_messages"] == 3  # rooms and objects, places, edges
    # A STOP through the console, dispatcher and mirror processes, with the map still and while it changes.
    assert figures["stop_places"] == layers.count(Layer.MESH_PLACE) and figures["stop_map_updates"] >= 2
    assert 0 < figures["stop_idle_ms"] < 1000 and 0 < figures["stop_busy_ms"] <= figures["stop_busy_max_ms"] < 2000


def test_without_a_browser_or_the_stop_they_are_left_out_saying_so(capsys) -> None:
    assert main(["bench", "console", "--kind", "small", "--repeat", "1", "--no-browser", "--no-stop", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["page"] == "left out (--no-browser)" and "page_first_scene_ms" not in figures
    assert figures["stop"] == "left out (--no-stop)" and "stop_idle_ms" not in figures


def test_the_large_scene_is_measured_at_the_scale_given(capsys) -> None:
    argv = ["bench", "console", "--scale", "0.05", "--repeat", "1", "--no-browser", "--no-stop", "--json"]
    assert main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    layers = [row[0] for row in extract_tables(generate_scene("large", 0, scale=0.05)).nodes.values()]
    assert figures["scene"] == "large seed 0 scale 0.05"
    assert (figures["rooms"], figures["places"], figures["objects"]) == (
        layers.count(Layer.ROOM), layers.count(Layer.MESH_PLACE), layers.count(Layer.OBJECT))
    assert figures["update_items"] == 1
    # After 1 % of the places changed, the server read those places only.
    assert figures["change_whole"] is False and figures["change_places_read"] == figures["change_places"] > 0
