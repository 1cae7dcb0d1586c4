"""Logical equivalence of PDDL goals, exactly, by reduced ordered binary decision diagrams.

Two goals are equivalent when they hold in the same world states (paper,
appendix B.1): reordering conjuncts, double negation, De Morgan and the like
must not matter, and string equality is useless. A truth table is exact but
grows as 2^n in the number of atoms; a reduced ordered BDD over a fixed atom
order is a canonical form, so two goals are equivalent exactly when they build
the same BDD node, and typical goals (dozens of atoms) stay small.
"""
from __future__ import annotations

from collections.abc import Callable

from heracles_ros.formats.goal_ast import And, Atom, GoalExpr, Not, atoms

_FALSE = 0
_TRUE = 1


class _Bdd:
    """A reduced ordered BDD store: nodes are (variable index, low child, high child)."""

    def __init__(self, order: list[Atom]):
        self.order = order
        self._index = {atom: i for i, atom in enumerate(order)}
        self._nodes: list[tuple[int, int, int]] = [(len(order), 0, 0), (len(order), 1, 1)]
        self._unique: dict[tuple[int, int, int], int] = {}
        self._memo: dict[tuple[str, int, int], int] = {}

    def var_of(self, node: int) -> int:
        return self._nodes[node][0]

    def children(self, node: int) -> tuple[int, int]:
        _, low, high = self._nodes[node]
        return low, high

    def _mk(self, var: int, low: int, high: int) -> int:
        if low == high:
            return low
        key = (var, low, high)
        node = self._unique.get(key)
        if node is None:
            node = len(self._nodes)
            self._nodes.append(key)
            self._unique[key] = node
        return node

    def _apply(self, op: str, fn: Callable[[bool, bool], bool], u: int, v: int) -> int:
        if u <= _TRUE and v <= _TRUE:
            return _TRUE if fn(u == _TRUE, v == _TRUE) else _FALSE
        key = (op, u, v)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        var = min(self.var_of(u), self.var_of(v))
        u_low, u_high = self.children(u) if self.var_of(u) == var else (u, u)
        v_low, v_high = self.children(v) if self.var_of(v) == var else (v, v)
        result = self._mk(var, self._apply(op, fn, u_low, v_low), self._apply(op, fn, u_high, v_high))
        self._memo[key] = result
        return result

    def build(self, expr: GoalExpr) -> int:
        if isinstance(expr, Atom):
            return self._mk(self._index[expr], _FALSE, _TRUE)
        if isinstance(expr, Not):
            return self.xor(self.build(expr.item), _TRUE)
        if isinstance(expr, And):
            node = _TRUE
            for item in expr.items:
                node = self._apply("and", _and, node, self.build(item))
            return node
        node = _FALSE
        for item in expr.items:
            node = self._apply("or", _or, node, self.build(item))
        return node

    def xor(self, u: int, v: int) -> int:
        return self._apply("xor", _xor, u, v)


def _and(a: bool, b: bool) -> bool:
    return a and b


def _or(a: bool, b: bool) -> bool:
    return a or b


def _xor(a: bool, b: bool) -> bool:
    return a != b


def _as_expr(goal: GoalExpr | str) -> GoalExpr:
    if isinstance(goal, str):
        from heracles_ros.formats.pddl_goal import parse_goal

        return parse_goal(goal)
    return goal


def _shared_bdd(a: GoalExpr, b: GoalExpr) -> tuple[_Bdd, int, int]:
    # Any fixed order keeps the BDD canonical; first occurrence keeps atoms that appear
    # together (e.g. the two sides of each clause) adjacent, which keeps the BDD small.
    order = list(dict.fromkeys([*atoms(a), *atoms(b)]))
    bdd = _Bdd(order)
    return bdd, bdd.build(a), bdd.build(b)


def goals_equivalent(a: GoalExpr | str, b: GoalExpr | str) -> bool:
    """True when the two goals hold in exactly the same states (GoalError if a text does not parse)."""
    _, u, v = _shared_bdd(_as_expr(a), _as_expr(b))
    return u == v


def goal_difference(a: GoalExpr | str, b: GoalExpr | str) -> dict[Atom, bool] | None:
    """A partial assignment of atoms under which exactly one goal holds; None if they are equivalent.

    Atoms left out do not matter for that difference. Used to explain a failed comparison.
    """
    bdd, u, v = _shared_bdd(_as_expr(a), _as_expr(b))
    node = bdd.xor(u, v)
    if node == _FALSE:
        return None
    assignment: dict[Atom, bool] = {}
    while node != _TRUE:
        low, high = bdd.children(node)
        atom = bdd.order[bdd.var_of(node)]
        # In a reduced BDD every node other than FALSE reaches TRUE.
        assignment[atom] = low == _FALSE
        node = high if low == _FALSE else low
    return assignment


def evaluate(expr: GoalExpr, true_atoms: set[Atom]) -> bool:
    """Whether a goal holds in the state where exactly ``true_atoms`` are true."""
    if isinstance(expr, Atom):
        return expr in true_atoms
    if isinstance(expr, Not):
        return not evaluate(expr.item, true_atoms)
    if isinstance(expr, And):
        return all(evaluate(item, true_atoms) for item in expr.items)
    return any(evaluate(item, true_atoms) for item in expr.items)


def describe_difference(
    a: GoalExpr | str, b: GoalExpr | str, *, names: tuple[str, str] = ("the first goal", "the second goal")
) -> str:
    """One sentence on where two goals differ ("" when they are equivalent)."""
    a = _as_expr(a)
    difference = goal_difference(a, b)
    if difference is None:
        return ""
    holds_in_a = evaluate(a, {atom for atom, value in difference.items() if value})
    facts = ", ".join(f"{atom} {'true' if value else 'false'}" for atom, value in difference.items())
    holds, fails = names if holds_in_a else names[::-1]
    return f"with {facts or 'every atom false'}, {holds} holds and {fails} does not"
