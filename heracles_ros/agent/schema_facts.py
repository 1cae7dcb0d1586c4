"""What the database holds right now (labels, relationships, keys, classes), cached per mirror generation.

The prompt is built from these facts instead of hand-kept lists, so a class
Hydra starts reporting, or a label a correction introduces, reaches the model
on the next request. Reading them costs ~0.1 s on a kilometre-scale graph, so
they are re-read only when the mirror's generation counter moves (or on every
request when the graph has no mirror bookkeeping).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from heracles_ros.graphdb.cypher import introspection as q
from heracles_ros.graphdb.cypher.mirror import READ_META
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.schema import CORRECTION_LABEL, MIRROR_META_LABEL, OBJECT_FEATURE_LABEL

log = logging.getLogger(__name__)

#: Bookkeeping labels the model has no use for.
HIDDEN_LABELS = frozenset({CORRECTION_LABEL, MIRROR_META_LABEL, OBJECT_FEATURE_LABEL})
#: Nodes per label whose keys are sampled (labels are homogeneous; this bounds the cost).
KEY_SAMPLE = 50


@dataclass(frozen=True)
class LabelFacts:
    label: str
    count: int
    #: Property keys seen on the label's nodes, in first-seen order.
    keys: tuple[str, ...]
    #: (class, count) pairs, most frequent first; empty when the label has no class property.
    classes: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SchemaFacts:
    #: The mirror generation these facts were read at (None: no mirror bookkeeping).
    generation: int | None
    labels: tuple[LabelFacts, ...]
    #: (source label, relationship type, target label), sorted.
    relationships: tuple[tuple[str, str, str], ...]


def read_generation(store: GraphStore) -> int | None:
    rows = store.query(READ_META)
    if not rows or rows[0].get("generation") is None:
        return None
    return int(rows[0]["generation"])


def read_facts(store: GraphStore, *, generation: int | None = None) -> SchemaFacts:
    """Introspect the database (non-empty labels only, bookkeeping hidden)."""
    labels: list[LabelFacts] = []
    for row in store.query(q.LABELS):
        name = str(row["label"])
        if name in HIDDEN_LABELS:
            continue
        try:
            classes_query, keys_query = q.label_classes(name), q.label_keys(name)
        except ValueError:
            log.warning("label %r has an unusual name; left out of the prompt", name)
            continue
        class_rows = store.query(classes_query)
        count = sum(int(r["n"]) for r in class_rows)
        if count == 0:
            continue  # FalkorDB keeps labels in its catalogue after their last node is gone
        keys = tuple(str(r["key"]) for r in store.query(keys_query, {"sample": KEY_SAMPLE}))
        classes = tuple((str(r["class"]), int(r["n"])) for r in class_rows if r["class"] is not None)
        labels.append(LabelFacts(name, count, keys, classes))
    relationships: set[tuple[str, str, str]] = set()
    for row in store.query(q.RELATIONSHIP_TYPES):
        rel = str(row["type"])
        try:
            ends_query = q.relationship_ends(rel)
        except ValueError:
            continue
        for ends in store.query(ends_query):
            source, target = ends["source"], ends["target"]
            if source in HIDDEN_LABELS or target in HIDDEN_LABELS or source is None or target is None:
                continue
            relationships.add((str(source), rel, str(target)))
    return SchemaFacts(generation, tuple(labels), tuple(sorted(relationships)))


class FactsCache:
    """The newest :class:`SchemaFacts` of one store, re-read when the mirror generation changes."""

    def __init__(self, store: GraphStore):
        self.store = store
        self._facts: SchemaFacts | None = None
        self._lock = threading.Lock()

    def get(self) -> SchemaFacts:
        generation = read_generation(self.store)
        with self._lock:
            cached = self._facts
            if cached is not None and generation is not None and cached.generation == generation:
                return cached
        facts = read_facts(self.store, generation=generation)
        with self._lock:
            self._facts = facts
        log.debug("schema facts read at generation %s: %d labels", generation, len(facts.labels))
        return facts

    def invalidate(self) -> None:
        """Forget the cached facts (after a write the mirror did not count, e.g. a correction)."""
        with self._lock:
            self._facts = None
