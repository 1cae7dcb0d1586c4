"""The Cypher tool on each real backend: compact rows, trimming, errors as output, writes refused."""
from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from heracles_ros.agent import tool as tool_module
from heracles_ros.agent.tool import CypherTool, count_tokens, token_counting_exact
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.query_guard import MODEL_QUERY_LIMITS

COUNT_ALL = "MATCH (n) RETURN count(n) AS n"


def test_rows_come_back_as_compact_json(small_store):
    tool = CypherTool(small_store)
    out = tool.run("MATCH (r:Room) RETURN r.nodeSymbol AS room, r.x AS x ORDER BY room")
    rows = json.loads(out.text)
    truth = small_store.query("MATCH (r:Room) RETURN r.nodeSymbol AS room, r.x AS x ORDER BY room")
    assert [r["room"] for r in rows] == [r["room"] for r in truth]
    assert all(abs(a["x"] - b["x"]) <= 0.0005 for a, b in zip(rows, truth, strict=True))
    assert ", " not in out.text and ": " not in out.text  # compact separators
    assert (out.rows, out.rows_shown, out.error) == (len(truth), len(truth), "")


def test_empty_result_says_so(small_store):
    out = CypherTool(small_store).run("MATCH (o:Object {class: 'unicorn'}) RETURN o.nodeSymbol AS s")
    assert out.text.startswith("[]") and "matched nothing" in out.text
    assert (out.rows, out.rows_shown, out.error, out.trimmed) == (0, 0, "", False)


def test_a_graph_never_mirrored_is_told_apart_from_an_empty_match(falkordb_uri, graph_name):
    with open_store(falkordb_uri, graph=graph_name) as store:  # never written: FalkorDB has no such graph
        out = CypherTool(store).run(COUNT_ALL)
    assert out.text.startswith("[]") and "nothing has been mirrored into it yet" in out.text
    assert (out.rows, out.error) == (0, "")


def test_oversized_result_is_trimmed_with_a_note(small_store):
    tool = CypherTool(small_store, token_budget=300)
    out = tool.run("MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s, p.x AS x, p.y AS y, p.z AS z")
    total = small_store.query("MATCH (p:MeshPlace) RETURN count(p) AS n")[0]["n"]
    assert out.trimmed and out.rows == total and 0 < out.rows_shown < total
    assert f"{total - out.rows_shown} of {total} rows cut" in out.text
    assert count_tokens(out.text) <= 300
    shown = json.loads(out.text.split("\n(note:")[0])
    assert len(shown) == out.rows_shown


def test_syntax_error_is_returned_as_text(small_store):
    out = CypherTool(small_store).run("MATCH (o:Object RETURN o")
    assert out.text.startswith("ERROR: ") and out.error
    assert out.rows == 0


@pytest.mark.arcadedb_deviation("read_only")
def test_write_is_refused_and_nothing_changes(small_store):
    before = small_store.query(COUNT_ALL)[0]["n"]
    tool = CypherTool(small_store)
    for query in (
        "CREATE (:Object {nodeSymbol: 'O999', class: 'bag'})",
        "MATCH (o:Object) SET o.class = 'bag'",
        "MATCH (o:Object) DETACH DELETE o",
    ):
        out = tool.run(query)
        assert out.text.startswith("ERROR: the query tried to write; this tool is read-only"), out.text
    assert small_store.query(COUNT_ALL)[0]["n"] == before
    assert small_store.query("MATCH (o:Object {class: 'bag'}) RETURN count(o) AS n")[0]["n"] < before


def test_missing_query_is_explained(small_store):
    for bad in ("", "   ", None, 42):
        out = CypherTool(small_store).run(bad)
        assert "non-empty Cypher string" in out.text


def test_tokens_are_counted_with_the_offline_cl100k_table():
    assert token_counting_exact()
    assert count_tokens("hello world") == 2  # cl100k: "hello", " world"


