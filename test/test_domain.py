"""The PDDL domain file: the goal predicates the prompt and the checker rely on."""
from __future__ import annotations

from pathlib import Path

import pytest

from heracles_ros.domain import load_domain
from heracles_ros.errors import ConfigError

GOAL_PREDICATES = {
    "visited-place": ("place",),
    "at-place": ("place",),
    "visited-object": ("item",),
    "at-object": ("item",),
    "safe": ("item",),
    "visited-room": ("room",),
    "in-room": ("room",),
    "holding": ("item",),
    "object-in-place": ("item", "place"),
}


def test_goal_predicates_types_and_comments() -> None:
    domain = load_domain()
    assert {name: p.param_types for name, p in domain.goal_predicates.items()} == GOAL_PREDICATES
    assert all(len(p.comment) > 20 for p in domain.goal_predicates.values())
    assert "inspect" in domain.goal_predicates["safe"].comment
    assert domain.goal_predicates["object-in-place"].signature == "(object-in-place ?o - item ?p - place)"
    assert set(domain.actions) == {"goto", "inspect", "pick", "place"}
    assert "road" in domain.internal_predicates and "road" not in domain.goal_predicates
    assert load_domain() is domain  # cached


def test_broken_domain_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "d.pddl"
    path.write_text("(define (domain x) (:predicates\n ;;; goal predicates\n (p ?x - thing)\n))\n")
    with pytest.raises(ConfigError, match="unknown type"):
        load_domain(path)
    with pytest.raises(ConfigError, match="cannot read PDDL domain"):
        load_domain(tmp_path / "missing.pddl")
