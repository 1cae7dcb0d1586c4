"""Typed results of the three operator requests (ask, command, correct).

The ROS services, the CLI's ``--json`` output and the evaluation harness all
report these same fields, so they are defined once here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from heracles_ros.planning.types import PlanResult


@dataclass
class Usage:
    """What one request cost: the provider's own token counts, tool calls, and wall time."""

    queries: list[str] = field(default_factory=list)
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0


class _Reported:
    """What every result shares: an ``error`` ("" on success) and the flat ``--json`` shape."""

    error: str

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, Any]:
        return _flat(self)


@dataclass
class AskResult(_Reported):
    #: The answer as a validated SLDP expression ("" on error).
    answer: str = ""
    explanation: str = ""
    #: The requested SLDP type ("" when any type was accepted).
    answer_type: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str = ""


@dataclass
class CommandResult(_Reported):
    #: The validated PDDL goal over scene symbols ("" when none could be produced).
    goal: str = ""
    explanation: str = ""
    plan: PlanResult | None = None
    usage: Usage = field(default_factory=Usage)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = _flat(self)
        data["plan"] = None if self.plan is None else _plan_dict(self.plan)
        return data


@dataclass
class CorrectResult(_Reported):
    #: What changed, one "O43.class: 'bicycle' -> 'bag'" line per property.
    changes: list[str] = field(default_factory=list)
    explanation: str = ""
    usage: Usage = field(default_factory=Usage)
    error: str = ""


def _flat(result: Any) -> dict[str, Any]:
    """Fields with the usage figures lifted to the top level (the CLI's --json shape)."""
    data = {k: v for k, v in asdict(result).items() if k not in ("usage", "plan")}
    data.update(asdict(result.usage))
    return data


def _plan_dict(plan: PlanResult) -> dict[str, Any]:
    data = asdict(plan)
    data["status"] = plan.status.value
    return data
