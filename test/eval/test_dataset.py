"""Dataset files: the bundled one loads; every kind of mistake is reported naming its item."""
from __future__ import annotations

from pathlib import Path

import pytest

from heracles_ros.errors import ConfigError
from heracles_ros.eval.dataset import load_dataset, parse_dataset

BUNDLED = Path(__file__).resolve().parents[2] / "heracles_ros" / "data" / "eval" / "small_scene.yaml"


def test_bundled_dataset_loads_with_both_kinds() -> None:
    dataset = load_dataset(BUNDLED)
    assert dataset.name == "small_scene"
    assert dataset.scene.kind == "small" and dataset.scene.seed == 0
    kinds = [item.kind for item in dataset.items]
    assert kinds.count("ask") >= 5 and kinds.count("command") >= 4
    assert all(item.gold_query for item in dataset.items)
    ask = next(item for item in dataset.items if item.id == "count-bags")
    assert ask.gold_value() == 4 and ask.answer_type == "number"
    assert dataset.select(ids=["count-bags"]).items == (ask,)
    assert {i.kind for i in dataset.select(kinds=["command"]).items} == {"command"}
    with pytest.raises(ConfigError, match=r"no item.*'nope'"):
        dataset.select(ids=["nope"])


def _item(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"id": "q1", "kind": "ask", "input": "How many bags?", "answer": "4"}
    base.update(fields)
    return {key: value for key, value in base.items() if value is not None}


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        ([_item(kind="query")], "item 1 ('q1'): 'kind' must be ask or command, got 'query'"),
        ([_item(id=None)], "item 1: missing 'id'"),
        ([_item(input="  ")], "item 1 ('q1'): missing 'input'"),
        ([_item(answer=None)], "item 1 ('q1'): missing 'answer'"),
        ([_item(answer="<1, 2")], "item 1 ('q1'): gold answer '<1, 2': not valid SLDP"),
        ([_item(answer_type="integer")], "item 1 ('q1'): unknown SLDP type 'integer'"),
        ([_item(answer_type="set")], "item 1 ('q1'): gold answer '4': expected a set, got a number"),
        ([_item(goal="(holding O1)")], "an ask item has an 'answer', not a 'goal'"),
        ([_item(colour="red")], "item 1 ('q1'): unknown key(s) colour"),
        ([_item(), _item()], "item 2: duplicate id 'q1'"),
        ([_item(kind="command", answer=None)], "item 1 ('q1'): missing 'goal'"),
        ([_item(kind="command", answer=None, goal="(holding O1")], "gold goal '(holding O1': "),
        ([_item(kind="command", answer=None, goal="(fly O1)")], "unknown predicate"),
        ([_item(kind="command", goal="(holding O1)")], "a command item has a 'goal', not an 'answer'"),
        ([_item(gold_query=3)], "'gold_query' must be Cypher text"),
        (["just a string"], "item 1: expected a mapping, got str"),
        ([], "'items' must be a non-empty list"),
    ],
)
def test_mistakes_are_named_with_their_item(items: list[object], fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_dataset({"items": items}, source="bad.yaml")
    assert fragment in str(info.value)
    assert str(info.value).startswith("bad.yaml: ")


def test_all_problems_are_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        parse_dataset({"items": [_item(kind="x"), _item(id="q2", answer="[")], "scene": {"kind": "huge"}})
    message = str(info.value)
    assert "3 problem(s)" in message
    assert "item 1 ('q1')" in message and "item 2 ('q2')" in message and "unknown kind 'huge'" in message


@pytest.mark.parametrize(
    ("scene", "fragment"),
    [
        ({"kind": "small", "file": "x.json"}, "exactly one of 'kind'"),
        ({"kind": "small", "seed": "zero"}, "seed must be an integer"),
        ({"kind": "small", "size": 3}, "unknown key(s) size"),
        ("small", "'scene' must be a mapping"),
    ],
)
def test_scene_reference_is_validated(scene: object, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_dataset({"scene": scene, "items": [_item()]})
    assert fragment in str(info.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dataset .*missing\.yaml cannot be read"):
        load_dataset(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("items: [\n  - id: a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"dataset .*broken\.yaml:2:3: YAML syntax error: expected the node content"):
        load_dataset(broken)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("42\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a mapping with 'items'"):
        load_dataset(scalar)


def test_numeric_yaml_answers_are_read_as_sldp_text(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(
        "scene: {file: scene.json}\nitems:\n  - {id: a, kind: ask, input: how far, answer: 2.5, answer_type: number}\n",
        encoding="utf-8",
    )
    dataset = load_dataset(path)
    assert dataset.items[0].answer == "2.5" and dataset.items[0].gold_value() == 2.5
    assert dataset.scene.file == tmp_path / "scene.json"
    assert dataset.name == "d" and dataset.path == path
