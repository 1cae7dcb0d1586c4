"""What ``heracles up`` runs: the processes of the local system, each a command line with its environment.

The nodes run as ``ros2 launch`` would run them (their console entry points,
``python -m heracles_ros.nodes.<node>``, under the robot namespace), with the
dispatcher on the simulated Spot. Discovery stays on this host unless the user
chose otherwise (a desk system must never reach a robot on the lab network),
and every process asks Fast DDS for the short lease (a killed node leaves the
graph in two seconds, see :mod:`heracles_ros.ros.fastdds_profile`).
"""
from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from heracles_ros.demo.language import LanguageChoice
from heracles_ros.demo.scripted_model import MODEL_NAME
from heracles_ros.scene import HYDRA_DSG_TOPIC

#: Name of the process that owns the embedded database; it is stopped after every other one.
DATABASE = "db"
CONSOLE = "console"
SCRIPTED_MODEL = "scripted_model"
NODES = ("dsg_mirror", "language_server", "dispatcher")
#: Discovery on this host only (ROS 2 Iron and later read the first, older ones the second).
LOCAL_DISCOVERY = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_LOCALHOST_ONLY": "1"}


@dataclass(frozen=True)
class Process:
    name: str
    argv: tuple[str, ...]

    @property
    def command(self) -> str:
        """The shell line honcho runs: ``exec`` so that the signal reaches the program, not a shell."""
        return "exec " + shlex.join(self.argv)


@dataclass(frozen=True)
class SystemOptions:
    db_uri: str
    #: The embedded server's data directory, or None for a database run by its own service.
    embedded_dir: Path | None
    namespace: str
    graph_name: str
    scene_file: Path | None
    start_place: str
    #: The configured model, or None for the scripted turns served on ``scripted_port``.
    language: LanguageChoice | None
    scripted_port: int
    time_scale: float
    shutdown_timeout_s: float
    #: Port of the web console on 127.0.0.1, or None for none.
    console_port: int | None = None
    #: Who starts the embedded server (recorded with it): the database process stops only a server it names.
    database_owner: str = "heracles up"
    #: The simulated Hydra's world (the dispatcher's sim_world), or None for none.
    world_file: Path | None = None


def processes(options: SystemOptions) -> list[Process]:
    """The local system, the database first (it is stopped last)."""
    python = sys.executable
    found: list[Process] = []
    if options.embedded_dir is not None:
        found.append(Process(DATABASE, (python, "-m", "heracles_ros.desk.database", str(options.embedded_dir),
                                        "--stop-timeout", f"{options.shutdown_timeout_s:g}",
                                        "--owner", options.database_owner)))
    if options.language is None:
        found.append(Process(SCRIPTED_MODEL, (python, "-m", "heracles_ros.demo.scripted_model",
                                              "--port", str(options.scripted_port))))
    common = {"db_uri": options.db_uri, "graph_name": options.graph_name,
              "shutdown_timeout_s": options.shutdown_timeout_s}
    language = options.language or LanguageChoice(
        "openai", MODEL_NAME, f"http://127.0.0.1:{options.scripted_port}/v1", "scripted")
    parameters: dict[str, Mapping[str, object]] = {
        "dsg_mirror": {**common, "scene_file": str(options.scene_file or "")},
        "language_server": {**common, "llm": language.provider, "model": language.model,
                            "base_url": language.base_url},
        "dispatcher": {**common, "driver": "sim", "start_place": options.start_place,
                       "sim_time_scale": options.time_scale},
    }
    if options.world_file is not None:  # one topic of this namespace's own: two systems must not feed each other
        topic = options.namespace.rstrip("/") + HYDRA_DSG_TOPIC
        parameters["dsg_mirror"] = {**parameters["dsg_mirror"], "dsg_topic": topic}
        parameters["dispatcher"] = {**parameters["dispatcher"], "sim_world": str(options.world_file),
                                    "sim_dsg_topic": topic}
    for node in NODES:
        args = [python, "-m", f"heracles_ros.nodes.{node}", "--ros-args", "-r", f"__ns:={options.namespace}"]
        for name, value in parameters[node].items():
            args += ["-p", f"{name}:={_ros_value(value)}"]
        found.append(Process(node, tuple(args)))
    if options.console_port is not None:
        found.append(Process(CONSOLE, (python, "-m", "heracles_ros.cli", "console", "--port", str(options.console_port),
                                       "--namespace", options.namespace, "--db", options.db_uri,
                                       "--graph", options.graph_name)))
    return found


def environment(env: Mapping[str, str]) -> dict[str, str]:
    """The processes' environment: ``env`` with local discovery (unless the user set discovery) and the
    short DDS lease."""
    from heracles_ros.ros.fastdds_profile import fastdds_profile_env

    chosen = dict(env)
    if not any(name in env for name in (*LOCAL_DISCOVERY, "ROS_STATIC_PEERS")):
        chosen.update(LOCAL_DISCOVERY)
    chosen["PYTHONUNBUFFERED"] = "1"  # log lines appear as they are written, not when a buffer fills
    return fastdds_profile_env(chosen)


def _ros_value(value: object) -> str:
    """A ``-p name:=value`` value ROS reads back as the same type (a float stays a float, text stays text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    text = str(value)
    return f"'{text}'" if text == "" or text.lower() in ("true", "false") or _numeric(text) else text


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
