"""The ``--live`` forms of ``ask``, ``command``, ``correct``, ``changes`` and ``corrections``.

Without ``--live`` those commands run in this process on the database (``--db``);
with it they go to the running system's services through
:class:`heracles_ros.client.HeraclesClient`: the language server's ``ask``,
``command``, ``correct`` and ``corrections``, the mirror's ``changes``. Nothing
answering within ``--server-timeout`` ends in exit 4 naming the service.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from heracles_ros.cli.common import print_json
from heracles_ros.client.system import DEFAULT_NAMESPACE, LANGUAGE_TIMEOUT_S
from heracles_ros.client.words import message_dict

#: Exit status when the model asks back (as the in-process forms).
EXIT_CLARIFY = 3


def add_live_options(parser: argparse.ArgumentParser, *, what: str, session: bool = False) -> None:
    """``--live``, ``--namespace``, ``--server-timeout`` (and ``--session``) for a command with a live form."""
    parser.add_argument("--live", action="store_true",
                        help=f"ask the running system's {what} instead of working on --db in this process")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                        help=f"with --live (or --execute): robot namespace of the running system ({DEFAULT_NAMESPACE})")
    parser.add_argument("--server-timeout", type=float, default=5.0, metavar="S",
                        help="with --live (or --execute): seconds to find the running node's service (default 5)")
    if session:
        parser.add_argument("--session", default="", metavar="NAME",
                            help="with --live or --execute: the conversation this request continues on the running "
                            "language server (its recent exchanges reach the model, e.g. after a question back)")


def _client(args: argparse.Namespace) -> Any:
    from heracles_ros.client import HeraclesClient

    return HeraclesClient(args.namespace, node_name="heracles_cli", find_timeout_s=args.server_timeout,
                          answer_timeout_s=args.server_timeout, short_lease=False)


def _usage(response: Any) -> None:
    print(f"{response.tool_calls} queries, {response.input_tokens} tokens in, {response.output_tokens} out, "
          f"{response.latency_s:.1f} s", file=sys.stderr)


def _clarified(response: Any) -> bool:
    if not response.clarification:
        return False
    print(response.clarification)
    for candidate in response.candidates:
        print(f"  - {candidate.description}")
    return True


def _exit(response: Any) -> int:
    if response.error:
        print(f"error: {response.error}", file=sys.stderr)
        return 1
    return EXIT_CLARIFY if getattr(response, "clarification", "") else 0


def ask(args: argparse.Namespace) -> int:
    with _client(args) as client:
        response = client.ask(args.question, answer_type=args.answer_type or "", session=args.session,
                              timeout_s=_answer_bound(args))
    if args.json:
        print_json(message_dict(response))
        return _exit(response)
    if not _clarified(response) and response.answer:
        print(response.answer)
    if response.explanation:
        print(f"({response.explanation})", file=sys.stderr)
    _usage(response)
    return _exit(response)


def _answer_bound(args: argparse.Namespace) -> float:
    """How long a language request may take: every model turn the CLI allows, and never less than the client's."""
    return max(args.timeout * (args.max_tool_calls + 1), LANGUAGE_TIMEOUT_S)


def _report(args: argparse.Namespace, response: Any, show: Callable[[Any], None]) -> int:
    """An instruction's response for the operator: whole as JSON with --json; else the question back with its
    candidates, or what ``show`` prints of the answer, then the usage on stderr. The exit status says which."""
    if args.json:
        print_json(message_dict(response))
        return _exit(response)
    if not _clarified(response):
        show(response)
    _usage(response)
    return _exit(response)


def command(args: argparse.Namespace) -> int:
    with _client(args) as client:
        response = client.plan_command(args.instruction, session=args.session,
                                       timeout_s=_answer_bound(args))

    def show(response: Any) -> None:
        if response.goal:
            print(f"{response.goal}  ({response.goal_text})")
        if response.plan_summary:
            print(response.plan_summary)

    return _report(args, response, show)


def correct(args: argparse.Namespace) -> int:
    with _client(args) as client:
        response = client.correct(args.instruction, session=args.session,
                                  timeout_s=_answer_bound(args))

    def show(response: Any) -> None:
        lines = [*response.changes, *response.existing]
        print("\n".join(lines) or (f"no change: {response.explanation}" if not response.error else ""))

    return _report(args, response, show)


def changes(args: argparse.Namespace, since: float) -> list[dict[str, Any]]:
    with _client(args) as client:
        return client.changes(since_s=since, room=args.room or "", limit=args.limit)


def corrections(args: argparse.Namespace) -> Any:
    """The ``corrections`` service's answer for ``heracles corrections ACTION --live``, as the offline form has it."""
    with _client(args) as client:
        if args.corrections_action == "list":
            return client.corrections(active_only=args.active)
        if args.corrections_action == "revert":
            return {"reverted": args.id.strip(), "changes": client.revert_correction(args.id.strip())}
        return {"cleared": True, "reverted": client.clear_corrections()}
