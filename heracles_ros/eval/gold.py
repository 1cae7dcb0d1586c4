"""Re-derive gold answers from the live scene, so a dataset cannot drift from its scene.

Each item's ``gold_query`` is run read-only and its rows are turned into the
answer: for ask items an SLDP value built by the requested type (one row and
column for a string or number; ``x, y, z`` columns or a map for a point; one
row per element for a set or list; ``key, value`` columns for a dict), for
command items the set of scene symbols the gold goal must name. The gold goal
is also checked against the domain and the database (every symbol exists).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from heracles_ros.errors import ConfigError, GoalError, HeraclesError
from heracles_ros.eval.dataset import Dataset, EvalItem
from heracles_ros.formats.goal_ast import symbols
from heracles_ros.formats.sldp import (
    Point,
    SldpDict,
    SldpList,
    SldpSet,
    SldpValue,
    parse_type,
    sldp_equal,
    sldp_from_python,
    sldp_type,
    to_sldp,
)
from heracles_ros.graphdb.store import GraphStore

_POINT_KEYS = {"x", "y", "z"}


def rows_to_sldp(rows: list[dict[str, Any]], answer_type: str) -> SldpValue:
    """Query rows as an SLDP value of ``answer_type`` (see the module docstring)."""
    parts = parse_type(answer_type)
    base = parts[0]
    if base in ("set", "list"):
        elements = tuple(_convert(_row_value(row), parts[1:]) for row in rows)
        return SldpSet(elements) if base == "set" else SldpList(elements)
    if base == "dict":
        pairs = []
        for row in rows:
            if set(row) != {"key", "value"}:
                raise ConfigError(f"a dict answer needs columns key and value, got {', '.join(row)}")
            pairs.append((str(row["key"]), _convert(row["value"], parts[1:])))
        try:
            return SldpDict(tuple(pairs))
        except ValueError as exc:
            raise ConfigError(f"query rows do not form a dict: {exc}") from exc
    if len(rows) != 1:
        raise ConfigError(f"a {base} answer needs exactly one row, the query returned {len(rows)}")
    return _convert(_row_value(rows[0]), parts)


def _row_value(row: Mapping[str, Any]) -> Any:
    if set(row) == _POINT_KEYS:
        return dict(row)
    if len(row) != 1:
        raise ConfigError(f"expected one column (or x, y, z for a point), got {', '.join(row)}")
    return next(iter(row.values()))


def _convert(value: Any, parts: tuple[str, ...]) -> SldpValue:
    base = parts[0] if parts else None
    if base == "point" or (base is None and isinstance(value, Mapping) and set(value) == _POINT_KEYS):
        if not isinstance(value, Mapping) or set(value) != _POINT_KEYS:
            raise ConfigError(f"a point needs x, y, z, got {value!r}")
        return Point(float(value["x"]), float(value["y"]), float(value["z"]))
    if base in ("set", "list") and isinstance(value, list | tuple):
        elements = tuple(_convert(v, parts[1:]) for v in value)
        return SldpSet(elements) if base == "set" else SldpList(elements)
    if base == "dict" and isinstance(value, Mapping):
        return SldpDict(tuple((str(k), _convert(v, parts[1:])) for k, v in value.items()))
    if base == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if base == "string" and isinstance(value, str):
        return value
    if base is None:
        return sldp_from_python(value)
    raise ConfigError(f"cannot read {value!r} as a {base}")


def derive_answer(item: EvalItem, store: GraphStore) -> SldpValue:
    """The answer an ask item's gold query gives on the scene in ``store``."""
    answer_type = item.answer_type or sldp_type(item.gold_value())
    return rows_to_sldp(store.query(item.gold_query), answer_type)


def derive_symbols(item: EvalItem, store: GraphStore) -> set[str]:
    """The symbols a command item's gold query returns (one column)."""
    return {str(_row_value(row)) for row in store.query(item.gold_query)}


def verify_gold(dataset: Dataset, store: GraphStore) -> list[str]:
    """Every disagreement between the dataset's gold answers and the scene in ``store``."""
    from heracles_ros.formats.pddl_goal import check_goal

    problems: list[str] = []
    for item in dataset.items:
        label = f"item {item.id!r}"
        try:
            if item.kind == "command":
                expr = check_goal(item.goal, store)
                if item.gold_query:
                    derived, named = derive_symbols(item, store), set(symbols(expr))
                    if derived != named:
                        problems.append(
                            f"{label}: gold goal names {sorted(named)} but its gold query gives {sorted(derived)}"
                        )
            elif item.gold_query:
                derived_value = derive_answer(item, store)
                if not sldp_equal(derived_value, item.gold_value()):
                    problems.append(
                        f"{label}: gold answer {item.answer} but its gold query gives {to_sldp(derived_value)}"
                    )
        except GoalError as exc:
            problems.append(f"{label}: gold goal rejected: {exc}")
        except HeraclesError as exc:
            problems.append(f"{label}: {exc}")
    return problems
