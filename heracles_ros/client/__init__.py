"""The running system's client API: ask, command, confirm, cancel, stop, resume, feedback, result,
corrections and changes, each call bounded (docs/client-api.md).

Only :mod:`.system` talks ROS; :mod:`.words` puts its messages into the CLI's words.
"""
from __future__ import annotations

from heracles_ros.client.system import DEFAULT_NAMESPACE, HeraclesClient

__all__ = ["DEFAULT_NAMESPACE", "HeraclesClient"]
