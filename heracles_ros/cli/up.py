"""``heracles up``: the whole system on this machine in one command, until Ctrl-C.

The embedded database, the three nodes (dispatcher on the simulated Spot), the
web console, and the scripted model when no language model is configured, run under one
process runner (:mod:`heracles_ros.desk.runner`): every log line is prefixed by
its process's name, and Ctrl-C (or SIGTERM) stops them all, the database last (only
if this ``up`` started it). Before anything is started or written, a second ``up`` for the same
robot or graph is refused (:mod:`heracles_ros.desk.claims`).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from heracles_ros.cli.common import add_db_options, add_model_options
from heracles_ros.demo.goal import START_ROOM_CLASS
from heracles_ros.demo.language import choose_language_model
from heracles_ros.errors import ConfigError, SceneError, SuspectSnapshot

if TYPE_CHECKING:
    from heracles_ros.desk.claims import GraphLock
    from heracles_ros.desk.system import SystemOptions

DEFAULT_NAMESPACE = "/spot"
#: The nodes' shutdown_timeout_s default (config/*.yaml).
DEFAULT_SHUTDOWN_S = 5.0
#: What the database's own clean stop may take on top of the nodes' shutdown.
DATABASE_STOP_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "up", help="start the whole system locally (database, nodes, simulated Spot) until Ctrl-C",
        description="Start the embedded database, the dsg_mirror, language_server and dispatcher nodes (simulated "
        "Spot) under one process runner, each log line prefixed by its process; Ctrl-C stops everything. Without "
        "a configured language model the language server gets SCRIPTED model turns (the demo's question and "
        "command only). Talk to it from another terminal: heracles command --execute '...', heracles stop, "
        "heracles replay ...",
    )
    add_db_options(parser, graph_help="graph the nodes use")
    parser.add_argument("--scene", type=Path, default=None, metavar="FILE",
                        help="spark_dsg file the mirror starts from (default: the bundled example scene)")
    parser.add_argument("--no-scene", action="store_true",
                        help="start with an empty mirror (e.g. to fill it with heracles replay)")
    parser.add_argument("--replace-scene", action="store_true",
                        help="replace the scene the database holds by --scene even when that removes most of it "
                        "(a switch to another scene; otherwise refused as a suspect snapshot)")
    parser.add_argument("--world", type=Path, default=None, metavar="FILE",
                        help="scene file of a simulated Hydra's world (the map plus objects not yet seen): the "
                        "simulated robot perceives it as it walks and the mirror receives what it saw")
    parser.add_argument("--start-place", default=None, metavar="SYMBOL",
                        help=f"place the simulated robot starts at (default: the middle of the scene's "
                        f"{START_ROOM_CLASS}; with --no-scene: where the database last had it)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                        help=f"robot namespace of the nodes (default {DEFAULT_NAMESPACE})")
    add_model_options(parser, without="the scripted model turns")
    parser.add_argument("--time-scale", type=float, default=1.0, metavar="X",
                        help="simulated seconds per wall-clock second of the simulated Spot (default: 1)")
    parser.add_argument("--shutdown-timeout", type=float, default=DEFAULT_SHUTDOWN_S, metavar="S",
                        help=f"each node's shutdown_timeout_s (default {DEFAULT_SHUTDOWN_S:g})")
    parser.add_argument("--console-port", type=int, default=8765, metavar="PORT",
                        help="port of the web console on 127.0.0.1 (default 8765; 0: no console)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from heracles_ros.extras import tool_library

    tool_library("honcho", "heracles up")  # a clear error on a robot install without the tools extra
    from heracles_ros.demo.scripted_model import LABEL
    from heracles_ros.desk.runner import run_processes
    from heracles_ros.desk.system import DATABASE, environment, processes

    options = _system_options(args)
    env = environment(os.environ)
    local_only_chosen = (env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST"
                         and "ROS_AUTOMATIC_DISCOVERY_RANGE" not in os.environ)
    os.environ.update(env)  # this process's own look at the ROS graph reaches what its nodes will
    lock = _refuse_a_second_system(options)  # held (its file open) until the system has stopped
    scene, place, embedded = options.scene_file, options.start_place, options.embedded_dir
    owner = options.database_owner
    print(f"heracles up: nodes in {args.namespace}, database {options.db_uri} (graph {args.graph}), simulated Spot"
          + (f" starting at {place}" if place else "") + (f", scene {scene}" if scene else ", no scene"), flush=True)
    language = options.language
    print(f"heracles up: language model: {language.description if language else LABEL}", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # until the runner takes over: a stop during set-up cleans up
    try:
        if embedded is not None:
            _start_database(embedded, owner)  # before any node, so that no node ever starts one of its own
        if scene is not None:
            _write_scene(options.db_uri, args.graph, scene, replace=args.replace_scene)
    except BaseException:
        if embedded is not None:
            _stop_leftover_database(embedded, owner)
        raise
    if local_only_chosen:
        print("heracles up: ROS discovery on this host only; in other terminals: "
              "export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST", flush=True)
    print("heracles up: Ctrl-C stops everything", flush=True)
    result = run_processes(processes(options), env, sys.stdout, last={DATABASE}, grace_s=args.shutdown_timeout + 2.0,
                           last_stop_s=DATABASE_STOP_S)
    if embedded is not None:
        _stop_leftover_database(embedded, owner)
    if lock is not None:
        lock.release()
    with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP): the status still says it
        print(result.summary(), file=sys.stderr if result.exit_status else sys.stdout, flush=True)
    return result.exit_status


def _system_options(args: argparse.Namespace) -> SystemOptions:
    """The system the arguments ask for, every argument checked before anything starts."""
    from heracles_ros.demo.goal import EXAMPLE_SCENE
    from heracles_ros.desk.start_place import start_place
    from heracles_ros.desk.system import SystemOptions
    from heracles_ros.graphdb import parse_db_uri
    from heracles_ros.graphdb.uri import default_data_dir

    if not 0 <= args.console_port < 65536:
        raise ConfigError(f"--console-port must be 0 (no console) or 1..65535, got {args.console_port}")
    if args.time_scale <= 0 or args.shutdown_timeout <= 0:
        raise ConfigError("--time-scale and --shutdown-timeout must be > 0")
    scene = None if args.no_scene else (args.scene or EXAMPLE_SCENE).expanduser().resolve()
    if scene is not None and not scene.is_file():
        raise ConfigError(f"--scene {scene}: no such file")
    try:
        place = args.start_place if args.start_place is not None else (
            start_place(scene, START_ROOM_CLASS) if scene is not None else "")
    except SceneError as exc:
        raise ConfigError(f"{exc}; name the robot's start with --start-place") from exc
    world = args.world.expanduser().resolve() if args.world is not None else None
    if world is not None and not world.is_file():
        raise ConfigError(f"--world {world}: no such file")
    target = parse_db_uri(args.db)
    embedded = (target.data_dir or default_data_dir()) if target.kind == "embedded" else None
    language = choose_language_model(args.llm, args.model, args.base_url)
    return SystemOptions(
        db_uri=f"embedded:{embedded}" if embedded is not None else args.db, embedded_dir=embedded,
        namespace=args.namespace, graph_name=args.graph, scene_file=scene, start_place=place, language=language,
        scripted_port=_free_port() if language is None else 0, time_scale=args.time_scale,
        shutdown_timeout_s=args.shutdown_timeout, console_port=args.console_port or None,
        database_owner=f"heracles up (pid {os.getpid()})", world_file=world,
    )


def _refuse_a_second_system(options: SystemOptions) -> GraphLock | None:
    """A running system for this graph, robot or console port is found before anything is started or written
    (desk/claims.py). Returns this one's claim on the graph: the caller holds it (closing it releases it)."""
    from heracles_ros.desk.claims import GraphLock, refuse_if_port_taken, refuse_if_running

    lock = GraphLock(options.embedded_dir, options.graph_name) if options.embedded_dir is not None else None
    if lock is not None:
        lock.acquire({"pid": os.getpid(), "namespace": options.namespace})
    refuse_if_running(options.namespace)
    if options.console_port is not None:
        refuse_if_port_taken(options.console_port)
    return lock


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _start_database(data_dir: Path, owner: str) -> None:
    from heracles_ros.embedded.server import EmbeddedServer

    server = EmbeddedServer(data_dir, progress=lambda line: print(f"heracles up: {line}", flush=True))
    server.ensure_started(owner=owner)


