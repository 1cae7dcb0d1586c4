"""Typed results of the three operator requests (ask, command, correct).

The ROS services, the CLI's ``--json`` output and the evaluation harness all
report these same fields, so they are defined once here. A question or
command the scene does not pin down ends with a ``clarification`` (and its
``candidates``) instead of an answer or goal: not an error, a question back.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from heracles_ros.plan_types import PlanResult


@dataclass
class Usage:
    """What one request cost: the provider's own token counts, tool calls, and wall time."""

    queries: list[str] = field(default_factory=list)
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0


@dataclass(frozen=True)
class Candidate:
    """One thing an ambiguous request could mean, with what tells it apart: its room and distance."""

    symbol: str
    class_name: str = ""
    room: str = ""
    room_class: str = ""
    #: Planar distance from the robot's recorded position, metres (None when either position is unknown).
    distance_m: float | None = None
    #: ``operator`` for an object the operator added (not perceived); "" otherwise.
    source: str = ""

    @property
    def description(self) -> str:
        """E.g. "O3 (bicycle) in R1 (kitchen), 4.2 m from the robot"; "A1 (fire hydrant, operator-added) ..."."""
        kind = ", ".join(part for part in (self.class_name, f"{self.source}-added" if self.source else "") if part)
        text = self.symbol + (f" ({kind})" if kind else "")
        if self.room:
            text += f" in {self.room}" + (f" ({self.room_class})" if self.room_class else "")
        if self.distance_m is not None:
            text += f", {self.distance_m:.1f} m from the robot"
        return text


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
    #: The question back to the operator when the question is ambiguous ("" otherwise).
    clarification: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    error: str = ""


@dataclass
class CommandResult(_Reported):
    #: The validated PDDL goal over scene symbols ("" when none could be produced).
    goal: str = ""
    #: The goal in plain words, with the classes of the symbols it names.
    goal_text: str = ""
    explanation: str = ""
    #: The question back to the operator when the instruction is ambiguous ("" otherwise).
    clarification: str = ""
    candidates: list[Candidate] = field(default_factory=list)
    #: With a clarification that matched nothing: what the map lacks, when the model named it ("" otherwise).
    missing: str = ""
    plan: PlanResult | None = None
    usage: Usage = field(default_factory=Usage)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = _flat(self)
        data["plan"] = None if self.plan is None else _plan_dict(self.plan)
        return data


@dataclass
class CorrectResult(_Reported):
    #: What changed, one "O43.class: 'bicycle' -> 'bag'" line per property and one "A1 added: ..." per addition.
    changes: list[str] = field(default_factory=list)
    #: Symbols of the objects the operator added (A1, ...).
    added: list[str] = field(default_factory=list)
    #: Proposed additions an object already in the graph is, naming it (nothing added for those).
    existing: list[str] = field(default_factory=list)
    explanation: str = ""
    #: The question back to the operator when the statement's referent is ambiguous ("" otherwise).
    clarification: str = ""
    candidates: list[Candidate] = field(default_factory=list)
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