@pytest.mark.arcadedb_deviation("timeout")
def test_slow_query_is_stopped_and_explained(small_store):
    tool = CypherTool(small_store, timeout_s=0.001)
    out = tool.run("UNWIND range(1, 20000000) AS i WITH i WHERE i % 7 = 3 RETURN count(i) AS n")
    assert out.text.startswith("ERROR: time limit: the query ran longer than 0.001 s"), out.text


@pytest.mark.backends("falkordb")
def test_procedures_that_can_hang_falkordb_are_not_run(small_store):
    """algo.SPpaths spins past its timeout on FalkorDB 4.16 for adjacent or disconnected nodes."""
    out = CypherTool(small_store).run(
        "MATCH (a:MeshPlace), (b:MeshPlace) CALL ALGO.SPpaths({sourceNode: a, targetNode: b, "
        "relTypes: ['MESH_PLACE_CONNECTED'], relDirection: 'both'}) YIELD path RETURN length(path)"
    )
    assert out.text.startswith("ERROR: the query was not sent: algo.SPpaths / algo.SSpaths are not allowed")


def test_millions_of_rows_are_cut_before_they_are_read(small_store):
    tool = CypherTool(small_store, token_budget=300)
    out = tool.run("UNWIND range(1, 3000000) AS x RETURN x")
    assert (out.rows, out.error) == (3_000_000, "") and 0 < out.rows_shown <= tool.max_rows
    assert f"{3_000_000 - out.rows_shown} of 3000000 rows cut" in out.text
    assert json.loads(out.text.split("\n(note:")[0]) == [{"x": i} for i in range(1, out.rows_shown + 1)]


