"""Word vectors: offline by default, the provider's embeddings as options.

The default, ``wordllama``, ships its weights (16 MB, 256-d) and tokenizer inside its wheel. It is
loaded from the installed package with downloads disabled: without ``cache_dir`` pointing there it
looks in ``~/.cache/wordllama`` and then fetches from a model hub with no timeout, which on a robot with
a half-working network can hang; here a missing file is an error naming the path, never a download.
OpenAI (``/v1/embeddings``, any compatible server by URL) and Ollama (``/api/embed``) are the options,
each call bounded by ``timeout_s``. Every embedder returns unit-length float32 rows, and
:class:`CachedEmbedder` embeds each distinct text once per process.
"""
from __future__ import annotations

import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from heracles_ros.errors import ConfigError, LLMError
from heracles_ros.model_clients import ollama_failures, openai_client, openai_failures, require_ollama

#: The embedders ``open_embedder`` knows.
KINDS = ("wordllama", "openai", "ollama")
#: wordllama's configuration and width, as its wheel ships them.
WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256
#: Texts sent to a provider per request.
PROVIDER_BATCH = 256


class Embedder(Protocol):
    """Texts -> unit-length float32 rows, one per text."""

    #: Says which model made a vector: vectors of two models are never compared.
    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def unit_rows(vectors: Any) -> np.ndarray:
    """float32 rows scaled to length 1 (a zero row stays zero)."""
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2:
        raise LLMError(f"embeddings must be a list of vectors, got an array of shape {rows.shape}")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0.0, 1.0, norms)


class WordLlamaEmbedder:
    """The offline default: wordllama's shipped weights, loaded once, on first use or by :meth:`load`."""

    model_id = f"wordllama/{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}"

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        #: Seconds the last load took (import included); None before it.
        self.load_s: float | None = None

    @staticmethod
    def package_dir() -> Path:
        """Where the wheel put wordllama (its ``weights/`` and ``tokenizers/`` are read from there)."""
        try:
            import wordllama
        except ImportError as exc:
            raise ConfigError("the offline embeddings need wordllama: pip install wordllama==0.4.0.post1") from exc
        return Path(wordllama.__file__).resolve().parent

    def load(self) -> None:
        """Load the model now (idempotent): from the installed package only, never from a network."""
        with self._lock:
            if self._model is not None:
                return
            started = time.perf_counter()
            folder = self.package_dir()
            weights = folder / "weights" / f"{WORDLLAMA_CONFIG}_{WORDLLAMA_DIM}.safetensors"
            if not weights.is_file() or not (folder / "tokenizers").is_dir():
                raise ConfigError(f"wordllama's shipped weights or tokenizer are missing under {folder}: "
                                  "reinstall wordllama==0.4.0.post1 from its wheel")
            from wordllama import WordLlama

            try:
                self._model = WordLlama.load(config=WORDLLAMA_CONFIG, dim=WORDLLAMA_DIM, cache_dir=folder,
                                             disable_download=True)
            except (OSError, ValueError) as exc:  # FileNotFoundError among them: never a download
                raise ConfigError(f"cannot load wordllama from {folder}: {exc}") from exc
            self.load_s = time.perf_counter() - started

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if not texts:
            return np.zeros((0, WORDLLAMA_DIM), dtype=np.float32)
        return unit_rows(self._model.embed(list(texts), norm=True))


class _ProviderEmbedder(ABC):
    """A provider's embeddings endpoint: the texts sent PROVIDER_BATCH at a time, each call bounded by ``timeout_s``,
    one vector back per text."""

    def __init__(self, provider: str, model: str, at: str | None, timeout_s: float):
        self.model = model
        self.model_id = f"{provider.lower()}/{model}"
        self._where = f"{provider} embeddings {model!r}" + (f" at {at}" if at else "")
        self._timeout_s = timeout_s

    @abstractmethod
    def _vectors(self, chunk: list[str]) -> Sequence[Sequence[float]]:
        """The provider's vectors of ``chunk``, in its order."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[Sequence[float]] = []
        for start in range(0, len(texts), PROVIDER_BATCH):
            chunk = list(texts[start : start + PROVIDER_BATCH])
            try:
                vectors = self._vectors(chunk)
            except ValueError as exc:
                raise LLMError(f"{self._where} failed: {exc}") from exc
            if len(vectors) != len(chunk):
                raise LLMError(f"{self._where} returned {len(vectors)} vectors for {len(chunk)} texts")
            rows += vectors
        return unit_rows(rows) if rows else np.zeros((0, 0), dtype=np.float32)


class OpenAIEmbedder(_ProviderEmbedder):
    """``/v1/embeddings`` of OpenAI or of a compatible server at ``base_url`` (key from ``OPENAI_API_KEY``)."""

    def __init__(self, model: str, *, base_url: str | None = None, timeout_s: float = 30.0):
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        super().__init__("OpenAI", model, base_url, timeout_s)
        self._client = openai_client(base_url, timeout_s, url_option="a base URL")

    def _vectors(self, chunk: list[str]) -> Sequence[Sequence[float]]:
        with openai_failures(self._where, self._timeout_s):
            response = self._client.embeddings.create(model=self.model, input=chunk)
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]


class OllamaEmbedder(_ProviderEmbedder):
    """Ollama's ``/api/embed`` at ``host`` (else ``OLLAMA_HOST``, else the local default)."""

    def __init__(self, model: str, *, host: str | None = None, timeout_s: float = 30.0):
        super().__init__("Ollama", model, host, timeout_s)
        ollama, _ = require_ollama()
        self._client = ollama.Client(host=host, timeout=timeout_s)

    def _vectors(self, chunk: list[str]) -> Sequence[Sequence[float]]:
        with ollama_failures(self._where, self._timeout_s):
            response = self._client.embed(model=self.model, input=chunk)
        return list(response.embeddings)


class CachedEmbedder:
    """Each distinct text embedded once per process: the scene's words are embedded when first seen."""

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_id = inner.model_id
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(text for text in texts if text not in self._vectors))
            if missing:
                for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                    self._vectors[text] = vector
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._vectors[text] for text in texts])

    def __len__(self) -> int:
        return len(self._vectors)


def open_embedder(kind: str = "wordllama", *, model: str = "", base_url: str | None = None,
                  timeout_s: float = 30.0) -> CachedEmbedder:
    """The embedder named by ``kind`` (one of :data:`KINDS`), cached; ``model`` names a provider's model."""
    if kind == "wordllama":
        return CachedEmbedder(WordLlamaEmbedder())
    if kind not in KINDS:
        raise ConfigError(f"unknown embeddings {kind!r}; choose one of {', '.join(KINDS)}")
    if not model:
        raise ConfigError(f"{kind} embeddings need a model name (e.g. text-embedding-3-small, nomic-embed-text)")
    if kind == "openai":
        return CachedEmbedder(OpenAIEmbedder(model, base_url=base_url, timeout_s=timeout_s))
    return CachedEmbedder(OllamaEmbedder(model, host=base_url, timeout_s=timeout_s))
