"""The operator console (config/heracles.rviz) shows what the nodes publish.

Which topics the running nodes really publish is checked where they run
(test_launch.py, with :func:`marker_topics`); here what can be read from the file
and the nodes' constants: the frame and the marker namespaces.
"""
from __future__ import annotations

from support.rviz_console import HYDRA_GRAPH_TOPIC, marker_displays, rviz_config, topic_durability

from heracles_ros.nodes.dispatcher import PARAMETERS as DISPATCHER_PARAMETERS
from heracles_ros.nodes.language_server import NS_ANSWER
from heracles_ros.nodes.markers import ALL_NAMESPACES, NS_ADDED, NS_MOVED, SCENE_NAMESPACES


def test_the_console_uses_the_frame_of_the_plans() -> None:
    config = rviz_config()
    map_frame = next(setting for setting in DISPATCHER_PARAMETERS if setting.name == "map_frame")
    assert config["Visualization Manager"]["Global Options"]["Fixed Frame"] == map_frame.default


def test_the_marker_displays_list_the_namespaces_the_nodes_publish() -> None:
    displays = marker_displays()
    assert sorted(displays["plan_markers"]) == sorted(ALL_NAMESPACES)
    assert displays["answer_marker"] == (NS_ANSWER,)
    assert HYDRA_GRAPH_TOPIC in displays


def test_the_console_shows_the_mirrored_scene_and_the_history() -> None:
    """scene_markers is latched (a transient-local display gets the scene RViz missed); history_markers is
    volatile, and a transient-local display would not match its publisher."""
    displays = marker_displays()
    assert sorted(displays["scene_markers"]) == sorted(SCENE_NAMESPACES)
    assert sorted(displays["history_markers"]) == sorted((NS_MOVED, NS_ADDED))
    assert topic_durability("scene_markers") == "Transient Local"
    assert topic_durability("history_markers") == "Volatile"
