"""The operator console (config/heracles.rviz) shows what the nodes publish.

Which topics the running nodes really publish is checked where they run
(test_launch.py, with :func:`marker_topics`); here what can be read from the file
and the nodes' constants: the frame and the marker namespaces.
"""
from __future__ import annotations

from support.rviz_console import HYDRA_GRAPH_TOPIC, marker_displays, rviz_config

from heracles_ros.nodes.dispatcher import PARAMETERS as DISPATCHER_PARAMETERS
from heracles_ros.nodes.language_server import NS_ANSWER
from heracles_ros.nodes.markers import ALL_NAMESPACES


def test_the_console_uses_the_frame_of_the_plans() -> None:
    config = rviz_config()
    map_frame = next(setting for setting in DISPATCHER_PARAMETERS if setting.name == "map_frame")
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == map_frame.default


def test_the_marker_displays_list_the_namespaces_the_nodes_publish() -> None:
    displays = marker_displays()
    assert sorted(displays["plan_markers"]) == sorted(ALL_NAMESPACES)
    assert displays["answer_marker"] == (NS_ANSWER,)
    assert HYDRA_GRAPH_TOPIC in displays
