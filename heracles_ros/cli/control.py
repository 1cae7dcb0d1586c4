"""``heracles stop|resume|cancel``: the operator's controls, straight to the robot's dispatcher.

They call the dispatcher's own services (``<namespace>/stop``, ``hard_stop``,
``resume``, ``cancel``), never the language server, so they work whatever else
has died. Every wait is bounded: finding the service, then its answer, each
within ``--server-timeout`` seconds; when nothing answers the command says which
service in which namespace it looked for. ``stop`` is on the operator's fast
path: this module imports rclpy and the service types only when it runs, and
nothing else of the package (``heracles`` builds only this module's parsers for
these commands), so the robot is stopped within about a second of the command
starting (``heracles bench stop`` measures it).

Exit codes: 0 done; 1 the dispatcher answered but refused (nothing to cancel,
not stopped, or the driver's stop failed: the message says which); 4 no
dispatcher answered within the bound; 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

#: The commands this module serves (``heracles`` builds only their parsers when one of them is asked for).
COMMANDS = ("stop", "resume", "cancel")
#: heracles.launch.py's default robot namespace (robot_name:=spot), as ``heracles command --execute`` has it.
DEFAULT_NAMESPACE = "/spot"
EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE = 0, 1, 4
#: Seconds between looks at the graph while waiting for the service.
DISCOVERY_POLL_S = 0.01


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
    for parser in (stop, resume, cancel):
        parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                            help=f"robot namespace of the running dispatcher ({DEFAULT_NAMESPACE})")
        parser.add_argument("--server-timeout", type=float, default=3.0, metavar="S",
                            help="seconds to find the dispatcher's service, and again for its answer (default 3)")


def _stop(args: argparse.Namespace) -> int:
    from std_srvs.srv import Trigger

    return _run(args, "hard_stop" if args.hard else "stop", Trigger, Trigger.Request())


def _resume(args: argparse.Namespace) -> int:
    from heracles_ros.srv import Resume

    return _run(args, "resume", Resume, Resume.Request(operator_name=args.operator, reason=args.reason))


def _cancel(args: argparse.Namespace) -> int:
    from std_srvs.srv import Trigger

    return _run(args, "cancel", Trigger, Trigger.Request())


def service_name(namespace: str, service: str) -> str:
    """The dispatcher's service in ``namespace`` (``/spot`` -> ``/spot/stop``; ``/`` or '' -> ``/stop``)."""
    return f"/{namespace.strip('/')}/{service}".replace("//", "/")


def _run(args: argparse.Namespace, service: str, srv_type: Any, request: Any) -> int:
    name = service_name(args.namespace, service)
    response = call(name, srv_type, request, args.server_timeout)
    if response is None:
        print(f"error: no dispatcher answered on {name} within {args.server_timeout:g} s "
              f"(is the system running in namespace {args.namespace!r}? --namespace names it)", file=sys.stderr)
        return EXIT_UNREACHABLE
    print(response.message)
    return EXIT_OK if response.success else EXIT_REFUSED


def call(name: str, srv_type: Any, request: Any, timeout_s: float) -> Any:
    """The service's response, or None when it was not found, or did not answer, within ``timeout_s`` each."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    context = rclpy.Context()
    # Python's own handler stays: Ctrl-C raises KeyboardInterrupt (exit 130) instead of shutting rclpy down.
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node(f"heracles_control_{os.getpid()}", context=context,
                                 start_parameter_services=False, enable_rosout=False)  # fmt: skip
        client: Any = node.create_client(srv_type, name)
        deadline = time.monotonic() + timeout_s
        while not client.service_is_ready():  # rclpy's wait_for_service looks only every 0.25 s
            if time.monotonic() >= deadline:
                return None
            time.sleep(DISCOVERY_POLL_S)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        future = client.call_async(request)
        executor.spin_until_future_complete(future, timeout_sec=timeout_s)
        return future.result() if future.done() else None
    finally:
        rclpy.try_shutdown(context=context)
