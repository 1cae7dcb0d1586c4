"""``heracles replay`` as an operator runs it: its own process, publishing to a dsg_mirror node's process over DDS.

What the mirror made of the replay is read back from the database (the Change
nodes of its history) and from its ``changes`` service, not from the replay's
own output. The MCAP recordings are written by test/support/mcap_recording.py
as ``ros2 bag record -s mcap`` writes them.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import rclpy
from heracles_ros.srv import Changes
from mcap.reader import make_reader
from support.history_scene import MOVED_FROM, MOVED_TO, changed_scene
from support.mcap_recording import dsg_update, write_recording
from support.node_program import node_program, params
from support.ros import call_service, ros_session, spinning, wait_until
from support.tiny_scene import tiny_scene

from heracles_ros import cli
from heracles_ros.graphdb.store import GraphStore

pytestmark = pytest.mark.backends("falkordb")

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "/test/replayed_dsg"
T0 = 1_700_000_000.5


def replay(domain: int, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "heracles_ros.cli", "replay", *argv], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.fixture
def mirror(ros_domain_id, db_uri, graph_name, store) -> Iterator[subprocess.Popen[str]]:
    with node_program("dsg_mirror", ros_domain_id, *params(
            f"db_uri:={db_uri}", f"graph_name:={graph_name}", f"dsg_topic:={TOPIC}")) as process:
        yield process


def moves(store: GraphStore) -> list[dict[str, object]]:
    return store.query("MATCH (c:Change {kind: 'moved'}) RETURN c.symbol AS symbol, c.from_x AS from_x, c.x AS x, "
                       "c.seq AS seq, c.t AS t ORDER BY symbol")


def changes_service(domain: int) -> list[dict[str, object]]:
    with ros_session(domain):
        probe = rclpy.create_node("replay_probe")
        client = probe.create_client(Changes, "/changes")
        with spinning(probe):
            reply = call_service(client, Changes.Request(since_s=-3600.0), timeout_s=30.0)
    assert reply.error == ""
    return [json.loads(text) for text in reply.changes]


def test_a_sequence_of_scene_files_drives_the_running_mirror_and_its_history(ros_domain_id, mirror, store, tmp_path):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    tiny_scene().save(str(before), include_mesh=False)
    changed_scene().save(str(after), include_mesh=False)

    done = replay(ros_domain_id, str(before), str(after), "--rate", "2", "--topic", TOPIC, "--wait", "60", "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    # With --json the progress lines go to stderr and stdout holds one JSON document.
    assert "published before.json as sequence 1" in done.stderr and "published after.json as sequence 2" in done.stderr
    report = json.loads(done.stdout)
    assert (report["replayed"], report["topic"]) == (2, TOPIC)
    published = [(Path(s["source"]).name, s["sequence"]) for s in report["snapshots"]]
    assert published == [("before.json", 1), ("after.json", 2)]

    wait_until(lambda: moves(store), 30.0, "the move in the mirror's history")
    [moved] = moves(store)
    assert (moved["symbol"], moved["from_x"], moved["x"], moved["seq"]) == ("O0", MOVED_FROM[0], MOVED_TO[0], 2)
    assert store.query("MATCH (o:Object {nodeSymbol: 'O0'}) RETURN o.x AS x") == [{"x": MOVED_TO[0]}]
    # Stamped now (not the files' times), so the history lists the move among the last hour's changes.
    events = changes_service(ros_domain_id)
    assert ("moved", "O0") in [(e["kind"], e["symbol"]) for e in events]


def test_an_mcap_recording_drives_the_running_mirror_with_its_recorded_sequence_and_stamps(
    ros_domain_id, mirror, store, tmp_path
):
    recording = write_recording(tmp_path / "hydra.mcap", [
        (TOPIC, dsg_update(tiny_scene(), 41, T0)),
        ("/other/topic", dsg_update(tiny_scene(), 7, T0 + 1)),  # a second channel in the bag, not replayed
        (TOPIC, dsg_update(changed_scene(), 42, T0 + 60)),
    ])
    done = replay(ros_domain_id, str(recording), "--rate", "2", "--topic", TOPIC, "--keep-stamps", "--wait", "60")
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.count("published hydra.mcap message") == 2, done.stdout

    wait_until(lambda: moves(store), 30.0, "the move in the mirror's history")
    [moved] = moves(store)
    assert (moved["symbol"], moved["from_x"], moved["x"]) == ("O0", MOVED_FROM[0], MOVED_TO[0])
    assert (moved["seq"], moved["t"]) == (42, T0 + 60)  # the recorded header, as Hydra sent it


def test_bad_input_is_named_and_nothing_is_published(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "_COMMAND_MODULES", ("replay",))
    scene = tmp_path / "scene.json"
    tiny_scene().save(str(scene), include_mesh=False)
    text = tmp_path / "notes.txt"
    text.write_text("not a scene\n")
    other = write_recording(tmp_path / "other.mcap", [("/chatter", dsg_update(tiny_scene(), 1, T0))])
    truncated = tmp_path / "cut.mcap"
    truncated.write_bytes(other.read_bytes()[:40])
    damaged = write_recording(tmp_path / "damaged.mcap", [(TOPIC, dsg_update(tiny_scene(), 1, T0))])
    with damaged.open("rb") as stream:
        [chunk] = make_reader(stream).get_summary().chunk_indexes  # type: ignore[union-attr]
    data = bytearray(damaged.read_bytes())
    data[chunk.chunk_start_offset + chunk.chunk_length // 2] ^= 0xFF  # a corrupt chunk, summary intact
    damaged.write_bytes(bytes(data))

    cases = [
        ([str(scene), str(tmp_path / "missing.json")], f"{tmp_path / 'missing.json'}: no such file"),
        ([str(text)], f"{text}: neither an MCAP recording nor a spark_dsg scene file"),
        ([str(other), "--topic", TOPIC], f"{other}: no topic {TOPIC} in the recording (it has: /chatter "
                                         "(hydra_msgs/msg/DsgUpdate))"),
        ([str(truncated)], f"{truncated}: not a readable MCAP recording"),
        ([str(scene), str(damaged), "--topic", TOPIC],
         f"{damaged}: not a readable MCAP recording, damaged before its first message ("),
    ]
    for argv, message in cases:
        code = cli.main(["replay", *argv, "--wait", "0"])
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert message in err, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_looping_replay_stops_on_a_signal_even_when_started_with_sigint_ignored(ros_domain_id, mirror, tmp_path,
                                                                                  signum):
    scene = tmp_path / "scene.json"
    tiny_scene().save(str(scene), include_mesh=False)
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(ROOT)}
    # As a shell starts a background job: SIGINT ignored, which Python then leaves alone.
    process = subprocess.Popen(
        [sys.executable, "-m", "heracles_ros.cli", "replay", str(scene), "--loop", "--rate", "20", "--topic", TOPIC,
         "--wait", "60"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        for _ in range(3):  # it runs: three snapshots out
            assert "published scene.json" in process.stdout.readline()
        process.send_signal(signum)
        started = time.monotonic()
        _, err = process.communicate(timeout=10.0)
        assert time.monotonic() - started < 5.0  # at once, not at --wait's 60 s (2.1 s seen at load average 17)
        assert process.returncode == 130, err
        assert re.search(r"replay stopped after \d+ snapshots", err), err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
