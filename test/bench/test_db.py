"""``heracles bench db`` end to end on a small scene: the size at each checkpoint, a fresh load's, and the rebuild."""
from __future__ import annotations

import json

import pytest

from heracles_ros.cli import main


@pytest.mark.parametrize("history", [True, False])
def test_bench_db_reports_sizes_per_load_count_and_the_rebuild(
    capsys: pytest.CaptureFixture[str], history: bool
) -> None:
    argv = ["bench", "db", "--json", "--loads", "12", "--scale", "0.05"] + ([] if history else ["--no-history"])
    assert main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["history"] is history
    assert figures["nodes_equal_after_restart"] is True and figures["nodes_after_restart"] > 0
    for load in (10, 12):  # the checkpoints up to --loads, and --loads itself
        assert figures[f"snapshot_mb_after_{load}_loads"] > 0 and figures[f"disk_mb_after_{load}_loads"] > 0
        assert (f"history_changes_after_{load}_loads" in figures) is history
    assert "snapshot_mb_after_25_loads" not in figures
    assert figures["fresh_snapshot_mb"] > 0
    assert figures["rebuilt"] == {"heracles": "rebuilt"} and figures["nodes_equal_after_rebuild"] is True
    assert figures["snapshot_mb_after_rebuild"] > 0 and figures["rebuild_s"] > 0
    assert figures["kill9_restart_s"] > 0 and figures["restart_after_12_loads_s"] > 0


def test_bench_db_wear_reports_bytes_written_per_hour_at_each_rate(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "db", "--json", "--scale", "0.05", "--wear", "2", "--wear", "5", "--wear-seconds", "3"]
    assert main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    for rate in ("2", "5"):
        wear = figures[f"wear_{rate}hz"]
        assert 0 < wear["achieved_hz"] <= float(rate) * 1.1
        assert wear["disk_mb_per_hour"] >= 0 and wear["aof_rewrites_per_hour"] >= 0 and wear["base_mb"] > 0
        assert wear["kill9_restart_s"] > 0


def test_bench_db_wear_refuses_a_bad_rate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "db", "--wear", "0"]) != 0
    assert "--wear" in capsys.readouterr().err
