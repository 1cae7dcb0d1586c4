"""The one interface every graph-database backend implements.

Callers never see a driver object: they send Cypher text (from
:mod:`heracles_ros.graphdb.cypher`) with parameters and get plain rows back,
``list[dict]`` keyed by the RETURN aliases. Read-only execution is enforced by
the server, not by inspecting the text.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.schema import Dialect

Row = dict[str, Any]
Params = Mapping[str, Any]


@dataclass(frozen=True)
class CappedRows:
    """The first rows of a result, and how many the query produced."""

    rows: list[Row]
    total: int
    #: Why fewer than ``total`` rows came back beyond the row cap: "" or the byte limit that cut them.
    cut_by_size: str = ""
    #: The graph does not exist yet (FalkorDB: nothing was ever written to it), so nothing matched.
    graph_missing: bool = False

    @property
    def complete(self) -> bool:
        return len(self.rows) == self.total


class GraphStore(ABC):
    """A connection to one graph in one database server."""

    dialect: Dialect
    #: Where this store points, safe to log (never includes credentials).
    description: str

    @abstractmethod
    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        """Run a read-only query; the server refuses writes (ReadOnlyViolation)."""

    def query_capped(
        self, cypher: str, params: Params | None = None, *, max_rows: int, timeout_s: float | None = None
    ) -> CappedRows:
        """A read-only query for untrusted text: at most ``max_rows`` rows are converted.

        This default still converts every row; the backends override it (FalkorDB stops reading, Neo4j
        counts the rest unconverted), so memory is bounded by the cap.
        """
        rows = self.query(cypher, params, timeout_s=timeout_s)
        return CappedRows(rows[:max_rows], len(rows))

    @abstractmethod
    def write(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        """Run one query that may write, atomically."""

    @abstractmethod
    def write_many(self, statements: Sequence[tuple[str, Params]], *, timeout_s: float | None = None) -> None:
        """Run several writing statements, in one transaction where the backend has them."""

    def write_batches(
        self, batches: Iterable[Sequence[tuple[str, Params]]], *, timeout_s: float | None = None
    ) -> None:
        """Several ``write_many`` transactions in order, stopping at the first that fails.

        ``batches`` may be a generator: backends that can (FalkorDB) build the
        next transaction while the server runs the one before.
        """
        for batch in batches:
            self.write_many(batch, timeout_s=timeout_s)

    def graph_names(self) -> list[str] | None:
        """The graphs the server holds, when it holds several by name (FalkorDB); None where a store's
        database is one graph (Neo4j: a missing database fails the first query). Never creates one."""
        return None

    @property
    def graph_name(self) -> str:
        """The name of the graph this store reads ("" where the database is the graph)."""
        return ""

    def caught_up(self, wait_s: float) -> bool:
        """Whether this store's reads see every write its database took before the call, waiting up to ``wait_s``
        (a read replica may be a little behind); a store that reads where it writes always does."""
        return True

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
