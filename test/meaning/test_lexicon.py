"""The shipped lexicon covers every label the package's scenes and the reference labelspaces use, and a malformed
lexicon is an error naming the entry."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from heracles_ros.errors import ConfigError
from heracles_ros.meaning.lexicon import Lexicon
from heracles_ros.scene.synthetic import (
    LARGE_OBJECT_CLASSES,
    LARGE_REGION_CLASSES,
    SMALL_OBJECT_CLASSES,
    SMALL_ROOM_CLASSES,
)

QUERIES = Path(__file__).resolve().parents[2] / "heracles_ros" / "data" / "meaning" / "find_queries.yaml"


def test_every_label_of_the_scenes_and_labelspaces_has_a_sense() -> None:
    lexicon = Lexicon.load()
    vocabularies = yaml.safe_load(QUERIES.read_text())["vocabularies"]
    labels = {*SMALL_OBJECT_CLASSES, *SMALL_ROOM_CLASSES, *LARGE_OBJECT_CLASSES, *LARGE_REGION_CLASSES,
              *(label for classes in vocabularies.values() for label in classes)}
    assert not {label for label in labels if label not in lexicon}
    texts = lexicon.texts("Wall_Decoration")
    assert texts[0] == "wall decoration" and texts[-1].startswith("wall decoration: ") and len(texts) >= 10
    assert "lorry" in lexicon.words("truck") and "truck" in lexicon.words("truck")


def test_a_label_it_lacks_falls_back_to_its_own_words() -> None:
    lexicon = Lexicon.load()
    assert lexicon.texts("Fire_Extinguisher") == ["fire extinguisher"]
    assert lexicon.words("fire extinguisher") == frozenset({"fire extinguisher"})


def test_a_malformed_lexicon_names_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.yaml"
    path.write_text("box:\n  gloss: a container\n  words: carton\n")
    with pytest.raises(ConfigError, match="entry 'box' needs a text 'gloss' and a list of 'words'"):
        Lexicon.load(path)
    path.write_text("- box\n")
    with pytest.raises(ConfigError, match="must map labels to entries"):
        Lexicon.load(path)
