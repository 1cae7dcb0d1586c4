"""Typed results shared by the planner, the dispatcher and the drivers."""
from __future__ import annotations

from dataclasses import dataclass, field

from heracles_ros.outcomes import PlanStatus

Point3 = tuple[float, float, float]

#: Farthest a walk may go between two points no edge of the place graph joins, metres (planar): a 3D place
#: and the mesh place it hangs off (the planner's leaf edge), or from where the robot stands onto the graph.
#: The planner leaves farther 3D places out of its graph; the dispatcher refuses farther hops.
MAX_HOP_M = 3.0


@dataclass(frozen=True)
class PlanAction:
    """One executable step, self-contained: a driver needs nothing else.

    ``name`` is goto | inspect | pick | place. ``args`` are scene symbols as in
    the PDDL action (e.g. goto: [from, to]; pick: [object, place]).
    ``waypoints`` / ``waypoint_symbols`` are the place path for goto (first is
    the start place), empty for other actions.
    """

    name: str
    args: tuple[str, ...]
    target_symbol: str
    target: Point3
    waypoints: tuple[Point3, ...] = ()
    waypoint_symbols: tuple[str, ...] = ()
    cost: float = 0.0


@dataclass
class PlanResult:
    status: PlanStatus
    goal: str
    start_symbol: str = ""
    actions: list[PlanAction] = field(default_factory=list)
    total_cost: float = 0.0
    #: Why the plan failed, e.g. the unreachable goal symbols.
    reason: str = ""
    unreachable: list[str] = field(default_factory=list)
    #: Seconds per stage: parse, validate, graph, state, problem, search, expand, total.
    timings: dict[str, float] = field(default_factory=dict)
    #: Fast Downward proved that no cheaper plan exists (else: the best found in time).
    optimal: bool = False

    @property
    def ok(self) -> bool:
        return self.status is PlanStatus.SOLVED
