"""Read launch files, parameter files, node sources and RViz configs without ROS, for static checks.

``launch_ros`` cannot be installed on the test machines, so the launch file is
never imported: it is parsed with :mod:`ast` and its literal structure
(DeclareLaunchArgument, Node, LaunchConfiguration, SetRemap) is read back.
Node sources are parsed the same way for the names they pass to
``create_subscription`` / ``create_publisher`` / ``create_service`` /
``create_client``. Parameter-file keys are matched against node names the way
rclcpp and rclpy do (``/**`` any namespaces, ``/*`` one token).
"""
from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


# -- launch files ---------------------------------------------------------------------------
@dataclass
class LaunchArgument:
    name: str
    line: int
    has_default: bool
    default: Any  # the literal, or an ast node when it is a substitution
    description: str | None
    choices: list[str] | None


@dataclass
class LaunchNode:
    package: str
    executable: str
    line: int
    name: str | None = None
    #: File names of parameter files (last argument of an os.path.join / PathJoinSubstitution).
    param_files: list[str] = field(default_factory=list)
    #: Parameter name -> launch argument it is set from ("" when not a LaunchConfiguration).
    param_overrides: dict[str, str] = field(default_factory=dict)
    remappings: list[tuple[str, str]] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    conditional: bool = False


@dataclass
class LaunchFile:
    path: Path
    arguments: list[LaunchArgument]
    nodes: list[LaunchNode]
    #: Every LaunchConfiguration("name") used, with its line.
    configurations: list[tuple[str, int]]
    #: (src, dst-argument-or-literal) of SetRemap actions.
    set_remaps: list[tuple[str, str]]
    #: String constants anywhere in the file (paths of included launch files, etc.).
    strings: set[str]
    #: Included launch files: (file name, the launch arguments passed to it).
    includes: list[tuple[str, list[str]]] = field(default_factory=list)


