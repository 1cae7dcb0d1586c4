"""Read scene graphs from files and DsgUpdate payloads, failing with SceneDecodeError.

Hydra sends a full snapshot about once a second; decoding into one persistent
graph with ``update_from_binary`` is cheaper than building a new graph each
time (measured 136 ms vs 224 ms on a 16k-node graph). Every binary is checked
(:mod:`.payload_check`) before spark_dsg reads it: a declared length that its
bytes cannot hold would otherwise make spark_dsg allocate it first.
"""
from __future__ import annotations

from pathlib import Path

import spark_dsg as dsg

from heracles_ros.errors import ConfigError, SceneDecodeError
from heracles_ros.scene.payload_check import check_payload

#: Suffixes spark_dsg's own load/save accept; any other file is read as spark_dsg binary.
SPARK_DSG_SUFFIXES = (".json", ".bson", ".sparkdsg")
#: Largest snapshot or binary scene file decoded, bytes (Hydra's snapshot with a 2M-vertex mesh: 229 MB).
DEFAULT_MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024


def load_scene(path: str | Path, *, max_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES) -> dsg.DynamicSceneGraph:
    """Load a spark_dsg file: .json, .bson, .sparkdsg, or spark_dsg binary under any other name.

    A binary file is checked like a snapshot (size, then declared lengths) before it is decoded;
    .json, .bson and .sparkdsg files are spark_dsg's own to read.
    """
    path = Path(path)
    if path.is_dir():
        raise SceneDecodeError(f"{path} is a directory, not a scene file: name the .json or binary file in it")
    if not path.is_file():
        raise SceneDecodeError(f"scene file {path} does not exist")
    binary = path.suffix.lower() not in SPARK_DSG_SUFFIXES
    if binary and path.stat().st_size > max_bytes:
        raise SceneDecodeError(f"scene file {path} has {path.stat().st_size} bytes, more than the {max_bytes} allowed")
    try:
        if not binary:
            return dsg.DynamicSceneGraph.load(str(path))
        data = path.read_bytes()
        check_payload(data)
        return dsg.DynamicSceneGraph.from_binary(data)
    except Exception as exc:  # spark_dsg raises ValueError, RuntimeError, IndexError, UnicodeDecodeError ...
        raise SceneDecodeError(f"scene file {path} is not a spark_dsg graph: {exc}") from exc


class SnapshotDecoder:
    """Decode successive full snapshots into one graph, reusing it while payloads are good.

    A payload refused by the size cap or the length check never reaches spark_dsg, and the
    graph is kept; after a failed decode the graph may be half-updated, so the next payload
    is decoded from scratch.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES) -> None:
        if max_bytes < 1:
            raise ConfigError(f"max_snapshot_bytes must be >= 1, got {max_bytes}")
        self.max_bytes = max_bytes
        self._graph: dsg.DynamicSceneGraph | None = None

    def decode(self, payload: bytes | bytearray | memoryview) -> dsg.DynamicSceneGraph:
        if not payload:
            raise SceneDecodeError("empty scene-graph payload")
        size = len(payload) if not isinstance(payload, memoryview) else payload.nbytes
        if size > self.max_bytes:
            raise SceneDecodeError(f"payload of {size} bytes is larger than max_snapshot_bytes ({self.max_bytes})")
        data = bytes(payload)
        check_payload(data)
        try:
            if self._graph is None:
                self._graph = dsg.DynamicSceneGraph.from_binary(data)
            else:
                self._graph.update_from_binary(data)
        except Exception as exc:
            self._graph = None
            raise SceneDecodeError(f"payload of {len(data)} bytes is not a spark_dsg graph: {exc}") from exc
        return self._graph
