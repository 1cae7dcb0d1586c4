"""The latched stop kept on disk: read back after a restart, cleared by a resume, unreadable means stopped."""
from __future__ import annotations

import pytest

from heracles_ros.execution.stop_record import LatchedStop, StopRecord, default_path


def test_a_kept_stop_is_read_back_and_a_cleared_one_is_gone(tmp_path):
    record = StopRecord(tmp_path / "stops" / "spot.json")
    assert record.read() == LatchedStop()  # never stopped
    record.keep(LatchedStop(stopped=True, hard=True, reason="stopped by the operator (hard_stop service)"))
    assert record.read() == LatchedStop(stopped=True, hard=True, reason="stopped by the operator (hard_stop service)")
    assert StopRecord(record.path).read().stopped  # another reader (a restarted dispatcher) sees it
    assert [p.name for p in record.path.parent.iterdir()] == ["spot.json"]  # no partial file left behind
    record.clear()
    assert record.read() == LatchedStop() and not record.path.exists()
    record.clear()  # twice: nothing to remove, no error


@pytest.mark.parametrize("text", ["", "{", '{"hard": false}', "[1, 2]", '"stopped"'])
def test_a_record_that_cannot_be_read_counts_as_a_stop_naming_the_file(tmp_path, text):
    path = tmp_path / "spot.json"
    path.write_text(text)
    stop = StopRecord(path).read()
    assert stop.stopped and not stop.hard
    assert stop.reason.startswith(f"the kept stop record {path} cannot be read (")


def test_a_disk_that_refuses_the_record_raises(tmp_path):
    (tmp_path / "stops").write_text("a file where the folder should be")
    with pytest.raises(OSError):
        StopRecord(tmp_path / "stops" / "spot.json").keep(LatchedStop(stopped=True, reason="stop"))


def test_each_robot_and_database_has_its_own_record_under_the_state_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = default_path("/spot", "robot", "falkordb://127.0.0.1:6379 graph 'heracles'")
    assert path.parent == tmp_path / "heracles_ros" / "stops"
    assert path.name.startswith("spot_robot-") and path.suffix == ".json"
    assert path == default_path("/spot", "robot", "falkordb://127.0.0.1:6379 graph 'heracles'")
    others = {default_path("/spot2", "robot", "falkordb://127.0.0.1:6379 graph 'heracles'"),
              default_path("/spot", "robot2", "falkordb://127.0.0.1:6379 graph 'heracles'"),
              default_path("/spot", "robot", "falkordb://127.0.0.1:6379 graph 'other'")}  # fmt: skip
    assert path not in others and len(others) == 3
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path("/", "robot", "db").parent == tmp_path / "home" / ".local" / "state" / "heracles_ros" / "stops"


def test_a_record_where_none_can_be_is_no_stop_but_one_that_cannot_be_opened_is(tmp_path):
    (tmp_path / "file").write_text("")
    assert StopRecord(tmp_path / "file" / "spot.json").read() == LatchedStop()  # nothing can be kept there
    (tmp_path / "spot.json").mkdir()  # something is there, unreadable as a record: stopped
    assert StopRecord(tmp_path / "spot.json").read().stopped
