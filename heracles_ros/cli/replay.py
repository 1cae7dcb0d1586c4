"""``heracles replay``: publish scene files, or a recording of Hydra's DsgUpdate topic, to the running mirror.

At the desk this stands in for Hydra: the files are published in order as
``hydra_msgs/msg/DsgUpdate`` full snapshots, with Hydra's QoS, at ``--rate``, so
the mirror, its history (``heracles changes``) and the console react as they do
on the robot. A bad input (a missing file, a file that is neither a scene nor an
MCAP recording, a recording without the topic, cut short or damaged anywhere) is
named before anything is published, exit status 2; no mirror listening within
``--wait`` is exit status 1.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from heracles_ros.cli.common import print_json
from heracles_ros.errors import ReplayInputError
from heracles_ros.ros.interfaces import DSG_UPDATE

EXIT_OK, EXIT_NO_MIRROR, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
#: How long one snapshot may take to be acknowledged by the subscribers before the replay says so.
ACK_WAIT_S = 5.0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "replay", help="publish scene files or an MCAP recording of Hydra's DsgUpdate topic to the running mirror",
        description="Publish spark_dsg scene files (in the order given) and/or MCAP recordings of Hydra's "
        "hydra_msgs/msg/DsgUpdate topic (ros2 bag record -s mcap) as full snapshots to the running dsg_mirror, "
        "at --rate. Reading a recording needs no ROS install; publishing needs rclpy.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE",
                        help="scene files (.json or spark_dsg binary) and/or .mcap recordings, published in order")
    parser.add_argument("--rate", type=float, default=1.0, metavar="HZ", help="snapshots per second (default 1)")
    parser.add_argument("--topic", default=DSG_UPDATE.name,
                        help=f"topic to publish on, and to read from recordings (default {DSG_UPDATE.name})")
    parser.add_argument("--loop", action="store_true", help="start over after the last snapshot, until Ctrl-C")
    parser.add_argument("--keep-stamps", action="store_true",
                        help="stamp a recording's snapshots with their recorded time (default: now, so the "
                        "history shows them as recent changes)")
    parser.add_argument("--wait", type=float, default=10.0, metavar="S",
                        help="seconds to wait for the mirror to subscribe (default 10)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from heracles_ros.desk.recordings import ReplaySources
    from heracles_ros.extras import tool_library

    for library in ("mcap", "mcap_ros2"):  # a clear error on a robot install without the tools extra
        tool_library(library, "heracles replay")

    if args.rate <= 0 or args.wait < 0:
        print(f"error: --rate must be > 0 and --wait >= 0 (got {args.rate:g}, {args.wait:g})", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        sources = ReplaySources(args.files, args.topic)
    except ReplayInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _publish(sources, args)


def _publish(sources: Any, args: argparse.Namespace) -> int:
    from heracles_ros.ros.client_context import ClientContext

    try:
        dsg_update = DSG_UPDATE.type
    except ImportError:
        print("error: publishing needs the hydra_msgs interface package (Hydra-ROS) in the ROS workspace; "
              "build it next to heracles_ros and source the workspace", file=sys.stderr)
        return EXIT_NO_MIRROR
    # Ctrl-C, SIGTERM and a closed terminal end the replay between two snapshots (exit 130), also when the
    # shell started it with SIGINT ignored (a background job); rclpy's own handler stays off.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    ros = ClientContext(f"heracles_replay_{os.getpid()}")
    try:
        publisher = DSG_UPDATE.publisher(ros.node, name=args.topic)
        deadline = time.monotonic() + args.wait
        while publisher.get_subscription_count() == 0:
            if time.monotonic() >= deadline:
                print(f"error: nothing subscribed to {args.topic} within {args.wait:g} s (is the system running, "
                      "e.g. heracles up, with the same ROS_DOMAIN_ID and discovery range?)", file=sys.stderr)
                return EXIT_NO_MIRROR
            time.sleep(0.05)
        numbering = _Numbering()
        period = 1.0 / args.rate
        count = 0
        passes = 0
        published: deque[dict[str, object]] = deque(maxlen=1000)  # --loop runs for ever: the last ones
        # With --json the progress lines go to stderr and stdout holds one JSON document at the end.
        progress = sys.stderr if args.json else sys.stdout
        try:
            while passes == 0 or args.loop:
                for frame in sources.frames():
                    if count:
                        time.sleep(period)
                    sequence = numbering.next(frame.sequence, passes)
                    stamp = frame.stamp_s if args.keep_stamps and frame.stamp_s is not None else time.time()
                    publisher.publish(_message(dsg_update(), frame, sequence, stamp))
                    count += 1
                    acked = _wait_acked(publisher, ACK_WAIT_S)
                    published.append({"source": str(frame.source), "sequence": sequence, "acknowledged": acked})
                    print(f"{time.strftime('%H:%M:%S')} published {frame.source} as sequence {sequence} on "
                          f"{args.topic}" + ("" if acked else f" (not acknowledged within {ACK_WAIT_S:g} s)"),
                          file=progress, flush=True)
                passes += 1
        except KeyboardInterrupt:
            print(f"replay stopped after {count} snapshot{'s' if count != 1 else ''}", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        if args.json:
            print_json({"replayed": count, "topic": args.topic, "snapshots": list(published)})
        else:
            print(f"replayed {count} snapshot{'s' if count != 1 else ''}", flush=True)
        return EXIT_OK
    except ReplayInputError as exc:  # a recording that breaks off mid-way
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        ros.close()


def _message(msg: Any, frame: Any, sequence: int, stamp_s: float) -> Any:
    """``msg`` (an empty DsgUpdate) filled as Hydra fills it: a full snapshot in the map frame."""
    msg.header.frame_id = "map"
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp_s * 1e9), 1_000_000_000)
    msg.layer_contents = frame.payload
    msg.full_update = frame.full_update
    msg.sequence_number = sequence
    return msg


def _wait_acked(publisher: Any, timeout_s: float) -> bool:
    """Whether every subscriber acknowledged what was published, waiting in short slices (a signal ends the
    wait at once: rclpy's wait is a C call that Python cannot interrupt)."""
    from rclpy.duration import Duration

    deadline = time.monotonic() + timeout_s
    while not publisher.wait_for_all_acked(Duration(seconds=0.1)):
        if time.monotonic() >= deadline:
            return False
    return True


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


class _Numbering:
    """Sequence numbers that only grow: scene files count up; a recording keeps its own on the first pass and
    is shifted past everything published before on later passes (the mirror's history records them)."""

    def __init__(self) -> None:
        self.last = 0
        self._shift = 0
        self._pass = 0

    def next(self, recorded: int | None, pass_index: int) -> int:
        if pass_index != self._pass:
            self._pass, self._shift = pass_index, self.last + 1
        number = self.last + 1 if recorded is None else max(recorded + self._shift, self.last + 1)
        self.last = number
        return number
