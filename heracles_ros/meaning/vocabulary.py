"""The scene's words (object classes and names, room classes) and their vectors, kept up to date.

The words are read again only when the database's stamp moves (the mirror's token, new with every
generation and after a reset, and the corrections' count and latest time: an operator's correction or
addition changes classes without a new generation), and each distinct word is embedded once per process
(:class:`.embeddings.CachedEmbedder`), so a new class Hydra starts reporting costs one embedding, once.
A graph without the mirror's bookkeeping is read on every call.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from heracles_ros.graphdb.cypher import meaning as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.meaning.embeddings import Embedder
from heracles_ros.meaning.lexicon import Lexicon
from heracles_ros.meaning.text import name_term, normalise


@dataclass(frozen=True)
class Term:
    """One word of the scene, normalised, and the spellings the database holds it in."""

    text: str
    #: ``class`` values (as stored) this word stands for.
    classes: frozenset[str]
    #: ``name`` values (as stored) whose name, index dropped, is this word.
    names: frozenset[str]


@dataclass(frozen=True)
class Words:
    """Terms of one kind (objects' or rooms') and their vectors, row i for term i."""

    terms: tuple[Term, ...]
    vectors: np.ndarray
    #: Normalised word -> indices of the terms it names outright (the term itself or a lexicon word for it).
    exact: dict[str, tuple[int, ...]]

    def scores(self, query: np.ndarray, words: str) -> np.ndarray:
        """Cosine of each term's vector with ``query``; a query that is one of a term's words scores at least
        EXACT_SCORE for it."""
        if not self.terms:
            return np.zeros(0, dtype=np.float32)
        scores = self.vectors @ query
        for index in self.exact.get(words, ()):
            scores[index] = max(float(scores[index]), EXACT_SCORE)
        return scores


#: The score of a term the query names word for word ("bin" for ``trash can``): above any paraphrase's.
EXACT_SCORE = 0.9


@dataclass(frozen=True)
class SceneWords:
    objects: Words
    rooms: Words


class Vocabulary:
    """The current :class:`SceneWords` of one store, re-read when its stamp moves (thread-safe)."""

    def __init__(self, store: GraphStore, embedder: Embedder, lexicon: Lexicon):
        self.store = store
        self.embedder = embedder
        self.lexicon = lexicon
        self._stamp: tuple[object, ...] | None = None
        self._words: SceneWords | None = None
        self._term_vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def current(self) -> SceneWords:
        store = self.store
        rows = store.query(q.WORDS_STAMP)
        stamp = tuple(rows[0].values()) if rows else (None,)
        with self._lock:
            if self._words is None or stamp != self._stamp or stamp[0] is None:
                self._words = SceneWords(
                    objects=self._words_of(_object_terms(store.query(q.OBJECT_WORDS))),
                    rooms=self._words_of(_class_terms(row["class"] for row in store.query(q.ROOM_WORDS))),
                )
                self._stamp = stamp
            return self._words

    def _words_of(self, terms: list[Term]) -> Words:
        vectors = [self._vector(term.text) for term in terms]
        exact: dict[str, list[int]] = {}
        for index, term in enumerate(terms):
            for word in self.lexicon.words(term.text):
                exact.setdefault(word, []).append(index)
        matrix = np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        return Words(tuple(terms), matrix, {word: tuple(found) for word, found in exact.items()})

    def _vector(self, term: str) -> np.ndarray:
        """A term's meaning: the mean of its name's, its words' and its gloss's unit vectors, made unit again."""
        vector = self._term_vectors.get(term)
        if vector is None:
            mean = self.embedder.embed(self.lexicon.texts(term)).mean(axis=0)
            vector = mean / max(float(np.linalg.norm(mean)), 1e-12)
            self._term_vectors[term] = vector
        return vector


def _object_terms(rows: Iterable[dict[str, object]]) -> list[Term]:
    classes: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    for row in rows:
        cls = row.get("class")
        name = row.get("name")
        if isinstance(cls, str) and normalise(cls):
            classes.setdefault(normalise(cls), set()).add(cls)
        term = name_term(name if isinstance(name, str) else None, cls if isinstance(cls, str) else None)
        if term and isinstance(name, str):
            names.setdefault(term, set()).add(name)
    return [Term(text, frozenset(classes.get(text, ())), frozenset(names.get(text, ())))
            for text in sorted(classes.keys() | names.keys())]


def _class_terms(values: Iterable[object]) -> list[Term]:
    classes: dict[str, set[str]] = {}
    for value in values:
        if isinstance(value, str) and normalise(value):
            classes.setdefault(normalise(value), set()).add(value)
    return [Term(text, frozenset(spellings), frozenset()) for text, spellings in sorted(classes.items())]
