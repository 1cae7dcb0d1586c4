"""The Fast DDS profile every heracles process runs with (:data:`PROFILE_FILE`).

It sets two things Fast DDS's defaults get wrong for us:

- The participant lease. A process that exits normally leaves the graph at
  once; one killed (kill -9, a crash, a pulled cable) leaves only when its
  DDS participant's lease runs out, and Fast DDS's default lease is 20 s
  (measured on Kilted's Fast DDS 3.2 and Jazzy's 2.14: a kill -9'd node
  stayed on the graph 19.97 s; docs/known-issues.md#fastdds-lease). Client
  presence (:mod:`.client_presence`) gives up a moving robot's goal when its
  sender left the graph, so that lease is part of the time the robot walks on
  after its client died. Shorter is not better: a live participant whose
  announcements come late on a loaded machine is dropped and found again, and a
  response in flight to it is lost (the likely cause of a goal answer lost and a
  snapshot delivered twice with a 1 s lease; docs/known-issues.md#fastdds-lease).
  The lease is announced by the participant itself, so
  each of our processes asks for the short one: the CLI (its death cancels the
  command) and every node (a dead language server cancels its plan at the
  dispatcher).
- How long a service server waits for its client's response reader before
  it drops a response: 0.1 s by default (rmw_fastrtps's ``rmw_send_response``
  waits the response writer's ``max_blocking_time``), shorter than discovery
  takes on a loaded machine, where a client can see the server ready and send
  before the server has matched the reader the answer goes to
  (docs/known-issues.md#service-response-dropped).

Only Fast DDS (ROS 2's default middleware) reads the profile, and only when
the user has not chosen a profile file of their own, which then wins. Fast
DDS 3 (Kilted) reads ``FASTDDS_DEFAULT_PROFILES_FILE``, 2.x (Jazzy)
``FASTRTPS_DEFAULT_PROFILES_FILE`` (measured: the other is ignored, and
Kilted warns that the old name is deprecated), so only this distro's is set.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

#: Fast DDS profile: a 2 s lease announced every 0.25 s, and services that wait 2 s for their client (package data).
PROFILE_FILE = Path(__file__).resolve().parents[1] / "data" / "fastdds_profile.xml"
#: The lease that profile sets, seconds.
LEASE_S = 2.0
_PROFILE_VARIABLES = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")


def fastdds_profile_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the short-lease profile for this distro's Fast DDS; unchanged where the user chose a
    profile file or another middleware."""
    if any(env.get(name) for name in _PROFILE_VARIABLES):
        return dict(env)
    if env.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") not in ("", "rmw_fastrtps_cpp"):
        return dict(env)
    return {**env, _profile_variable(): str(PROFILE_FILE)}


def use_fastdds_profile() -> str | None:
    """Point this process's Fast DDS at the short-lease profile; call before ``rclpy.init``.

    Returns the profile file used, or None where the user's own choice stands.
    """
    chosen = fastdds_profile_env(os.environ)
    if chosen == os.environ:
        return None
    os.environ.update(chosen)
    return str(PROFILE_FILE)


def _profile_variable() -> str:
    """The variable this distro's Fast DDS reads: 3.x (Kilted, rclpy 9 on) the new name, 2.x the old one."""
    from importlib import metadata

    try:
        major = int(metadata.version("rclpy").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        major = 9  # unknown: the current name
    return _PROFILE_VARIABLES[0] if major >= 9 else _PROFILE_VARIABLES[1]
