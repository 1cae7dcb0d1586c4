"""Reading a node's params files as rcl does: which sections apply to a node, and where a YAML error is."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import rclpy
from rclpy.node import Node

from heracles_ros.errors import ConfigError
from heracles_ros.ros.params_files import params_file_paths, read_params_file, read_params_files
from heracles_ros.ros.rclpy_compat import ros_initialized

#: Sections keyed every way rcl allows, each setting its own parameter name.
KEYS = {
    "/**": "every_node", "/**/probe": "probe_anywhere", "/ns/probe": "probe_in_ns", "probe": "probe_at_root",
    "/*/probe": "probe_one_level", "/ns/*": "anything_in_ns", "/other": "other_node", "/**/ns/probe": "deep_ns_probe",
    "/a/**/probe": "probe_under_a", "/ns/probe/x": "child_of_probe",
}


def test_the_sections_that_apply_to_a_node_are_the_ones_rclpy_applies(tmp_path: Path, ros_domain_id: int) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text("".join(f"{key}:\n  ros__parameters:\n    {name}: 1\n" for key, name in KEYS.items()))
    sections = read_params_file(path)
    for namespace in ("/ns", "/", "/a/b"):
        context = rclpy.context.Context()
        with ros_initialized(["--ros-args", "--params-file", str(path)], context=context, domain_id=ros_domain_id):
            node = Node("probe", namespace=namespace, context=context)
            try:
                applied = set(node._parameter_overrides)
                fqn = node.get_fully_qualified_name()
            finally:
                node.destroy_node()
        ours = {name for section in sections if section.applies_to(fqn) for name in section.names}
        assert ours == applied, fqn
        assert "every_node" in ours and "other_node" not in ours


def test_params_files_are_the_ones_in_the_ros_arguments() -> None:
    argv = ["node", "--params-file", "not-ros.yaml", "--ros-args", "-p", "a:=1", "--params-file", "one.yaml",
            "--", "--params-file", "app.yaml", "--ros-args", "--params-file", "two.yaml"]
    assert params_file_paths(argv) == [Path("one.yaml"), Path("two.yaml")]


def test_a_yaml_syntax_error_is_named_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text('/**:\n  ros__parameters:\n    db_uri: "embedded\n    graph_name: x\n')
    with pytest.raises(ConfigError) as error:
        read_params_files(["--ros-args", "--params-file", str(path)])
    assert f"{path}:5:1: YAML syntax error" in str(error.value)
    assert "line 3, column 13" in str(error.value)  # where the unclosed string starts
    path.write_text("/**:\n  ros__parameters:\n    db_uri: [embedded\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}:4:1: YAML syntax error")):
        read_params_file(path)


@pytest.mark.parametrize(("text", "says"), [
    ("", "expected node sections"),
    ("- a\n- b\n", "expected node sections"),
    ("/**:\n  db_uri: embedded\n", "section '/**' has no 'ros__parameters:'"),
    ("/**:\n  ros__parameters: 3\n", "is not a mapping"),
])
def test_a_file_not_shaped_like_a_params_file_says_how(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(says)):
        read_params_file(path)


def test_nested_parameter_names_are_dotted(tmp_path: Path) -> None:
    path = tmp_path / "nested.yaml"
    path.write_text("/**:\n  ros__parameters:\n    a:\n      b: 1\n      c: {d: 2}\n    e: 3\n")
    assert read_params_file(path)[0].names == {"a.b", "a.c.d", "e"}
