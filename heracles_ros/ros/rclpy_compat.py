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


def parameter_override_names(node: Any) -> list[str]:
    """The parameter names given to ``node`` from outside (params files, ``-p``, ``parameter_overrides``).

    rclpy keeps them in ``Node._parameter_overrides`` (filled from rcl's parsed arguments in Node.__init__,
    the same attribute in Humble, Jazzy and Kilted) and offers no public accessor; a parameter set there but
    never declared is otherwise dropped without a word.
    """
    return list(getattr(node, "_parameter_overrides", {}))
