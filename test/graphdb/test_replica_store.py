"""The read replica under model queries that overrun their limit or take it down: no thread is kept.

FalkorDB 4.16's time limit does not cover parsing, whose time doubles per level of nesting: a
query nested past the guard's limit would hold a replica thread for hours. The replica store
restarts the replica when a query overruns, and a replica that goes away mid-reply is a tool
error, never an exception that ends the request; the primary (the mirror's server) is untouched.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heracles_ros.agent import tool as tool_module
from heracles_ros.agent.tool import SLOTS_ENV, CypherTool
from heracles_ros.embedded.process import pid_alive, redis_client
from heracles_ros.embedded.replica import ReadReplica
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import QueryAborted, QueryTimeout
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.query_guard import MODEL_QUERY_LIMITS, QueryLimits
from heracles_ros.graphdb.replica_store import open_read_store
from heracles_ros.graphdb.store import GraphStore

OBJECTS = 40
COUNT = "MATCH (o:Object) RETURN count(o) AS n"
#: The guard raised out of the way, so that a runaway query reaches the server (depth and nesting work).
UNGUARDED = QueryLimits(max_depth=100, max_work=2**100)


def _nested(depth: int) -> str:
    return "RETURN " + "(" * depth + "1" + ")" * depth + " AS x"


def _running_for_a_second(client: dict[str, str]) -> bool:
    """A connection whose graph query has run for a second (blocked: FalkorDB runs it on a worker thread). A
    connection's last command alone is no sign: the tool's snapshot stamp, read first, is a graph query too,
    and a replica killed after it (seed 1002) was started again under the nested query, which then held on."""
    return client.get("cmd", "").startswith("graph.") and "b" in client.get("flags", "") \
        and int(client.get("idle", "0")) >= 1


@pytest.fixture
def primary(tmp_path: Path) -> Iterator[tuple[EmbeddedServer, GraphStore]]:
    server = EmbeddedServer(tmp_path)
    store = open_store(f"embedded:{tmp_path}")
    store.write(f"UNWIND range(1, {OBJECTS}) AS i CREATE (:Object {{nodeSymbol: 'O' + toString(i)}})")
    try:
        yield server, store
    finally:
        store.close()
        server.stop()


@pytest.fixture
def eight_slots(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Eight model queries at once in this process (as eight language servers would send)."""
    monkeypatch.setenv(SLOTS_ENV, "8")
    tool_module._query_slots.cache_clear()
    yield
    tool_module._query_slots.cache_clear()


def _ask_at_once(tools: list[CypherTool], query: str) -> tuple[list[Any], float]:
    outputs: list[Any] = [None] * len(tools)

    def ask(i: int) -> None:
        outputs[i] = tools[i].run(query)

    threads = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(len(tools))]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outputs, time.monotonic() - started


def _answers_at_once(store: GraphStore) -> float:
    started = time.monotonic()
    assert store.query(COUNT) == [{"n": OBJECTS}]
    return time.monotonic() - started


@pytest.mark.serial  # eight queries at once load both cores for seconds
def test_eight_runaway_questions_end_within_a_minute_and_free_the_replica(
    tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore], eight_slots: None
) -> None:
    """The guard's limit raised so the runaways reach the server; a 1 s limit so that they overrun soon."""
    server, mirror_store = primary
    read = open_read_store(tmp_path, timeout_s=1.0)
    replica = ReadReplica(server)
    before = replica.running()
    assert before is not None
    unguarded = UNGUARDED
    tools = [CypherTool(read, timeout_s=1.0, limits=unguarded) for _ in range(8)]
    primary_latencies: list[float] = []
    stop = threading.Event()

    def watch_primary() -> None:
        while not stop.is_set():
            primary_latencies.append(_answers_at_once(mirror_store))
            stop.wait(0.2)

    watcher = threading.Thread(target=watch_primary, daemon=True)
    watcher.start()
    try:
        outputs, took = _ask_at_once(tools, _nested(26))  # parsing alone would take hours
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert took < 60, took
    assert all(o is not None and o.error for o in outputs), outputs
    for out in outputs:
        assert out.text.startswith(("ERROR: time limit", "ERROR: the database stopped while running the query")), out
    assert any("read replica was restarted" in o.text for o in outputs)
    # The replica was replaced, so no thread is held; an ordinary question is answered right.
    out = CypherTool(read, timeout_s=5.0).run(COUNT)
    assert json.loads(out.text) == [{"n": OBJECTS}], out.text
    after = replica.running()
    assert after is not None and after.pid != before.pid
    # The primary answered at once all along and still does.
    assert primary_latencies and max(primary_latencies) < 1.0, primary_latencies
    assert _answers_at_once(mirror_store) < 1.0
    read.close()


