"""Declared ROS parameters, one table per node.

Each node lists its parameters as :class:`~heracles_ros.settings.Setting` entries
(``PARAMETERS``, composed with the shared ones of :mod:`.node_settings`); :func:`declare`
declares them all with descriptions, and the same table lets tests check
``config/*.yaml`` and the launch files statically
(every key set is declared, every default documented). rclpy is imported only
when a node actually declares, so the tables can be read without ROS.

A parameter a node reads only at start is declared read-only, so a run-time
``set_parameters`` is refused with a reason instead of being accepted and
ignored; the ones a node applies while running are named by the node
(``runtime``) and carry the Setting's bounds as ROS ranges, so rclpy refuses an
out-of-range value before the node sees it.
"""
from __future__ import annotations

import difflib
import importlib
import math
import sys
from collections.abc import Collection, Sequence
from typing import Any

from heracles_ros.errors import ConfigError
from heracles_ros.ros.params_files import ParamsSection, read_params_files
from heracles_ros.settings import Setting

#: The widest ROS IntegerRange (int64) for a bound a Setting leaves open.
_INT64 = (-(2**63), 2**63 - 1)

#: The nodes' parameter tables (each module's PARAMETERS), which a shared (wildcard) params-file section may set.
NODE_MODULES = ("heracles_ros.nodes.mirror_settings", "heracles_ros.nodes.language_settings",
                "heracles_ros.nodes.dispatcher_settings")
#: Parameters rclpy declares by itself on demand (a publisher's QoS overrides), never in a PARAMETERS table.
_RCLPY_PREFIXES = ("qos_overrides.",)
#: rclpy declares it on every node, writable: set while a node runs, it would put the node's ROS timers on a
#: clock that may stand still. Given at start it is honoured (the node's safety timers run on wall-clock time).
USE_SIM_TIME = "use_sim_time"


def declare(node: Any, specs: Sequence[Setting], *, runtime: Collection[str] = ()) -> dict[str, Any]:
    """Declare every spec on ``node`` (an rclpy Node) and return the checked values by name.

    Parameters not named in ``runtime`` are read-only. A value of the wrong type
    (refused by rclpy) or out of bounds raises ConfigError naming it.
    """
    unknown = set(runtime) - {spec.name for spec in specs}
    if unknown:
        raise ConfigError(f"run-time parameters {sorted(unknown)} are not declared")
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

    values: dict[str, Any] = {}
    for spec in specs:
        full = descriptor(spec, read_only=spec.name not in runtime)
        ranged = bool(full.integer_range or full.floating_point_range)
        try:
            # A ranged one is declared without its range first, so the Setting's check (whose
            # message names the bound) judges the start value rather than rclpy's range check.
            value = _declare_one(node, spec, ParameterDescriptor(description=spec.description) if ranged else full)
        except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
            raise ConfigError(f"{node.get_name()} parameter {spec.name}: {exc}") from exc
        values[spec.name] = spec.check(value)
        if ranged:
            full.type = node.describe_parameter(spec.name).type  # as declared: rclpy checks it against the value
            node.set_descriptor(spec.name, full)
    refuse_unknown_overrides(node)
    return values


def change_refusal(node: Any, name: str, runtime: Collection[str]) -> str:
    """Why parameter ``name`` of the running ``node`` may not change ('' when it is one of ``runtime``).

    Every set is judged by this, rclpy's own ``use_sim_time`` and names the node lacks included.
    """
    if name in runtime:
        return ""
    fqn = node.get_fully_qualified_name()
    changeable = (f"; what may change while it runs: {', '.join(sorted(runtime))}" if runtime
                  else "; none of its parameters changes while it runs")
    if not node.has_parameter(name):
        close = difflib.get_close_matches(name, list(node.get_parameters_by_prefix("")), n=1)
        return f"{fqn} has no parameter '{name}'" + (f" (did you mean '{close[0]}'?)" if close else "") + changeable
    if name == USE_SIM_TIME:
        return (f"use_sim_time cannot change while {fqn} runs (a ROS clock that stands still would stop its "
                f"timers); give it at start instead (--ros-args -p use_sim_time:=true){changeable}")
    return f"parameter {name} is read only at start: restart {fqn} to change it{changeable}"


