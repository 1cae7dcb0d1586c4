"""The few rclpy calls whose form differs between ROS 2 Humble, Jazzy and Kilted.

Nodes and tests use only rclpy API the three distros share; where they differ,
the shared form lives here. ``rclpy.init()`` returns a context manager only
from Kilted's rclpy (9.x) on; Humble's (3.x) and Jazzy's (7.1) return None, so
``with rclpy.init(...)`` kills every node at start there. docs/known-issues.md#rclpy-init-context-manager
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import rclpy


@contextlib.contextmanager
def ros_initialized(args: list[str] | None = None, **options: Any) -> Iterator[None]:
    """rclpy initialised for the ``with`` block and shut down after it, on every distro.

    ``options`` go to ``rclpy.init`` (context, domain_id, signal_handler_options:
    Humble's keyword arguments, which later distros kept).
    """
    rclpy.init(args=args, **options)
    try:
        yield
    finally:
        rclpy.try_shutdown(context=options.get("context"))