@pytest.mark.serial  # eight queries at once load both cores for seconds
def test_eight_questions_at_the_real_limits_worst_case_end_at_once(
    tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore], eight_slots: None
) -> None:
    """With the real limits: the deepest nesting admitted is answered, one level more refused, quickly."""
    server, mirror_store = primary
    read = open_read_store(tmp_path, timeout_s=10.0)
    before = ReadReplica(server).running()
    tools = [CypherTool(read) for _ in range(8)]
    limit = MODEL_QUERY_LIMITS.max_depth
    worst = "RETURN " + "".join(("(", "[", "{a:")[i % 3] for i in range(limit)) + "1" + "".join(
        ")]}"[i % 3] for i in reversed(range(limit))) + " AS x"  # the slowest construct measured at this depth
    outputs, took = _ask_at_once(tools, worst)
    assert took < 20 and all(o is not None and o.error == "" for o in outputs), outputs
    outputs, took = _ask_at_once(tools, _nested(28))
    assert took < 5 and all(o.text.startswith(
        f"ERROR: the query was not sent: nesting depth 28 exceeds the limit of {limit}") for o in outputs), outputs
    assert json.loads(CypherTool(read).run(COUNT).text) == [{"n": OBJECTS}]
    assert ReadReplica(server).running() == before  # nothing overran: the replica was not restarted
    assert _answers_at_once(mirror_store) < 1.0
    read.close()


def test_a_query_stopped_at_its_limit_by_the_server_does_not_restart_the_replica(
    tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore]
) -> None:
    server, _ = primary
    read = open_read_store(tmp_path, timeout_s=10.0)
    before = ReadReplica(server).running()
    # The replica may still be syncing: on a part of the graph the product could end within the limit.
    synced_by = time.monotonic() + 30.0
    while read.query(COUNT) != [{"n": OBJECTS}]:
        assert time.monotonic() < synced_by, "the replica never held the whole graph"
        time.sleep(0.05)
    with pytest.raises(QueryTimeout) as caught:  # 40^5 rows: minutes, whatever the machine
        read.query_capped("MATCH (a), (b), (c), (d), (e) RETURN count(*) AS n", max_rows=10, timeout_s=0.2)
    assert "restarted" not in str(caught.value)
    assert ReadReplica(server).running() == before
    read.close()


def test_a_replica_that_dies_mid_reply_is_a_tool_error_and_comes_back(
    tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore]
) -> None:
    server, mirror_store = primary
    read = open_read_store(tmp_path, timeout_s=30.0)
    replica = ReadReplica(server)
    info = replica.running()
    assert info is not None
    tool = CypherTool(read, timeout_s=30.0, limits=UNGUARDED)
    outputs: list[Any] = []
    asking = threading.Thread(target=lambda: outputs.append(tool.run(_nested(26))), daemon=True)
    asking.start()
    replica_client = redis_client(info)
    running_by = time.monotonic() + 20.0
    while not any(_running_for_a_second(c) for c in replica_client.client_list()):
        assert time.monotonic() < running_by and asking.is_alive(), "the query never reached the replica"
        time.sleep(0.02)  # then it is in the parser for hours
    assert asking.is_alive()
    os.kill(info.pid, signal.SIGKILL)  # as a crash on the query would
    asking.join(timeout=30)
    assert not asking.is_alive() and len(outputs) == 1
    assert outputs[0].text.startswith("ERROR: the database stopped while running the query"), outputs[0].text
    assert "read replica went away" in outputs[0].text
    assert json.loads(tool.run(COUNT).text) == [{"n": OBJECTS}]  # a fresh replica answers the next question
    assert replica.running().pid != info.pid  # type: ignore[union-attr]
    assert _answers_at_once(mirror_store) < 1.0
    read.close()


