"""``heracles changes`` and time questions, after ``heracles load`` of a scene and of its changed self."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.history_scene import MOVED_FROM, MOVED_TO, T0, load_both
from support.scripted_llm import ScriptedLLMServer, call, say
from support.zone import local_zone

from heracles_ros.cli import main
from heracles_ros.mirror.time_text import parse_time

MOVED_QUERY = ("MATCH (c:Change {symbol: 'O0', kind: 'moved'}) "
               "RETURN c.from_x AS x, c.from_y AS y, c.from_z AS z, c.t AS t ORDER BY c.t DESC LIMIT 1")


@pytest.fixture
def loaded(store, db_uri, graph_name, tmp_path: Path, capsys) -> list[str]:
    """The tiny scene loaded at T0, then the changed one a minute later; the --db/--graph options to reach them."""
    db = ["--db", db_uri, "--graph", graph_name]
    load_both(capsys, db, tmp_path)
    return db


def _json(capsys) -> object:
    return json.loads(capsys.readouterr().out)


def test_changes_lists_the_move_the_removal_and_the_addition_not_the_nudge(loaded, capsys) -> None:
    assert main(["changes", "--since", str(T0 - 1), "--json", *loaded]) == 0
    events = _json(capsys)
    assert [(e["kind"], e["symbol"]) for e in events] == [("moved", "O0"), ("disappeared", "O3"), ("appeared", "O5")]
    moved = events[0]
    assert moved["from_position"] == list(MOVED_FROM) and moved["position"] == list(MOVED_TO)
    assert moved["distance_m"] == 3.0 and moved["t"] == T0 + 60 and moved["time"] == "2027-01-15T08:01:00.000Z"
    assert (events[2]["class"], events[2]["room"], events[1]["room"]) == ("chair", "R0", "R1")
    # --room and --since narrow it down.
    assert main(["changes", "--since", str(T0 - 1), "--room", "R1", "--json", *loaded]) == 0
    assert [e["symbol"] for e in _json(capsys)] == ["O3"]
    assert main(["changes", "--since", str(T0 + 61), "--json", *loaded]) == 0
    assert _json(capsys) == []
    assert main(["changes", "--since", str(T0 - 1), *loaded]) == 0
    text = capsys.readouterr().out
    assert "moved       O0 (box) in R0 from (0.00, 1.00, 0.50) to (3.00, 1.00, 0.50) (3.0 m)" in text


def test_present_queries_see_the_present_and_history_answers_the_past(loaded, capsys) -> None:
    assert main(["cypher", "--json", "MATCH (o:Object) RETURN o.nodeSymbol AS s, o.x AS x ORDER BY s", *loaded]) == 0
    assert _json(capsys) == [{"s": "O0", "x": 3.0}, {"s": "O1", "x": 1.1}, {"s": "O2", "x": 4.0},
                             {"s": "O4", "x": 2.5}, {"s": "O5", "x": 2.0}]
    assert main(["cypher", "--json", MOVED_QUERY, *loaded]) == 0
    assert _json(capsys) == [{"x": 0.0, "y": 1.0, "z": 0.5, "t": T0 + 60}]
    seen = "MATCH (s:Seen {symbol: 'O3'}) RETURN s.last_t AS last, s.present AS p"
    assert main(["cypher", "--json", seen, *loaded]) == 0
    assert _json(capsys) == [{"last": T0, "p": False}]


def test_ask_answers_a_time_question_with_the_history_schema_from_the_prompt(loaded, capsys) -> None:
    script = [call(MOVED_QUERY), say("<answer>{position: POINT(0 1 0.5), t: 1800000060}</answer>")]
    with ScriptedLLMServer(script) as server:
        code = main(["ask", "Where was the box O0 before it moved, and when did it move?", "--json", *loaded,
                     "--llm", "openai", "--base-url", server.openai_base_url, "--model", "scripted"])
        system = "\n".join(m["content"] for m in server.requests[0].body["messages"] if m["role"] == "system")
        assert server.requests[1].tool_results() == ['[{"x":0,"y":1,"z":0.5,"t":1800000060}]']
    assert code == 0
    # The prompt describes the history from the live database, with an example query.
    assert "- Change (3): history:" in system and "from_x, from_y, from_z: position before a move" in system
    assert "MATCH (c:Change {symbol: 'O12', kind: 'moved'})" in system
    out = _json(capsys)
    assert out["answer"] == "{position: POINT(0 1 0.5), t: 1800000060}" and out["error"] == ""


def test_a_bad_since_is_an_error_naming_it(capsys) -> None:
    assert main(["changes", "--since", "soon", "--db", "falkordb://127.0.0.1:1"]) == 1
    assert "--since 'soon'" in capsys.readouterr().err


# -- times under a zone other than UTC (this machine runs in UTC, a robot may not) ------------------


def test_since_and_printed_times_are_utc_in_any_zone(loaded, capsys) -> None:
    with local_zone():
        assert parse_time("2027-01-15T08:00:00", what="--since") == T0  # without a zone: UTC, not local
        assert parse_time("2027-01-15T13:30:00+05:30", what="--since") == T0
        assert parse_time("2027-01-15T08:00:00Z", what="--since") == T0
        assert main(["changes", "--since", "2027-01-15T08:01:01", "--json", *loaded]) == 0
        assert _json(capsys) == []  # all three events are at 08:01:00 UTC
        assert main(["changes", "--since", "2027-01-15T08:00:59", "--json", *loaded]) == 0
        events = _json(capsys)
        assert [e["time"] for e in events] == ["2027-01-15T08:01:00.000Z"] * 3
        assert main(["changes", "--since", "2027-01-15T08:00:59", *loaded]) == 0
        assert capsys.readouterr().out.startswith("2027-01-15T08:01:00.000Z  moved ")


def test_the_command_in_a_non_utc_zone_reads_and_prints_utc(loaded) -> None:
    """The real process, started with TZ set as a robot's shell may have it."""
    root = Path(__file__).resolve().parents[2]
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "TZ": "Asia/Kolkata", "PYTHONPATH": path}

    def changes(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "changes", *args, *loaded], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert json.loads(changes("--since", "2027-01-15T08:01:01", "--json")) == []
    assert changes("--since", "2027-01-15 08:00:59").splitlines()[0].startswith("2027-01-15T08:01:00.000Z  moved ")
