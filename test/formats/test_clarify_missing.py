"""CLARIFY's optional third field: what the map lacks, named by the model when nothing matched (the ask-back
that proposes a search)."""
from __future__ import annotations

import pytest

from heracles_ros.errors import AnswerFormatError
from heracles_ros.formats.sldp import Clarification, parse_clarification


def test_a_clarification_that_matched_nothing_may_name_what_the_map_lacks():
    assert parse_clarification('CLARIFY("The map has no fire extinguisher; search for one?", <>, '
                               '" fire   extinguisher ")') == Clarification(
        "The map has no fire extinguisher; search for one?", (), "fire extinguisher")
    assert parse_clarification('CLARIFY("Which one?", <O3, O7>)').missing == ""  # two fields: nothing missing


@pytest.mark.parametrize("text, message", [
    ('CLARIFY("Which one?", <O3>, "fire extinguisher")', "only when no candidate matched"),
    ('CLARIFY("Search?", <>, <O3>)', "a clarification is written CLARIFY"),
    ('CLARIFY("Search?", <>, "a", "b")', "a clarification is written CLARIFY"),
])
def test_a_malformed_missing_field_says_what_is_wrong(text, message):
    with pytest.raises(AnswerFormatError, match=message):
        parse_clarification(text)
