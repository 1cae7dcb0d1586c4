"""What a node's ``--params-file`` files say, read before ROS reads them, so that a newcomer's slip stops the node.

rcl applies a params file's sections by node name and ignores the rest: a
misspelt parameter name, or a file keyed for another node, would leave the
node running on its defaults without a word. And a YAML syntax error surfaces
from ``rclpy.init`` as an rcl error without the file's line. This module reads
the files named in the process's ROS arguments (``--ros-args ... --params-file
FILE``), says where a YAML error is, and tells which sections apply to a node
(rcl's key forms: ``/ns/name``, ``name``, ``/**``, ``/**/name``, ``/*/name``).
No rclpy here: :mod:`heracles_ros.ros.parameters` checks the node against it.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heracles_ros.errors import ConfigError
from heracles_ros.yaml_files import load_yaml

#: The key under a node's section that holds its parameters (rcl's params-file format).
ROS_PARAMETERS = "ros__parameters"


@dataclass(frozen=True)
class ParamsSection:
    """One node section of a params file: its key and the parameter names it sets (nested ones dotted)."""

    file: Path
    key: str
    names: frozenset[str]

    @property
    def wildcard(self) -> bool:
        """A key with ``*`` applies to nodes by pattern (shared settings), not to one named node."""
        return "*" in self.key

    def applies_to(self, node_fqn: str) -> bool:
        """rcl's matching of a section key against a node's fully qualified name (``/ns/name``)."""
        key = self.key if self.key.startswith("/") else f"/{self.key}"
        pattern = "".join(
            r"(/[^/]+)*" if token == "**" else r"/[^/]+" if token == "*" else "/" + re.escape(token)
            for token in key.strip("/").split("/")
        ) if key.strip("/") else "/"
        return re.fullmatch(pattern, node_fqn) is not None


def params_file_paths(argv: Sequence[str]) -> list[Path]:
    """The ``--params-file`` arguments inside the ``--ros-args`` parts of ``argv``, in order."""
    paths: list[Path] = []
    in_ros_args = False
    items = iter(argv)
    for item in items:
        if item == "--ros-args":
            in_ros_args = True
        elif item == "--":
            in_ros_args = False
        elif in_ros_args and item == "--params-file":
            value = next(items, None)
            if value is not None:
                paths.append(Path(value))
    return paths


def read_params_file(path: Path) -> list[ParamsSection]:
    """The node sections of a ROS params file, checked for the shape rcl expects."""
    data = load_yaml(path, "params file")
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"params file {path}: expected node sections such as '/**:' or '/**/dispatcher:', "
                          f"each with '{ROS_PARAMETERS}:', found {type(data).__name__}")
    sections = []
    for key, body in data.items():
        if not isinstance(body, dict) or ROS_PARAMETERS not in body:
            raise ConfigError(f"params file {path}: section '{key}' has no '{ROS_PARAMETERS}:' mapping")
        parameters = body[ROS_PARAMETERS]
        if not isinstance(parameters, dict):
            raise ConfigError(f"params file {path}: '{key}.{ROS_PARAMETERS}' is not a mapping of names to values")
        sections.append(ParamsSection(path, str(key), frozenset(_flat_names(parameters))))
    return sections


def _flat_names(parameters: dict[Any, Any], prefix: str = "") -> list[str]:
    names: list[str] = []
    for name, value in parameters.items():
        full = f"{prefix}{name}"
        names.extend(_flat_names(value, f"{full}.") if isinstance(value, dict) else [full])
    return names


def read_params_files(argv: Sequence[str]) -> list[ParamsSection]:
    """Every section of every params file ``argv`` names (a node checks them before ``rclpy.init`` reads them)."""
    return [section for path in params_file_paths(argv) for section in read_params_file(path)]
