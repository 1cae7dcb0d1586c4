"""The Fast Downward runner on hand-written problems over the package's domain (real planner)."""
from __future__ import annotations

from heracles_ros.domain import load_domain
from heracles_ros.outcomes import FDStatus
from heracles_ros.planning.fast_downward import anytime_search, parse_plan, run_fast_downward

# Three places in a line a - b - c; o1 lies at c. The `or` goal's cheap branch needs more steps.
PROBLEM = """(define (problem t) (:domain heracles)
  (:objects a b c - place o1 - item r1 - room)
  (:init (= (total-cost) 0) (at-place a) (visited-place a) (hand-empty)
    (road a b) (road b a) (road b c) (road c b) (road a c) (road c a)
    (= (distance a b) 300) (= (distance b a) 300) (= (distance b c) 300) (= (distance c b) 300)
    (= (distance a c) 600) (= (distance c a) 600)
    (object-at o1 b) (place-in-room c r1))
  (:goal %s)
  (:metric minimize (total-cost)))
"""


def test_solved_or_goal_is_optimal() -> None:
    result = run_fast_downward(load_domain().text, PROBLEM % "(or (visited-room r1) (holding o1))", timeout_s=30)
    assert result.status is FDStatus.SOLVED and result.optimal
    # Walking into the room costs 600 in one step; picking o1 up costs 300 + 100 in two.
    assert result.steps == ("(goto a b)", "(pick o1 b)") and result.cost == 400
    negated = run_fast_downward(
        load_domain().text, PROBLEM % "(and (visited-place c) (not (visited-place b)))", timeout_s=30
    )
    assert negated.ok and negated.steps == ("(goto a c)",)


def test_unsolvable_and_timeout_and_error() -> None:
    domain = load_domain().text
    contradiction = PROBLEM % "(and (holding o1) (not (holding o1)))"
    assert run_fast_downward(domain, contradiction, timeout_s=30).status is FDStatus.UNSOLVABLE
    assert run_fast_downward(domain, PROBLEM % "(visited-room r1)", timeout_s=0.01).status is FDStatus.TIMEOUT
    broken = run_fast_downward(domain, PROBLEM % "(visited-room nowhere)", timeout_s=30)
    assert broken.status is FDStatus.ERROR and broken.log_tail


def test_search_string_and_plan_file() -> None:
    assert 'description="prove"' in anytime_search(0.5) and "max_time=0.5" in anytime_search(0.5)
    steps, cost = parse_plan("(goto mp1 mp2)\n(PICK O3 MP2)\n; cost = 512 (general cost)\n")
    assert steps == ("(goto mp1 mp2)", "(pick o3 mp2)") and cost == 512