def _call_name(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _const(node: ast.expr | None) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    return None


def _configuration_name(node: ast.expr) -> str:
    """``LaunchConfiguration("x")`` (possibly wrapped, e.g. in ParameterValue or a helper) -> "x"."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _call_name(sub) == "LaunchConfiguration" and sub.args:
            return str(_const(sub.args[0]) or "")
    return ""


def _helper_returns(tree: ast.Module) -> dict[str, str]:
    """Module-level one-argument helpers that wrap LaunchConfiguration(arg): helper name -> "param"."""
    helpers = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and len(fn.args.args) == 1:
            for sub in ast.walk(fn):
                if (isinstance(sub, ast.Call) and _call_name(sub) == "LaunchConfiguration" and sub.args
                        and isinstance(sub.args[0], ast.Name) and sub.args[0].id == fn.args.args[0].arg):
                    helpers[fn.name] = fn.args.args[0].arg
    return helpers


def _argument_of_value(node: ast.expr, helpers: dict[str, str]) -> str:
    name = _configuration_name(node)
    if name:
        return name
    if isinstance(node, ast.Call) and _call_name(node) in helpers and node.args:
        return str(_const(node.args[0]) or "")
    return ""


class _InlineConstants(ast.NodeTransformer):
    """Replace names of module-level string constants (``PACKAGE = "heracles_ros"``) by their value."""

    def __init__(self, tree: ast.Module):
        self.values = {
            target.id: stmt.value.value
            for stmt in tree.body if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            for target in stmt.targets if isinstance(target, ast.Name)
        }

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(ast.Constant(self.values[node.id]), node)
        return node


def parse_launch_file(path: Path) -> LaunchFile:
    tree = ast.parse(path.read_text(), filename=str(path))
    tree = _InlineConstants(tree).visit(tree)
    helpers = _helper_returns(tree)
    arguments: list[LaunchArgument] = []
    nodes: list[LaunchNode] = []
    configurations: list[tuple[str, int]] = []
    set_remaps: list[tuple[str, str]] = []
    strings: set[str] = set()
    includes: list[tuple[str, list[str]]] = []
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            strings.add(sub.value)
        if not isinstance(sub, ast.Call):
            continue
        kind = _call_name(sub)
        if kind == "DeclareLaunchArgument":
            default = _kw(sub, "default_value")
            choices = _kw(sub, "choices")
            arguments.append(LaunchArgument(
                name=str(_const(sub.args[0]) if sub.args else _const(_kw(sub, "name"))),
                line=sub.lineno,
                has_default=default is not None,
                default=_const(default) if isinstance(default, ast.Constant) else default,
                description=_const(_kw(sub, "description")),
                choices=[_const(e) for e in choices.elts] if isinstance(choices, ast.List | ast.Tuple) else None,
            ))
        elif kind == "LaunchConfiguration" and sub.args:
            configurations.append((str(_const(sub.args[0])), sub.lineno))
        elif kind == "SetRemap":
            src, dst = _kw(sub, "src"), _kw(sub, "dst")
            if src is None and sub.args:
                src = sub.args[0]
            if dst is None and len(sub.args) > 1:
                dst = sub.args[1]
            set_remaps.append((str(_const(src)), _configuration_name(dst) if dst is not None else ""))
        elif kind == "Node":
            nodes.append(_parse_node(sub, helpers))
        elif kind == "IncludeLaunchDescription":
            includes.append(_parse_include(sub))
    for fn in tree.body:  # helpers' own LaunchConfiguration(arg) is not a reference to an argument
        if isinstance(fn, ast.FunctionDef) and fn.name in helpers:
            configurations = [(n, line) for n, line in configurations
                              if not (fn.lineno <= line <= (fn.end_lineno or fn.lineno))]
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in helpers:
            continue
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Call) and _call_name(sub) in helpers and sub.args:
                configurations.append((str(_const(sub.args[0])), sub.lineno))
    return LaunchFile(path, arguments, nodes, configurations, set_remaps, strings, includes)


def _parse_include(call: ast.Call) -> tuple[str, list[str]]:
    """File name of the included launch file (last string joined into its path) and the argument names."""
    names = [s.value for s in ast.walk(call.args[0]) if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    files = [n for n in names if n.endswith((".launch.py", ".launch.yaml", ".launch.xml"))]
    arguments: list[str] = []
    given = _kw(call, "launch_arguments")
    if isinstance(given, ast.Call) and isinstance(given.func, ast.Attribute):
        given = given.func.value  # {...}.items()
    if isinstance(given, ast.Dict):
        arguments = [str(_const(k)) for k in given.keys]
    elif isinstance(given, ast.List | ast.Tuple):
        arguments = [str(_const(e.elts[0])) for e in given.elts if isinstance(e, ast.Tuple)]
    return (files[-1] if files else "", arguments)


def _parse_node(call: ast.Call, helpers: dict[str, str]) -> LaunchNode:
    node = LaunchNode(
        package=str(_const(_kw(call, "package"))),
        executable=str(_const(_kw(call, "executable"))),
        line=call.lineno,
        name=_const(_kw(call, "name")),
        conditional=_kw(call, "condition") is not None,
    )
    parameters = _kw(call, "parameters")
    if isinstance(parameters, ast.List | ast.Tuple):
        for element in parameters.elts:
            if isinstance(element, ast.Dict):
                for key, value in zip(element.keys, element.values, strict=True):
                    node.param_overrides[str(_const(key))] = _argument_of_value(value, helpers)
            elif isinstance(element, ast.Call) and _call_name(element) in ("join", "PathJoinSubstitution"):
                parts = element.args if _call_name(element) == "join" else getattr(element.args[0], "elts", [])
                node.param_files.append(str(_const(parts[-1])))
    remappings = _kw(call, "remappings")
    if isinstance(remappings, ast.List | ast.Tuple):
        for pair in remappings.elts:
            if isinstance(pair, ast.Tuple):
                node.remappings.append((str(_const(pair.elts[0])), str(_const(pair.elts[1]))))
    args = _kw(call, "arguments")
    if isinstance(args, ast.List | ast.Tuple):
        for element in args.elts:
            if isinstance(element, ast.Constant):
                node.arguments.append(str(element.value))
            elif isinstance(element, ast.Call) and _call_name(element) == "join":
                node.arguments.append(str(_const(element.args[-1])))
    return node


# -- the package's executables -------------------------------------------------------------------
def console_scripts(setup_py: Path = REPO / "setup.py") -> dict[str, str]:
    """``name -> "module:function"`` from setup.py's console_scripts (read with ast, not run)."""
    tree = ast.parse(setup_py.read_text())
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Call) and _call_name(sub) == "setup":
            entry_points = ast.literal_eval(_kw(sub, "entry_points"))  # type: ignore[arg-type]
            scripts = {}
            for line in entry_points["console_scripts"]:
                name, target = (part.strip() for part in line.split("=", 1))
                scripts[name] = target
            return scripts
    raise AssertionError("setup.py has no setup() call")


def cmake_installed_programs(cmake: Path = REPO / "CMakeLists.txt") -> set[str]:
    """File names CMake installs with install(PROGRAMS ... DESTINATION lib/${PROJECT_NAME})."""
    text = cmake.read_text()
    found = set()
    for block in re.findall(r"install\(\s*PROGRAMS(.*?)\)", text, flags=re.S):
        if "DESTINATION lib/${PROJECT_NAME}" in block:
            found.update(Path(p).name for p in re.findall(r"scripts/\S+", block))
    return found


