"""Hydra's per-object features (``semantic_feature``) in the database, for "things like this one".

Hydra's open-set variants give each object a feature vector; where snapshots carry them the mirror keeps
them on ``ObjectFeature`` nodes (symbol, vector, width, digest) beside the scene, never on ``Object``:
the model's ``RETURN o`` and the mirror's own baseline read stay small, and a feature is written only
when its digest changed, not whenever its object moved. A feature goes when its object leaves the scene
or stops carrying one; where snapshots carry none, nothing is written. No vector index: the bundled
FalkorDB's loses nodes once they are updated (graphdb/cypher/meaning.py).
"""
from __future__ import annotations

import hashlib
import logging

import numpy as np

from heracles_ros.graphdb.cypher import meaning as q
from heracles_ros.graphdb.store import GraphStore, Params
from heracles_ros.mirror.indexes import ensure_indexes
from heracles_ros.scene.tables import SceneTables, symbol_of

log = logging.getLogger(__name__)

#: Features per statement (a 512-d feature is ~5 KB of parameters as text).
BATCH = 200


def digest(feature: np.ndarray) -> str:
    """What tells one feature from another without reading the vector back."""
    return hashlib.blake2b(np.ascontiguousarray(feature, dtype=np.float32).tobytes(), digest_size=8).hexdigest()


class FeatureWriter:
    """Keeps a store's ObjectFeature nodes equal to the newest snapshot's features."""

    def __init__(self) -> None:
        #: symbol -> digest the database holds (None: not known, read it before the next write).
        self._held: dict[str, str] | None = None
        self._indexed = False

    def write(self, store: GraphStore, tables: SceneTables, *, reread: bool = False) -> int:
        """Write the changed features of ``tables``, delete those of objects gone or without one; how many
        nodes were written or deleted. ``reread``: what the database holds is read first (the mirror read its
        baseline again: another writer, a reset, a failure or another store may have changed it)."""
        wanted: dict[str, tuple[np.ndarray, str]] = {}
        for node_id, feature in tables.features.items():
            if not np.isfinite(feature).all():
                log.warning("%s: semantic_feature has a non-finite value; not mirrored", symbol_of(node_id))
                continue
            wanted[symbol_of(node_id)] = (feature, digest(feature))
        if self._held is None or reread:
            self._held = {str(row["symbol"]): str(row["digest"]) for row in store.query(q.FEATURE_DIGESTS)}
            self._indexed = False
        held = self._held
        gone = sorted(symbol for symbol in held if symbol not in wanted)
        changed = [[symbol, _unit(feature).tolist(), int(feature.size), mark]
                   for symbol, (feature, mark) in sorted(wanted.items()) if held.get(symbol) != mark]
        if not gone and not changed:
            return 0
        if not self._indexed:
            ensure_indexes(store, [q.FEATURE_INDEX])
            self._indexed = True
        write = q.write_features(store.dialect)
        statements: list[tuple[str, Params]] = [
            *((q.DELETE_FEATURES, {"symbols": gone[i : i + BATCH]}) for i in range(0, len(gone), BATCH)),
            *((write, {"rows": changed[i : i + BATCH]}) for i in range(0, len(changed), BATCH)),
        ]
        self._held = None  # unknown until the write has landed
        store.write_many(statements, timeout_s=120)
        self._held = {**{s: m for s, m in held.items() if s in wanted}, **{row[0]: row[3] for row in changed}}
        return len(gone) + len(changed)

    def use_store(self, store: GraphStore) -> None:
        self.store = store
        self._held = None
        self._indexed = False



def _unit(feature: np.ndarray) -> np.ndarray:
    """The direction is what "like" compares: stored at length 1, the cosine is a dot product on any backend."""
    norm = float(np.linalg.norm(feature))
    return feature / norm if norm > 0.0 else feature
