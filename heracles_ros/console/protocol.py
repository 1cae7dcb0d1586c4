"""The console's wire protocol, every message both ways: shapes, bounds, builders and the page's parser.

The specification is docs/console.md, "Wire protocol"; test/console/test_protocol.py
holds this module and that section to the same messages and fields. Every message
the server sends is built by one function here (a TypedDict: a plain dict on the
wire, its keys checked by mypy), every op a page may send is a dataclass parsed by
:func:`parse_op`. A page's message is checked whole before anything acts on it: an
unknown op, a missing or mistyped field, or a text over its bound raises
:class:`~heracles_ros.errors.ConsoleMessageError` naming what was wrong, which the
server sends back as an ``error`` message (the socket stays open, nothing moves).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, Literal, TypedDict, TypeVar

from heracles_ros.errors import ConsoleMessageError
from heracles_ros.schema import is_scene_symbol

#: Longest instruction or question a page may send (characters).
TEXT_MAX = 1000
#: Longest name, symbol or id a page may send (characters).
NAME_MAX = 100
#: Longest history window a page may ask for (seconds: a week).
SINCE_MAX_S = 7 * 86400.0
#: Largest message a page may send (bytes); a larger one closes the socket with CloseCode.TOO_BIG.
MAX_MESSAGE_BYTES = 16 * 1024
#: Messages per second one socket may send; more are answered with an error and dropped.
RATE_PER_S = 20
#: Seconds a tab that went away leaves its commands running before they are cancelled: the language server's
#: own client_lost_s default, for a client that leaves the ROS graph (a tab is a client like any other).
CLIENT_LOST_S = 3.0


class CloseCode(IntEnum):
    """Why the server closes a tab's socket (RFC 6455 codes)."""

    #: The console is closing.
    GOING_AWAY = 1001
    #: A handshake refused (another origin, a wrong or missing secret, a host name not loopback's): before the
    #: socket opens, so the page sees HTTP 403.
    REFUSED = 1008
    #: A message over MAX_MESSAGE_BYTES.
    TOO_BIG = 1009
    #: The server could not send a message.
    SEND_FAILED = 1011
    #: The page fell behind its outbox's bound (the reason says by how much); reconnecting gets the whole map.
    TRY_AGAIN = 1013


# --- server -> page ------------------------------------------------------------------------------------
class HelloMessage(TypedDict):
    type: Literal["hello"]
    session: str
    namespace: str
    secured: bool
    #: The longest ``changes`` window the server answers (the page offers no longer).
    history_max_s: float


#: What a map item is: a room or an object (places travel apart, as MapPlaces).
MapLayer = Literal["room", "object"]


class MapItem(TypedDict):
    """One room or object on the map."""

    symbol: str
    layer: MapLayer
    cls: str
    name: str
    x: float
    y: float
    operator: bool


class MapPlaces(TypedDict):
    """Places (the planner's traversable layer) added or moved: symbols, and their positions as x, y pairs in one
    list of numbers (10^5 places as objects of their own were 70 % of a 14 MB first message)."""

    symbols: list[str]
    xy: list[float]


#: A place edge: its two places' symbols, the lower first (a JSON array of two strings).
MapEdge = tuple[str, str]


class MapEdges(TypedDict):
    add: list[MapEdge]
    remove: list[MapEdge]


class SceneMessage(TypedDict):
    type: Literal["scene"]
    #: True: the first of the whole map, replacing what the page holds; False: what changed since the last one.
    full: bool
    #: True: scene messages that follow complete the whole map (its places and edges, PLACES_PER_MESSAGE places or
    #: twice as many edges at a time); False once the page has it all.
    more: bool
    upsert: list[MapItem]
    remove: list[str]
    places: MapPlaces
    edges: MapEdges


class RobotMessage(TypedDict):
    type: Literal["robot"]
    x: float
    y: float
    #: The last place a goto reached ('' until one did).
    place: str


class StopMessage(TypedDict):
    type: Literal["stop"]
    stopped: bool
    hard: bool
    reason: str
    operator: str


