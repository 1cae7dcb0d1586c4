"""``heracles stop|resume|cancel|confirm``: the operator's controls, each one service call.

``stop``, ``resume`` and ``cancel`` call the dispatcher's own services
(``<namespace>/stop``, ``hard_stop``, ``resume``, ``cancel``), never the
language server, so they work whatever else has died; ``confirm`` answers the
language server's command waiting for confirmation. They stand on
:class:`heracles_ros.client.HeraclesClient`, and every wait is bounded: finding
the service, then its answer, each within ``--server-timeout`` seconds; when
nothing answers the command says which service in which namespace it looked
for. They are on the operator's fast path: ``heracles`` builds only this
module's parsers for them, and only the client is imported with it (no
database, model or planner). ``stop`` goes further: on the dispatcher's machine
it takes the dispatcher's local socket (:mod:`heracles_ros.ros.stop_socket`),
with no rclpy start-up and no DDS discovery, so the robot is stopped well within
half a second of the command starting (``heracles bench stop`` measures it);
elsewhere it calls the ROS service.

Exit codes: 0 done; 1 the server answered but refused (nothing to cancel,
not stopped, nothing waiting, or the driver's stop failed: the message says
which); 4 nothing answered within the bound; 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from heracles_ros.client.system import DEFAULT_NAMESPACE

#: The commands this module serves (``heracles`` builds only their parsers when one of them is asked for).
COMMANDS = ("stop", "resume", "cancel", "confirm")
EXIT_OK, EXIT_REFUSED = 0, 1


def register(sub: argparse._SubParsersAction) -> None:
    stop = sub.add_parser("stop", help="stop the robot now and refuse every plan until 'heracles resume' (latched)")
    stop.add_argument("--hard", action="store_true",
                      help="the robot's gentle e-stop (spot_ros2: it settles, then motor power is cut)")
    stop.set_defaults(func=_stop)
    resume = sub.add_parser("resume", help="clear the latched stop so that plans are accepted again")
    resume.add_argument("--operator", required=True, metavar="NAME", help="who resumes (recorded and logged)")
    resume.add_argument("--reason", default="", help="why it is safe to go on (recorded and logged)")
    resume.set_defaults(func=_resume)
    cancel = sub.add_parser("cancel", help="cancel the plan the robot's dispatcher is running (the robot stops)")
    cancel.set_defaults(func=_cancel)
    confirm = sub.add_parser("confirm", help="let a command waiting for confirmation move the robot (or --refuse)",
                             description="Answers the running language_server's confirm service, as the terminal "
                             "of 'heracles command --execute --confirm' does.")
    confirm.add_argument("command_id", nargs="?", default="",
                         help="the waiting command's id (default: the one command waiting, if only one is)")
    confirm.add_argument("--refuse", action="store_true", help="refuse it: the command ends, nothing moves")
    confirm.set_defaults(func=_confirm)
    for parser in (stop, resume, cancel, confirm):
        server = "language_server" if parser is confirm else "dispatcher"
        parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                            help=f"robot namespace of the running {server} ({DEFAULT_NAMESPACE})")
        parser.add_argument("--server-timeout", type=float, default=3.0, metavar="S",
                            help=f"seconds to find the {server}'s service, and again for its answer (default 3)")
        parser.add_argument("--json", action="store_true",
                            help="print {\"success\": ..., \"message\": ...} as JSON on stdout")


def _stop(args: argparse.Namespace) -> int:
    """Through the dispatcher's local socket when it runs on this machine (no rclpy start-up, no discovery:
    :mod:`heracles_ros.ros.stop_socket`), else its ROS service."""
    from heracles_ros.ros.stop_socket import send_stop

    domain = os.environ.get("ROS_DOMAIN_ID", "0").strip() or "0"
    if domain.isdigit():
        answer = send_stop(args.namespace, int(domain), hard=args.hard, timeout_s=args.server_timeout)
        if answer is not None:
            return _print(args, *answer)
    return _answer(args, lambda client: client.stop(hard=args.hard))


def _resume(args: argparse.Namespace) -> int:
    return _answer(args, lambda client: client.resume(args.operator, args.reason))


def _cancel(args: argparse.Namespace) -> int:
    return _answer(args, lambda client: client.cancel_plan())


def _confirm(args: argparse.Namespace) -> int:
    return _answer(args, lambda client: client.confirm(not args.refuse, args.command_id))


def _answer(args: argparse.Namespace, call: Any) -> int:
    """One call through a client of its own; the answer's message, exit 0 / 1 by its success.

    Nothing answering raises SystemUnavailable, which ``heracles`` reports with exit 4.
    """
    from heracles_ros.client import HeraclesClient

    with HeraclesClient(args.namespace, node_name="heracles_control", find_timeout_s=args.server_timeout,
                        answer_timeout_s=args.server_timeout, short_lease=False) as client:
        response = call(client)
    return _print(args, bool(response.success), str(response.message))


def _print(args: argparse.Namespace, success: bool, message: str) -> int:
    if args.json:
        json.dump({"success": success, "message": message}, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(message)
    return EXIT_OK if success else EXIT_REFUSED
