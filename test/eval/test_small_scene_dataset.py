"""The bundled dataset's gold answers re-derived on the mirrored small scene, so they cannot drift."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from heracles_ros.errors import ConfigError
from heracles_ros.eval.dataset import Dataset, load_dataset
from heracles_ros.eval.gold import derive_answer, rows_to_sldp, verify_gold
from heracles_ros.formats.sldp import Point, SldpDict, SldpList, SldpSet, parse_sldp, sldp_equal

BUNDLED = Path(__file__).resolve().parents[2] / "heracles_ros" / "data" / "eval" / "small_scene.yaml"


def test_gold_answers_match_the_scene(small_store: Any) -> None:
    dataset = load_dataset(BUNDLED)
    assert verify_gold(dataset, small_store) == []
    # Spot-check that the derivation really ran: the set answer came from the database.
    item = next(i for i in dataset.items if i.id == "trash-can-positions")
    derived = derive_answer(item, small_store)
    assert isinstance(derived, SldpSet) and len(derived.items) == 4
    assert sldp_equal(derived, item.gold_value())


def test_stale_gold_is_caught(small_store: Any) -> None:
    dataset = load_dataset(BUNDLED)
    stale = []
    for item in dataset.items:
        if item.id == "count-bags":
            item = replace(item, answer="5")
        elif item.id == "hallway-bags":
            item = replace(item, answer="<O2>")
        elif item.id == "pick-lounge-bag":
            item = replace(item, goal="(holding O2)")
        elif item.id == "any-hallway-laptop":
            item = replace(item, goal="(or (visited-object O8) (visited-object O999))")
        stale.append(item)
    problems = verify_gold(Dataset(dataset.name, tuple(stale), dataset.scene), small_store)
    text = "\n".join(problems)
    assert len(problems) == 4, text
    assert "item 'count-bags': gold answer 5 but its gold query gives 4" in text
    assert "item 'hallway-bags': gold answer <O2> but its gold query gives <O2, O26>" in text
    assert "item 'pick-lounge-bag': gold goal names ['O2'] but its gold query gives ['O22']" in text
    assert "item 'any-hallway-laptop': gold goal rejected: unknown symbol 'O999'" in text


@pytest.mark.parametrize(
    ("rows", "answer_type", "expected"),
    [
        ([{"n": 4}], "number", "4"),
        ([{"s": "O1"}, {"s": "O2"}], "set[string]", "<O1, O2>"),
        ([{"s": "O2"}, {"s": "O1"}], "list", "[O2, O1]"),
        ([{"x": 1.0, "y": 2.0, "z": 3.0}], "point", "POINT(1 2 3)"),
        ([{"p": {"x": 1, "y": 2, "z": 3}}], "set[point]", "<POINT(1 2 3)>"),
        ([{"key": "R1", "value": ["O1", "O2"]}], "dict[set[string]]", "{R1: <O1, O2>}"),
        ([{"key": "R1", "value": 3}], "dict", "{R1: 3}"),
        ([], "set", "<>"),
    ],
)
def test_rows_become_sldp(rows: list[dict[str, Any]], answer_type: str, expected: str) -> None:
    value = rows_to_sldp(rows, answer_type)
    assert value == parse_sldp(expected)
    assert isinstance(value, str | float | Point | SldpList | SldpSet | SldpDict)


@pytest.mark.parametrize(
    ("rows", "answer_type", "fragment"),
    [
        ([{"n": 1}, {"n": 2}], "number", "exactly one row, the query returned 2"),
        ([{"a": 1, "b": 2}], "set", "expected one column"),
        ([{"k": "a", "v": 1}], "dict", "columns key and value"),
        ([{"n": "four"}], "number", "cannot read 'four' as a number"),
        ([{"key": "a", "value": 1}, {"key": "a", "value": 2}], "dict", "duplicate dict key"),
    ],
)
def test_rows_that_do_not_fit_the_type(rows: list[dict[str, Any]], answer_type: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        rows_to_sldp(rows, answer_type)
    assert fragment in str(info.value)