class MirrorHealth(TypedDict):
    sequence: int
    nodes: int
    lag_s: float
    last_error: str
    age_s: float
    #: Snapshots the DsgUpdates' sequence numbers say never arrived, and those that came after a newer one.
    snapshots_missed: int
    snapshots_late: int
    #: False while the sender leaves its sequence numbers at 0: then no gap can be told (never "none missed").
    gaps_detectable: bool
    #: The last gap, late snapshot or restarted count, in words ('' if none yet).
    last_gap: str


class DatabaseHealth(TypedDict):
    ok: bool
    error: str


class StatusMessage(TypedDict):
    type: Literal["status"]
    #: None until the mirror's first status arrives.
    mirror: MirrorHealth | None
    database: DatabaseHealth


class PlanStep(TypedDict):
    action: str
    args: list[str]
    target: list[float] | None
    waypoints: list[list[float]]


class Plan(TypedDict):
    steps: list[PlanStep]
    summary: str


class Step(TypedDict):
    """One step's progress; -1 for a distance or time not known."""

    index: int
    count: int
    action: str
    state: str
    message: str
    robot: list[float] | None
    distance_remaining_m: float
    time_remaining_s: float
    #: The distance and time left as the CLI says them.
    remaining: str


class StageMessage(TypedDict):
    type: Literal["stage"]
    command_id: str
    stage: str
    message: str
    queries: list[str]
    goal: str
    goal_text: str
    plan: Plan | None
    step: Step | None


class Candidate(TypedDict):
    symbol: str
    cls: str
    room: str
    description: str
    x: float | None
    y: float | None


class ResultMessage(TypedDict):
    type: Literal["result"]
    command_id: str
    #: A :class:`~heracles_ros.outcomes.CommandOutcome` word.
    outcome: str
    reason: str
    goal_text: str
    clarification: str
    candidates: list[Candidate]
    steps_completed: int


class AnswerMessage(TypedDict):
    type: Literal["answer"]
    request_id: str
    text: str
    explanation: str
    error: str


class ObjectMessage(TypedDict):
    type: Literal["object"]
    symbol: str
    cls: str
    room: str
    #: Epoch seconds (UTC) of the last snapshot that held it; None for an operator's addition or no history.
    last_seen_s: float | None
    error: str


class AsOfItem(TypedDict):
    """One object as it was at the time asked (``moved``: drawn where it was, not where the map has it now;
    ``gone``: not in the scene now)."""

    symbol: str
    cls: str
    name: str
    x: float
    y: float
    room: str
    moved: bool
    gone: bool


class SceneAtMessage(TypedDict):
    type: Literal["scene_at"]
    #: The request's ago_s, echoed: the page keeps only the answer to its latest request.
    ago_s: float
    #: The time answered (epoch seconds, UTC) and the same as ISO 8601.
    at_s: float
    time: str
    #: From when the history answers exactly (None: no history).
    kept_from_s: float | None
    objects: list[AsOfItem]
    #: Objects on the map now that were not there then (drawn hidden).
    hidden: list[str]
    error: str


class CommandMessage(TypedDict):
    type: Literal["command"]
    command_id: str
    text: str


class ChangesMessage(TypedDict):
    type: Literal["changes"]
    #: History events as ``heracles changes --json`` prints them.
    events: list[dict[str, Any]]
    error: str


class CorrectionsMessage(TypedDict):
    type: Literal["corrections"]
    #: Corrections as ``heracles corrections --json`` prints them.
    items: list[dict[str, Any]]
    error: str


class ErrorMessage(TypedDict):
    type: Literal["error"]
    message: str
    #: The op it answers ('' when not even that could be read).
    about: str


ServerMessage = (HelloMessage | SceneMessage | RobotMessage | StopMessage | StatusMessage | StageMessage
                 | ResultMessage | AnswerMessage | ObjectMessage | CommandMessage | ChangesMessage
                 | CorrectionsMessage | SceneAtMessage | ErrorMessage)

