"""PDDL goals: parse the text, check it against the domain and the live database.

Keywords (``and`` / ``or`` / ``not``) and predicate names are case-insensitive
as in PDDL; scene symbols are kept exactly, because ``P12`` (a mesh place) and
``p12`` (a 3D place) are different nodes. For the same reason symbols go into
PDDL files under safe names (:func:`to_pddl_name` / :func:`from_pddl_name`).
A symbol's kind (object, place, room) is the label the database gives it,
never its first letter: ``Q6`` is a mesh place when the mirror put it there.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lark import Lark, Token, Transformer, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from heracles_ros.domain import TYPE_DESCRIPTIONS, TYPE_LAYERS, Domain, load_domain
from heracles_ros.errors import GoalError
from heracles_ros.formats.goal_ast import And, Atom, GoalExpr, Not, Or, atoms
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.additions import replacements
from heracles_ros.mirror.symbols import symbol_layers
from heracles_ros.schema import Layer, is_scene_symbol

_GRAMMAR = r"""
?start: expr
?expr: conj | disj | neg | atom
conj: "(" AND expr+ ")"
disj: "(" OR expr+ ")"
neg: "(" NOT expr ")"
atom: "(" WORD WORD* ")"

AND.2: /and(?![\w-])/i
OR.2: /or(?![\w-])/i
NOT.2: /not(?![\w-])/i
WORD: /[A-Za-z][A-Za-z0-9_-]*/
COMMENT: /;[^\n]*/

%import common.WS
%ignore WS
%ignore COMMENT
"""


class _ToAst(Transformer):
    def conj(self, items: list) -> And:
        return And(tuple(items[1:]))

    def disj(self, items: list) -> Or:
        return Or(tuple(items[1:]))

    def neg(self, items: list) -> Not:
        return Not(items[1])

    def atom(self, items: list[Token]) -> Atom:
        return Atom(str(items[0]).lower(), tuple(str(t) for t in items[1:]))


_PARSER = Lark(_GRAMMAR, parser="lalr", maybe_placeholders=False)

_TOKEN_NAMES = {
    "LPAR": "'('",
    "RPAR": "')'",
    "AND": "'and'",
    "OR": "'or'",
    "NOT": "'not'",
    "WORD": "a predicate or symbol",
    "$END": "end of goal",
}


#: Limits on one goal, checked before anything else looks at it. A task goal is a handful of
#: atoms a few levels deep; the parser and every consumer recurse once per level (Python stops
#: near 1,000), and the planner's cost grows with the symbols a goal names (each becomes a
#: PDDL object with shortest paths to all the others): see docs/limits.md.
MAX_GOAL_CHARS = 200_000
MAX_GOAL_DEPTH = 32
MAX_GOAL_ATOMS = 64


def parse_goal(text: str) -> GoalExpr:
    """The goal's tree; GoalError naming the offending token and its position, or the limit passed."""
    if not text or not text.strip():
        raise GoalError("empty goal: expected a PDDL goal such as (visited-object O1)")
    if len(text) > MAX_GOAL_CHARS:
        raise GoalError(f"goal too long: {len(text):,} characters, at most {MAX_GOAL_CHARS:,} are accepted")
    _check_depth(text)
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as exc:
        raise GoalError(_syntax_message(text, exc)) from exc
    expr: GoalExpr = _ToAst().transform(tree)
    count = sum(1 for _ in atoms(expr))
    if count > MAX_GOAL_ATOMS:
        raise GoalError(
            f"goal too large: {count:,} atoms, at most {MAX_GOAL_ATOMS} are planned at once; "
            "split the task into smaller goals"
        )
    return expr


def _check_depth(text: str) -> None:
    """GoalError at the first '(' nested deeper than MAX_GOAL_DEPTH (';' comments skipped)."""
    depth = 0
    in_comment = False
    for index, char in enumerate(text):
        if in_comment:
            in_comment = char != "\n"
        elif char == ";":
            in_comment = True
        elif char == "(":
            depth += 1
            if depth > MAX_GOAL_DEPTH:
                raise GoalError(
                    f"goal nested too deep: more than {MAX_GOAL_DEPTH} levels of parentheses at "
                    f"column {index + 1}; write it flatter ((and ...) and (or ...) take any number of parts)"
                )
        elif char == ")":
            depth -= 1


def _syntax_message(text: str, exc: UnexpectedInput) -> str:
    where = f"line {exc.line}, column {exc.column}" if text.count("\n") else f"column {exc.column}"
    # LALR reports an early end as UnexpectedToken $END (lark raises UnexpectedEOF from Earley only).
    if isinstance(exc, UnexpectedCharacters):
        char = text[exc.pos_in_stream] if exc.pos_in_stream is not None else "?"
        return f"unexpected character {char!r} at {where}: symbols are letters, digits, '-' and '_'"
    if isinstance(exc, UnexpectedToken):
        token: Token = exc.token  # type: ignore[attr-defined]
        if token.type == "$END":
            return f"goal ends early at column {len(text.rstrip()) + 1}: missing ')'"
        expected = sorted({_TOKEN_NAMES.get(name, name) for name in exc.expected})
        hint = ""
        if token.type == "RPAR":
            hint = " (one ')' too many)" if "$END" in exc.expected else " (empty parentheses or a missing operand?)"
        if token.type in ("AND", "OR", "NOT") and "'('" in expected:
            hint = f" ({token.value!r} must follow '(')"
        return f"unexpected {str(token.value)!r} at {where}; expected {' or '.join(expected)}{hint}"
    return f"cannot parse goal at {where}"


