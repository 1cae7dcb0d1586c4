"""Evaluation datasets: questions with gold SLDP answers and commands with gold PDDL goals.

A dataset is a YAML file::

    name: small_scene
    scene: {kind: small, seed: 0}      # or {file: path/to/scene.json}
    items:
      - id: count-bags
        kind: ask
        input: How many bags are there?
        answer_type: number            # optional; enforced on the agent's answer
        answer: "4"                    # SLDP text
        gold_query: MATCH (o:Object {class: 'bag'}) RETURN count(o)
      - id: pick-bag
        kind: command
        input: Pick up the bag in the lounge.
        goal: (holding O22)            # PDDL goal text
        gold_query: ...                # returns the symbols the goal names

``gold_query`` is optional provenance: the Cypher that derives the gold answer
from the scene, so :mod:`heracles_ros.eval.gold` can re-derive it and a stale
gold answer is caught. Every problem in a file is reported at once, each naming
the item.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heracles_ros.errors import AnswerFormatError, ConfigError, GoalError
from heracles_ros.formats.sldp import SldpValue, check_type, parse_sldp, parse_type
from heracles_ros.yaml_files import load_yaml

KINDS = ("ask", "command")
_TOP_KEYS = {"name", "description", "scene", "items"}
_ITEM_KEYS = {"id", "kind", "input", "answer_type", "answer", "goal", "gold_query", "note"}
_SCENE_KINDS = ("small", "large")


@dataclass(frozen=True)
class SceneRef:
    """The scene a dataset's gold answers were computed on."""

    kind: str | None = None
    seed: int = 0
    file: Path | None = None

    def describe(self) -> str:
        if self.file is not None:
            return str(self.file)
        return f"synthetic {self.kind} scene, seed {self.seed}" if self.kind else "unspecified scene"


@dataclass(frozen=True)
class EvalItem:
    id: str
    kind: str  # "ask" | "command"
    input: str
    #: ask: the gold answer as SLDP text, and the type the question requests ("" = any).
    answer: str = ""
    answer_type: str = ""
    #: command: the gold PDDL goal.
    goal: str = ""
    gold_query: str = ""
    note: str = ""

    @property
    def gold(self) -> str:
        """The gold answer or goal text."""
        return self.answer if self.kind == "ask" else self.goal

    def gold_value(self) -> SldpValue:
        """The parsed gold SLDP answer (ask items)."""
        return parse_sldp(self.answer)


@dataclass(frozen=True)
class Dataset:
    name: str
    items: tuple[EvalItem, ...]
    scene: SceneRef = SceneRef()
    description: str = ""
    path: Path | None = None

    def select(self, ids: list[str] | None = None, kinds: list[str] | None = None) -> Dataset:
        """A dataset holding only the named items / kinds; ConfigError names unknown ids."""
        items = self.items
        if ids:
            known = {item.id for item in items}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise ConfigError(f"{self.name}: no item(s) with id {', '.join(map(repr, unknown))}")
            items = tuple(item for item in items if item.id in ids)
        if kinds:
            items = tuple(item for item in items if item.kind in kinds)
        return Dataset(self.name, items, self.scene, self.description, self.path)


def load_dataset(path: str | Path) -> Dataset:
    """Read and validate a dataset file; ConfigError lists every problem, each naming its item."""
    path = Path(path)
    data = load_yaml(path, "dataset")
    return parse_dataset(data, source=str(path), default_name=path.stem, path=path)


