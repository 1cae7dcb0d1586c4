"""``heracles goal check`` and ``heracles plan`` against a mirrored small scene."""
from __future__ import annotations

import json

import pytest

from heracles_ros.cli import main
from heracles_ros.graphdb.store import GraphStore


@pytest.fixture
def db(small_store: GraphStore, db_uri: str, graph_name: str) -> list[str]:
    return ["--db", db_uri, "--graph", graph_name]


def test_goal_check_valid(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["goal", "check", "(AND (safe O1) (not (visited-room R1)))", *db]) == 0
    out = capsys.readouterr().out
    assert out.startswith("valid: (and (safe O1) (not (visited-room R1)))") and "O1, R1" in out


def test_goal_check_prints_every_problem(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["goal", "check", "(and (holding O999) (fly O1) (safe P3))", *db]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)
    assert any("O999" in line for line in err) and any("'fly'" in line for line in err)
    assert any("(safe P3)" in line for line in err)
    assert main(["goal", "check", "(safe O1", "--json", *db]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["valid"] is False and "missing ')'" in verdict["problems"][0]


def test_plan_json(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "(object-in-place O1 P12)", "--from", "P0", "--json", *db]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "solved" and result["start_symbol"] == "P0"
    assert [a["name"] for a in result["actions"]] == ["goto", "pick", "goto", "place"]
    first = result["actions"][0]["waypoint_symbols"]
    assert len(first) == 3 and first[0] == "P0" and first[-1] == "P11"
    assert result["actions"][-1]["target_symbol"] == "O1" and len(result["actions"][-1]["target"]) == 3
    assert result["path_length"] == pytest.approx(3.0)
    assert {"search", "total"} <= set(result["timings"])


def test_plan_text_and_failures(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "(visited-place P103)", "--from", "P0", *db]) == 1
    out = capsys.readouterr().out
    assert "status: unsolvable" in out and "unreachable: P103" in out
    assert main(["plan", "(visited-place P7)", "--from", "P0", *db]) == 0
    out = capsys.readouterr().out
    assert "goto -> P7" in out and "11.00 m via 12 places" in out  # through the doorway in row 2
    assert main(["plan", "(visited-place Q7)", *db]) == 1
    assert "status: invalid_goal" in capsys.readouterr().out


def test_q_mesh_places_check_and_plan(
    store: GraphStore, falkordb_uri: str, graph_name: str, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scene whose mesh places are Q… (Hydra's code default): kinds come from the database, not the letter."""
    db = ["--db", falkordb_uri, "--graph", graph_name]
    scene = tmp_path / "q.json"
    assert main(["generate-scene", "--kind", "small", "--mesh-prefix", "Q", "--out", str(scene)]) == 0
    assert main(["load", str(scene), *db]) == 0
    capsys.readouterr()
    assert main(["goal", "check", "(visited-place Q6)", *db]) == 0
    assert capsys.readouterr().out.startswith("valid: (visited-place Q6)")
    assert main(["plan", "(object-in-place O1 Q6)", "--from", "Q0", "--json", *db]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "solved" and result["start_symbol"] == "Q0"
    assert [a["name"] for a in result["actions"]] == ["goto", "pick", "goto", "place"]
    assert result["actions"][-1]["args"] == ["O1", "Q6"]
    assert main(["goal", "check", "(visited-place O1)", *db]) == 1  # an object is no place, whatever its letter
    assert "wrong kind in (visited-place O1)" in capsys.readouterr().err

def test_goal_check_of_a_goal_nested_1000_deep_is_one_line(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    deep = "(not " * 1000 + "(visited-place P1)" + ")" * 1000
    assert main(["goal", "check", deep, *db]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "error: goal nested too deep: more than 32 levels of parentheses at column 161; "
        "write it flatter ((and ...) and (or ...) take any number of parts)"
    ]


def test_goal_check_refuses_a_5000_atom_goal_with_the_reason(db: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    huge = "(and " + " ".join(f"(visited-place P{i})" for i in range(5000)) + ")"
    assert main(["goal", "check", huge, *db]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: goal too large: 5,000 atoms, at most 64 are planned at once; split the task into smaller goals"
    ]