# --- symbol names inside PDDL files --------------------------------------------------
#: Readable names for the usual prefixes; any other prefix gets "u<letter>" (upper case) or
#: "l<letter>" (lower case), so every symbol has a name and no two collide once PDDL lower-cases them.
_TO_PDDL = {"P": "mp", "p": "p3d", "O": "o", "R": "r", "B": "b"}
_FROM_PDDL = {v: k for k, v in _TO_PDDL.items()}
_PDDL_NAME = re.compile(r"(mp|p3d|o|r|b|u[a-z]|l[a-z])(\d+)")
_SYMBOL_HINT = "expected a scene symbol: one letter and a number, e.g. O1, P12, Q6, p3, R2"


def to_pddl_name(symbol: str) -> str:
    """A scene symbol as a case-safe PDDL name: P12 -> mp12, p12 -> p3d12, O3 -> o3, Q6 -> uq6, f2 -> lf2."""
    if not is_scene_symbol(symbol):
        raise GoalError(f"{symbol!r} is not a scene symbol ({_SYMBOL_HINT})")
    prefix = _TO_PDDL.get(symbol[0])
    if prefix is None:
        prefix = ("u" if symbol[0].isupper() else "l") + symbol[0].lower()
    return prefix + symbol[1:]


def from_pddl_name(name: str) -> str:
    """The scene symbol of a name made by :func:`to_pddl_name` (case-insensitive, as PDDL is)."""
    match = _PDDL_NAME.fullmatch(name.lower())
    if match is None:
        raise GoalError(f"{name!r} is not a PDDL name this package made from a scene symbol")
    prefix = match.group(1)
    letter = _FROM_PDDL.get(prefix)
    if letter is None:
        letter = prefix[1].upper() if prefix[0] == "u" else prefix[1]
    return letter + match.group(2)


# --- validation -------------------------------------------------------------------------
_LAYER_NAMES = {
    Layer.OBJECT: "object",
    Layer.MESH_PLACE: "mesh place",
    Layer.PLACE: "3D place",
    Layer.ROOM: "room",
    Layer.BUILDING: "building",
}


@dataclass(frozen=True)
class CheckedGoal:
    """A valid goal and the kind (database label) of each symbol it names."""

    expr: GoalExpr
    kinds: Mapping[str, Layer] = field(default_factory=dict)


def check_goal(goal: str | GoalExpr, store: GraphStore, domain: Domain | None = None) -> GoalExpr:
    """The parsed goal if every predicate, arity, argument kind and symbol is right.

    Otherwise GoalError whose ``problems`` list every problem found, each naming
    the predicate or symbol; syntax errors stop before anything else is checked.
    """
    return checked_goal(goal, store, domain).expr


def checked_goal(goal: str | GoalExpr, store: GraphStore, domain: Domain | None = None) -> CheckedGoal:
    """:func:`check_goal`, also returning each symbol's kind as the database labels it."""
    expr = parse_goal(goal) if isinstance(goal, str) else goal
    domain = domain or load_domain()
    named = [arg for atom in atoms(expr) for arg in atom.args]
    kinds = symbol_layers(store, named)
    problems = static_problems(expr, domain, kinds)
    reported: set[str] = set()
    # An operator's addition that perception replaced (or an operator removed) is named with what became of it.
    fates = replacements(store, [arg for arg in named if is_scene_symbol(arg) and arg not in kinds])
    for atom in atoms(expr):
        for arg in atom.args:
            if is_scene_symbol(arg) and arg not in kinds and arg not in reported:
                reported.add(arg)
                why = fates.get(arg, "no node with that symbol in the database")
                problems.append(f"unknown symbol {arg!r} in {atom}: {why}")
    if problems:
        raise GoalError(problems)
    return CheckedGoal(expr, kinds)


def static_problems(expr: GoalExpr, domain: Domain, kinds: Mapping[str, Layer] | None = None) -> list[str]:
    """Problems in predicates, arities and symbols' shapes; argument kinds too when ``kinds`` is given.

    ``kinds`` maps symbols to their database labels (see :func:`symbol_layers`);
    a symbol missing from it is not judged here.
    """
    problems: list[str] = []
    known = ", ".join(domain.goal_predicates)
    for atom in dict.fromkeys(atoms(expr)):
        info = domain.goal_predicates.get(atom.predicate)
        if info is None:
            problems.append(f"unknown predicate {atom.predicate!r} in {atom}; known predicates: {known}")
            continue
        if len(atom.args) != info.arity:
            problems.append(
                f"wrong arity in {atom}: {info.name} takes {info.arity} argument"
                f"{'' if info.arity == 1 else 's'} {info.signature}, got {len(atom.args)}"
            )
            continue
        for position, (arg, kind) in enumerate(zip(atom.args, info.param_types, strict=True), start=1):
            if not is_scene_symbol(arg):
                problems.append(f"{arg!r} in {atom} is not a scene symbol ({_SYMBOL_HINT})")
                continue
            layer = kinds.get(arg) if kinds is not None else None
            if layer is not None and layer not in TYPE_LAYERS[kind]:
                problems.append(
                    f"wrong kind in {atom}: argument {position} of {info.name} must be "
                    f"{TYPE_DESCRIPTIONS[kind]}, got {_LAYER_NAMES[layer]} {arg!r}"
                )
    return problems