#: Every message the server sends, by its ``type``.
SERVER_MESSAGES: dict[str, type[Any]] = {
    typing.get_args(typing.get_type_hints(kind)["type"])[0]: kind for kind in typing.get_args(ServerMessage)}


def hello(session: str, namespace: str, secured: bool) -> HelloMessage:
    """The first message of a tab: its session (to ask for again on reconnecting) and the server's bounds."""
    return {"type": "hello", "session": session, "namespace": namespace, "secured": secured,
            "history_max_s": SINCE_MAX_S}


def scene(full: bool, more: bool, upsert: list[MapItem], remove: list[str], places: Sequence[tuple[str, float, float]],
          edges_added: Sequence[MapEdge], edges_removed: Sequence[MapEdge]) -> SceneMessage:
    """``places``: (symbol, x, y) of each place added or moved."""
    return {"type": "scene", "full": full, "more": more, "upsert": upsert, "remove": remove,
            "places": {"symbols": [p[0] for p in places], "xy": [v for p in places for v in p[1:]]},
            "edges": {"add": list(edges_added), "remove": list(edges_removed)}}


def robot(x: float, y: float, place: str) -> RobotMessage:
    return {"type": "robot", "x": x, "y": y, "place": place}


def stop(stopped: bool, hard: bool, reason: str, operator: str) -> StopMessage:
    return {"type": "stop", "stopped": stopped, "hard": hard, "reason": reason, "operator": operator}


def status(mirror: MirrorHealth | None, database: DatabaseHealth) -> StatusMessage:
    return {"type": "status", "mirror": mirror, "database": database}


def stage(command_id: str, stage_name: str, message: str, queries: list[str], goal: str, goal_text: str,
          plan: Plan | None, step: Step | None) -> StageMessage:
    return {"type": "stage", "command_id": command_id, "stage": stage_name, "message": message, "queries": queries,
            "goal": goal, "goal_text": goal_text, "plan": plan, "step": step}


def result(command_id: str, outcome: str, reason: str, *, goal_text: str = "", clarification: str = "",
           candidates: list[Candidate] | None = None, steps_completed: int = 0) -> ResultMessage:
    """A command's last message (the defaults: one that ended before the server answered it)."""
    return {"type": "result", "command_id": command_id, "outcome": outcome, "reason": reason,
            "goal_text": goal_text, "clarification": clarification, "candidates": candidates or [],
            "steps_completed": steps_completed}


def answer(request_id: str, text: str = "", explanation: str = "", error_text: str = "") -> AnswerMessage:
    return {"type": "answer", "request_id": request_id, "text": text, "explanation": explanation,
            "error": error_text}


def object_details(symbol: str, cls: str, room: str, last_seen_s: float | None, error_text: str = ""
                   ) -> ObjectMessage:
    return {"type": "object", "symbol": symbol, "cls": cls, "room": room, "last_seen_s": last_seen_s,
            "error": error_text}


def command(command_id: str, text: str) -> CommandMessage:
    """A command taken: its id before any of its stages (so the page can cancel it at once)."""
    return {"type": "command", "command_id": command_id, "text": text}


def changes(events: list[dict[str, Any]], error_text: str = "") -> ChangesMessage:
    return {"type": "changes", "events": events, "error": error_text}


def corrections(items: list[dict[str, Any]], error_text: str = "") -> CorrectionsMessage:
    return {"type": "corrections", "items": items, "error": error_text}


def scene_at(ago_s: float, at_s: float, time_text: str, kept_from_s: float | None, objects: list[AsOfItem],
             hidden: list[str], error_text: str = "") -> SceneAtMessage:
    """The objects as of a time (or, with ``error_text``, why that time cannot be shown)."""
    return {"type": "scene_at", "ago_s": ago_s, "at_s": at_s, "time": time_text, "kept_from_s": kept_from_s,
            "objects": objects, "hidden": hidden, "error": error_text}


def error(message: str, about: str = "") -> ErrorMessage:
    return {"type": "error", "message": message, "about": about}


