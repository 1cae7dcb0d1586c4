"""The paper's Figure 1 case: the operator says an object exists that perception missed, the robot goes to it.

A scripted model (only the LLM is scripted) finds the referent with the real Cypher tool and proposes the
addition; the real overlay checks and writes it, the real planner plans to it, the real mirror's reconcile
retires it when perception catches up, and the real CLI lists, reverts and reports it.
"""
from __future__ import annotations

import json
import math
import time
from typing import Any

import numpy as np
import pytest
import spark_dsg
from support.cli import heracles
from support.scripted_llm import RecordedRequest, Turn, adapter, call, say

from heracles_ros.agent.loop import Agent, parse_changes
from heracles_ros.command_pipeline import CommandPipeline
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import PlanStatus
from heracles_ros.planning.planner import Planner

BICYCLE = (
    "MATCH (p)-[:CONTAINS]->(o:Object {class: 'bicycle'}) "
    "RETURN o.nodeSymbol AS id, o.x AS x, o.y AS y, o.z AS z ORDER BY id LIMIT 1"
)
REQUEST = "There is a fire extinguisher next to the bicycle"


def extinguisher_model(request: RecordedRequest) -> Turn:
    """Queries the bicycle, then proposes a fire extinguisher half a metre east of it."""
    results = request.tool_results()
    if not results:
        return call(BICYCLE, text="Find the bicycle first.")
    bike = json.loads(results[0])[0]
    addition = {"add": "fire extinguisher", "at": [bike["x"] + 0.5, bike["y"], bike["z"]], "near": bike["id"]}
    return say(f"It stands by {bike['id']}.\n<answer>{json.dumps([addition])}</answer>")


def objects_of(store: GraphStore, cls: str) -> list[dict[str, Any]]:
    return store.query(
        "MATCH (o:Object {class: $c}) OPTIONAL MATCH (p)-[:CONTAINS]->(o) "
        "RETURN o.nodeSymbol AS s, o.x AS x, o.y AS y, o.z AS z, o.source AS source, "
        "collect(labels(p)[0]) AS containers", {"c": cls},
    )


def test_there_is_a_fire_extinguisher_next_to_the_bicycle(
    small_store: GraphStore, small_scene: Any, llm_server: Any, capsys: pytest.CaptureFixture[str], db_uri: str,
    graph_name: str,
) -> None:
    db = ("--db", db_uri, "--graph", graph_name)
    bike = small_store.query(BICYCLE)[0]
    before = small_store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS n")[0]["n"]
    server = llm_server(extinguisher_model)
    agent = Agent(small_store, adapter(server))
    result = agent.correct(REQUEST, author="ana", session="op")
    assert result.ok, result.error
    assert result.added == ["A1"] and result.existing == [] and result.clarification == ""
    assert result.changes[0].startswith("A1 added: 'fire extinguisher' at ")
    assert f"near {bike['id']}" in result.changes[0]
    assert result.usage.queries == [BICYCLE]

    [added] = objects_of(small_store, "fire extinguisher")
    assert added["s"] == "A1" and added["source"] == "operator"
    assert math.dist((added["x"], added["y"], added["z"]), (bike["x"], bike["y"], bike["z"])) <= 1.5
    assert set(added["containers"]) <= {"MeshPlace", "Place"} and added["containers"]
    assert small_store.query("MATCH (r:Room)-[:CONTAINS]->(p)-[:CONTAINS]->(o:Object {nodeSymbol: 'A1'}) "
                             "RETURN count(r) AS n") == [{"n": 1}]
    assert small_store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS n")[0]["n"] == before + 1

    # The corrections tools list it with its author; the explanations mark it operator-added.
    status, listed, _ = heracles(capsys, "corrections", "list", "--json", *db)
    assert status == 0
    [record] = [r for r in listed if r["id"] == "A1"]
    assert (record["class"], record["author"], record["status"], record["request"]) == (
        "fire extinguisher", "ana", "active", REQUEST)
    status, text, _ = heracles(capsys, "corrections", "list", *db)
    [line] = [line for line in text.splitlines() if line.startswith("A1 ")]
    assert line.startswith("A1 added 'fire extinguisher' at (") and "  active  by ana at " in line, line
    [candidate], _ = agent.referents.describe(["A1"])
    assert "operator-added" in candidate.description

    # Usable at once: a goal to visit it plans, to a place next to it.
    plan = Planner(small_store).plan("(visited-object A1)")
    assert plan.status is PlanStatus.SOLVED, plan.reason
    assert [a.name for a in plan.actions][-1] == "goto" and plan.actions[-1].args[-1] == record["place"]

    # Hydra perceives a fire extinguisher 0.5 m away: the operator's object gives way to it.
    classes = small_scene.metadata.get()["labelspaces"]["_l2p0"]
    label = max(int(i) for i, _ in classes) + 1
    small_scene.metadata.add({"labelspaces": {"_l2p0": [*classes, [label, "fire extinguisher"]]}})
    obj = spark_dsg.ObjectNodeAttributes()
    obj.position = np.array([added["x"], added["y"] + 0.5, added["z"]])
    obj.semantic_label = label
    obj.bounding_box = spark_dsg.BoundingBox(np.array([0.3, 0.3, 0.6]), obj.position)
    symbol = spark_dsg.NodeSymbol("O", 9000)
    small_scene.add_node(2, symbol.value, obj)
    mirror, now = Mirror(small_store), time.time()  # replaced once seen in 3 snapshots over 2 s
    assert [mirror.reconcile(small_scene, stamp_s=now + k).additions_replaced for k in range(3)] == [[], [], ["A1"]]
    assert [o["s"] for o in objects_of(small_store, "fire extinguisher")] == ["O9000"]
    status, events, _ = heracles(capsys, "changes", "--since", "1h", "--json", *db)
    assert status == 0
    [replaced] = [e for e in events if e["kind"] == "addition replaced"]
    assert (replaced["symbol"], replaced["replaced_by"]) == ("A1", "O9000")
    status, text, _ = heracles(capsys, "changes", "--since", "1h", *db)
    assert "addition A1 (fire extinguisher) retired, replaced by O9000" in text
    assert "addition A1 (fire extinguisher) added by ana" in text
    # A goal still naming the operator's object is told the new one.
    status, _, err = heracles(capsys, "goal", "check", "(visited-object A1)", *db)
    assert status != 0 and "replaced by the perceived object O9000: use O9000" in err