# -- node sources -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Endpoint:
    kind: str  # subscription | publisher | service | client | action_server | action_client
    name: str  # "" when the name comes from a parameter (not a literal)
    type_name: str
    line: int


_ENDPOINT_CALLS = {
    "create_subscription": "subscription",
    "create_publisher": "publisher",
    "create_service": "service",
    "create_client": "client",
}


#: Constructors that take (node, type, name): rclpy's action endpoints.
_ACTION_CALLS = {"ActionServer": "action_server", "ActionClient": "action_client"}


def node_endpoints(module_name: str) -> list[Endpoint]:
    """Every topic/service/action name a node module (and the heracles_ros.nodes modules it imports) passes
    to rclpy, resolved from literals or module constants."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(module.__file__ or "").read_text())
    found = []
    for sub in ast.walk(tree):
        if isinstance(sub, ast.ImportFrom) and (sub.module or "").startswith("heracles_ros.nodes.") and \
                sub.module != module_name:
            found += node_endpoints(sub.module or "")
        if isinstance(sub, ast.Call) and _call_name(sub) in _ACTION_CALLS and len(sub.args) >= 3:
            type_node, name_node = sub.args[1], sub.args[2]
            name = name_node.value if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str) else ""
            type_name = type_node.id if isinstance(type_node, ast.Name) else ast.unparse(type_node)
            found.append(Endpoint(_ACTION_CALLS[_call_name(sub)], name, type_name, sub.lineno))
        if isinstance(sub, ast.Call) and _call_name(sub) in _ENDPOINT_CALLS and len(sub.args) >= 2:
            type_node, name_node = sub.args[0], sub.args[1]
            if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
                name = name_node.value
            elif isinstance(name_node, ast.Name) and isinstance(getattr(module, name_node.id, None), str):
                name = getattr(module, name_node.id)
            else:
                name = ""
            type_name = type_node.id if isinstance(type_node, ast.Name) else ast.unparse(type_node)
            found.append(Endpoint(_ENDPOINT_CALLS[_call_name(sub)], name, type_name, sub.lineno))
    return found


def node_name_in_source(module_name: str) -> str:
    """The name a node module passes to ``super().__init__`` (a literal or a module constant)."""
    module = importlib.import_module(module_name)
    for sub in ast.walk(ast.parse(Path(module.__file__ or "").read_text())):
        if (isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "__init__"
                and isinstance(sub.func.value, ast.Call) and _call_name(sub.func.value) == "super" and sub.args):
            first = sub.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                return first.value
            if isinstance(first, ast.Name) and isinstance(getattr(module, first.id, None), str):
                return str(getattr(module, first.id))
    raise AssertionError(f"{module_name} passes no literal node name to super().__init__")


# -- parameter files ------------------------------------------------------------------------------
def node_key_matches(key: str, node_fqn: str) -> bool:
    """Whether a parameter-file key applies to ``node_fqn`` (rclcpp/rclpy rules: ``/**``, ``/*``)."""
    if not key.startswith("/"):
        key = "/" + key
    pattern = re.escape(key).replace(r"/\*\*", r"(/[^/]+)*").replace(r"/\*", r"(/[^/]+)")
    return re.fullmatch(pattern, node_fqn) is not None


def node_fqn(namespace: str, name: str) -> str:
    namespace = "/" + namespace.strip("/") if namespace.strip("/") else ""
    return f"{namespace}/{name}"


def parameters_for(document: dict[str, Any], fqn: str) -> dict[str, Any]:
    """The ``ros__parameters`` that apply to ``fqn`` (later keys override earlier ones, as in rcl)."""
    merged: dict[str, Any] = {}
    for key, section in document.items():
        if node_key_matches(str(key), fqn):
            merged.update((section or {}).get("ros__parameters", {}))
    return merged


def load_yaml(path: Path) -> Any:
    with open(path) as handle:
        return yaml.safe_load(handle)


# -- RViz -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RvizDisplay:
    cls: str
    name: str
    enabled: bool
    topic: str
    namespaces: tuple[str, ...]


def rviz_displays(config: dict[str, Any]) -> Iterator[RvizDisplay]:
    for display in config["Visualization Manager"]["Displays"]:
        topic = display.get("Topic") or display.get("Description Topic") or {}
        namespaces = display.get("Namespaces") or {}
        yield RvizDisplay(
            cls=display["Class"],
            name=display.get("Name", ""),
            enabled=bool(display.get("Enabled", False)),
            topic=str(topic.get("Value", "")) if isinstance(topic, dict) else "",
            namespaces=tuple(namespaces) if isinstance(namespaces, dict) else (),
        )