def encode(message: Any) -> str:
    """A message's text as it goes on the wire: ASCII JSON, so any string the server holds (a lone surrogate
    from anywhere included) reaches the page as an escape, and never stops the socket's outgoing stream."""
    return json.dumps(message, separators=(",", ":"))


#: Entries of a scene message encoded in one call (about a millisecond's work).
ENCODE_CHUNK = 1000
#: Places in one scene message of the whole map (edges: twice as many): the map comes in pieces of ~0.6-1 MB,
#: each compressed for the socket in a few milliseconds on the server's loop, the first with rooms and objects
#: alone, so the page draws those at once and the places as they come.
PLACES_PER_MESSAGE = 20_000
#: One entry of a list to encode (a map item before it is made a MapItem).
T = TypeVar("T")


def scene_text(full: bool, more: bool, upsert: Sequence[T], remove: Sequence[str],
               places: Sequence[tuple[str, float, float]], edges_added: Sequence[MapEdge],
               edges_removed: Sequence[MapEdge], *, item: Callable[[T], MapItem]) -> str:
    """:func:`encode` of :func:`scene`'s message, ENCODE_CHUNK entries at a time, each of ``upsert`` made a MapItem
    by ``item`` only as its chunk is encoded: a whole map in one call would hold the interpreter for a tenth of a
    second or more (and the STOP's thread with it)."""
    return (f'{{"type":"scene","full":{_bool(full)},"more":{_bool(more)},'
            f'"upsert":[{_chunked(upsert, item)}],"remove":[{_chunked(remove)}],'
            f'"places":{{"symbols":[{_chunked([p[0] for p in places])}],'
            f'"xy":[{_chunked([v for p in places for v in p[1:]])}]}},'
            f'"edges":{{"add":[{_chunked(edges_added)}],"remove":[{_chunked(edges_removed)}]}}}}')


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _chunked(entries: Sequence[T], to_json: Callable[[T], Any] | None = None) -> str:
    """The JSON of a list's entries (each as ``to_json`` gives it) without its brackets, a chunk at a time."""
    chunks = (entries[start:start + ENCODE_CHUNK] for start in range(0, len(entries), ENCODE_CHUNK))
    return ",".join(encode([to_json(e) for e in chunk] if to_json else list(chunk))[1:-1] for chunk in chunks)


# --- page -> server ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommandOp:
    op_name: ClassVar[str] = "command"
    text: str
    #: False: plan only. The console always asks for confirmation before the robot moves.
    execute: bool = True


@dataclass(frozen=True)
class AskOp:
    op_name: ClassVar[str] = "ask"
    text: str
    #: The page's own id, which the answer carries back.
    request_id: str


@dataclass(frozen=True)
class ApproveOp:
    op_name: ClassVar[str] = "approve"
    command_id: str


@dataclass(frozen=True)
class RefuseOp:
    op_name: ClassVar[str] = "refuse"
    command_id: str


@dataclass(frozen=True)
class CancelOp:
    op_name: ClassVar[str] = "cancel"
    command_id: str


@dataclass(frozen=True)
class ChooseOp:
    """A clarification's answer: a follow-up command in the same session naming the chosen object."""

    op_name: ClassVar[str] = "choose"
    command_id: str
    symbol: str


@dataclass(frozen=True)
class StopOp:
    op_name: ClassVar[str] = "stop"


@dataclass(frozen=True)
class ResumeOp:
    op_name: ClassVar[str] = "resume"
    operator: str
    reason: str = ""


@dataclass(frozen=True)
class ObjectOp:
    """Details of a clicked object."""

    op_name: ClassVar[str] = "object"
    symbol: str


@dataclass(frozen=True)
class ChangesOp:
    """The history of the last ``since_s`` seconds (at most SINCE_MAX_S)."""

    op_name: ClassVar[str] = "changes"
    since_s: float = 3600.0


