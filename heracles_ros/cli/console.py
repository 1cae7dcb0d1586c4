"""``heracles console``: the operator's web console (map, conversation, approval, STOP) for a running system.

It is a ROS client like the CLI's live verbs (the execute_command action, confirm,
ask, corrections, changes, the dispatcher's stop), plus a read-only view of the
database for the map. It binds to 127.0.0.1 unless ``--host`` says otherwise;
any other address needs ``HERACLES_CONSOLE_SECRET`` (see
:mod:`heracles_ros.console.security`). It prints the URL to open, and Ctrl-C or
SIGTERM ends it within a few seconds (running commands are cancelled).
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys

from heracles_ros.cli.common import add_db_options
from heracles_ros.client.system import DEFAULT_NAMESPACE
from heracles_ros.console.protocol import CLIENT_LOST_S

DEFAULT_PORT = 8765
#: Longest --client-lost-s: a closed tab's command must not walk on for longer than an hour.
MAX_CLIENT_LOST_S = 3600.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "console", help="serve the operator's web console (map, commands, approval, STOP) for the running system",
        description="A web page for the operator: the map (rooms, places, objects, the robot, the plan), a "
        "conversation with the language server, Approve/Refuse before the robot moves, Cancel, STOP and Resume, "
        "the history, the corrections and the mirror's health. Off 127.0.0.1 it needs the secret in "
        "HERACLES_CONSOLE_SECRET (open the printed URL, which carries it once).",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; any other needs HERACLES_CONSOLE_SECRET)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                        help=f"robot namespace of the running nodes (default {DEFAULT_NAMESPACE})")
    add_db_options(parser)
    parser.add_argument("--client-lost-s", type=float, default=CLIENT_LOST_S, metavar="S",
                        help="seconds a closed tab's commands run on before they are cancelled, as the language "
                        f"server's client_lost_s does for any client (default {CLIENT_LOST_S:g}; 0: never)")


def run(args: argparse.Namespace) -> int:
    from heracles_ros.console.app import ConsoleConfig, serve
    from heracles_ros.console.bridge import bridge_factory
    from heracles_ros.console.security import secret_for
    from heracles_ros.errors import ConfigError

    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be 1..65535, got {args.port}")
    if not 0 <= args.client_lost_s <= MAX_CLIENT_LOST_S:  # NaN too
        raise ConfigError(f"--client-lost-s must be 0..{MAX_CLIENT_LOST_S:g} seconds, got {args.client_lost_s}")
    config = ConsoleConfig(host=args.host, port=args.port, namespace=args.namespace, db_uri=args.db,
                           graph_name=args.graph, secret=secret_for(args.host, os.environ),
                           client_lost_s=args.client_lost_s)

    def announce() -> None:
        print(f"heracles console: open {config.url}", flush=True)
        if config.secret:
            print("  (the secret is in that URL: share it only with operators)", file=sys.stderr, flush=True)

    serve(config, bridge_factory(args.namespace), announce)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The launch files' ``console`` executable: the same options; without ``--namespace``, the namespace the
    launch pushes (``--ros-args -r __ns:=/spot``)."""
    import logging

    from heracles_ros.errors import HeraclesError

    argv = list(sys.argv[1:] if argv is None else argv)
    ros_args: list[str] = []
    if "--ros-args" in argv:
        argv, ros_args = argv[: argv.index("--ros-args")], argv[argv.index("--ros-args") + 1:]
    parser = argparse.ArgumentParser(prog="console", description="the operator's web console")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if "--namespace" not in argv:
        args.namespace = launch_namespace(ros_args) or args.namespace
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return run(args)
    except HeraclesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def launch_namespace(ros_args: list[str]) -> str:
    """The ``__ns:=`` remapping among ROS arguments ('' when none)."""
    for flag, value in itertools.pairwise(ros_args):
        if flag in ("-r", "--remap") and value.startswith("__ns:="):
            return value.split(":=", 1)[1] or "/"
    return ""
