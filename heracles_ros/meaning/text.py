"""Words as the resolver compares them: one spelling per label, stop words and indices dropped.

The embedding model's tokenizer is case-sensitive (cos("Door", "door") is 0.31) and reads ``_`` as a
character, so ``Wall_Decoration`` and "wall decoration" must become one spelling before either is embedded.
"""
from __future__ import annotations

import re

#: Words that say nothing about what a thing is (articles, pronouns, requests); a text made only of them is
#: kept whole.
STOP_WORDS = frozenset((
    "a", "an", "the", "to", "of", "for", "with", "that", "which", "who", "where", "what", "is", "are", "be",
    "do", "does", "i", "you", "me", "my", "our", "your", "can", "could", "would", "please", "find", "show",
    "get", "bring", "fetch", "go", "look", "any", "some", "something", "thing", "things", "one", "ones", "it",
    "its", "there", "this", "these", "those",
))
_SPACES = re.compile(r"\s+")
_PUNCTUATION = re.compile(r"[^\w\s']")
_TRAILING_INDEX = re.compile(r"[\s_#-]*\d+$")
#: Words that introduce where a thing is: "the bag in the road".
_PLACE_WORDS = re.compile(r"\s(?:in|inside|at|near|by|on|from)\s(?=\S)")


def normalise(text: str) -> str:
    """Lower case, ``_``, ``-`` and punctuation as spaces, one space between words."""
    return _SPACES.sub(" ", _PUNCTUATION.sub(" ", text.replace("_", " ")).lower()).strip()


def content(text: str) -> str:
    """The words of ``text`` that name something (normalised), or all of it when none do."""
    words = normalise(text).split()
    kept = [word for word in words if word not in STOP_WORDS]
    return " ".join(kept or words)


def name_term(name: str | None, cls: str | None) -> str | None:
    """An object's name as a word of its own: its index dropped ("truck 12" -> "truck"); None when that only
    repeats its class (or is empty)."""
    term = normalise(_TRAILING_INDEX.sub("", name or ""))
    return None if not term or term == normalise(cls or "") else term


def split_place(text: str) -> tuple[str, str | None]:
    """("bag", "road") for "the bag in the road": the thing and the place named after it, at the last place
    word that has words on both sides; (text, None) when there is none."""
    matches = list(_PLACE_WORDS.finditer(" " + text.strip()))
    if not matches:
        return text, None
    last = matches[-1]
    what, where = (" " + text.strip())[: last.start()].strip(), (" " + text.strip())[last.end():].strip()
    if not what or not where:
        return text, None
    return what, where
