"""The one interface every graph-database backend implements.

Callers never see a driver object: they send Cypher text (from
:mod:`heracles_ros.graphdb.cypher`) with parameters and get plain rows back,
``list[dict]`` keyed by the RETURN aliases. Read-only execution is enforced by
the server, not by inspecting the text.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from heracles_ros.graphdb.schema import Dialect

Row = dict[str, Any]
Params = Mapping[str, Any]


class GraphStore(ABC):
    """A connection to one graph in one database server."""

    dialect: Dialect
    #: Where this store points, safe to log (never includes credentials).
    description: str

    @abstractmethod
    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        """Run a read-only query; the server refuses writes (ReadOnlyViolation)."""

    @abstractmethod
    def write(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        """Run one query that may write, atomically."""

    @abstractmethod
    def write_many(self, statements: Sequence[tuple[str, Params]], *, timeout_s: float | None = None) -> None:
        """Run several writing statements, in one transaction where the backend has them."""

    @abstractmethod
    def ping(self) -> None:
        """Raise DatabaseUnavailable unless the server answers."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection (an embedded server keeps running; see EmbeddedServer)."""

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
