"""The ``heracles`` command: one front door for people and scripts.

Each sub-module registers its own sub-commands (``register(subparsers)``) and
sets ``func(args) -> int`` on its parser; this module only wires them up.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from heracles_ros.errors import HeraclesError, SystemUnavailable

#: Exit status when a service or action of the running system did not answer within its bound.
EXIT_UNREACHABLE = 4

#: Sub-modules that contribute commands, in help order.
_COMMAND_MODULES = (
    "db", "scene", "where", "cypher", "find", "search", "changes", "corrections", "bench", "goal", "plan", "language",
    "control", "eval", "demo", "up", "replay", "console",
)
#: Commands without a JSON form: ``up`` and ``console`` run until Ctrl-C and print logs (and the console its URL).
_TEXT_ONLY = {"up", "console"}
#: Commands on the operator's fast path (``heracles stop``): only their module is imported to parse them.
_FAST_COMMANDS = {"stop": "control", "resume": "control", "cancel": "control", "confirm": "control"}


def build_parser(modules: tuple[str, ...] = _COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="heracles",
        description="Questions, commands and tools for a Spot robot's live Hydra scene graph.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules:
        try:
            module = importlib.import_module(f"heracles_ros.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"heracles_ros.cli.{name}":
                raise
            continue  # that command group is not built yet
        module.register(sub)
    for name, command in sub.choices.items():
        if name not in _TEXT_ONLY:
            _accept_json(command)
    return parser


#: The exit status of a command whose reader went away (``heracles summary | head``): 128 + SIGPIPE, as a shell's.
EXIT_CLOSED_PIPE = 141


def _accept_json(parser: argparse.ArgumentParser) -> None:
    """``--json`` on every command that lacks its own: it prints readable text, or one JSON document with it."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if actions:
        for command in actions[0].choices.values():
            _accept_json(command)
    elif not any("--json" in a.option_strings for a in parser._actions):
        parser.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of text")


def main(argv: list[str] | None = None) -> int:
    """Run one command; a closed output pipe ends it quietly (no traceback), as ``head`` expects of a writer."""
    try:
        status = _run(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # inside the guard: a write the reader left behind fails here, not at exit
        return status
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush cannot fail too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_CLOSED_PIPE


def _run(argv: list[str]) -> int:
    command = next((arg for arg in argv if not arg.startswith("-")), "")
    fast = _FAST_COMMANDS.get(command)
    parser = build_parser((fast,) if fast else _COMMAND_MODULES)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(args.func(args) or 0)
    except SystemUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except HeraclesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
