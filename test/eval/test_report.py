"""Report: summary rows, text table, PNG and JSON from item results."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from heracles_ros.errors import ConfigError
from heracles_ros.eval.report import format_table, load_results, summarize, write_report
from heracles_ros.eval.runner import ItemResult


def _result(method: str, kind: str, success: bool, tokens: int, tools: int = 1, error: str = "") -> ItemResult:
    return ItemResult(
        id=f"{kind}-{tokens}", kind=kind, method=method, input="q", gold="4", output="4" if success else "5",
        success=success, error=error, input_tokens=tokens, output_tokens=tokens // 10, tool_calls=tools,
        latency_s=0.5,
    )


RESULTS = [
    _result("agentic", "ask", True, 2000, 2),
    _result("agentic", "ask", False, 3000, 4),
    _result("agentic", "command", True, 2500, 1),
    _result("context", "ask", True, 9000, 0),
    _result("context", "command", False, 8000, 0, error="LLMOutputError: no <answer> tags"),
]


def test_summary_rows_per_method_and_kind() -> None:
    rows = {(r.method, r.kind): r for r in summarize(RESULTS)}
    assert list(rows) == [
        ("agentic", "ask"), ("agentic", "command"), ("agentic", "all"),
        ("context", "ask"), ("context", "command"), ("context", "all"),
    ]
    ask = rows[("agentic", "ask")]
    assert (ask.items, ask.successes, ask.success_rate) == (2, 1, 0.5)
    assert ask.input_tokens == 2500 and ask.tool_calls == 3
    assert rows[("agentic", "all")].success_rate == pytest.approx(2 / 3)
    assert rows[("context", "command")].errors == 1


def test_single_kind_has_no_all_row() -> None:
    rows = summarize([r for r in RESULTS if r.kind == "ask" and r.method == "agentic"])
    assert [(r.method, r.kind) for r in rows] == [("agentic", "ask")]


def test_table_lines_up() -> None:
    table = format_table(summarize(RESULTS))
    lines = table.splitlines()
    assert lines[0].split()[:4] == ["method", "kind", "items", "success"]
    assert len({len(line) for line in lines}) == 1  # fixed width
    assert "agentic  ask" in table and "0.50" in table


def test_report_files(tmp_path: Path) -> None:
    files = write_report(RESULTS, tmp_path / "out", meta={"dataset": "small_scene", "model": "m"})
    assert files.plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and files.plot.stat().st_size > 5000
    document = json.loads(files.results.read_text())
    assert document["meta"] == {"dataset": "small_scene", "model": "m"}
    assert len(document["items"]) == len(RESULTS) and len(document["summary"]) == 6
    assert files.table.read_text() == format_table(summarize(RESULTS))
    assert load_results(files.results) == RESULTS


def test_bad_results_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{}", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read results file"):
        load_results(path)
