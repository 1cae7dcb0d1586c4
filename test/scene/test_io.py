"""Scene files and snapshot payloads: decoded, or refused with an error that says why."""
from __future__ import annotations

from pathlib import Path

import pytest
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.errors import SceneDecodeError
from heracles_ros.scene.io import SnapshotDecoder, load_scene


@pytest.mark.parametrize("name", ["scene.json", "scene.sparkdsg"])
def test_load_scene_reads_json_and_binary(tmp_path: Path, name: str) -> None:
    tiny_scene().save(str(tmp_path / name))
    graph = load_scene(tmp_path / name)
    assert graph.num_nodes() == 14 and graph.has_node(node_id("O4"))


def test_load_scene_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(SceneDecodeError, match="does not exist"):
        load_scene(tmp_path / "nowhere.json")
    (tmp_path / "bad.json").write_text('{"nodes": "not a list"}')
    with pytest.raises(SceneDecodeError, match=r"bad\.json is not a spark_dsg graph"):
        load_scene(tmp_path / "bad.json")


def test_decoder_reuses_its_graph_and_recovers_after_bad_payloads() -> None:
    decoder = SnapshotDecoder()
    full = tiny_scene()
    first = decoder.decode(full.to_binary(include_mesh=False))
    smaller = tiny_scene()
    smaller.remove_node(node_id("O3"))
    second = decoder.decode(smaller.to_binary(include_mesh=False))
    assert second is first  # updated in place, the cheaper path
    assert second.num_nodes() == 13 and not second.has_node(node_id("O3"))  # an update removes what is missing

    data = full.to_binary(include_mesh=False)
    for bad in (b"", data[: len(data) // 2], b"\xde\xad\xbe\xef" * 64):
        with pytest.raises(SceneDecodeError, match=r"payload|empty"):
            decoder.decode(bad)
    again = decoder.decode(memoryview(data))
    assert again.num_nodes() == 14
