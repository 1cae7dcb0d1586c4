"""How fast the ROS graph notices that one of our processes died.

A process that exits normally leaves the graph at once; one killed (kill -9,
a crash, a pulled cable) leaves only when its DDS participant's lease runs
out, and Fast DDS's default lease is 20 s (measured: a kill -9'd node stayed
on the graph 19.97 s). Client presence (:mod:`.client_presence`) gives up a
moving robot's goal when its sender left the graph, so that lease is part of
the time the robot walks on after its client died. The lease is announced by
the participant itself, so each of our processes asks for a short one: the
CLI (its death cancels the command) and every node (a dead language server
cancels its plan at the dispatcher). Measured with this profile: 1.5 s.

Only Fast DDS (ROS 2's default middleware) reads the profile, and only when
the user has not chosen a profile file of their own, which then wins. Fast
DDS 3 (Kilted) reads ``FASTDDS_DEFAULT_PROFILES_FILE``, 2.x (Jazzy)
``FASTRTPS_DEFAULT_PROFILES_FILE`` (measured: the other is ignored), so
the one this distro's reads is set.
"""
from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path

#: Our participants' lease, and how often they announce themselves within it, seconds.
LEASE_S = 1.5
ANNOUNCE_S = 0.25
_PROFILE_VARIABLES = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")


def _duration(tag: str, seconds: float) -> str:
    whole = int(seconds)
    return f"<{tag}><sec>{whole}</sec><nanosec>{round((seconds - whole) * 1e9)}</nanosec></{tag}>"


PROFILE = f"""<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <participant profile_name="heracles_short_lease" is_default_profile="true">
      <rtps>
        <builtin>
          <discovery_config>
            {_duration("leaseDuration", LEASE_S)}
            {_duration("leaseAnnouncement", ANNOUNCE_S)}
          </discovery_config>
        </builtin>
      </rtps>
    </participant>
  </profiles>
</dds>
"""


def prefer_short_lease() -> str | None:
    """Point Fast DDS at the short-lease profile for this process; call before ``rclpy.init``.

    Returns the profile file used, or None where the user's own profile file or
    another middleware is in charge (nothing is changed then).
    """
    if any(os.environ.get(name) for name in _PROFILE_VARIABLES):
        return None
    if os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") not in ("", "rmw_fastrtps_cpp"):
        return None
    path = Path(tempfile.gettempdir()) / f"heracles_short_lease_{os.getuid()}_{zlib.crc32(PROFILE.encode()):08x}.xml"
    if not path.exists() or path.read_text() != PROFILE:
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(PROFILE)
        partial.replace(path)  # atomic: a process starting beside us never reads half a file
    os.environ[_profile_variable()] = str(path)
    return str(path)


def _profile_variable() -> str:
    """The variable this distro's Fast DDS reads: 3.x (Kilted, rclpy 9 on) the new name, 2.x the old one
    (Kilted warns that the old one is deprecated; Jazzy ignores the new one)."""
    from importlib import metadata

    try:
        major = int(metadata.version("rclpy").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        major = 9  # unknown: the current name
    return _PROFILE_VARIABLES[0] if major >= 9 else _PROFILE_VARIABLES[1]
