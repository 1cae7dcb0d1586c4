"""``heracles corrections list|revert|clear`` on a real database."""
from __future__ import annotations

from datetime import datetime

import pytest
from support.cli import heracles

from heracles_ros.graphdb.corrections import Corrections
from heracles_ros.graphdb.store import GraphStore


def test_list_revert_clear(capsys: pytest.CaptureFixture[str], small_store: GraphStore, db_uri: str,
                           graph_name: str) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    rows = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c, o.x AS x ORDER BY s LIMIT 2")
    (first, first_class, _), (second, _, second_x) = ((r["s"], r["c"], r["x"]) for r in rows)
    corrections = Corrections(small_store)
    corrections.apply([(first, "class", "bag")], author="alice", request=f"{first} is a bag")
    corrections.apply([(second, "x", 1.5)], author="bob", request=f"{second} is at x 1.5")

    status, listed, _ = heracles(capsys, "corrections", "list", *db)
    assert status == 0
    assert [(r["id"], r["value"], r["original"], r["status"], r["author"], r["request"]) for r in listed] == [
        (f"{first}.class", "bag", first_class, "active", "alice", f"{first} is a bag"),
        (f"{second}.x", 1.5, second_x, "active", "bob", f"{second} is at x 1.5"),
    ]
    assert all(datetime.fromisoformat(r["created"]) <= datetime.fromisoformat(r["updated"]) for r in listed)

    status, out, _ = heracles(capsys, "corrections", "revert", f"{first}.class", *db)
    assert (status, out["change"]) == (0, f"{first}.class: 'bag' -> '{first_class}'")
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": first}) == [
        {"c": first_class}
    ]
    status, active, _ = heracles(capsys, "corrections", "list", "--active", *db)
    assert [r["id"] for r in active] == [f"{second}.x"]
    status, listed, _ = heracles(capsys, "corrections", "list", *db)
    assert {r["id"]: r["status"] for r in listed} == {f"{first}.class": "reverted", f"{second}.x": "active"}
    assert listed[0]["author"].startswith("heracles corrections (")

    status, _, err = heracles(capsys, "corrections", "revert", f"{first}.class", *db)
    assert status == 1 and f"correction {first}.class is reverted" in err
    status, _, err = heracles(capsys, "corrections", "revert", "O999.class", *db)
    assert status == 1 and "there is no correction 'O999.class'" in err

    status, out, _ = heracles(capsys, "corrections", "clear", *db)
    assert (status, out["reverted"]) == (0, [f"{second}.x: 1.5 -> {second_x!r}"])
    assert heracles(capsys, "corrections", "list", *db)[1] == []
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.x AS x", {"s": second}) == [{"x": second_x}]
