"""``heracles db status|reset`` on the embedded server: what the directory holds, and starting over."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import heracles
from support.tiny_scene import tiny_scene

from heracles_ros.embedded.data_files import AOF_DIR
from heracles_ros.embedded.maintenance import compact
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.reconcile import Mirror


@pytest.fixture
def corrected(tmp_path: Path) -> Iterator[tuple[str, GraphStore]]:
    """``(uri, store)``: the tiny scene mirrored into an embedded server in ``tmp_path``, O1 corrected to a chair."""
    uri = f"embedded:{tmp_path}"
    store = open_store(uri)
    try:
        Mirror(store).reconcile(tiny_scene())
        Corrections(store).apply([("O1", "class", "chair")])
        yield uri, store
    finally:
        store.close()
        EmbeddedServer(tmp_path).stop()


def test_status_then_reset_keeping_corrections_then_all(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, corrected: tuple[str, GraphStore]
) -> None:
    uri, store = corrected
    status, out, _ = heracles(capsys, "db", "status", "--json", "--db", uri)
    assert status == 0 and out["running"] and out["format"] == 1 and out["disk_bytes"] > 0
    assert out["graphs"]["heracles"]["corrections"] == {"active": 1}
    # + mirror bookkeeping, the correction, the history's clock (no Seen entry before a change), and the planner's
    # change log (an entry per generation after the first load: here the correction's)
    log = store.query("MATCH (m:MirrorMeta {id: 'place-changes'}) RETURN count(m) AS n")[0]["n"]
    assert out["graphs"]["heracles"]["nodes"] == out["nodes"] + 2 + 1 + log and log <= 1
    assert out["last_write"] and out["last_snapshot"] and out["tail_bytes"] >= 0

    status, out, _ = heracles(capsys, "db", "reset", "--json", "--yes", "--keep-corrections", "--db", uri)
    assert status == 0 and out["kept_corrections"]
    assert store.query("MATCH (n) RETURN labels(n)[0] AS l") == [{"l": "Correction"}]
    Mirror(store).reconcile(tiny_scene())  # the kept correction applies again when its node is back
    assert store.query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.class AS c") == [{"c": "chair"}]

    status, out, _ = heracles(capsys, "db", "reset", "--json", "--yes", "--db", uri)
    assert status == 0 and out["nodes_removed"]["heracles"] > 0
    assert store.query("MATCH (n) RETURN count(n) AS n") == [{"n": 0}]
    assert EmbeddedServer(tmp_path).aof_tail_bytes() == 0  # compacted at once
    store.close()  # stopped here so that status can be asked of the stopped server
    EmbeddedServer(tmp_path).stop()
    status, out, _ = heracles(capsys, "db", "status", "--json", "--db", uri)
    assert status == 1 and not out["running"] and not out["loading"] and out["disk_bytes"] > 0


def test_reset_sets_unreadable_files_aside(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    uri = f"embedded:{tmp_path}"
    server = EmbeddedServer(tmp_path)
    store = open_store(uri)
    Mirror(store).reconcile(tiny_scene())
    store.close()
    compact(server, wait_s=30, min_tail_bytes=0)
    server.stop()
    [base] = (tmp_path / AOF_DIR).glob("*.base.rdb")
    base.write_bytes(base.read_bytes()[:40])
    status, _, err = heracles(capsys, "db", "start", "--json", "--db", uri)
    assert status == 1 and "corrupt or truncated" in err
    status, _, err = heracles(capsys, "db", "reset", "--json", "--yes", "--keep-corrections", "--db", uri)
    assert status == 1 and "cannot be kept from files that do not load" in err
    try:
        status, out, _ = heracles(capsys, "db", "reset", "--json", "--yes", "--db", uri)
        assert status == 0
        aside = Path(out["set_aside"])
        assert aside.parent == tmp_path and (aside / AOF_DIR / base.name).stat().st_size == 40  # nothing deleted
        status, out, _ = heracles(capsys, "db", "status", "--json", "--db", uri)
        assert status == 0 and out["nodes"] == 0
    finally:
        server.stop()


def test_compact_rebuilds_the_graphs_then_rewrites_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, corrected: tuple[str, GraphStore]
) -> None:
    uri, store = corrected
    nodes = store.query("MATCH (n) RETURN count(n) AS n")
    status, out, _ = heracles(capsys, "db", "compact", "--json", "--rebuild", "--db", uri)
    assert status == 0 and out["graphs"] == {"heracles": "rebuilt"}
    assert out["bytes_after"] > 0 and EmbeddedServer(tmp_path).aof_tail_bytes() == 0
    assert store.query("MATCH (n) RETURN count(n) AS n") == nodes
    assert store.query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.class AS c") == [{"c": "chair"}]
    Mirror(store).reconcile(tiny_scene())  # the mirror carries on on the rebuilt graph
    status, out, _ = heracles(capsys, "db", "compact", "--json", "--db", uri)
    assert status == 0 and out["graphs"] == {}


def test_reset_asks_first_and_refuses_a_script_without_yes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, corrected: tuple[str, GraphStore]
) -> None:
    uri, store = corrected
    count = "MATCH (n) RETURN count(n) AS n"
    before = store.query(count)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    status, _, err = heracles(capsys, "db", "reset", "--json", "--db", uri)
    assert status == 2 and "without confirmation" in err and "--yes" in err and "Nothing was changed" in err
    assert store.query(count) == before
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    for refusal in ("no", "", "yes please", EOFError):  # anything but y/yes keeps the data: Enter, end of input too
        def answer(prompt: str, refusal: object = refusal) -> str:
            assert "every graph" in prompt and "[y/N]" in prompt
            if refusal is EOFError:
                raise EOFError
            return str(refusal)
        monkeypatch.setattr("builtins.input", answer)
        status, _, err = heracles(capsys, "db", "reset", "--json", "--db", uri)
        assert status == 2 and "nothing was changed" in err and store.query(count) == before, refusal
    monkeypatch.setattr("builtins.input", lambda prompt: " Y ")
    status, _, _ = heracles(capsys, "db", "reset", "--json", "--db", uri)
    assert status == 0 and store.query(count) == [{"n": 0}]


def test_start_says_when_it_dropped_the_cut_end_of_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import os
    import signal

    uri = f"embedded:{tmp_path}"
    server = EmbeddedServer(tmp_path)
    status, out, err = heracles(capsys, "db", "start", "--json", "--db", uri)
    assert status == 0 and "data_dropped" not in out and "cut short" not in err
    with open_store(uri, graph="g") as store:
        store.write("CREATE (:Object {nodeSymbol: 'O1'})")
        store.write("CREATE (:Object {nodeSymbol: 'O2'})")
    [tail] = (tmp_path / AOF_DIR).glob("*.incr.aof")
    wait_for_content(tail, b"'O2'")
    os.kill(server.running().pid, signal.SIGKILL)  # type: ignore[union-attr]
    with open(tail, "r+b") as handle:
        handle.truncate(tail.stat().st_size - 10)
    try:
        status, out, err = heracles(capsys, "db", "start", "--json", "--db", uri)
        assert status == 0 and out["data_dropped"] and "cut short" in err and "dropped the rest" in err
        status, out, err = heracles(capsys, "db", "start", "--json", "--db", uri)  # reused: nothing new to say
        assert status == 0 and out["reused"] and "data_dropped" not in out
    finally:
        server.stop()


def wait_for_content(path: Path, text: bytes, timeout_s: float = 10.0) -> None:
    """Until ``path`` holds ``text``: redis may hold an acknowledged write back for up to 2 s while a
    background fsync runs (appendfsync everysec), so a kill right after the reply can find it missing."""
    import time

    deadline = time.monotonic() + timeout_s
    while text not in path.read_bytes():
        assert time.monotonic() < deadline, f"{text!r} never reached {path}"
        time.sleep(0.02)