# --- without a replica (falkordb://, or the embedded replica could not start) --------------------------
@pytest.mark.serial  # eight queries at once load both cores for seconds
def test_on_a_shared_server_hostile_model_queries_delay_the_mirrors_writes_at_most_their_limit(
    primary: tuple[EmbeddedServer, GraphStore], eight_slots: None
) -> None:
    """Two processes' worth of model queries (one each: the slot cap) on the server the mirror writes to.

    The guard bounds their parsing and the server their running time (1 s here), so the mirror's
    writes go through, each delayed by at most about one query limit. Without the guard the nested
    questions take both of FalkorDB's query threads for hours and the writes never complete.
    """
    _, mirror_store = primary
    limit_s = 1.0
    tools = [CypherTool(mirror_store, timeout_s=limit_s) for _ in range(2)]
    hostile = [
        "MATCH (a), (b), (c), (d), (e) RETURN count(*) AS n",  # runs until the server stops it
        _nested(26),  # hours in the parser, if it were sent
        "RETURN " + "CASE WHEN true THEN " * MODEL_QUERY_LIMITS.max_depth + "1"
        + " END" * MODEL_QUERY_LIMITS.max_depth + " AS x",  # the slowest parse the limits admit
    ]
    stop = threading.Event()
    outputs: list[Any] = []

    def ask(tool: CypherTool) -> None:
        while not stop.is_set():
            for query in hostile:
                outputs.append(tool.run(query))

    askers = [threading.Thread(target=ask, args=(tool,), daemon=True) for tool in tools]
    for asker in askers:
        asker.start()
    latencies = []
    try:
        time.sleep(0.5)
        for i in range(15):
            started = time.monotonic()
            mirror_store.write("CREATE (:Written {i: $i})", {"i": i}, timeout_s=10.0)
            latencies.append(time.monotonic() - started)
            time.sleep(0.1)
    finally:
        stop.set()
        for asker in askers:
            asker.join(timeout=30)
    assert mirror_store.query("MATCH (w:Written) RETURN count(w) AS n") == [{"n": 15}]
    assert max(latencies) < limit_s + 1.5, sorted(latencies)[-5:]
    assert any(o.text.startswith("ERROR: time limit") for o in outputs)
    assert any(o.text.startswith("ERROR: the query was not sent: nesting depth 26") for o in outputs)


