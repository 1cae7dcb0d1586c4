"""``heracles where`` and ``heracles scene --at`` after ``heracles load`` of a scene and, a minute later, of a second
snapshot in which objects moved (by more and by less than the move threshold), one disappeared and one appeared:
the issue's held-out scenario, on both backends."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.cli import heracles
from support.history_scene import MOVED_FROM, MOVED_TO, NUDGED_TO, T0, changed_scene, load_both
from support.mirror_node import mirror_node
from support.tiny_scene import tiny_scene

BETWEEN = "2027-01-15T08:00:30Z"
THRESHOLD = 0.5  # the mirror's default move_threshold_m


@pytest.fixture
def loaded(store, db_uri, graph_name, tmp_path: Path, capsys) -> list[str]:
    """The tiny scene loaded at T0, then the changed one a minute later; the --db/--graph options to reach them."""
    db = ["--db", db_uri, "--graph", graph_name]
    load_both(capsys, db, tmp_path)
    return db


def _where(capsys, db: list[str], symbol: str, *at: str) -> dict:
    status, out, err = heracles(capsys, "where", symbol, *at, "--json", *db)
    assert status == 0, err
    return out


def _xyz(answer: dict) -> tuple[float, float, float]:
    return (answer["x"], answer["y"], answer["z"])


def test_where_between_the_loads_gives_the_first_snapshot_and_now_the_second(loaded, capsys) -> None:
    moved = _where(capsys, loaded, "O0", "--at", BETWEEN)
    assert math.dist(_xyz(moved), MOVED_FROM) <= 0.01  # beyond the threshold: where it was, to the centimetre
    assert (moved["symbol"], moved["class"], moved["room"], moved["present"], moved["recorded"]) == (
        "O0", "box", "R0", True, True)
    assert (moved["at"], moved["time"], moved["last_seen"]) == (T0 + 30, "2027-01-15T08:00:30.000Z", T0 + 60)
    assert _xyz(_where(capsys, loaded, "O0")) == MOVED_TO
    nudged = _where(capsys, loaded, "O1", "--at", BETWEEN)
    assert math.dist(_xyz(nudged), (1.0, 1.0, 0.5)) <= THRESHOLD and nudged["present"]  # within the threshold
    assert _xyz(_where(capsys, loaded, "O1")) == NUDGED_TO
    gone_then = _where(capsys, loaded, "O3", "--at", BETWEEN)
    assert (_xyz(gone_then), gone_then["room"], gone_then["present"]) == ((5.0, 1.0, 0.5), "R1", True)
    gone_now = _where(capsys, loaded, "O3")
    assert (gone_now["present"], gone_now["x"], gone_now["class"]) == (False, None, "box")
    assert (gone_now["last_seen"], gone_now["last_seen_time"]) == (T0, "2027-01-15T08:00:00.000Z")
    assert (gone_now["at"], gone_now["time"]) == (None, "now")
    new_then = _where(capsys, loaded, "O5", "--at", BETWEEN)
    assert (new_then["present"], new_then["x"], new_then["class"]) == (False, None, "chair")
    new_now = _where(capsys, loaded, "O5")
    assert (new_now["present"], _xyz(new_now), new_now["room"], new_now["last_seen"]) == (
        True, (2.0, 1.0, 0.5), "R0", T0 + 60)


def test_scene_at_lists_the_objects_there_then_and_now(loaded, capsys) -> None:
    status, then, err = heracles(capsys, "scene", "--at", BETWEEN, "--json", *loaded)
    assert status == 0, err
    assert (then["at"], then["kept_from"], then["newest"], then["whole"]) == (T0 + 30, T0, T0 + 60, True)
    objects = {o["symbol"]: o for o in then["objects"]}
    assert list(objects) == ["O0", "O1", "O2", "O3", "O4"]  # O3 still there, O5 not yet
    assert math.dist(_xyz(objects["O0"]), MOVED_FROM) <= 0.01
    assert math.dist(_xyz(objects["O1"]), (1.0, 1.0, 0.5)) <= THRESHOLD
    assert (_xyz(objects["O3"]), objects["O3"]["last_seen"]) == ((5.0, 1.0, 0.5), T0)
    status, now, _ = heracles(capsys, "scene", "--json", *loaded)
    assert status == 0 and [o["symbol"] for o in now["objects"]] == ["O0", "O1", "O2", "O4", "O5"]
    assert _xyz(now["objects"][0]) == MOVED_TO
    status, boxes, _ = heracles(capsys, "scene", "--at", BETWEEN, "--class", "Box", "--room", "R1", "--json", *loaded)
    assert status == 0 and [o["symbol"] for o in boxes["objects"]] == ["O3"]


def test_the_answers_in_words(loaded, capsys) -> None:
    status, out, _ = heracles(capsys, "where", "O0", "--at", BETWEEN, *loaded)
    assert status == 0
    assert out == ("2027-01-15T08:00:30.000Z  O0 (box) at (0.00, 1.00, 0.50) in R0, as recorded; "
                   "last seen 2027-01-15T08:01:00.000Z\n")
    status, out, _ = heracles(capsys, "where", "O3", *loaded)
    assert out == "now  O3 (box) not in the scene; last seen 2027-01-15T08:00:00.000Z\n"
    status, out, _ = heracles(capsys, "scene", "--at", BETWEEN, "--room", "R1", *loaded)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "objects at 2027-01-15T08:00:30.000Z (the history answers from 2027-01-15T08:00:00.000Z): 2"
    assert lines[1].split() == ["symbol", "class", "name", "position", "room", "recorded"]
    assert lines[3].split()[:2] == ["O3", "box"] and "(5.00, 1.00, 0.50)" in lines[3]


def test_a_time_before_the_history_is_refused_saying_what_it_keeps(loaded, capsys) -> None:
    status, _, err = heracles(capsys, "where", "O0", "--at", "2027-01-15T07:59:59.999Z", *loaded)
    assert status == 1
    assert err == ("error: 2027-01-15T07:59:59.999Z is before the history began: it answers from "
                   "2027-01-15T08:00:00.000Z to 2027-01-15T08:01:00.000Z (and the present)\n")
    status, _, err = heracles(capsys, "scene", "--at", str(T0 - 1), *loaded)
    assert status == 1 and "before the history began" in err
    status, out, _ = heracles(capsys, "scene", "--at", str(T0), "--json", *loaded)
    assert status == 0 and len(out["objects"]) == 5  # the history's start itself answers


def test_bad_input_is_named(loaded, capsys) -> None:
    status, _, err = heracles(capsys, "where", "O99", *loaded)
    assert (status, err) == (1, "error: O99: no such node in the scene, nor in the history it keeps\n")
    status, _, err = heracles(capsys, "where", "a box", *loaded)
    assert (status, err) == (1, "error: 'a box' is not a scene symbol (a letter and a number, e.g. O12)\n")
    status, _, err = heracles(capsys, "scene", "--at", "soon", *loaded)
    assert status == 1 and "--at 'soon' is neither a duration" in err


@pytest.mark.backends("falkordb")
def test_a_misspelt_graph_is_not_an_empty_past(loaded, capsys) -> None:
    status, _, err = heracles(capsys, "scene", "--at", BETWEEN, "--db", loaded[1], "--graph", "no_such_graph")
    assert status == 1 and "heracles scene: " in err and "does not exist" in err


def test_live_through_the_running_mirror_prints_what_the_database_path_prints(
        ros_domain_id, db_uri, graph_name, store, capsys) -> None:
    """The issue's two loads sent to a dsg_mirror node over DDS; ``--live`` asks its scene_at service: the same
    lines and the same JSON (the history's range included), the same refusal before the history."""
    db = ["--db", db_uri, "--graph", graph_name]
    live = ["--live", "--namespace", "/", "--server-timeout", "20"]
    with mirror_node(ros_domain_id, db_uri=db_uri, graph_name=graph_name) as mirror:
        for sequence, graph, stamp in ((1, tiny_scene(), T0), (2, changed_scene(), T0 + 60)):
            mirror.send(graph, sequence, stamp_s=stamp)
        for argv in (["where", "O0", "--at", BETWEEN], ["where", "O3"], ["where", "O5", "--at", BETWEEN],
                     ["scene", "--at", BETWEEN, "--room", "R1"], ["scene", "--at", BETWEEN, "--class", "BOX"],
                     ["scene"]):
            for form in (["--json"], []):
                answer = heracles(capsys, *argv, *form, *live)
                offline = heracles(capsys, *argv, *form, *db)
                assert answer[0] == 0 and offline[0] == 0, (argv, answer[2], offline[2])
                assert answer[1] == offline[1], (argv, form)
        status, _, err = heracles(capsys, "where", "O0", "--at", "2027-01-15T07:59:59.999Z", *live)
        missing = heracles(capsys, "where", "O99", *live)
    assert (status, err) == (1, "error: scene_at: 2027-01-15T07:59:59.999Z is before the history began: it answers "
                                "from 2027-01-15T08:00:00.000Z to 2027-01-15T08:01:00.000Z (and the present)\n")
    assert missing[0] == 1 and missing[2] == ("error: scene_at: O99: no such node in the scene, nor in the history "
                                              "it keeps\n")