@dataclass(frozen=True)
class SceneAtOp:
    """The objects as they were ``ago_s`` seconds ago (at most SINCE_MAX_S), from the mirror's history."""

    op_name: ClassVar[str] = "scene_at"
    ago_s: float


@dataclass(frozen=True)
class CorrectionsOp:
    op_name: ClassVar[str] = "corrections"


@dataclass(frozen=True)
class RevertOp:
    op_name: ClassVar[str] = "revert"
    correction_id: str


PageOp = (CommandOp | AskOp | ApproveOp | RefuseOp | CancelOp | ChooseOp | StopOp | ResumeOp | ObjectOp
          | ChangesOp | SceneAtOp | CorrectionsOp | RevertOp)

#: Every op a page may send, by its ``op``.
OPS: dict[str, type[Any]] = {kind.op_name: kind for kind in (
    CommandOp, AskOp, ApproveOp, RefuseOp, CancelOp, ChooseOp, StopOp, ResumeOp, ObjectOp, ChangesOp,
    SceneAtOp, CorrectionsOp, RevertOp)}
#: Fields holding free text (the longer bound); every other string is a name.
_TEXT_FIELDS = {"text", "reason"}
#: What no field may hold: NUL and the other C0 control characters but tab, line feed and carriage return
#: (a ROS string ends at a NUL: the rest of a command would be lost on the way), and lone UTF-16 surrogates
#: (JSON can carry them, UTF-8 cannot: no ROS message and no reply could).
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def parse_op(raw: str | bytes) -> PageOp:
    """One page message -> its op; ConsoleMessageError naming what was wrong."""
    try:
        message = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConsoleMessageError(f"not a JSON message: {exc}") from None
    except RecursionError:
        raise ConsoleMessageError("not a JSON message: nested too deeply") from None
    if not isinstance(message, dict):
        raise ConsoleMessageError("a message must be a JSON object with an \"op\"")
    name = message.get("op")
    if not isinstance(name, str):
        raise ConsoleMessageError(f"\"op\" must be a string, one of: {', '.join(OPS)}")
    if name not in OPS:
        shown = name[:NAME_MAX]
        # repr escapes what the reply could not carry; ``about`` names only an op name that is plain text.
        raise ConsoleMessageError(f"unknown op {shown!r} (ops: {', '.join(OPS)})",
                                  about="" if _NOT_TEXT.search(shown) else shown)
    kind = OPS[name]
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(kind):
        if spec.name not in message:
            if spec.default is dataclasses.MISSING:
                raise ConsoleMessageError(f"{name}: missing field {spec.name!r}", about=name)
            continue
        values[spec.name] = _checked(name, spec.name, spec.type, message[spec.name])
    op: PageOp = kind(**values)
    return op


def _checked(op: str, field: str, kind: Any, value: Any) -> Any:
    if kind == "str":
        if not isinstance(value, str):
            raise ConsoleMessageError(f"{op}: {field} must be a string", about=op)
        bound = TEXT_MAX if field in _TEXT_FIELDS else NAME_MAX
        if len(value) > bound:
            raise ConsoleMessageError(f"{op}: {field} is {len(value)} characters, at most {bound}", about=op)
        if (bad := _NOT_TEXT.search(value)) is not None:
            raise ConsoleMessageError(f"{op}: {field} holds {bad.group()!r} at character {bad.start()}, which is not "
                                      "text (a control character or a lone surrogate)", about=op)
        if field != "reason" and not value.strip():
            raise ConsoleMessageError(f"{op}: {field} is empty", about=op)
        if field == "symbol" and not is_scene_symbol(value):
            # A symbol ends up in an instruction to the model (choose): only a symbol's shape goes through.
            raise ConsoleMessageError(f"{op}: symbol {value!r} is not a scene symbol (e.g. O12)", about=op)
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConsoleMessageError(f"{op}: {field} must be true or false", about=op)
        return value
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) \
            or not 0 < value <= SINCE_MAX_S:
        raise ConsoleMessageError(f"{op}: {field} must be seconds in (0, {SINCE_MAX_S:g}]", about=op)
    return float(value)
