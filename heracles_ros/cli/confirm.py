"""Destructive commands ask first: ``y`` or ``yes`` at a terminal, or ``--yes``; anything else refuses."""
from __future__ import annotations

import argparse
import sys

#: The answers that confirm; Enter, end of input and every other word refuse.
YES_ANSWERS = frozenset({"y", "yes"})
#: The exit status of a command the operator did not confirm (nothing was changed).
EXIT_NOT_CONFIRMED = 2


def add_yes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true",
                        help="do not ask for confirmation (needed when the input is not a terminal)")


def confirmed(args: argparse.Namespace, command: str, question: str) -> bool:
    """True with ``--yes``, or when the operator answers y/yes at a terminal; otherwise False, saying why on
    stderr. A script without ``--yes`` is refused rather than left waiting for an answer nobody types."""
    if getattr(args, "yes", False):
        return True
    if not sys.stdin.isatty():
        print(f"{command}: refusing without confirmation (the input is not a terminal); pass --yes to go ahead. "
              "Nothing was changed", file=sys.stderr)
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() in YES_ANSWERS:
        return True
    print(f"{command}: not confirmed; nothing was changed", file=sys.stderr)
    return False
