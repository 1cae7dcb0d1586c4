"""Operator corrections that outlive Hydra snapshots.

A correction ("O43.class is bag") is stored as a ``Correction`` node and set on
the target; the mirror calls :meth:`Corrections.after_reconcile` after every
write, which re-applies corrections to nodes the snapshot rewrote and retires
those whose node disappeared. Only narrow, typed property updates of existing
nodes are accepted.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import CorrectionError
from heracles_ros.graphdb.cypher import mirror as q
from heracles_ros.graphdb.schema import CORRECTABLE_PROPERTIES, Layer, is_scene_symbol
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.graphdb.symbols import symbol_layers

_MAX_TEXT = 80


@dataclass(frozen=True)
class Change:
    """One property update as applied: ``old`` is what the node held before."""

    symbol: str
    property: str
    old: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.symbol}.{self.property}: {self.old!r} -> {self.new!r}"


@dataclass(frozen=True)
class Correction:
    symbol: str
    property: str
    value: Any
    original: Any
    created_s: float


class Corrections:
    """The corrections overlay of one graph store."""

    def __init__(self, store: GraphStore):
        self.store = store

    def apply(self, changes: Sequence[tuple[str, str, Any]], *, max_nodes: int = 10) -> list[Change]:
        """Validate every change (all problems reported at once), then store and apply them."""
        problems: list[str] = []
        clean: list[tuple[str, str, Any]] = []
        for index, item in enumerate(changes):
            try:
                symbol, prop, value = item
            except (TypeError, ValueError):
                problems.append(f"change {index + 1} is not a (symbol, property, value) triple: {item!r}")
                continue
            problem, coerced = _check(symbol, prop, value)
            if problem:
                problems.append(problem)
            else:
                clean.append((symbol, prop, coerced))
        if not changes:
            problems.append("no change was proposed")
        symbols = sorted({symbol for symbol, _, _ in clean})
        if len(symbols) > max_nodes:
            problems.append(f"a correction may touch at most {max_nodes} nodes; this one touches {len(symbols)}")
        missing = set(symbols) - self._existing(symbols)
        problems += [f"node {symbol} does not exist in the scene graph" for symbol in sorted(missing)]
        if problems:
            raise CorrectionError("; ".join(problems))
        now = time.time()
        applied: list[Change] = []
        for symbol, prop, value in clean:
            rows = self.store.query(q.NODE_PROPERTY, {"symbol": symbol, "property": prop})
            old = rows[0]["value"] if rows else None
            # The statement records ``original`` only when it creates the correction, so the
            # value Hydra gave is kept from the first correction of this property.
            self.store.write(
                q.UPSERT_CORRECTION,
                {"symbol": symbol, "property": prop, "value": value, "original": old, "now": now},
            )
            applied.append(Change(symbol, prop, old, value))
        self._set(clean)
        return applied

    def active(self) -> list[Correction]:
        return [
            Correction(r["symbol"], r["property"], r["value"], r["original"], float(r["created_s"] or 0.0))
            for r in self.store.query(q.ACTIVE_CORRECTIONS)
        ]

    def after_reconcile(self, *, touched: set[str], removed: Iterable[str]) -> tuple[int, list[str]]:
        """Retire corrections of removed nodes, re-apply those on rewritten nodes.

        Returns (corrections re-applied, symbols whose corrections were retired).
        """
        removed = list(removed)
        retired: list[str] = []
        if removed:
            rows = self.store.write(q.RETIRE_CORRECTIONS, {"symbols": removed, "now": time.time()})
            retired = sorted(str(r["symbol"]) for r in rows)
        if not touched:
            return 0, retired
        due = [(c.symbol, c.property, c.value) for c in self.active() if c.symbol in touched]
        self._set(due)
        return len(due), retired

    # -- internals ---------------------------------------------------------------
    def _set(self, changes: Iterable[tuple[str, str, Any]]) -> None:
        groups: dict[tuple[Layer, str], list[dict[str, Any]]] = defaultdict(list)
        changes = list(changes)
        kinds = symbol_layers(self.store, [symbol for symbol, _, _ in changes])
        for symbol, prop, value in changes:
            layer = kinds.get(symbol)
            if layer is not None and prop in CORRECTABLE_PROPERTIES:
                groups[(layer, prop)].append({"s": symbol, "v": value})
        statements = [
            (q.apply_correction(layer, prop, self.store.dialect), {"rows": rows})
            for (layer, prop), rows in groups.items()
        ]
        self.store.write_many(statements)

    def _existing(self, symbols: Sequence[str]) -> set[str]:
        return set(symbol_layers(self.store, symbols))


def _check(symbol: Any, prop: Any, value: Any) -> tuple[str, Any]:
    """('' , coerced value) when acceptable, else (problem, None)."""
    if not is_scene_symbol(symbol):
        return f"{symbol!r} is not a scene-graph node symbol (e.g. O12, P3, p4, R1)", None
    if prop not in CORRECTABLE_PROPERTIES:
        allowed = ", ".join(sorted(CORRECTABLE_PROPERTIES))
        return f"{symbol}.{prop}: property {prop!r} cannot be corrected (allowed: {allowed})", None
    expected = CORRECTABLE_PROPERTIES[prop]
    if expected is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return f"{symbol}.{prop}: expected a number, got {value!r}", None
        return "", float(value)
    if not isinstance(value, str) or not value.strip() or len(value) > _MAX_TEXT:
        return f"{symbol}.{prop}: expected a non-empty text of at most {_MAX_TEXT} characters, got {value!r}", None
    return "", value.strip()
