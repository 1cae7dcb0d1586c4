"""Goals in plain words, for the operator who confirms them."""
from __future__ import annotations

from heracles_ros.formats.goal_words import goal_in_words
from heracles_ros.formats.pddl_goal import parse_goal


def test_every_predicate_reads_as_words_with_the_classes_of_its_symbols():
    classes = {"O14": "box", "P3": "mesh place", "R2": "lounge"}
    cases = {
        "(holding O14)": "hold O14 (box)",
        "(object-in-place O14 P3)": "put O14 (box) at place P3 (mesh place)",
        "(visited-room R2)": "visit room R2 (lounge)",
        "(in-room R2)": "end in room R2 (lounge)",
        "(safe O14)": "inspect O14 (box)",
        "(visited-object O9)": "go to O9",
        "(at-object O14)": "end next to O14 (box)",
        "(visited-place p4)": "visit place p4",
        "(at-place P3)": "end at place P3 (mesh place)",
    }
    for goal, words in cases.items():
        assert goal_in_words(parse_goal(goal), classes) == words


def test_connectives_read_as_and_either_or_and_do_not():
    goal = parse_goal("(and (holding O1) (not (visited-room R2)) (or (safe O3) (safe O4)))")
    assert goal_in_words(goal) == "hold O1, and do not visit room R2, and either inspect O3, or inspect O4"