def refuse_unknown_overrides(node: Any, argv: Sequence[str] | None = None) -> None:
    """Stop a node given a parameter it does not have, or a params file with no section for it.

    rcl applies what matches and drops the rest, so a misspelt name or a file keyed for
    another node would leave the node on its defaults. Call after every declaration.
    A name under a shared (wildcard) section such as ``/**:`` may belong to a sibling
    node: it is refused only when no heracles node declares it. ``argv`` holds the
    ``--ros-args`` (default: this process's command line, which ``rclpy.init`` read).
    """
    from heracles_ros.ros.rclpy_compat import parameter_override_names

    fqn = node.get_fully_qualified_name()
    sections = read_params_files(sys.argv if argv is None else argv)
    for path in dict.fromkeys(section.file for section in sections):
        own = [section for section in sections if section.file == path]
        if not any(section.applies_to(fqn) for section in own):
            keys = ", ".join(f"'{section.key}'" for section in own)
            raise ConfigError(
                f"params file {path} sets nothing for node {fqn}: its sections are {keys}, none matches "
                f"(key it '{fqn}:', '/**/{node.get_name()}:' or '/**:'); is it another node's file?")
    unknown = sorted(
        name for name in parameter_override_names(node)
        if not node.has_parameter(name) and not name.startswith(_RCLPY_PREFIXES))
    problems = [problem for name in unknown if (problem := _unknown(node, fqn, name, sections))]
    if problems:
        raise ConfigError(f"node {fqn} has no parameter {'; no parameter '.join(problems)} "
                          "(its parameters: config/<node>.yaml, or `ros2 param list` on a running node)")


def _unknown(node: Any, fqn: str, name: str, sections: list[ParamsSection]) -> str:
    """What to say of an undeclared override ``name``; "" when a shared section sets it for a sibling node."""
    setters = [section for section in sections if section.applies_to(fqn) and name in section.names]
    if setters and all(section.wildcard for section in setters) and name in _sibling_parameter_names():
        return ""
    where = ", ".join(f"{section.file} (section '{section.key}')" for section in setters) or "the command line"
    close = difflib.get_close_matches(name, list(node.get_parameters_by_prefix("")), n=1)
    return f"'{name}' (set in {where})" + (f": did you mean '{close[0]}'?" if close else "")


def _sibling_parameter_names() -> set[str]:
    """Every parameter name some heracles node declares (read only when a shared section sets an unknown one)."""
    return {spec.name for module in NODE_MODULES for spec in importlib.import_module(module).PARAMETERS}


def descriptor(spec: Setting, *, read_only: bool) -> Any:
    """The ROS ParameterDescriptor of ``spec``: description, read-only flag, range, allowed values."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

    result = ParameterDescriptor(description=spec.description, read_only=read_only)
    default = spec.default
    bounded = spec.minimum is not None or spec.maximum is not None
    if bounded and isinstance(default, int) and not isinstance(default, bool):
        low = _INT64[0] if spec.minimum is None else math.ceil(spec.minimum)
        high = _INT64[1] if spec.maximum is None else math.floor(spec.maximum)
        result.integer_range = [IntegerRange(from_value=low, to_value=high, step=0)]
    elif bounded and isinstance(default, float):
        result.floating_point_range = [FloatingPointRange(
            from_value=-math.inf if spec.minimum is None else float(spec.minimum),
            to_value=math.inf if spec.maximum is None else float(spec.maximum),
            step=0.0,
        )]
    if spec.choices:
        result.additional_constraints = f"one of: {', '.join(spec.choices)}"
    return result


def _declare_one(node: Any, spec: Setting, descriptor: Any) -> Any:
    from rclpy.parameter import Parameter

    if isinstance(spec.default, list) and not spec.default:
        # rclpy infers BYTE_ARRAY from an empty list, which then refuses any real value:
        # declare the array type instead (the value is None until a value is given).
        array_type = {
            int: Parameter.Type.INTEGER_ARRAY,
            float: Parameter.Type.DOUBLE_ARRAY,
            str: Parameter.Type.STRING_ARRAY,
            bool: Parameter.Type.BOOL_ARRAY,
        }[spec.item_type]
        # A typed declaration has no value: set the empty list, so that a get-all (``ros2 param dump``)
        # answers for it too; read-only (the descriptor) comes after that.
        writable = type(descriptor)(description=descriptor.description)
        declared = node.declare_parameter(spec.name, array_type, writable).value
        if declared is None:
            node.set_parameters([Parameter(spec.name, array_type, [])])
        descriptor.type = array_type.value
        node.set_descriptor(spec.name, descriptor)
        return [] if declared is None else list(declared)
    value = node.declare_parameter(spec.name, spec.default, descriptor).value
    if isinstance(spec.default, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return value
