"""One spelling per label, the words that name something, names without indices, and a place named in the text."""
from __future__ import annotations

from heracles_ros.meaning.text import content, name_term, normalise, split_place


def test_labels_take_one_spelling() -> None:
    assert normalise("Wall_Decoration") == normalise("wall decoration") == normalise(" Wall-Decoration ")
    assert normalise("Door") == "door"


def test_content_keeps_the_words_that_name_something() -> None:
    assert content("Can you find me something to sit on?") == "sit on"
    assert content("the bin") == "bin"
    assert content("the one") == "the one"  # nothing but stop words: kept whole


def test_a_name_is_a_word_of_its_own_only_when_it_adds_one() -> None:
    assert name_term("truck 12", "truck") is None
    assert name_term("fire extinguisher #3", "thing") == "fire extinguisher"
    assert name_term("", "box") is None and name_term(None, "box") is None


def test_the_place_is_what_follows_the_last_place_word() -> None:
    assert split_place("the bag in the road") == ("the bag", "the road")
    assert split_place("a box on the table near the door") == ("a box on the table", "the door")
    assert split_place("something to sit on") == ("something to sit on", None)
    assert split_place("in the kitchen") == ("in the kitchen", None)
