"""Scene files and snapshot payloads: decoded, or refused with an error that says why, at a bounded cost."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import spark_dsg as dsg
from support.decode_fuzz import SLACK_BYTES
from support.hydra_scene import hydra_scene
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.errors import ConfigError, SceneDecodeError
from heracles_ros.scene.io import SnapshotDecoder, load_scene

ROOT = Path(__file__).resolve().parents[2]
#: The most a malformed snapshot may cost the decoder, in times its size (issue 39: under 10).
MEMORY_FACTOR = 10


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


def test_a_refused_payload_never_reaches_spark_dsg_and_the_graph_is_kept() -> None:
    decoder = SnapshotDecoder()
    graph = decoder.decode(tiny_scene().to_binary(include_mesh=False))
    data = tiny_scene().to_binary(include_mesh=False)
    hostile = data[:1] + struct.pack("<I", 0x7FFFFFF0) + data[5:]  # the layer keys' count: 2 G keys
    with pytest.raises(SceneDecodeError, match=r"not a spark_dsg graph .*: layer keys at byte 0: declares 2147483632"):
        decoder.decode(hostile)
    smaller = tiny_scene()
    smaller.remove_node(node_id("O3"))
    assert decoder.decode(smaller.to_binary(include_mesh=False)) is graph  # still the cheaper update in place


def test_a_payload_over_the_cap_is_refused_unread() -> None:
    data = tiny_scene().to_binary(include_mesh=False)
    assert SnapshotDecoder(max_bytes=len(data)).decode(data).num_nodes() == 14
    with pytest.raises(SceneDecodeError, match=f"payload of {len(data)} bytes is larger than max_snapshot_bytes"):
        SnapshotDecoder(max_bytes=len(data) - 1).decode(data)
    with pytest.raises(ConfigError, match="max_snapshot_bytes must be >= 1"):
        SnapshotDecoder(max_bytes=0)


def test_a_binary_scene_file_is_checked_like_a_snapshot(tmp_path: Path) -> None:
    data = tiny_scene().to_binary(include_mesh=False)
    (tmp_path / "good.bin").write_bytes(data)
    assert load_scene(tmp_path / "good.bin").num_nodes() == 14
    (tmp_path / "hostile.bin").write_bytes(data[:1] + struct.pack("<I", 0x7FFFFFF0) + data[5:])
    with pytest.raises(SceneDecodeError, match=r"hostile\.bin is not a spark_dsg graph: .* layer keys"):
        load_scene(tmp_path / "hostile.bin")
    with pytest.raises(SceneDecodeError, match=rf"good\.bin has {len(data)} bytes, more than the 100 allowed"):
        load_scene(tmp_path / "good.bin", max_bytes=100)


def test_fuzzed_snapshots_are_refused_clearly_and_cost_under_ten_times_their_size() -> None:
    """The report's case: one length in a 76 KB snapshot made the mirror take 3.15 GB for 10 s.

    A process of its own decodes real payloads (the 75 KB synthetic scene; every attribute type
    and a mesh) with each possible length made huge or just too long, cut at 200 points each, and
    300 random mutations, measuring its peak resident size around each decode.
    """
    child = subprocess.run(
        [sys.executable, "-m", "support.decode_fuzz", "300", str(MEMORY_FACTOR)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'test'}"},
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr[-3000:]  # an exception other than SceneError: a crash
    report = json.loads(child.stdout)
    assert {outcome for kind in report.values() for outcome in kind["outcomes"]} <= {
        "refused before decoding", "refused by spark_dsg", "decoded"
    }  # fmt: skip
    for kind, tally in report.items():
        assert tally["over"] == [], (kind, tally)
    for kind in ("small: length huge", "small: length one too many", "rich: length huge", "small: truncated"):
        outcomes = report[kind]["outcomes"]
        # A length field changed: refused before spark_dsg reads it; the few "decoded" are a 0xdd byte inside a number.
        assert outcomes["refused before decoding"] >= 0.99 * sum(outcomes.values()), (kind, outcomes)
        assert report[kind]["most_bytes"]["refused before decoding"] <= SLACK_BYTES, (kind, report[kind])


def test_a_node_that_changes_layer_is_decoded_from_scratch() -> None:
    """spark_dsg's update in place keeps a node in its old layer when the payload puts it in another (a
    3D place that comes back as a mesh place under the same id): the decoder gives the payload's graph."""
    decoder = SnapshotDecoder()
    graph = hydra_scene()
    first = decoder.decode(graph.to_binary(include_mesh=False))
    place = node_id("p0")
    position = graph.get_node(place).attributes.position
    graph.remove_node(place)
    mesh_place = dsg.Place2dNodeAttributes()
    mesh_place.position = position
    graph.add_node(3, place, mesh_place, 1)
    data = graph.to_binary(include_mesh=False)
    second = decoder.decode(data)
    assert second is not first and second.to_binary(include_mesh=False) == data
    graph.get_node(place).attributes.position = position + 1.0
    assert decoder.decode(graph.to_binary(include_mesh=False)) is second  # in place again
    assert decoder.layout is not None and len(decoder.layout.node_starts) == graph.num_nodes()
