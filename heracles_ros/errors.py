"""One exception hierarchy for the whole library.

Every error a caller can act on derives from :class:`HeraclesError`; wrap
foreign exceptions with ``raise ... from exc`` so the cause stays visible.
"""
from __future__ import annotations


class HeraclesError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(HeraclesError):
    """A parameter, URI, environment variable or file is invalid."""


class MissingExtra(ConfigError):
    """A desk tool needs a library of the ``tools`` extra, which the robot's install leaves out."""


# --- graph database -------------------------------------------------------
class DatabaseError(HeraclesError):
    """The graph database failed or refused a request."""


class DatabaseUnavailable(DatabaseError):
    """The server cannot be reached (down, wrong address, not started)."""


class QueryError(DatabaseError):
    """The database rejected a query (syntax, semantics, types)."""


class ReadOnlyViolation(QueryError):
    """A read-only query tried to write; refused by the server."""


class QueryRefused(QueryError):
    """Not sent: text the server's parser cannot take safely, or a procedure that ignores timeouts."""


class QueryTooLarge(QueryError):
    """A query needed more memory, or returned more data, than its limit allows."""


class QueryTimeout(DatabaseError):
    """A query ran longer than its timeout."""


class QueryAborted(QueryError):
    """The server went away while running the query (it crashed on it, or was restarted to free it).

    A query error, not an unreachable database: the next query finds a fresh server.
    """


class DataDirError(DatabaseError):
    """The embedded database's files cannot be used as they are (corrupt, another version, full disk).

    ``unreadable`` is True when the files themselves are the problem (corrupt, another
    version), which ``heracles db reset`` may set aside; False for a full disk.
    """

    def __init__(self, message: str, *, unreadable: bool = True):
        super().__init__(message)
        self.unreadable = unreadable


class DatabaseBusy(DatabaseError):
    """The server is up but did not take the query: its queue is full, or it answered too late.

    Also raised when this process already runs its cap of concurrent model queries.
    """


# --- scene graphs ---------------------------------------------------------
class SceneError(HeraclesError):
    """A scene graph file or payload cannot be used."""


class SceneDecodeError(SceneError):
    """A spark_dsg payload or file could not be decoded."""


class ReplayInputError(SceneError):
    """What ``heracles replay`` was given cannot be replayed: a missing or unreadable scene file, a file that
    is not MCAP, a recording without the topic."""


class NoScene(SceneError):
    """The graph a command or node reads does not exist, or holds no mirrored scene (a misspelt graph name?)."""

    def __init__(self, message: str, *, missing: bool):
        super().__init__(message)
        #: True: the graph does not exist on the server; False: it exists but holds no scene node.
        self.missing = missing


class SuspectSnapshot(SceneError):
    """A snapshot would remove most of the mirror at once and was held back."""


class CorrectionError(HeraclesError):
    """An operator correction is not a narrow property update of existing nodes."""


# --- goals and planning ---------------------------------------------------
class GoalError(HeraclesError):
    """A PDDL goal is malformed or names unknown predicates or symbols.

    ``problems`` lists every problem found, each naming what was wrong.
    """

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("; ".join(self.problems))


class PlanningError(HeraclesError):
    """The planner could not be run (missing binary, crash, bad output)."""


# --- execution ------------------------------------------------------------
class ExecutionError(HeraclesError):
    """A plan step could not be carried out."""


class DriverError(ExecutionError):
    """The robot driver failed or is unavailable."""


# --- language models ------------------------------------------------------
class LLMError(HeraclesError):
    """The language model could not produce a usable reply."""


class LLMUnavailable(LLMError):
    """The provider SDK is missing, or the server cannot be reached."""


class LLMTimeout(LLMError):
    """The model did not answer within its timeout."""


class LLMOutputError(LLMError):
    """The model's reply could not be parsed or validated."""


class AnswerFormatError(LLMOutputError):
    """An answer is not valid SLDP, or not of the requested type."""


# --- the running system ---------------------------------------------------
class SystemUnavailable(HeraclesError):
    """A service or action of the running system was not found, or did not answer, within its bound.

    ``name`` is what did not answer (e.g. ``/spot/stop``); the CLI exits 4 on it.
    """

    def __init__(self, message: str, *, name: str):
        super().__init__(message)
        self.name = name


class RequestFailed(HeraclesError):
    """The running system answered, but with an error (its text is the message)."""


class CommandRejected(RequestFailed):
    """The language server rejected a command goal: ``code`` (busy, stopped, ...) and ``reason`` as it published
    them on ``command_rejections``; the message reads ``rejected (code): reason``."""

    def __init__(self, code: str, reason: str):
        super().__init__(f"rejected ({code}): {reason}")
        self.code = code
        self.reason = reason


class RequestCancelled(HeraclesError):
    """The caller cancelled the request; nothing after the current model turn ran."""


# --- the operator console -------------------------------------------------
class ConsoleMessageError(HeraclesError):
    """A console page's message is malformed: an unknown op, a missing, mistyped or oversized field.

    ``about`` is the op it answers ('' when not even that could be read); the page is told, nothing moves.
    """

    def __init__(self, message: str, *, about: str = ""):
        super().__init__(message)
        self.about = about

def describe(exc: BaseException) -> str:
    """``Kind: message``, the one form errors take in results: the class says what failed, the text what was wrong."""
    return f"{type(exc).__name__}: {exc}"
