"""What the operator console (config/heracles.rviz) displays, read from the file."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RVIZ_CONFIG = Path(__file__).resolve().parents[2] / "config" / "heracles.rviz"
HYDRA_GRAPH_TOPIC = "/hydra_visualizer/graph"  # hydra_visualizer_node named hydra_visualizer, ~/graph


def rviz_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(RVIZ_CONFIG.read_text())
    return config


def marker_displays() -> dict[str, tuple[str, ...]]:
    """topic -> namespaces of each MarkerArray display of the console."""
    return {display["Topic"]["Value"]: tuple(display.get("Namespaces") or ())
            for display in rviz_config()["Visualization Manager"]["Displays"]
            if display["Class"] == "rviz_default_plugins/MarkerArray"}


def topic_durability(topic: str) -> str:
    """The durability policy the console's MarkerArray display of ``topic`` subscribes with."""
    (display,) = [display for display in rviz_config()["Visualization Manager"]["Displays"]
                  if display["Class"] == "rviz_default_plugins/MarkerArray" and display["Topic"]["Value"] == topic]
    return str(display["Topic"]["Durability Policy"])
