"""The PDDL domain, read from the package's ``data/domain.pddl``.

The file is the single source of truth: the planner hands its text to Fast
Downward, the goal checker takes predicate names, arities and parameter types
from it, and the prompt shows the ``;;`` comment written above each goal
predicate. Predicates under the ``;;; goal predicates`` marker may appear in
goals; those under ``;;; internal predicates`` are the planner's own.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from heracles_ros.errors import ConfigError
from heracles_ros.schema import Layer

#: Scene layers a symbol of each PDDL type may come from.
TYPE_LAYERS: dict[str, tuple[Layer, ...]] = {
    "place": (Layer.MESH_PLACE, Layer.PLACE),
    "item": (Layer.OBJECT,),
    "room": (Layer.ROOM,),
}

#: How a type is named in messages and prompts.
TYPE_DESCRIPTIONS: dict[str, str] = {
    "place": "a place (MeshPlace or Place node, e.g. P12, Q12 or p3)",
    "item": "an object (Object node, e.g. O3)",
    "room": "a room (Room node, e.g. R1)",
}

_GOAL_SECTION = "goal predicates"
_INTERNAL_SECTION = "internal predicates"


@dataclass(frozen=True)
class PredicateInfo:
    name: str
    #: Parameter variables in order, e.g. ("?o", "?p").
    param_names: tuple[str, ...]
    #: Parameter types in order, e.g. ("item", "place").
    param_types: tuple[str, ...]
    #: The ``;;`` comment above the predicate (what it means).
    comment: str

    @property
    def arity(self) -> int:
        return len(self.param_types)

    @property
    def signature(self) -> str:
        """``(object-in-place ?o - item ?p - place)``."""
        params = " ".join(f"{n} - {t}" for n, t in zip(self.param_names, self.param_types, strict=True))
        return f"({self.name}{' ' + params if params else ''})"


@dataclass(frozen=True)
class Domain:
    name: str
    text: str
    path: Path
    #: Predicates a goal may use, in file order.
    goal_predicates: dict[str, PredicateInfo]
    #: The planner's helper predicates (never in goals).
    internal_predicates: dict[str, PredicateInfo]
    actions: tuple[str, ...]


def default_domain_path() -> Path:
    return Path(str(resources.files("heracles_ros") / "data" / "domain.pddl"))


def load_domain(path: str | Path | None = None) -> Domain:
    """The parsed domain (cached per path); ConfigError naming the file when it is unusable."""
    return _load(Path(path).resolve() if path is not None else default_domain_path())


@functools.lru_cache(maxsize=8)
def _load(path: Path) -> Domain:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read PDDL domain {path}: {exc}") from exc
    return parse_domain(text, path)


def parse_domain(text: str, path: Path) -> Domain:
    name = re.search(r"\(\s*domain\s+([^\s()]+)\s*\)", text, re.IGNORECASE)
    if name is None:
        raise ConfigError(f"{path}: no (domain NAME) found")
    goal, internal = _predicates(text, path)
    if not goal:
        raise ConfigError(f"{path}: no predicates under ';;; {_GOAL_SECTION}'")
    for info in [*goal.values(), *internal.values()]:
        unknown = [t for t in info.param_types if t not in TYPE_LAYERS]
        if unknown:
            raise ConfigError(f"{path}: predicate {info.name} uses unknown type(s) {', '.join(unknown)}")
    actions = tuple(a.lower() for a in re.findall(r"\(:action\s+([^\s()]+)", text, re.IGNORECASE))
    return Domain(name.group(1).lower(), text, path, goal, internal, actions)


def _predicates(text: str, path: Path) -> tuple[dict[str, PredicateInfo], dict[str, PredicateInfo]]:
    """Predicates of the ``(:predicates ...)`` block by section, with their comments."""
    start = text.lower().find("(:predicates")
    if start < 0:
        raise ConfigError(f"{path}: no (:predicates ...) block")
    sections: dict[str, dict[str, PredicateInfo]] = {_GOAL_SECTION: {}, _INTERNAL_SECTION: {}}
    section: str | None = None
    comment: list[str] = []
    for raw in text[start + len("(:predicates"):].splitlines():
        line = raw.strip()
        if line.startswith(";;;"):
            section = line.lstrip(";").strip().lower()
            if section not in sections:
                raise ConfigError(f"{path}: unknown predicate section {line!r}")
            comment = []
        elif line.startswith(";"):
            comment.append(line.lstrip(";").strip())
        elif line.startswith("(") and section is not None:
            info = _predicate(line, " ".join(comment), path)
            sections[section][info.name] = info
            comment = []
        elif line.startswith(")"):
            break
        elif line:
            raise ConfigError(f"{path}: cannot read predicate line {line!r}")
    return sections[_GOAL_SECTION], sections[_INTERNAL_SECTION]


def _predicate(line: str, comment: str, path: Path) -> PredicateInfo:
    body = line.split(";", 1)[0].strip()
    if not (body.startswith("(") and body.endswith(")")):
        raise ConfigError(f"{path}: cannot read predicate {line!r}")
    words = body[1:-1].split()
    name, rest = words[0].lower(), words[1:]
    names: list[str] = []
    types: list[str] = []
    pending: list[str] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word == "-":
            if i + 1 >= len(rest) or not pending:
                raise ConfigError(f"{path}: bad parameter list in {line!r}")
            names += pending
            types += [rest[i + 1].lower()] * len(pending)
            pending = []
            i += 2
            continue
        pending.append(word.lower())
        i += 1
    if pending:
        raise ConfigError(f"{path}: untyped parameters {' '.join(pending)} in {line!r}")
    return PredicateInfo(name, tuple(names), tuple(types), comment)
