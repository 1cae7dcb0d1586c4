"""``heracles bench limits`` end to end on its own throwaway server (a short corpus)."""
from __future__ import annotations

import json

import pytest

from heracles_ros.bench.limits import KNOWN_CRASHERS, corpus
from heracles_ros.cli import main


def test_corpus_starts_with_the_known_crashers_and_is_seeded() -> None:
    assert corpus(0, 5)[: len(KNOWN_CRASHERS)] == list(KNOWN_CRASHERS)
    assert corpus(0, 5) == corpus(0, 5) != corpus(1, 5)


def test_bench_limits_reports_a_surviving_server_and_the_limits(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "limits", "--json", "--fuzz", "30"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["server_same_pid"] is True and figures["server_answers_after"] is True
    assert figures["hostile_queries"] == len(KNOWN_CRASHERS) + 30
    assert figures["huge_result_rows"] == 3_000_000 and 0 < figures["huge_result_rows_shown"] < 1000
    assert figures["huge_result_peak_rss_mb"] > 0
    assert figures["deep_goal_error_lines"] == 1 and "nested too deep" in figures["deep_goal_error"]
    assert figures["big_goal_status"] == "invalid_goal" and "5,000 atoms" in figures["big_goal_reason"]
