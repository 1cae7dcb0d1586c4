"""The shape of a parsed PDDL goal, shared by the parser, the checker, the planner and the evaluator.

Symbols in atoms are scene symbols exactly as written ("P12" and "p12" differ);
predicate names are lower case (PDDL keywords and predicates are
case-insensitive).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Atom:
    predicate: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({' '.join((self.predicate, *self.args))})"


@dataclass(frozen=True)
class Not:
    item: GoalExpr

    def __str__(self) -> str:
        return f"(not {self.item})"


@dataclass(frozen=True)
class And:
    items: tuple[GoalExpr, ...]

    def __str__(self) -> str:
        return f"(and {' '.join(map(str, self.items))})"


@dataclass(frozen=True)
class Or:
    items: tuple[GoalExpr, ...]

    def __str__(self) -> str:
        return f"(or {' '.join(map(str, self.items))})"


GoalExpr = Atom | Not | And | Or


def atoms(expr: GoalExpr) -> Iterator[Atom]:
    """Every atom in ``expr``, depth first, left to right."""
    if isinstance(expr, Atom):
        yield expr
    elif isinstance(expr, Not):
        yield from atoms(expr.item)
    else:
        for item in expr.items:
            yield from atoms(item)


def symbols(expr: GoalExpr) -> list[str]:
    """Scene symbols the goal names, first occurrence order, no repeats."""
    return list(dict.fromkeys(arg for atom in atoms(expr) for arg in atom.args))
