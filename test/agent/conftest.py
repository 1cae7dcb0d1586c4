"""Fixtures for agent tests: scripted model servers stopped after each test."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.scripted_llm import Script, ScriptedLLMServer


@pytest.fixture
def llm_server() -> Iterator[Callable[..., ScriptedLLMServer]]:
    """``llm_server(script)`` starts a scripted server on loopback."""
    servers: list[ScriptedLLMServer] = []

    def start(script: Script, **kwargs: Any) -> ScriptedLLMServer:
        server = ScriptedLLMServer(script, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