def _write_scene(db_uri: str, graph_name: str, scene: Path, *, replace: bool) -> None:
    """The scene in the database before the dispatcher looks up its start place there (the mirror node,
    given the same file, then finds nothing to change). Another scene is replaced only when asked: in
    one transaction, so the graph holds the old scene or the new one, never a mix."""
    from heracles_ros.graphdb import open_store
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.scene.io import load_scene

    with open_store(db_uri, graph=graph_name, timeout_s=120.0) as store:
        try:
            report = Mirror(store).reconcile(load_scene(scene), stamp_s=scene.stat().st_mtime, force=replace)
        except SuspectSnapshot as exc:
            raise ConfigError(f"graph {graph_name!r} holds another scene ({exc}); to switch to {scene.name}, start "
                              "with --replace-scene; to keep the database's scene, with --no-scene") from exc
    replaced = f", replacing {report.nodes_removed} nodes of another scene" if replace and report.nodes_removed else ""
    print(f"heracles up: {scene.name} in the database ({report.nodes} nodes, {report.edges} edges{replaced})",
          flush=True)


def _stop_leftover_database(data_dir: Path, owner: str) -> None:
    """Stop the server this ``up`` started when nothing else did (a stop during set-up, or a database process
    that was killed); one that another process started is left running."""
    from heracles_ros.embedded.server import EmbeddedServer

    server = EmbeddedServer(data_dir)
    if server.owner() == owner:
        print("heracles up: stopping the database server it started", file=sys.stderr, flush=True)
        server.stop_if_started_by(owner, timeout_s=DATABASE_STOP_S)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
