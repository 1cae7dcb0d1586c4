"""Both provider adapters against the scripted server, over real HTTP with the official clients."""
from __future__ import annotations

import socket
import time

import pytest
from support.scripted_llm import Turn, adapter, call, garbage, say, slow

from heracles_ros.agent.factory import make_llm
from heracles_ros.agent.llm import LLMSettings, Message
from heracles_ros.agent.ollama_llm import OllamaLLM
from heracles_ros.agent.openai_llm import OpenAILLM
from heracles_ros.agent.tool import CYPHER_TOOL
from heracles_ros.errors import ConfigError, LLMOutputError, LLMTimeout, LLMUnavailable

PROVIDERS = ["openai", "ollama"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_call_round_trip(llm_server, provider):
    server = llm_server([call("MATCH (o:Object) RETURN count(o) AS n", text="Counting."), say("<answer>3</answer>")])
    llm = adapter(server, provider)
    history = [Message("system", "be brief"), Message("user", "How many objects?")]
    first = llm.chat(history, [CYPHER_TOOL])
    assert first.text == "Counting."
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("run_cypher_query", {"query": "MATCH (o:Object) RETURN count(o) AS n"})
    ]
    assert (first.input_tokens, first.output_tokens) == server.reported[0]
    result = Message("tool", '[{"n":3}]', tool_call_id=first.tool_calls[0].id, name="run_cypher_query")
    history += [first.as_message(), result]
    second = llm.chat(history, [CYPHER_TOOL])
    assert second.text == "<answer>3</answer>" and not second.tool_calls
    assert (second.input_tokens, second.output_tokens) == server.reported[1]

    sent = server.requests[1]
    assert sent.protocol == provider
    assert sent.tools[0]["function"]["name"] == "run_cypher_query"
    assert sent.tools[0]["function"]["parameters"]["required"] == ["query"]
    roles = [m["role"] for m in sent.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assistant, tool = sent.messages[2], sent.messages[3]
    assert tool["content"] == '[{"n":3}]'
    if provider == "openai":
        assert sent.body["temperature"] == 0
        assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"]
        arguments = assistant["tool_calls"][0]["function"]["arguments"]
        assert arguments == '{"query": "MATCH (o:Object) RETURN count(o) AS n"}'
    else:
        assert sent.body["options"]["temperature"] == 0
        assert sent.body["stream"] is False
        assert tool["tool_name"] == "run_cypher_query"
        assert assistant["tool_calls"][0]["function"]["arguments"] == {"query": "MATCH (o:Object) RETURN count(o) AS n"}


def test_openai_broken_tool_arguments_are_kept_for_feedback(llm_server):
    server = llm_server([Turn(tool_calls=[("run_cypher_query", '{"query": "MATCH (n) RETURN n')])])
    reply = adapter(server).chat([Message("user", "hi")], [CYPHER_TOOL])
    (only,) = reply.tool_calls
    assert only.arguments is None
    assert only.raw_arguments == '{"query": "MATCH (n) RETURN n'


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_a_clear_error_within_the_timeout(llm_server, provider):
    server = llm_server([slow(5.0)])
    llm = adapter(server, provider, timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"did not answer within 0.5 s"):
        llm.chat([Message("user", "hi")])
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_garbage_reply_is_an_output_error(llm_server, provider):
    server = llm_server([garbage(), garbage(b'{"unexpected": true}')])
    llm = adapter(server, provider)
    with pytest.raises(LLMOutputError, match="not a chat"):
        llm.chat([Message("user", "hi")])
    with pytest.raises(LLMOutputError):
        llm.chat([Message("user", "hi")])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_error_names_the_status(llm_server, provider):
    server = llm_server([])  # exhausted at once: HTTP 500
    with pytest.raises(LLMUnavailable, match="HTTP 500"):
        adapter(server, provider).chat([Message("user", "hi")])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_unreachable_server(provider):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    url = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    llm = make_llm(LLMSettings(provider=provider, base_url=url, timeout_s=2))
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        llm.chat([Message("user", "hi")])


def test_openai_key_only_from_the_environment(llm_server, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY"):
        OpenAILLM(LLMSettings(provider="openai"))
    server = llm_server([say("ok")])
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-env")
    llm = adapter(server, "openai")
    llm.chat([Message("user", "hi")])
    assert server.requests[0].headers["authorization"] == "Bearer sk-test-from-env"
    assert "sk-test" not in llm.description


def test_ollama_host_from_environment(llm_server, monkeypatch):
    server = llm_server([say("hello")])
    monkeypatch.setenv("OLLAMA_HOST", server.ollama_host)
    llm = OllamaLLM(LLMSettings(provider="ollama", model="m"))
    assert llm.chat([Message("user", "hi")]).text == "hello"
    assert server.requests[0].body["model"] == "m"


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="unknown LLM provider 'claude'"):
        LLMSettings(provider="claude")
    with pytest.raises(ConfigError, match="timeout"):
        LLMSettings(timeout_s=0)
    with pytest.raises(ConfigError, match="max_tool_calls"):
        LLMSettings(max_tool_calls=-1)
    assert LLMSettings(provider="ollama").model_name == "qwen3:32b"
    assert LLMSettings(provider="openai", temperature=0.0).temperature == 0.0


def test_openai_tool_arguments_nested_past_the_stack_are_malformed_not_fatal(llm_server):
    deep = '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}"
    server = llm_server([Turn(tool_calls=[("run_cypher_query", deep)])])
    (only,) = adapter(server).chat([Message("user", "hi")], [CYPHER_TOOL]).tool_calls
    assert only.arguments is None and only.raw_arguments == deep
