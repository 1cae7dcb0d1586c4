"""The embedded server: start, reuse, persistence across a kill, clean stop."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.embedded import EmbeddedServer


def test_start_reuse_kill_restart_stop(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path)
    assert server.running() is None
    first = server.ensure_started()
    try:
        # A second opener of the same directory shares the server.
        assert EmbeddedServer(tmp_path).ensure_started() == first
        store = open_store(f"embedded:{tmp_path}", graph="persist")
        store.write("CREATE (:Object {nodeSymbol: 'O1', class: 'bag'})")
        store.close()

        os.kill(first.pid, signal.SIGKILL)  # no chance to save: the append-only file must carry the data
        deadline = time.monotonic() + 5
        while server.running() is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.running() is None

        second = server.ensure_started()
        assert second.pid != first.pid
        store = open_store(f"embedded:{tmp_path}", graph="persist")
        assert store.query("MATCH (n:Object) RETURN n.nodeSymbol AS s, n.class AS c") == [{"s": "O1", "c": "bag"}]
        store.close()
    finally:
        assert server.stop() is True
    assert server.running() is None
    assert server.stop() is False


def test_bad_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="cannot create database directory") as caught:
        EmbeddedServer(blocker / "db").ensure_started()
    assert str(blocker / "db") in str(caught.value)
