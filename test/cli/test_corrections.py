"""``heracles corrections list|revert|clear`` on a real database."""
from __future__ import annotations

from datetime import datetime

import pytest
from support.cli import heracles
from support.tiny_scene import node_id, tiny_scene
from support.zone import local_zone

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.reconcile import Mirror

#: A snapshot time (2027-01-15T08:00:00Z).
T0 = 1_800_000_000.0


def test_list_revert_clear(capsys: pytest.CaptureFixture[str], small_store: GraphStore, db_uri: str,
                           graph_name: str) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    rows = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c, o.x AS x ORDER BY s LIMIT 2")
    (first, first_class, _), (second, _, second_x) = ((r["s"], r["c"], r["x"]) for r in rows)
    corrections = Corrections(small_store)
    corrections.apply([(first, "class", "bag")], author="alice", request=f"{first} is a bag")
    corrections.apply([(second, "x", 1.5)], author="bob", request=f"{second} is at x 1.5")

    status, listed, _ = heracles(capsys, "corrections", "list", "--json", *db)
    assert status == 0
    assert [(r["id"], r["value"], r["original"], r["status"], r["author"], r["request"]) for r in listed] == [
        (f"{first}.class", "bag", first_class, "active", "alice", f"{first} is a bag"),
        (f"{second}.x", 1.5, second_x, "active", "bob", f"{second} is at x 1.5"),
    ]
    assert all(datetime.fromisoformat(r["created"]) <= datetime.fromisoformat(r["updated"]) for r in listed)

    status, out, _ = heracles(capsys, "corrections", "revert", "--json", f"{first}.class", *db)
    assert (status, out["changes"]) == (0, [f"{first}.class: 'bag' -> '{first_class}'"])
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": first}) == [
        {"c": first_class}
    ]
    status, active, _ = heracles(capsys, "corrections", "list", "--json", "--active", *db)
    assert [r["id"] for r in active] == [f"{second}.x"]
    status, listed, _ = heracles(capsys, "corrections", "list", "--json", *db)
    assert {r["id"]: r["status"] for r in listed} == {f"{first}.class": "reverted", f"{second}.x": "active"}
    assert listed[0]["author"].startswith("heracles corrections (")

    status, _, err = heracles(capsys, "corrections", "revert", "--json", f"{first}.class", *db)
    assert status == 1 and f"correction {first}.class is reverted" in err
    status, _, err = heracles(capsys, "corrections", "revert", "--json", "O999.class", *db)
    assert status == 1 and "there is no correction 'O999.class'" in err

    status, _, err = heracles(capsys, "corrections", "clear", "--json", *db)  # pytest's input is no terminal: refused
    assert status == 2 and "--yes" in err and "nothing was changed" in err.lower()
    assert len(heracles(capsys, "corrections", "list", "--json", "--active", *db)[1]) == 1
    status, out, _ = heracles(capsys, "corrections", "clear", "--json", "--yes", *db)
    assert (status, out["reverted"]) == (0, [f"{second}.x: 1.5 -> {second_x!r}"])
    assert heracles(capsys, "corrections", "list", "--json", *db)[1] == []
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.x AS x", {"s": second}) == [{"x": second_x}]


def test_a_retired_correction_is_shown_where_the_operator_looks(
    capsys: pytest.CaptureFixture[str], store: GraphStore, db_uri: str, graph_name: str
) -> None:
    """``corrections list`` gives its state, when and why; ``changes`` lists its retirement and return."""
    db = ("--db", db_uri, "--graph", graph_name)
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, sequence=1, stamp_s=T0)
    Corrections(store).apply([("O1", "class", "box"), ("O2", "name", "red bicycle")], author="dana")
    graph.remove_node(node_id("O1"))
    with local_zone():
        mirror.reconcile(graph, sequence=2, stamp_s=T0 + 60)

        status, listed, _ = heracles(capsys, "corrections", "list", "--json", *db)
        by_id = {r["id"]: r for r in listed}
        assert status == 0 and by_id["O1.class"]["status"] == "retired"
        assert (by_id["O1.class"]["retired"], by_id["O1.class"]["times_retired"]) == ("2027-01-15T08:01:00+00:00", 1)
        assert by_id["O1.class"]["retired_why"] == "O1 was not in Hydra's snapshot 2 of 2027-01-15T08:01:00+00:00"
        assert (by_id["O2.name"]["status"], by_id["O2.name"]["retired"]) == ("active", "")

        status, events, _ = heracles(capsys, "changes", "--since", str(T0 - 1), "--json", *db)
        assert status == 0
        assert [(e["kind"], e["symbol"]) for e in events] == [("disappeared", "O1"), ("correction retired", "O1")]
        assert (events[1]["correction"], events[1]["value"], events[1]["time"]) == (
            "O1.class", "box", "2027-01-15T08:01:00.000Z"
        )
        status, events, _ = heracles(capsys, "changes", "--since", str(T0 - 1), "--limit", "1", "--json", *db)
        assert [(e["kind"], e["symbol"]) for e in events] == [("disappeared", "O1")]  # at most N, oldest first
        mirror.reconcile(tiny_scene(), sequence=3, stamp_s=T0 + 120)  # Hydra sees O1 again
        status, text, _ = heracles(capsys, "changes", "--since", str(T0 + 61), *db)
        assert text.splitlines() == [
            "2027-01-15T08:02:00.000Z  appeared    O1 (bag) in R0 at (1.00, 1.00, 0.50)",
            "2027-01-15T08:02:00.000Z  O1: correction O1.class = 'box' returned with its node",
        ]
        assert store.query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.class AS c") == [{"c": "box"}]
        status, listed, _ = heracles(capsys, "corrections", "list", "--json", "--active", *db)
        assert {r["id"]: r["returned"] for r in listed} == {"O1.class": "2027-01-15T08:02:00+00:00", "O2.name": ""}
        # --room asks for the scene's events in a room: corrections have none.
        status, events, _ = heracles(capsys, "changes", "--since", str(T0 - 1), "--room", "R0", "--json", *db)
        assert all(not e["kind"].startswith("correction") for e in events) and events

    # Withdrawn while its node is gone, it does not come back.
    mirror.reconcile(graph, sequence=4, stamp_s=T0 + 180)
    status, out, _ = heracles(capsys, "corrections", "revert", "--json", "O1.class", *db)
    assert (status, out["changes"]) == (0, ["O1.class: 'box' -> None"])
    mirror.reconcile(tiny_scene(), sequence=5, stamp_s=T0 + 240)
    assert store.query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.class AS c") == [{"c": "bag"}]


def test_a_revert_with_a_control_character_in_its_id_is_refused(
    capsys: pytest.CaptureFixture[str], small_store: GraphStore, db_uri: str, graph_name: str
) -> None:
    [row] = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")
    Corrections(small_store).apply([(row["s"], "class", "bag")])
    status, _, err = heracles(capsys, "corrections", "revert", "--json", f"{row['s']}.class\x1b[2J", "--db", db_uri,
                              "--graph", graph_name)
    assert status == 1 and "contains a control character" in err
    assert [r.status for r in Corrections(small_store).all()] == ["active"]
