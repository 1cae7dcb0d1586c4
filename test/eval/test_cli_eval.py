"""``heracles eval`` end to end: real CLI, agent, Cypher tool, FalkorDB and comparators; a scripted model.

The scripted model queries the database with each item's gold query through the
real tool, then answers: correctly for most items (goals sometimes rewritten,
which must still count as correct), wrongly for two, so the report has to tell
them apart.
"""
from __future__ import annotations

import calendar
import json
import time
from pathlib import Path
from typing import Any

import pytest
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say
from support.zone import local_zone

from heracles_ros.cli import main
from heracles_ros.eval.dataset import EvalItem, load_dataset

BUNDLED = Path(__file__).resolve().parents[2] / "heracles_ros" / "data" / "eval" / "small_scene.yaml"

#: What the scripted model answers instead of the gold text.
ANSWERS = {
    "hallway-bags": "<O2>",  # wrong: misses O26
    "inspect-office-trash": "(and (safe O25) (safe O9))",  # reordered: still right
    "kitchen-or-hallway-not-storage": "(or (visited-room R0) (visited-room R2))",  # wrong: drops the not
    "pick-lounge-bag": "(HOLDING O22)",  # case of the predicate does not matter
}
WRONG = {"hallway-bags", "kitchen-or-hallway-not-storage"}


def scripted_model(items: list[EvalItem]) -> Any:
    def reply(request: RecordedRequest) -> Turn:
        users = "\n".join(str(m.get("content") or "") for m in request.messages if m.get("role") == "user")
        item = next(i for i in items if i.input in users)
        if request.tools and not request.tool_results():
            return call(item.gold_query, text="Let me look that up in the scene graph.")
        return say(f"From the query result: <answer>{ANSWERS.get(item.id, item.gold)}</answer>")

    return reply


def test_eval_end_to_end(store: Any, db_uri: str, graph_name: str, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    items = list(load_dataset(BUNDLED).items)
    out = tmp_path / "report"
    with ScriptedLLMServer(scripted_model(items)) as server, local_zone():  # a machine not in UTC
        code = main([
            "eval", str(BUNDLED), "--method", "agentic", "--method", "context",
            "--db", db_uri, "--graph", graph_name, "--load-scene", "--verify-gold",
            "--llm", "openai", "--model", server.model, "--base-url", server.openai_base_url,
            "--out", str(out), "--no-progress",
        ])
    printed = capsys.readouterr().out
    assert code == 0, printed

    document = json.loads((out / "eval_results.json").read_text())
    results = {(r["method"], r["id"]): r for r in document["items"]}
    assert len(results) == 2 * len(items)
    for (method, item_id), result in results.items():
        assert result["success"] is (item_id not in WRONG), result
        assert result["input_tokens"] > 0 and result["output_tokens"] > 0 and result["latency_s"] > 0
        # Agentic: one real query per item; context window: the scene is in the prompt, no tool.
        assert result["tool_calls"] == (1 if method == "agentic" else 0)
    assert "expected <O2, O26>, got <O2>" in results[("agentic", "hallway-bags")]["reason"]
    assert "(visited-room R4) true" in results[("agentic", "kitchen-or-hallway-not-storage")]["reason"]
    count = next(i for i in items if i.id == "count-bags")
    assert results[("agentic", "count-bags")]["queries"] == [count.gold_query]

    # The queries really ran on the mirrored scene: the model was sent their rows.
    tool_texts = [text for request in server.requests for text in request.tool_results()]
    assert any("O26" in text for text in tool_texts) and any("trash can" in text for text in tool_texts)
    # Token totals are exactly what the provider reported.
    assert sum(r["input_tokens"] for r in document["items"]) == sum(i for i, _ in server.reported)
    assert sum(r["output_tokens"] for r in document["items"]) == sum(o for _, o in server.reported)

    summary = {(row["method"], row["kind"]): row for row in document["summary"]}
    assert summary[("agentic", "ask")]["success_rate"] == pytest.approx(7 / 8)
    assert summary[("agentic", "command")]["success_rate"] == pytest.approx(4 / 5)
    assert summary[("context", "all")]["successes"] == len(items) - len(WRONG)
    # The context method's prompt holds the whole scene (every object), the agentic one's only the schema (with
    # three tool schemas per turn the agentic turns now cost more tokens than the small scene's context prompt).
    objects = [str(row["s"]) for row in store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s")]
    prompts = {tools: [str(r.messages[0]["content"]) for r in server.requests if bool(r.tools) == tools]
               for tools in (True, False)}
    assert prompts[False] and all(f"({s}, " in prompt for prompt in prompts[False] for s in objects)
    assert prompts[True] and not any(f"({s}, " in prompt for prompt in prompts[True] for s in objects)
    assert document["meta"]["model"] == server.model and document["meta"]["methods"] == ["agentic", "context"]
    finished = calendar.timegm(time.strptime(document["meta"]["finished"], "%Y-%m-%dT%H:%M:%SZ"))
    assert abs(finished - time.time()) < 600  # UTC, marked so, whatever the machine's zone

    table = (out / "eval_summary.txt").read_text()
    assert table in printed and "agentic" in table and "context" in table
    assert (out / "eval.png").read_bytes()[:4] == b"\x89PNG"


def test_eval_reports_bad_dataset_and_stale_gold(store: Any, db_uri: str, graph_name: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("items:\n  - {id: q, kind: ask, input: how many, answer: '[1,'}\n", encoding="utf-8")
    assert main(["eval", str(bad), "--db", db_uri, "--graph", graph_name]) == 1
    assert "item 1 ('q'): gold answer '[1,': not valid SLDP" in capsys.readouterr().err

    stale = tmp_path / "stale.yaml"
    stale.write_text(
        "scene: {kind: small, seed: 0}\nitems:\n"
        "  - id: bags\n    kind: ask\n    input: How many bags?\n    answer_type: number\n    answer: '9'\n"
        "    gold_query: \"MATCH (o:Object {class: 'bag'}) RETURN count(o) AS n\"\n",
        encoding="utf-8",
    )
    code = main(["eval", str(stale), "--db", db_uri, "--graph", graph_name, "--load-scene", "--verify-gold",
                 "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "o")])
    assert code == 1
    assert "item 'bags': gold answer 9 but its gold query gives 4" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing ran, nothing written
