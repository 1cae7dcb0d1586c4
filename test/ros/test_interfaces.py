"""The table of interfaces: every link's name, type and QoS once, used by both ends and nothing typed elsewhere.

The three nodes run here (language server with the scripted model, dispatcher with the simulator, a
mirror) and the ROS graph is read back: each node serves, publishes and subscribes exactly what the
table gives it, under the table's types and with its QoS.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import rclpy
from rclpy.action import get_action_client_names_and_types_by_node, get_action_server_names_and_types_by_node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from support.ros import ros_session, spinning, wait_for
from support.scripted_llm import ScriptedLLMServer, say

from heracles_ros.ros import interfaces
from heracles_ros.ros.interfaces import LINKS, Action, Link, Qos, Service, Topic

pytestmark = pytest.mark.backends("falkordb")

ROOT = Path(__file__).resolve().parents[2]
NS = "/table"
#: The calls that make a ROS endpoint: a name given to one of these outside the table is a name typed twice.
ENDPOINT_CALLS = {"create_publisher", "create_subscription", "create_service", "create_client", "ActionClient",
                  "ActionServer", "SingleGoalServer"}


def ros_type(link: Link) -> str:
    """``heracles_ros.msg.StopState`` -> ``heracles_ros/msg/StopState``, as the graph names it."""
    return link.type_path.replace(".", "/")


def test_every_link_has_a_name_of_its_own_and_a_type_of_its_kind():
    names = [link.name for link in LINKS]
    assert len(set(names)) == len(names)
    kinds = {Topic: "msg", Service: "srv", Action: "action"}
    for link in LINKS:
        assert link.type_path.split(".")[1] == kinds[type(link)], link
        assert link.type.__name__ == link.type_path.rsplit(".", 1)[1]
        assert link is interfaces.DSG_UPDATE or "/" not in link.name  # relative: a robot namespace applies
    assert {link.name for link in LINKS if isinstance(link, Topic) and link.qos.latched} == {
        "stop_state", "robot_pose", "command_rejections", "last_answer", "answer_marker", "scene_markers",
        "dispatcher_claim", "language_server_claim", "dsg_mirror_claim"}


def test_full_names_put_a_link_in_a_robot_namespace():
    assert interfaces.STOP.full_name("/spot") == "/spot/stop"
    assert interfaces.STOP.full_name("spot/") == "/spot/stop"
    assert interfaces.EXECUTE_COMMAND.full_name("/") == "/execute_command"
    assert interfaces.EXECUTE_COMMAND.full_name("") == "/execute_command"
    assert interfaces.DSG_UPDATE.full_name("/spot") == "/hydra/backend/dsg"  # absolute: Hydra's own


def test_a_qos_is_reliable_and_latched_ones_keep_their_history_for_late_joiners():
    kept = Qos(10, latched=True).profile()
    assert (kept.depth, kept.reliability, kept.durability) == (
        10, ReliabilityPolicy.RELIABLE, DurabilityPolicy.TRANSIENT_LOCAL)
    plain = Qos(100).profile()
    assert (plain.depth, plain.reliability, plain.durability) == (
        100, ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE)
    queue = interfaces.EXECUTE_PLAN.queue_qos()  # a burst of goals and cancels is answered, not dropped
    assert (queue.depth, queue.reliability, queue.durability) == (
        500, ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE)
    assert interfaces.COMMAND_REJECTIONS.qos == Qos(10, latched=True)  # what a late client reads back


def test_the_table_imports_without_rclpy_or_the_generated_interfaces():
    """The library's tools read the table on machines without ROS: importing it loads neither."""
    import subprocess
    import sys

    code = ("import sys; import heracles_ros.ros.interfaces as t; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rclpy', 'std_msgs') "
            "or m.startswith('heracles_ros.msg')), len(t.LINKS))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["[]", str(len(LINKS))], done.stderr


def test_every_link_is_documented_on_the_interfaces_page():
    page = (ROOT / "docs" / "interfaces.md").read_text()
    assert [link.name for link in LINKS if f"`{link.name}`" not in page] == []


def names_typed_outside_the_table() -> list[str]:
    """Endpoint calls given a name as a literal, and f-strings that put one of our names in a namespace."""
    ours = {link.name for link in LINKS}
    found = []
    for path in sorted((ROOT / "heracles_ros").rglob("*.py")):
        if path.name == "interfaces.py" and path.parent.name == "ros":
            continue
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called in ENDPOINT_CALLS and any(isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                                                    for arg in node.args):
                    found.append(f"{where}:{node.lineno} {called}")
            if isinstance(node, ast.JoinedStr):
                texts = [part.value for part in node.values if isinstance(part, ast.Constant)]
                found += [f"{where}:{node.lineno} /{name}" for name in sorted(ours)
                          if any(text.endswith(f"/{name}") for text in texts)]
    return sorted(found)


def test_no_name_of_ours_is_typed_outside_the_table():
    assert names_typed_outside_the_table() == []


def test_a_name_typed_at_an_endpoint_is_found(monkeypatch, tmp_path):
    package = tmp_path / "heracles_ros"
    package.mkdir()
    (package / "bridge.py").write_text(
        "def f(node, ns):\n"
        "    node.create_subscription(StopState, f'{ns}/stop_state', print, 1)\n"
        "    node.create_client(Trigger, 'stop')\n"
        "    node.create_client(Trigger, f'{ns}/{name}')\n"  # a name from elsewhere (Spot's), not typed here
        "    return f'{ns}/execute_command', f'\\0heracles_ros/stop/{ns}'\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert names_typed_outside_the_table() == [
        "heracles_ros/bridge.py:2 /stop_state", "heracles_ros/bridge.py:3 create_client",
        "heracles_ros/bridge.py:5 /execute_command"]


# -- the running nodes ---------------------------------------------------------------------------------------
@pytest.fixture
def graph_of_the_nodes(ros_domain_id, falkordb_uri, graph_name, small_store) -> Iterator[Any]:
    """The three nodes in NS and a probe node that reads the graph."""
    from heracles_ros.nodes.dispatcher import DispatcherNode
    from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
    from heracles_ros.nodes.language_server import LanguageServerNode

    def params(**values: Any) -> list[Parameter]:
        return [Parameter(k, value=v) for k, v in {"db_uri": falkordb_uri, "graph_name": graph_name,
                                                   **values}.items()]

    with ExitStack() as stack:
        model = ScriptedLLMServer(lambda request: say("<answer>1</answer>")).start()
        stack.callback(model.stop)
        stack.enter_context(ros_session(ros_domain_id))
        nodes = [
            LanguageServerNode(namespace=NS, parameter_overrides=params(
                llm="openai", model=model.model, base_url=model.openai_base_url, instance_check_s=0.0)),
            DispatcherNode(namespace=NS, parameter_overrides=params(start_place="P0")),
            DsgMirrorNode(namespace=NS, parameter_overrides=params(instance_check_s=0.0)),
        ]
        probe = rclpy.create_node("table_probe")
        stack.enter_context(spinning(*nodes, probe, num_threads=8))
        yield probe


def endpoints(probe: Any, node: str) -> dict[str, set[tuple[str, str]]]:
    """What ``node`` (in NS) has on the graph, less rclpy's own (parameters, rosout, actions' inner topics)."""
    def ours(found: list[tuple[str, list[str]]]) -> set[tuple[str, str]]:
        return {(name, types[0]) for name, types in found
                if name not in ("/rosout", "/parameter_events") and not name.startswith(f"{NS}/{node}/")
                and "/_action/" not in name}

    return {
        "publishes": ours(probe.get_publisher_names_and_types_by_node(node, NS)),
        "subscribes": ours(probe.get_subscriber_names_and_types_by_node(node, NS)),
        "serves": ours(probe.get_service_names_and_types_by_node(node, NS)),
        "calls": ours(probe.get_client_names_and_types_by_node(node, NS)),
        "runs": ours(get_action_server_names_and_types_by_node(probe, node, NS)),
        "sends": ours(get_action_client_names_and_types_by_node(probe, node, NS)),
    }


def expected(node: str) -> dict[str, set[tuple[str, str]]]:
    """What the table says ``node`` has: what it serves or publishes, the claims it reads, the links it uses."""
    own = [link for link in LINKS if link.server == node]
    uses: dict[str, list[Link]] = {"language_server": [interfaces.STOP_STATE, interfaces.EXECUTE_PLAN],
                                   "dsg_mirror": [interfaces.DSG_UPDATE]}

    def named(links: list[Link]) -> set[tuple[str, str]]:
        return {(link.full_name(NS), ros_type(link)) for link in links}

    claims = [link for link in own if link.name.endswith("_claim")]
    looks = claims if node == "dispatcher" else []  # the others were started with instance_check_s 0
    return {
        "publishes": named([link for link in own if isinstance(link, Topic)]),
        "subscribes": named(looks + [link for link in uses.get(node, []) if isinstance(link, Topic)]),
        "serves": named([link for link in own if isinstance(link, Service)]),
        "calls": set(),
        "runs": named([link for link in own if isinstance(link, Action)]),
        "sends": named([link for link in uses.get(node, []) if isinstance(link, Action)]),
    }


def test_each_node_has_on_the_graph_exactly_what_the_table_gives_it(graph_of_the_nodes):
    probe = graph_of_the_nodes
    for node in ("dispatcher", "language_server", "dsg_mirror"):
        want = expected(node)
        assert wait_for(lambda node=node, want=want: endpoints(probe, node) == want, 20.0), (
            node, endpoints(probe, node), want)


def test_each_topic_has_the_tables_qos_at_its_publisher(graph_of_the_nodes):
    probe = graph_of_the_nodes
    for link in LINKS:
        if not isinstance(link, Topic) or link.server == "hydra":
            continue
        want = link.qos.profile()
        name = link.full_name(NS)
        assert wait_for(lambda name=name: probe.get_publishers_info_by_topic(name), 20.0), name
        for info in probe.get_publishers_info_by_topic(name):
            assert (info.qos_profile.reliability, info.qos_profile.durability) == (
                want.reliability, want.durability), name
