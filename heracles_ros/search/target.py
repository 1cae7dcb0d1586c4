"""What a search looks for: WHAT's own words as classes, how alike each class of the map is (the ranking's
``similarity``), and whether a newly seen object is it (the search's ending): by meaning, through the scene
words' ranking of :mod:`heracles_ros.meaning` (``Resolver.rank_terms``), where one is at hand.

The map lacks WHAT, so its words cannot name a class of the map; the thing is recognised when it appears:
the mirror then holds its class as a scene word, ranked for WHAT like every other. So "something to put out
fires" ranks the map's fire alarms as similar (the likelier rooms) and ends on a fire extinguisher once one is
seen. Without a ranking, WHAT is its own class (case and a plural ``s``/``es`` folded).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from heracles_ros.meaning.text import normalise

#: ``rank(text)``: every object word of the scene (normalised) with its score for ``text``, best first.
Ranking = Callable[[str], Sequence[tuple[str, float]]]

#: A class of the map scoring at least this for WHAT counts as a similar thing, weighted by its score: with
#: the offline word vectors "fire extinguisher" scores fire alarm 0.39 and smoke detector 0.25, everyday things
#: (plant, toilet, sofa) under 0.1.
SIMILAR_AT_LEAST = 0.2
#: A class is WHAT when it scores at least this and is within IS_IT_MARGIN of the best word for WHAT. Measured
#: with the offline word vectors: "something to put out fires" scores fire extinguisher 0.50 (fire alarm 0.53);
#: the nearest wrong class for "fire extinguisher(s)" itself, fire alarm, scores 0.39-0.41.
IS_IT_AT_LEAST = 0.45
IS_IT_MARGIN = 0.05


@dataclass(frozen=True)
class Target:
    """WHAT as a search reads it."""

    words: str
    #: WHAT itself as classes (normalised, singular and plural).
    classes: frozenset[str]
    #: Normalised class of the map -> how alike WHAT it is, in [0, 1] (WHAT's own classes 1).
    similarity: dict[str, float] = field(default_factory=dict)
    rank: Ranking | None = None

    def which(self, class_names: Iterable[str]) -> set[str]:
        """Those of ``class_names`` that are what the search looks for: WHAT's own classes, and by meaning the
        classes scoring at least IS_IT_AT_LEAST and within IS_IT_MARGIN of WHAT's best scene word (the scene
        words ranked afresh, so a class first seen during the search is among them)."""
        names = {name: normalise(name) for name in class_names}
        found = {name for name, normal in names.items() if normal in self.classes}
        if self.rank is None or len(found) == len(names):
            return found
        scores = dict(self.rank(self.words))
        best = max(scores.values(), default=0.0)
        return found | {name for name, normal in names.items()
                        if scores.get(normal, 0.0) >= max(IS_IT_AT_LEAST, best - IS_IT_MARGIN)}


def own_classes(what: str) -> frozenset[str]:
    """WHAT's words as classes: normalised, with and without a plural ``s`` or ``es``."""
    words = normalise(what)
    found = {words}
    if words.endswith("es"):
        found.add(words[:-2])
    if words.endswith("s"):
        found.add(words[:-1])
    return frozenset(found)


def target_of(what: str, rank: Ranking | None = None) -> Target:
    """The :class:`Target` of ``what``; ``rank`` (``Resolver.rank_terms``) adds the map's similar classes and
    recognition by meaning."""
    classes = own_classes(what)
    similarity = dict.fromkeys(classes, 1.0)
    if rank is not None:
        for term, score in rank(what):
            if score >= SIMILAR_AT_LEAST:
                similarity[term] = max(similarity.get(term, 0.0), min(1.0, float(score)))
    return Target(what, classes, similarity, rank)