def test_inspect_it_in_the_same_session_plans_to_the_added_object(small_store: GraphStore, llm_server: Any) -> None:
    def model(request: RecordedRequest) -> Turn:
        if "Instruction: Go and inspect it" not in request.text():
            return extinguisher_model(request)
        # The session carries what the correction added, symbol included.
        assert "A1 added: 'fire extinguisher'" in request.text()
        return say("<answer>(safe A1)</answer>")

    agent = Agent(small_store, adapter(llm_server(model)))
    assert agent.correct(REQUEST, session="op").added == ["A1"]
    result = CommandPipeline(agent.checker).command(agent, "Go and inspect it", session="op")
    assert result.ok, result.error
    assert result.goal == "(safe A1)" and "fire extinguisher" in result.goal_text
    assert result.plan is not None and result.plan.status is PlanStatus.SOLVED
    assert ("inspect", ["A1"]) in [(a.name, list(a.args[:1])) for a in result.plan.actions]


def test_revert_of_a_fresh_addition_removes_it_and_nothing_else(
    small_store: GraphStore, llm_server: Any, capsys: pytest.CaptureFixture[str], db_uri: str, graph_name: str
) -> None:
    db = ("--db", db_uri, "--graph", graph_name)

    def scene() -> tuple[list[Any], list[Any]]:
        nodes = small_store.query("MATCH (n) RETURN n.nodeSymbol AS s, n.class AS c, n.x AS x ORDER BY s")
        edges = small_store.query("MATCH (a)-[e]->(b) RETURN a.nodeSymbol AS a, type(e) AS t, b.nodeSymbol AS b "
                                  "ORDER BY a, t, b")
        return nodes, edges

    before = scene()
    result = Agent(small_store, adapter(llm_server(extinguisher_model))).correct(REQUEST)
    assert result.added == ["A1"]
    status, out, _ = heracles(capsys, "corrections", "revert", "--json", "A1", *db)
    assert (status, out["changes"]) == (0, ["A1 ('fire extinguisher', added by the operator) removed"])
    after = scene()
    assert after[1] == before[1]
    assert [n for n in after[0] if n["s"] is not None] == [n for n in before[0] if n["s"] is not None]


def test_an_ambiguous_referent_is_asked_back_with_candidates(small_store: GraphStore, llm_server: Any) -> None:
    bicycles = [r["id"] for r in small_store.query(
        "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id ORDER BY id")]
    assert len(bicycles) > 1
    server = llm_server([
        call("MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id ORDER BY id"),
        say(f'<answer>CLARIFY("Which bicycle?", <{", ".join(bicycles)}>)</answer>'),
    ])
    before = small_store.query("MATCH (n) RETURN count(n) AS n")
    result = Agent(small_store, adapter(server)).correct(REQUEST)
    assert result.ok and result.clarification == "Which bicycle?" and result.changes == []
    assert [c.symbol for c in result.candidates] == bicycles
    assert small_store.query("MATCH (n) RETURN count(n) AS n") == before


def test_an_invalid_addition_is_fed_back_and_nothing_of_the_answer_is_applied(
    small_store: GraphStore, llm_server: Any
) -> None:
    bike = small_store.query(BICYCLE)[0]
    near = [bike["x"] + 0.5, bike["y"], bike["z"]]
    mixed = [[bike["id"], "name", "red bicycle"], {"add": "fire extinguisher", "at": near, "near": bike["id"]},
             {"add": "crate", "at": [9000.0, 9000.0, 0.0]}]
    server = llm_server([say(f"<answer>{json.dumps(mixed)}</answer>"), say("<answer>[]</answer>")])
    before = small_store.query("MATCH (n) RETURN n.nodeSymbol AS s, n.name AS name ORDER BY s")
    result = Agent(small_store, adapter(server)).correct(REQUEST)
    assert result.ok and result.changes == [] and result.added == []
    feedback = server.requests[1].last("user")["content"]
    assert "nothing of it was applied" in feedback and "outside the mapped area" in feedback
    assert small_store.query("MATCH (n) RETURN n.nodeSymbol AS s, n.name AS name ORDER BY s") == before


def test_answers_with_additions_parse() -> None:
    addition = {"add": "fire hydrant", "at": [1.0, 2.0, 0.0], "near": "O3"}
    assert parse_changes(json.dumps([["O1", "class", "bag"], addition])) == [("O1", "class", "bag"), addition]
    assert parse_changes(json.dumps(addition)) == [addition]
