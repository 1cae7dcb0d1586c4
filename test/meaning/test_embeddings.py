"""Word vectors: the offline model loads from its wheel with no network and no home cache, every embedder gives
unit float32 rows, each text is embedded once, and the provider options speak OpenAI's and Ollama's protocols
(against a local HTTP stand-in for the provider, the one part the suite stands in for) within their bound."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from heracles_ros.errors import ConfigError, LLMTimeout, LLMUnavailable
from heracles_ros.meaning.embeddings import (
    CachedEmbedder,
    OllamaEmbedder,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    open_embedder,
)

ROOT = Path(__file__).resolve().parents[2]
OFFLINE = """
import json, os, sys, time
from heracles_ros.meaning.embeddings import WordLlamaEmbedder
model = WordLlamaEmbedder()
rows = model.embed(["chair", "something to sit on", "Wall_Decoration"])
norms = (rows.astype(float) ** 2).sum(1).tolist()
print(json.dumps({"shape": list(rows.shape), "dtype": str(rows.dtype), "norms": norms,
                  "load_s": model.load_s, "cache": os.path.exists(os.path.expanduser("~/.cache/wordllama"))}))
"""
DEFAULT_LOAD = """
from wordllama import WordLlama
try:
    WordLlama.load()
    print("loaded")
except Exception as exc:
    print("failed:", type(exc).__name__)
"""


def _offline(program: str, home: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        pytest.skip("needs 'unshare -n' (a network namespace without interfaces) to prove no network is used")
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(["unshare", "-n", sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


def test_the_offline_model_loads_from_its_wheel_without_a_network_or_a_home_cache(tmp_path: Path) -> None:
    done = _offline(OFFLINE, tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["shape"] == [3, 256] and result["dtype"] == "float32"
    assert result["norms"] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert not result["cache"]  # nothing written under ~/.cache
    assert 0 < result["load_s"] < 10


def test_wordllamas_own_default_load_would_need_the_network(tmp_path: Path) -> None:
    """Why the load passes the package folder and disables downloads: without them it goes to a hub."""
    done = _offline(DEFAULT_LOAD, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("failed:"), done.stdout


class _Counting:
    """A real embedder that records what it was asked to embed."""

    def __init__(self, inner: WordLlamaEmbedder):
        self.inner, self.model_id, self.asked = inner, inner.model_id, []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return self.inner.embed(texts)


def test_each_text_is_embedded_once_and_rows_keep_their_order() -> None:
    counting = _Counting(WordLlamaEmbedder())
    cached = CachedEmbedder(counting)
    first = cached.embed(["bag", "box", "bag"])
    again = cached.embed(["box", "truck", "bag"])
    assert counting.asked == [["bag", "box"], ["truck"]]
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], again[0])
    assert float(first[0] @ first[1]) < 0.99 and len(cached) == 3


# --- the provider options, against a local stand-in -------------------------------------------------
def _vector(text: str) -> list[float]:
    rng = np.random.default_rng(sum(map(ord, text)))
    return (3.0 * rng.standard_normal(8)).tolist()  # not unit length: the embedder scales it


class _Provider(BaseHTTPRequestHandler):
    delay_s = 0.0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.delay_s)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        if self.path == "/v1/embeddings":
            data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
            reply = {"object": "list", "data": data[::-1], "model": body["model"],  # out of order, by index
                     "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        elif self.path == "/api/embed":
            reply = {"model": body["model"], "embeddings": [_vector(t) for t in texts]}
        else:
            self.send_error(404)
            return
        payload = json.dumps(reply).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (the timeout test)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    _Provider.delay_s = 0.0
    server.shutdown()
    server.server_close()


def test_openai_and_ollama_embeddings_come_back_as_unit_rows_in_order(provider: str) -> None:
    want = np.array([_vector(t) for t in ("bag", "box", "tree")], dtype=np.float32)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    for embedder in (OpenAIEmbedder("text-embedding-3-small", base_url=f"http://{provider}/v1", timeout_s=5),
                     OllamaEmbedder("nomic-embed-text", host=f"http://{provider}", timeout_s=5)):
        assert np.allclose(embedder.embed(["bag", "box", "tree"]), want, atol=1e-6), embedder.model_id


def test_a_provider_that_is_down_or_slow_is_a_clear_error_within_the_bound(provider: str) -> None:
    _Provider.delay_s = 2.0
    for embedder in (OpenAIEmbedder("m", base_url=f"http://{provider}/v1", timeout_s=0.5),
                     OllamaEmbedder("m", host=f"http://{provider}", timeout_s=0.5)):
        started = time.monotonic()
        with pytest.raises(LLMTimeout, match=r"did not answer within 0\.5 s"):
            embedder.embed(["bag"])
        assert time.monotonic() - started < 1.9
    for embedder in (OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", timeout_s=2),
                     OllamaEmbedder("m", host="http://127.0.0.1:9", timeout_s=2)):
        with pytest.raises(LLMUnavailable, match="cannot reach"):
            embedder.embed(["bag"])


def test_open_embedder_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="unknown embeddings 'bert'"):
        open_embedder("bert")
    with pytest.raises(ConfigError, match="openai embeddings need a model name"):
        open_embedder("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(LLMUnavailable, match="OPENAI_API_KEY is not set"):
        open_embedder("openai", model="text-embedding-3-small")
