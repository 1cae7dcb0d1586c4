"""A node's shipped YAML config as the robot reads it: through rcl's own parser (``--params-file``), not PyYAML.

PyYAML and rcl can disagree (a float written ``1`` is an integer to rcl, a list rcl cannot type), so the tests
of each node's config compare what the file says with what a node gets from it.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import rclpy
import yaml
from rclpy.context import Context

from heracles_ros.ros.parameters import declare
from heracles_ros.ros.rclpy_compat import ros_initialized
from heracles_ros.settings import Setting


def shipped_parameters(config: Path) -> dict[str, Any]:
    """The ``ros__parameters`` of the file's one node entry, as YAML reads them."""
    (params,) = [entry["ros__parameters"] for entry in yaml.safe_load(config.read_text()).values()]
    return dict(params)


def values_rcl_gives(config: Path, node_name: str, namespace: str, specs: Sequence[Setting],
                     domain: int) -> dict[str, Any]:
    """The parameters rcl applies from ``config`` to a node ``node_name`` under ``namespace``, each as that node
    declares it from ``specs``. Only what the file set: a file rcl applies nothing of gives an empty dict, never
    the defaults it may restate."""
    context = Context()
    with ros_initialized(["--ros-args", "--params-file", str(config)], context=context, domain_id=domain):
        reader = rclpy.create_node(node_name, namespace=namespace, context=context,
                                   automatically_declare_parameters_from_overrides=True)
        try:
            applied = set(reader.get_parameters_by_prefix(""))
        finally:
            reader.destroy_node()
        node = rclpy.create_node(node_name, namespace=namespace, context=context)
        try:
            applied -= set(node.get_parameters_by_prefix(""))  # rclpy's own (use_sim_time, ...)
            declared = declare(node, specs)
        finally:
            node.destroy_node()
    return {name: declared[name] for name in applied}
