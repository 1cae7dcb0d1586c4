"""The planner facade: goal text in, checked goal or expanded plan out."""
from __future__ import annotations

from pathlib import Path

from heracles_ros.graphdb.schema import ROBOT_SYMBOL
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.language.goal_ast import GoalExpr
from heracles_ros.language.pddl_goal import check_goal
from heracles_ros.planning.domain import Domain, load_domain


class Planner:
    """Plans PDDL goals over one database's scene with Fast Downward."""

    def __init__(
        self,
        store: GraphStore,
        *,
        domain_path: str | Path | None = None,
        timeout_s: float = 10.0,
        robot_symbol: str = ROBOT_SYMBOL,
    ):
        self.store = store
        self.domain: Domain = load_domain(domain_path)
        self.timeout_s = timeout_s
        self.robot_symbol = robot_symbol

    def check(self, goal: str) -> GoalExpr:
        """The parsed goal, or GoalError listing every problem (syntax, predicates, kinds, symbols)."""
        return check_goal(goal, self.store, self.domain)
