"""``heracles bench stop`` end to end: a real dispatcher walks, ``heracles stop`` stops it, ``resume`` lets it on."""
from __future__ import annotations

import json

import pytest

from heracles_ros.cli import main


def test_bench_stop_measures_a_robot_that_stopped(ros_domain_id: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "stop", "--json", "--runs", "2", "--domain", str(ros_domain_id)]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["runs"] == 2
    # The second walk starts only after resume: a stop that stayed latched would have failed the bench.
    assert figures["cli_exit_codes"] == "0 0", figures
    assert figures["still_at_end_of_every_run"] is True, figures
    assert 0.0 <= figures["stopped_after_median_s"] <= figures["stopped_after_max_s"], figures


def test_bench_stop_refuses_a_run_count_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "stop", "--runs", "0"]) != 0
    assert "--runs must be at least 1, got 0" in capsys.readouterr().err