# --- the same through the agent: questions from a (scripted) model, the real tool and replica ----------
@pytest.mark.serial  # eight queries at once load both cores for seconds
@pytest.mark.parametrize("guard", ["real limits", "limit raised, 1 s query limit"])
def test_eight_nested_questions_through_the_agent_end_within_a_minute(
    tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore], eight_slots: None, guard: str
) -> None:
    """Must-show: eight questions whose model writes ``RETURN ((((...(1)...))))`` 28 deep, at once.

    Each ends within a minute with the model told why; an ordinary question afterwards is answered
    right, and the primary answers at once throughout.
    """
    from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, adapter, call, say

    from heracles_ros.agent.loop import Agent
    from heracles_ros.agent.settings import AgentSettings

    _, mirror_store = primary

    def model(request: RecordedRequest) -> Turn:
        results = request.tool_results()
        hostile = "nested" in str(request.messages[1].get("content"))
        if not results:
            return call(_nested(28) if hostile else COUNT)
        if hostile:
            return say(f"The database said: {results[0][:300]}\n<answer>0</answer>")
        return say(f"<answer>{json.loads(results[0])[0]['n']}</answer>")

    limit_s = 10.0 if guard == "real limits" else 1.0
    read = open_read_store(tmp_path, timeout_s=limit_s)
    with ScriptedLLMServer(model) as llm_server:
        agents = [Agent(mirror_store, adapter(llm_server), AgentSettings(query_timeout_s=limit_s), query_store=read)
                  for _ in range(8)]
        if guard != "real limits":
            for agent in agents:
                agent.tool.limits = UNGUARDED  # the query reaches the replica and overruns
        results: list[Any] = [None] * 8
        primary_latencies: list[float] = []

        def ask(i: int) -> None:
            results[i] = agents[i].ask("How deep is this nested expression?", answer_type="number")

        threads = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(8)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads) and time.monotonic() - started < 90:
            primary_latencies.append(_answers_at_once(mirror_store))
            time.sleep(0.2)
        took = time.monotonic() - started
        assert took < 60, took
        for result in results:
            assert result is not None and result.ok, result
            seen = result.explanation
            if guard == "real limits":
                assert "not sent: nesting depth 28 exceeds the limit of 12" in seen, seen
            else:
                assert "time limit" in seen or "database stopped while running the query" in seen, seen
        answer = agents[0].ask("How many objects are there?", answer_type="number")
        assert answer.ok and answer.answer == str(OBJECTS), answer
    assert max(primary_latencies) < 1.0, primary_latencies
    assert _answers_at_once(mirror_store) < 1.0
    read.close()


def test_a_hung_replica_is_replaced_not_waited_for(tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore]) -> None:
    """A replica that answers neither the query nor PING (stopped here with SIGSTOP) is killed and replaced."""
    server, mirror_store = primary
    read = open_read_store(tmp_path, timeout_s=1.0)
    replica = ReadReplica(server)
    info = replica.running()
    assert info is not None
    tool = CypherTool(read, timeout_s=1.0)
    assert json.loads(tool.run(COUNT).text) == [{"n": OBJECTS}]
    os.kill(info.pid, signal.SIGSTOP)
    try:
        with pytest.raises(QueryAborted, match="read replica went away"):
            read.query_capped(COUNT, max_rows=5, timeout_s=1.0)
        assert not pid_alive(info.pid)  # killed at once, not left to be waited for
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGCONT)
    assert json.loads(tool.run(COUNT).text) == [{"n": OBJECTS}]  # a fresh replica answers
    assert replica.running().pid != info.pid  # type: ignore[union-attr]
    assert _answers_at_once(mirror_store) < 1.0
    read.close()


def test_a_reader_can_wait_until_the_replica_has_every_write_the_primary_took(
    tmp_path: Path, primary: tuple[EmbeddedServer, GraphStore]
) -> None:
    """What a search found on the primary, the model then reads on the replica: caught_up says, bounded, whether
    the replica has it yet (here held back with SIGSTOP); the primary reads where it writes."""
    server, mirror_store = primary
    read = open_read_store(tmp_path, timeout_s=1.0)
    info = ReadReplica(server).running()
    assert info is not None and read.caught_up(5.0)
    os.kill(info.pid, signal.SIGSTOP)
    try:
        mirror_store.write("CREATE (:Object {nodeSymbol: 'O999'})")
        started = time.monotonic()
        assert not read.caught_up(0.3)
        assert time.monotonic() - started < 2.0
    finally:
        os.kill(info.pid, signal.SIGCONT)
    assert read.caught_up(5.0)
    assert read.query("MATCH (o:Object {nodeSymbol: 'O999'}) RETURN count(o) AS n") == [{"n": 1}]
    assert mirror_store.caught_up(0.0)
    read.close()
