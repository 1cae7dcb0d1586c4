"""The console's wire protocol (CONSOLE-PROTOCOL.md): page ops parsed into dataclasses, server messages built.

A page's message is checked here, whole, before anything acts on it: an unknown op,
a missing or mistyped field, or a text over its bound raises
:class:`~heracles_ros.errors.ConsoleMessageError` naming what was wrong, which the
server sends back as an ``error`` message (the socket stays open, nothing moves).
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConsoleMessageError
from heracles_ros.schema import is_scene_symbol

#: Longest instruction or question a page may send (characters).
TEXT_MAX = 1000
#: Longest name, symbol or id a page may send (characters).
NAME_MAX = 100
#: Longest history window a page may ask for (seconds: a week).
SINCE_MAX_S = 7 * 86400.0
#: Seconds a tab that went away leaves its commands running before they are cancelled: the language server's
#: own client_lost_s default, for a client that leaves the ROS graph (a tab is a client like any other).
CLIENT_LOST_S = 3.0


@dataclass(frozen=True)
class CommandOp:
    text: str
    execute: bool = True


@dataclass(frozen=True)
class AskOp:
    text: str
    request_id: str


@dataclass(frozen=True)
class ApproveOp:
    command_id: str


@dataclass(frozen=True)
class RefuseOp:
    command_id: str


@dataclass(frozen=True)
class CancelOp:
    command_id: str


@dataclass(frozen=True)
class ChooseOp:
    command_id: str
    symbol: str


@dataclass(frozen=True)
class StopOp:
    pass


@dataclass(frozen=True)
class ResumeOp:
    operator: str
    reason: str = ""


@dataclass(frozen=True)
class ObjectOp:
    symbol: str


@dataclass(frozen=True)
class ChangesOp:
    since_s: float = 3600.0


@dataclass(frozen=True)
class CorrectionsOp:
    pass


@dataclass(frozen=True)
class RevertOp:
    correction_id: str


PageOp = (CommandOp | AskOp | ApproveOp | RefuseOp | CancelOp | ChooseOp | StopOp | ResumeOp | ObjectOp
          | ChangesOp | CorrectionsOp | RevertOp)

OPS: dict[str, type[Any]] = {
    "command": CommandOp, "ask": AskOp, "approve": ApproveOp, "refuse": RefuseOp, "cancel": CancelOp,
    "choose": ChooseOp, "stop": StopOp, "resume": ResumeOp, "object": ObjectOp, "changes": ChangesOp,
    "corrections": CorrectionsOp, "revert": RevertOp,
}
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


# --- server -> page ------------------------------------------------------------------------------------
def encode(message: Any) -> str:
    """A message's text as it goes on the wire: ASCII JSON, so any string the server holds (a lone surrogate
    from anywhere included) reaches the page as an escape, and never stops the socket's outgoing stream."""
    return json.dumps(message, separators=(",", ":"))


def hello(session: str, namespace: str, secured: bool) -> dict[str, Any]:
    """The first message of a tab; ``history_max_s`` is the longest ``changes`` window the page may offer."""
    return {"type": "hello", "session": session, "namespace": namespace, "secured": secured,
            "history_max_s": SINCE_MAX_S}


def error(message: str, about: str = "") -> dict[str, Any]:
    return {"type": "error", "message": message, "about": about}


def stop(stopped: bool, hard: bool, reason: str, operator: str) -> dict[str, Any]:
    return {"type": "stop", "stopped": stopped, "hard": hard, "reason": reason, "operator": operator}


def robot(x: float, y: float, place: str) -> dict[str, Any]:
    return {"type": "robot", "x": x, "y": y, "place": place}


def answer(request_id: str, text: str = "", explanation: str = "", error_text: str = "") -> dict[str, Any]:
    return {"type": "answer", "request_id": request_id, "text": text, "explanation": explanation,
            "error": error_text}
