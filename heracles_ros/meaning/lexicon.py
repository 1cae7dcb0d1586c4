"""What the scene's labels mean: a shipped gloss and the words people use for each label.

Class names alone do not reach what operators say: "lorry" is close to "truck", but "the thing that keeps
food cold" is not close to "appliance". The lexicon (``data/meaning/lexicon.yaml``) lists, per normalised
label, a one-line gloss and its synonyms and kinds (hyponyms); a label it lacks falls back to its own words.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

from heracles_ros.errors import ConfigError
from heracles_ros.meaning.text import normalise

SHIPPED = Path(str(resources.files("heracles_ros") / "data" / "meaning" / "lexicon.yaml"))


@dataclass(frozen=True)
class Sense:
    """What one label means: its gloss and the words for it (both may be empty)."""

    gloss: str
    words: tuple[str, ...]


class Lexicon:
    """Normalised label -> :class:`Sense`."""

    def __init__(self, senses: Mapping[str, Sense]):
        self._senses = {normalise(label): sense for label, sense in senses.items()}

    @classmethod
    def load(cls, path: Path = SHIPPED) -> Lexicon:
        """Read a lexicon file; a malformed entry is an error naming the label."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read the lexicon {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"the lexicon {path} must map labels to entries, found {type(data).__name__}")
        senses: dict[str, Sense] = {}
        for label, entry in data.items():
            gloss = entry.get("gloss", "") if isinstance(entry, dict) else None
            words = entry.get("words", []) if isinstance(entry, dict) else None
            if not isinstance(gloss, str) or not isinstance(words, list) or not all(isinstance(w, str) for w in words):
                raise ConfigError(f"the lexicon {path}: entry {label!r} needs a text 'gloss' and a list of 'words'")
            senses[str(label)] = Sense(gloss, tuple(normalise(word) for word in words))
        return cls(senses)

    def __contains__(self, label: str) -> bool:
        return normalise(label) in self._senses

    def __len__(self) -> int:
        return len(self._senses)

    def texts(self, label: str) -> list[str]:
        """What is embedded for ``label``: its normalised name, its words and "name: gloss"."""
        name = normalise(label)
        sense = self._senses.get(name)
        if sense is None:
            return [name]
        return [name, *sense.words, *([f"{name}: {sense.gloss}"] if sense.gloss else [])]

    def words(self, label: str) -> frozenset[str]:
        """The label's own name and its words, normalised: a query that is one of them names the label."""
        name = normalise(label)
        sense = self._senses.get(name)
        return frozenset((name, *(sense.words if sense else ())))
