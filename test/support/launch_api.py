"""A minimal stand-in of the ROS 2 launch API, so our launch files really execute in tests.

``launch`` / ``launch_ros`` cannot be installed on the test machines (no ROS), yet a
launch file that misses an import or reads its YAML from the wrong directory only
fails when ``generate_launch_description()`` runs. This module provides just the
classes our launch files use, with the constructor signatures of ros2/launch and
ros2/launch_ros (keyword-only arguments where they are keyword-only there), injects
them through ``sys.modules`` while a launch file is loaded, and *evaluates* the
returned description the way ``ros2 launch`` would: arguments declared (choices
enforced), conditions, group scopes, pushed namespaces, remaps, included launch
files (ours are loaded in turn), substitutions performed. ``ament_index_python``
is the real one (it ships with the ROS wheels), so package share directories
are those of the installed package.

The result is a list of :class:`StartedNode` records: what ``ros2 launch`` would start.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ament_index_python.packages import get_package_prefix, get_package_share_directory


class LaunchError(Exception):
    """What ``ros2 launch`` would refuse: an undeclared argument, a value outside its choices, ..."""


# -- the launch context ----------------------------------------------------------------------
@dataclass
class Context:
    configurations: dict[str, str]
    namespace: str = ""
    remaps: list[tuple[str, str]] = field(default_factory=list)

    def scoped(self) -> Context:
        return Context(dict(self.configurations), self.namespace, list(self.remaps))


def perform(value: Any, context: Context) -> str:
    """A substitution, a string or a list of both, performed to text (launch's perform_substitutions)."""
    if isinstance(value, Substitution):
        return value.perform(context)
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "".join(perform(part, context) for part in value)
    raise LaunchError(f"not a substitution: {value!r}")


# -- launch.substitutions ---------------------------------------------------------------------
class Substitution:
    def perform(self, context: Context) -> str:
        raise NotImplementedError


class LaunchConfiguration(Substitution):
    def __init__(self, variable_name: Any, *, default: Any = None) -> None:
        self.variable_name = variable_name
        self.default = default

    def perform(self, context: Context) -> str:
        name = perform(self.variable_name, context)
        if name in context.configurations:
            return context.configurations[name]
        if self.default is not None:
            return perform(self.default, context)
        raise LaunchError(f"launch configuration '{name}' does not exist")


class PathJoinSubstitution(Substitution):
    def __init__(self, substitutions: Iterable[Any]) -> None:
        self.substitutions = list(substitutions)

    def perform(self, context: Context) -> str:
        return os.path.join(*(perform(part, context) for part in self.substitutions))


class FindPackageShare(Substitution):
    def __init__(self, package: Any) -> None:
        self.package = package

    def perform(self, context: Context) -> str:
        return get_package_share_directory(perform(self.package, context))


# -- launch.conditions ------------------------------------------------------------------------
class IfCondition:
    def __init__(self, predicate_expression: Any) -> None:
        self.predicate_expression = predicate_expression

    def evaluate(self, context: Context) -> bool:
        text = perform(self.predicate_expression, context).strip().lower()
        if text in ("true", "1"):
            return True
        if text in ("false", "0"):
            return False
        raise LaunchError(f"condition expression must be true/false/1/0, got {text!r}")


# -- launch / launch.actions ------------------------------------------------------------------
class Action:
    def __init__(self, *, condition: IfCondition | None = None) -> None:
        self.condition = condition

    def applies(self, context: Context) -> bool:
        return self.condition is None or self.condition.evaluate(context)


class LaunchDescription:
    def __init__(self, initial_entities: Iterable[Action] | None = None, **kwargs: Any) -> None:
        self.entities = list(initial_entities or [])


class DeclareLaunchArgument(Action):
    def __init__(self, name: str, *, default_value: Any = None, description: str | None = None,
                 choices: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name
        self.default_value = default_value
        self.description = description
        self.choices = choices


class GroupAction(Action):
    def __init__(self, actions: Iterable[Action], *, scoped: bool = True, forwarding: bool = True,
                 launch_configurations: dict | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.actions = list(actions)
        self.scoped = scoped


class IncludeLaunchDescription(Action):
    def __init__(self, launch_description_source: LaunchDescriptionSource, *,
                 launch_arguments: Iterable[tuple[Any, Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = launch_description_source
        self.launch_arguments = list(launch_arguments or [])


# -- launch.launch_description_sources ----------------------------------------------------------
class LaunchDescriptionSource:
    def __init__(self, launch_file_path: Any) -> None:
        self.launch_file_path = launch_file_path


class PythonLaunchDescriptionSource(LaunchDescriptionSource):
    pass


class AnyLaunchDescriptionSource(LaunchDescriptionSource):
    pass


# -- launch_ros ---------------------------------------------------------------------------------
class ParameterValue:
    def __init__(self, value: Any, *, value_type: Any = None) -> None:
        self.value = value
        self.value_type = value_type


class Node(Action):
    def __init__(self, *, executable: Any, package: Any = None, name: Any = None, namespace: Any = None,
                 exec_name: Any = None, parameters: list | None = None, remappings: list | None = None,
                 ros_arguments: list | None = None, arguments: list | None = None, **kwargs: Any) -> None:
        kwargs.pop("output", None)  # ExecuteProcess's; irrelevant here
        super().__init__(**kwargs)
        self.executable, self.package, self.name, self.namespace = executable, package, name, namespace
        self.parameters = list(parameters or [])
        self.remappings = list(remappings or [])
        self.arguments = list(arguments or [])


class PushRosNamespace(Action):
    def __init__(self, namespace: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.namespace = namespace


class SetRemap(Action):
    def __init__(self, src: Any, dst: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.src, self.dst = src, dst


# -- what the evaluation yields -----------------------------------------------------------------
@dataclass
class StartedNode:
    package: str
    executable: str
    namespace: str
    name: str | None
    #: Parameter files (absolute paths) and parameter dicts, in order (the last definition wins).
    parameter_files: list[str]
    parameters: dict[str, Any]
    remaps: list[tuple[str, str]]
    arguments: list[str]


@dataclass
class ExternalInclude:
    """A launch file of another package (e.g. Hydra's visualizer): recorded, not loaded."""
    path: str
    arguments: dict[str, str]
    remaps: list[tuple[str, str]]
    namespace: str


@dataclass
class Launched:
    arguments: dict[str, DeclareLaunchArgument]
    nodes: list[StartedNode]
    includes: list[ExternalInclude]


_MODULES: dict[str, dict[str, Any]] = {
    "launch": {"LaunchDescription": LaunchDescription},
    "launch.actions": {"DeclareLaunchArgument": DeclareLaunchArgument, "GroupAction": GroupAction,
                       "IncludeLaunchDescription": IncludeLaunchDescription},
    "launch.conditions": {"IfCondition": IfCondition},
    "launch.launch_description_sources": {"PythonLaunchDescriptionSource": PythonLaunchDescriptionSource,
                                          "AnyLaunchDescriptionSource": AnyLaunchDescriptionSource},
    "launch.substitutions": {"LaunchConfiguration": LaunchConfiguration,
                             "PathJoinSubstitution": PathJoinSubstitution},
    "launch_ros": {},
    "launch_ros.actions": {"Node": Node, "PushRosNamespace": PushRosNamespace, "SetRemap": SetRemap},
    "launch_ros.parameter_descriptions": {"ParameterValue": ParameterValue},
    "launch_ros.substitutions": {"FindPackageShare": FindPackageShare},
}


@contextlib.contextmanager
def stand_in_modules() -> Iterator[None]:
    """``launch`` and ``launch_ros`` replaced by this module's classes while the block runs."""
    saved = {name: sys.modules.get(name) for name in _MODULES}
    try:
        for name, attributes in _MODULES.items():
            module = types.ModuleType(name)
            module.__dict__.update(attributes)
            if "." not in name:
                module.__path__ = []  # a package, so its submodules import
            sys.modules[name] = module
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_description(path: Path | str) -> LaunchDescription:
    """Import the launch file and call its ``generate_launch_description()`` (as ``ros2 launch`` does)."""
    with stand_in_modules():
        spec = importlib.util.spec_from_file_location(f"launch_file_{Path(path).stem.replace('.', '_')}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        description = module.generate_launch_description()
    if not isinstance(description, LaunchDescription):
        raise LaunchError(f"{path}: generate_launch_description() returned {type(description).__name__}")
    return description


def launch(path: Path | str, arguments: dict[str, str] | None = None) -> Launched:
    """Evaluate the launch file at ``path`` with ``name:=value`` arguments, like ``ros2 launch``."""
    return _launch(Path(path), dict(arguments or {}), Context({}))


def _launch(path: Path, arguments: dict[str, str], outer: Context) -> Launched:
    description = load_description(path)
    context = Context(dict(arguments), outer.namespace, list(outer.remaps))
    result = Launched({}, [], [])
    _run(description.entities, context, result)
    return result


def _run(actions: list[Action], context: Context, result: Launched) -> None:
    for action in actions:
        if not isinstance(action, Action):
            raise LaunchError(f"not a launch action: {action!r}")
        if not action.applies(context):
            continue
        if isinstance(action, DeclareLaunchArgument):
            _declare(action, context, result)
        elif isinstance(action, GroupAction):
            _run(action.actions, context.scoped() if action.scoped else context, result)
        elif isinstance(action, PushRosNamespace):
            pushed = perform(action.namespace, context).strip("/")
            context.namespace = "/".join(p for p in (context.namespace, pushed) if p)
        elif isinstance(action, SetRemap):
            context.remaps.append((perform(action.src, context), perform(action.dst, context)))
        elif isinstance(action, IncludeLaunchDescription):
            _include(action, context, result)
        elif isinstance(action, Node):
            result.nodes.append(_node(action, context))
        else:
            raise LaunchError(f"the stand-in does not know {type(action).__name__}")


def _declare(action: DeclareLaunchArgument, context: Context, result: Launched) -> None:
    result.arguments[action.name] = action
    if action.name not in context.configurations:
        if action.default_value is None:
            raise LaunchError(f"launch argument '{action.name}' has no default and was not given")
        context.configurations[action.name] = perform(action.default_value, context)
    value = context.configurations[action.name]
    if action.choices is not None and value not in action.choices:
        raise LaunchError(f"argument '{action.name}' must be one of {action.choices}, got {value!r}")


def _include(action: IncludeLaunchDescription, context: Context, result: Launched) -> None:
    path = perform(action.source.launch_file_path, context)
    arguments = {perform(k, context): perform(v, context) for k, v in action.launch_arguments}
    if not path.endswith(".launch.py") or not Path(path).is_file():
        result.includes.append(ExternalInclude(path, arguments, list(context.remaps), context.namespace))
        return
    # The included file sees the including one's configurations, overridden by the arguments passed.
    inner = _launch(Path(path), {**context.configurations, **arguments}, context)
    result.nodes.extend(inner.nodes)
    result.includes.extend(inner.includes)
    for name, declared in inner.arguments.items():
        result.arguments.setdefault(name, declared)


def _node(action: Node, context: Context) -> StartedNode:
    files: list[str] = []
    parameters: dict[str, Any] = {}
    for entry in action.parameters:
        if isinstance(entry, dict):
            for key, value in entry.items():
                parameters[perform(key, context)] = _parameter_value(value, context)
        else:
            files.append(perform(entry, context) if not isinstance(entry, Path) else str(entry))
    namespace = context.namespace
    if action.namespace is not None:
        own = perform(action.namespace, context)
        namespace = own.strip("/") if own.startswith("/") else "/".join(p for p in (namespace, own) if p)
    return StartedNode(
        package=perform(action.package, context) if action.package is not None else "",
        executable=perform(action.executable, context),
        namespace="/" + namespace.strip("/"),
        name=perform(action.name, context) if action.name is not None else None,
        parameter_files=files,
        parameters=parameters,
        remaps=list(context.remaps) + [(perform(k, context), perform(v, context)) for k, v in action.remappings],
        arguments=[perform(a, context) for a in action.arguments],
    )


def _parameter_value(value: Any, context: Context) -> Any:
    """launch_ros's evaluation: ParameterValue(value_type=str) stays text, other substitutions read as YAML."""
    import yaml

    if isinstance(value, ParameterValue):
        text = perform(value.value, context) if not isinstance(value.value, (int, float, bool)) else value.value
        if value.value_type is str:
            return str(text)
        if value.value_type is None and isinstance(text, str):
            return yaml.safe_load(text)
        return value.value_type(text)
    if isinstance(value, Substitution):
        return yaml.safe_load(perform(value, context))
    return value


def executable_path(package: str, executable: str) -> Path:
    """Where ``ros2 run PACKAGE EXECUTABLE`` finds the program (launch_ros's ExecutableInPackage)."""
    return Path(get_package_prefix(package)) / "lib" / package / executable
