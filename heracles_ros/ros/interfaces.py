"""Every topic, service and action of the three nodes, once: its name, its type and its QoS.

Both ends of a link take it from here, the node that serves or publishes it and every client (the
``heracles`` command, the client API, the console, the demo, the tools), so a name, a type or a
history depth cannot drift apart between them. Names are relative: a node's namespace applies on the
serving side, :meth:`Link.full_name` puts them in a robot namespace on the client side.

The table imports without rclpy and without the generated interfaces (the library's tools read it
on machines with neither): a type is named by its import path and imported on first use, a QoS is
plain data until :meth:`Qos.profile` builds rclpy's.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from heracles_ros.scene import HYDRA_DSG_TOPIC


def full_name(namespace: str, name: str) -> str:
    """``name`` in ``namespace``: ``/spot`` -> ``/spot/stop``; ``/`` or '' -> ``/stop``; an absolute name as it is."""
    if name.startswith("/"):
        return name
    return f"/{namespace.strip('/')}/{name}".replace("//", "/")


@dataclass(frozen=True)
class Qos:
    """A reliable topic's history: the last ``depth`` messages, kept for late joiners when ``latched``."""

    depth: int
    latched: bool = False

    def profile(self) -> Any:
        """rclpy's QoSProfile of this history (:mod:`.qos`)."""
        from heracles_ros.ros.qos import latched, reliable

        return latched(self.depth) if self.latched else reliable(self.depth)


@dataclass(frozen=True)
class Link:
    """One topic, service or action: ``name`` (relative), ``type_path`` (``package.kind.Name``) and the node
    program at its serving end (named in a client's "no dispatcher answered on /spot/stop")."""

    name: str
    type_path: str
    server: str

    @property
    def type(self) -> Any:
        """The message, service or action class (ImportError when its interface package is not installed)."""
        module, _, name = self.type_path.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def full_name(self, namespace: str) -> str:
        return full_name(namespace, self.name)

    def _name(self, namespace: str | None, name: str | None) -> str:
        """The name a node uses: ``name`` as given, else in ``namespace``, else relative (the node's own)."""
        if name is not None:
            return name
        return self.name if namespace is None else self.full_name(namespace)


@dataclass(frozen=True)
class Topic(Link):
    qos: Qos

    def publisher(self, node: Any, *, namespace: str | None = None, name: str | None = None, **options: Any) -> Any:
        return node.create_publisher(self.type, self._name(namespace, name), self.qos.profile(), **options)

    def subscription(self, node: Any, callback: Any, *, namespace: str | None = None, name: str | None = None,
                     **options: Any) -> Any:
        return node.create_subscription(self.type, self._name(namespace, name), callback, self.qos.profile(),
                                        **options)


@dataclass(frozen=True)
class Service(Link):
    def serve(self, node: Any, callback: Any, **options: Any) -> Any:
        return node.create_service(self.type, self.name, callback, **options)

    def client(self, node: Any, *, namespace: str | None = None, **options: Any) -> Any:
        return node.create_client(self.type, self._name(namespace, None), **options)


@dataclass(frozen=True)
class Action(Link):
    """An action, served one goal at a time: its goal, cancel and result services queue ``queue_depth`` requests
    at both ends (rclpy's default, 10, drops a burst), and a finished goal's result stays ``result_keep_s``."""

    queue_depth: int
    result_keep_s: int

    def queue_qos(self) -> Any:
        """Reliable, volatile, ``queue_depth`` deep: the action's goal, cancel and result services."""
        return Qos(self.queue_depth).profile()

    def client(self, node: Any, *, namespace: str | None = None, **options: Any) -> Any:
        from rclpy.action import ActionClient

        deep = self.queue_qos()
        return ActionClient(node, self.type, self._name(namespace, None), goal_service_qos_profile=deep,
                            cancel_service_qos_profile=deep, result_service_qos_profile=deep, **options)


_LATCHED = Qos(1, latched=True)
_DISPATCHER, _LANGUAGE_SERVER, _MIRROR = "dispatcher", "language_server", "dsg_mirror"
_TRIGGER = "std_srvs.srv.Trigger"
_MARKERS = "visualization_msgs.msg.MarkerArray"

# -- the dispatcher ------------------------------------------------------------------------------------------
EXECUTE_PLAN = Action("execute_plan", "heracles_ros.action.ExecutePlan", _DISPATCHER, queue_depth=500,
                      result_keep_s=900)