def parse_dataset(
    data: Any, *, source: str = "dataset", default_name: str = "dataset", path: Path | None = None
) -> Dataset:
    """Validate already-loaded YAML data (see the module docstring for the shape)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with 'items', got {type(data).__name__}")
    problems: list[str] = []
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        problems.append(f"unknown top-level key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_TOP_KEYS))})")
    scene = _scene(data.get("scene"), problems, None if path is None else path.parent)
    raw_items = data.get("items")
    items: list[EvalItem] = []
    if not isinstance(raw_items, list) or not raw_items:
        problems.append("'items' must be a non-empty list")
    else:
        seen: set[str] = set()
        for index, raw in enumerate(raw_items, start=1):
            item = _item(raw, index, problems)
            if item is None:
                continue
            if item.id in seen:
                problems.append(f"item {index}: duplicate id {item.id!r}")
            seen.add(item.id)
            items.append(item)
    if problems:
        raise ConfigError(f"{source}: {len(problems)} problem(s):\n- " + "\n- ".join(problems))
    name = str(data.get("name") or default_name)
    return Dataset(name, tuple(items), scene, str(data.get("description") or ""), path)


def _scene(raw: Any, problems: list[str], base_dir: Path | None) -> SceneRef:
    if raw is None:
        return SceneRef()
    if not isinstance(raw, dict):
        problems.append("'scene' must be a mapping like {kind: small, seed: 0} or {file: scene.json}")
        return SceneRef()
    extra = sorted(set(raw) - {"kind", "seed", "file"})
    if extra:
        problems.append(f"scene: unknown key(s) {', '.join(extra)} (allowed: kind, seed, file)")
    kind, seed, file = raw.get("kind"), raw.get("seed", 0), raw.get("file")
    if (kind is None) == (file is None):
        problems.append("scene: give exactly one of 'kind' (synthetic scene) or 'file'")
    if kind is not None and kind not in _SCENE_KINDS:
        problems.append(f"scene: unknown kind {kind!r} (choose {' or '.join(_SCENE_KINDS)})")
    if not isinstance(seed, int) or isinstance(seed, bool):
        problems.append(f"scene: seed must be an integer, got {seed!r}")
        seed = 0
    path = None
    if file is not None:
        path = Path(str(file))
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
    return SceneRef(kind=kind if isinstance(kind, str) else None, seed=seed, file=path)


def _item(raw: Any, index: int, problems: list[str]) -> EvalItem | None:
    if not isinstance(raw, dict):
        problems.append(f"item {index}: expected a mapping, got {type(raw).__name__}")
        return None
    item_id = raw.get("id")
    label = f"item {index} ({item_id!r})" if item_id is not None else f"item {index}"
    before = len(problems)

    def problem(message: str) -> None:
        problems.append(f"{label}: {message}")

    extra = sorted(set(raw) - _ITEM_KEYS)
    if extra:
        problem(f"unknown key(s) {', '.join(extra)} (allowed: {', '.join(sorted(_ITEM_KEYS))})")
    if not isinstance(item_id, str) or not item_id.strip():
        problem("missing 'id' (a non-empty string)")
    kind = raw.get("kind")
    if kind not in KINDS:
        problem(f"'kind' must be ask or command, got {kind!r}")
    text = raw.get("input")
    if not isinstance(text, str) or not text.strip():
        problem("missing 'input' (the question or instruction)")
    answer, answer_type, goal = _scalar_text(raw.get("answer")), raw.get("answer_type"), raw.get("goal")
    if kind == "ask":
        if goal is not None:
            problem("an ask item has an 'answer', not a 'goal'")
        if answer_type is not None:
            try:
                parse_type(str(answer_type))
            except ConfigError as exc:
                problem(str(exc))
                answer_type = None
        if not answer:
            problem("missing 'answer' (the gold SLDP answer)")
        else:
            try:
                value = parse_sldp(answer)
                if answer_type is not None:
                    check_type(value, str(answer_type))
            except AnswerFormatError as exc:
                problem(f"gold answer {answer!r}: {exc}")
    elif kind == "command":
        if answer is not None or answer_type is not None:
            problem("a command item has a 'goal', not an 'answer' / 'answer_type'")
        if not isinstance(goal, str) or not goal.strip():
            problem("missing 'goal' (the gold PDDL goal)")
        else:
            for message in _goal_problems(goal):
                problem(f"gold goal {goal!r}: {message}")
    gold_query = raw.get("gold_query")
    if gold_query is not None and (not isinstance(gold_query, str) or not gold_query.strip()):
        problem("'gold_query' must be Cypher text")
    if len(problems) > before:
        return None
    return EvalItem(
        id=str(item_id),
        kind=str(kind),
        input=str(text).strip(),
        answer=answer or "",
        answer_type=str(answer_type or ""),
        goal=str(goal or "").strip(),
        gold_query=str(gold_query or "").strip(),
        note=str(raw.get("note") or ""),
    )


def _scalar_text(value: Any) -> str | None:
    """YAML reads ``answer: 4`` as a number; the gold answer is its SLDP text either way."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).strip()


def _goal_problems(goal: str) -> list[str]:
    from heracles_ros.domain import load_domain
    from heracles_ros.formats.pddl_goal import parse_goal, static_problems

    try:
        return static_problems(parse_goal(goal), load_domain())
    except GoalError as exc:
        return list(exc.problems)