class FetchLog:
    """The real store, noting how many rows each capped query asked for and got."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.fetches: list[tuple[int, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def query_capped(self, query: str, *, max_rows: int, **kwargs: Any) -> Any:
        result = self.store.query_capped(query, max_rows=max_rows, **kwargs)
        self.fetches.append((max_rows, len(result.rows)))
        return result


@pytest.mark.parametrize(("budget", "rows_read"), [(300, 150), (1, 1)])
def test_no_more_rows_are_read_than_the_budget_could_show(small_store, budget, rows_read):
    # Every shown row costs at least two tokens (itself and a separator).
    log = FetchLog(small_store)
    out = CypherTool(log, token_budget=budget).run("UNWIND range(1, 5000) AS x RETURN x")
    assert log.fetches == [(rows_read, rows_read)]
    assert (out.rows, out.error) == (5000, "") and out.rows_shown <= rows_read


def test_without_the_encoding_tokens_are_estimated_at_four_characters(monkeypatch):
    tool_module._encoder.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # the package missing: import fails
    try:
        assert not token_counting_exact()
        assert [count_tokens("x" * n) for n in (0, 1, 4, 5, 40, 41)] == [0, 1, 1, 2, 10, 11]
    finally:
        tool_module._encoder.cache_clear()
    monkeypatch.undo()
    assert token_counting_exact() and count_tokens("hello world") == 2


def test_a_comment_in_a_procedure_name_is_answered_not_fatal(small_store):
    out = CypherTool(small_store).run("CALL db./**/labels()")
    assert out.error == "" and {"label": "Object"} in json.loads(out.text)
    assert small_store.query(COUNT_ALL)[0]["n"] > 0  # the server still answers


def test_a_query_mentioning_timeout_is_a_syntax_error_not_a_timeout(small_store):
    out = CypherTool(small_store).run("MATCH (n) WHERE n.timeout = 1 RETURN n.ro_query +")
    assert out.text.startswith("ERROR: database rejected the query"), out.text
    assert "time limit" not in out.text and "only allows reads" not in out.text


def test_queries_past_the_process_cap_wait_then_say_busy(small_store):
    tool = CypherTool(small_store, timeout_s=0.2)
    assert tool._slots.acquire(timeout=1)  # another model query of this process holds the only slot
    try:
        out = tool.run(COUNT_ALL)
    finally:
        tool._slots.release()
    assert out.text.startswith("ERROR: busy: this process already runs 1 model query at once (the cap)"), out.text
    assert tool.run(COUNT_ALL).error == ""  # the slot is free again


def test_concurrent_model_queries_run_one_at_a_time(small_store):
    """Four asks at once: never more than the cap inside the database, and every one answered."""
    import threading

    inside, peak, lock = 0, 0, threading.Lock()
    store_query = small_store.query_capped

    def counting(*args, **kwargs):
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        try:
            return store_query(*args, **kwargs)
        finally:
            with lock:
                inside -= 1

    small_store.query_capped = counting
    tool = CypherTool(small_store, timeout_s=20.0)
    outputs = []
    threads = [
        threading.Thread(target=lambda: outputs.append(tool.run("UNWIND range(1, 300000) AS x RETURN sum(x) AS s")))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak == 1 and len(outputs) == 4 and all(o.error == "" for o in outputs)


# --- queries too large or too deep for the server's parser are refused before any server ----------
def _nested(depth: int) -> str:
    return "RETURN " + "(" * depth + "1" + ")" * depth + " AS x"


def _refused(out: Any, reason: str) -> None:
    assert out.text.startswith("ERROR: the query was not sent: " + reason), out.text
    assert out.rows == 0


def test_a_query_nested_past_the_limit_is_refused_naming_the_limit(small_store):
    limit = MODEL_QUERY_LIMITS.max_depth
    tool = CypherTool(small_store)
    assert json.loads(tool.run(_nested(limit)).text) == [{"x": 1}]
    _refused(tool.run(_nested(limit + 1)), f"nesting depth {limit + 1} exceeds the limit of {limit} ")
    _refused(tool.run("RETURN " + "NOT " * (limit + 1) + "true AS x"), f"nesting depth {limit + 1} exceeds")


def test_a_query_past_the_length_limit_is_refused(small_store):
    limit = MODEL_QUERY_LIMITS.max_length
    text = "RETURN '" + "x" * limit + "' AS x"
    _refused(CypherTool(small_store).run(text), f"the query is {len(text):,} characters long, over the limit")


def test_a_query_past_the_token_limit_is_refused(small_store):
    limit = MODEL_QUERY_LIMITS.max_tokens
    text = "RETURN 0" + "+1" * limit + " AS x"  # short enough in characters
    assert len(text) < MODEL_QUERY_LIMITS.max_length
    _refused(CypherTool(small_store).run(text), f"the query has {2 * limit + 4:,} tokens, over the limit")


def test_a_refused_query_is_repaired_by_flattening_it(small_store):
    tool = CypherTool(small_store)
    assert tool.run(_nested(40)).error
    assert json.loads(tool.run("RETURN 1 AS x").text) == [{"x": 1}]


#: The deepest query of each construct the real limits admit: each must parse quickly on FalkorDB.
_WORST_ADMITTED = {
    "parentheses": _nested(MODEL_QUERY_LIMITS.max_depth),
    "case": "RETURN " + "CASE WHEN true THEN " * MODEL_QUERY_LIMITS.max_depth + "1"
    + " END" * MODEL_QUERY_LIMITS.max_depth + " AS x",
    "not": "RETURN " + "NOT " * MODEL_QUERY_LIMITS.max_depth + "true AS x",
    "lists": "RETURN " + "[" * MODEL_QUERY_LIMITS.max_depth + "1" + "]" * MODEL_QUERY_LIMITS.max_depth + " AS x",
    "plus": "RETURN 0" + "+1" * (MODEL_QUERY_LIMITS.max_tokens // 2 - 3) + " AS x",
}


@pytest.mark.backends("falkordb")
@pytest.mark.parametrize("construct", sorted(_WORST_ADMITTED))
def test_the_worst_query_the_limits_admit_parses_at_once(small_store, construct):
    import time

    started = time.monotonic()
    out = CypherTool(small_store, timeout_s=10.0).run(_WORST_ADMITTED[construct])
    assert out.error == "", out.text
    assert time.monotonic() - started < 2.0  # measured: under 0.1 s (heracles bench cypher-parse)