DISPATCH_PROGRESS = Topic("dispatch_progress", "heracles_ros.msg.DispatchProgress", _DISPATCHER, Qos(100))
DISPATCH_RESULT = Topic("dispatch_result", "heracles_ros.msg.DispatchResult", _DISPATCHER, Qos(10))
PLAN_MARKERS = Topic("plan_markers", _MARKERS, _DISPATCHER, Qos(10))
STOP_STATE = Topic("stop_state", "heracles_ros.msg.StopState", _DISPATCHER, _LATCHED)
ROBOT_POSE = Topic("robot_pose", "geometry_msgs.msg.PoseStamped", _DISPATCHER, _LATCHED)
CANCEL = Service("cancel", _TRIGGER, _DISPATCHER)
STOP = Service("stop", _TRIGGER, _DISPATCHER)
HARD_STOP = Service("hard_stop", _TRIGGER, _DISPATCHER)
RESUME = Service("resume", "heracles_ros.srv.Resume", _DISPATCHER)

# -- the language server -------------------------------------------------------------------------------------
EXECUTE_COMMAND = Action("execute_command", "heracles_ros.action.ExecuteCommand", _LANGUAGE_SERVER,
                         queue_depth=200, result_keep_s=600)
#: A rejected command's reason (a goal response carries none); the last 10 are kept for a client that
#: subscribed just before its goal.
COMMAND_REJECTIONS = Topic("command_rejections", "heracles_ros.msg.CommandRejection", _LANGUAGE_SERVER,
                           Qos(10, latched=True))
CONFIRM = Service("confirm", "heracles_ros.srv.Confirm", _LANGUAGE_SERVER)
ASK = Service("ask", "heracles_ros.srv.Ask", _LANGUAGE_SERVER)
COMMAND = Service("command", "heracles_ros.srv.Command", _LANGUAGE_SERVER)
CORRECT = Service("correct", "heracles_ros.srv.Correct", _LANGUAGE_SERVER)
CORRECTIONS = Service("corrections", "heracles_ros.srv.ManageCorrections", _LANGUAGE_SERVER)
LAST_ANSWER = Topic("last_answer", "std_msgs.msg.String", _LANGUAGE_SERVER, _LATCHED)
ANSWER_MARKER = Topic("answer_marker", _MARKERS, _LANGUAGE_SERVER, _LATCHED)
FIND = Service("find", "heracles_ros.srv.Find", _LANGUAGE_SERVER)

# -- the mirror ----------------------------------------------------------------------------------------------
MIRROR_STATUS = Topic("mirror_status", "heracles_ros.msg.MirrorStatus", _MIRROR, Qos(10))
CHANGES = Service("changes", "heracles_ros.srv.Changes", _MIRROR)
SCENE_AT = Service("scene_at", "heracles_ros.srv.SceneAt", _MIRROR)
HISTORY_MARKERS = Topic("history_markers", _MARKERS, _MIRROR, Qos(1))
SCENE_MARKERS = Topic("scene_markers", _MARKERS, _MIRROR, _LATCHED)
#: Hydra's snapshots, with Hydra's QoS (a transient-local subscriber would not match); the name is the
#: mirror's default ``dsg_topic``, absolute.
DSG_UPDATE = Topic(HYDRA_DSG_TOPIC, "hydra_msgs.msg.DsgUpdate", "hydra", Qos(1))

# -- one node of each kind per robot (:mod:`.claims`): each node's claims, kept for late joiners ----------------
_CLAIMS = Qos(20, latched=True)  # deep enough for the claims of every node that ever started, read at once
DISPATCHER_CLAIM = Topic("dispatcher_claim", "std_msgs.msg.String", _DISPATCHER, _CLAIMS)
LANGUAGE_SERVER_CLAIM = Topic("language_server_claim", "std_msgs.msg.String", _LANGUAGE_SERVER, _CLAIMS)
MIRROR_CLAIM = Topic("dsg_mirror_claim", "std_msgs.msg.String", _MIRROR, _CLAIMS)

#: Every link of the three nodes, Hydra's they read included.
LINKS: tuple[Link, ...] = (
    EXECUTE_PLAN, DISPATCH_PROGRESS, DISPATCH_RESULT, PLAN_MARKERS, STOP_STATE, ROBOT_POSE, CANCEL, STOP, HARD_STOP,
    RESUME, EXECUTE_COMMAND, COMMAND_REJECTIONS, CONFIRM, ASK, COMMAND, CORRECT, CORRECTIONS, LAST_ANSWER,
    ANSWER_MARKER, FIND, MIRROR_STATUS, CHANGES, SCENE_AT, HISTORY_MARKERS, SCENE_MARKERS, DSG_UPDATE, DISPATCHER_CLAIM,
    LANGUAGE_SERVER_CLAIM, MIRROR_CLAIM,
)
