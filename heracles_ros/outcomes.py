"""How things end, from Fast Downward to the CLI, and where the scene's records stand: one vocabulary, defined
here once.

Each stage has its own enum because each can end in its own ways, but a word
means the same wherever it appears ("cancelled" from a driver's step is
"cancelled" in the dispatch result and in the command's result), and every
value is the word on the wire: the comments of action/ExecuteCommand.action
(``outcome``), msg/DispatchResult.msg (``status``), msg/DispatchProgress.msg
(``state``) and msg/CommandRejection.msg (``code``) list exactly these, as
srv/ManageCorrections.srv (``status``) and srv/Changes.srv (``kind``) list the
record and history words, which are also the values stored in the database.
"""
from __future__ import annotations

from enum import Enum


class FDStatus(str, Enum):
    """How one Fast Downward search ended."""

    SOLVED = "solved"
    UNSOLVABLE = "unsolvable"
    TIMEOUT = "timeout"
    ERROR = "error"


class PlanStatus(str, Enum):
    """How planning one goal ended (the search's endings, or a goal the planner refused)."""

    SOLVED = "solved"
    UNSOLVABLE = "unsolvable"
    TIMEOUT = "timeout"
    ERROR = "error"
    INVALID_GOAL = "invalid_goal"


class DriverOutcome(str, Enum):
    """How a robot driver's one action ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"


class StepState(str, Enum):
    """A plan step's event as the dispatcher reports it (DispatchProgress ``state``)."""

    STARTED = "started"
    WALKING = "walking"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    REPLANNING = "replanning"
    CANCELLED = "cancelled"


class DispatchStatus(str, Enum):
    """How a dispatched plan ended (DispatchResult ``status``)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    #: The plan was not run at all (not solved, malformed, contradicted by the database).
    REJECTED = "rejected"
    #: Cut short or refused by the latched stop (the dispatcher node's ``stop`` service).
    STOPPED = "stopped"


class CommandOutcome(str, Enum):
    """How an ``execute_command`` goal ended (ExecuteCommand result ``outcome``); a dispatched plan's
    status is the command's outcome under the same word."""

    SUCCEEDED = "succeeded"
    #: Planned without executing (the goal's ``execute`` was false).
    PLANNED = "planned"
    #: The model asks the operator which object was meant.
    CLARIFY = "clarify"
    FAILED = "failed"
    CANCELLED = "cancelled"
    #: Not confirmed: the operator refused the plan, or did not answer in time.
    REFUSED = "refused"
    #: The dispatcher did not take the plan.
    REJECTED = "rejected"
    #: The latched stop was on; nothing moved.
    STOPPED = "stopped"


#: Command outcomes after which the action's status is SUCCEEDED (anything else: ABORTED, or CANCELED on a
#: cancel), as words: a result read off the wire compares equal.
SUCCESSFUL_COMMANDS = frozenset({CommandOutcome.SUCCEEDED.value, CommandOutcome.PLANNED.value})


class RejectionCode(str, Enum):
    """Why an ``execute_command`` goal was refused at once (CommandRejection ``code``)."""

    BUSY = "busy"
    INVALID = "invalid"
    NO_DISPATCHER = "no_dispatcher"
    NO_MODEL = "no_model"
    SHUTTING_DOWN = "shutting_down"
    STOPPED = "stopped"


class RecordStatus(str, Enum):
    """Where an operator's correction or addition stands: its record's ``status`` in the database (and in
    ManageCorrections' list)."""

    ACTIVE = "active"
    #: Set aside by the scene: a correction's node left it (the correction returns with the node), or a perceived
    #: object replaced an addition (the addition comes back when that object disappears).
    RETIRED = "retired"
    #: Undone by an operator; it never returns.
    REVERTED = "reverted"
    #: An addition's symbol reserved while its record is written (never listed).
    CLAIMED = "claimed"


class ChangeKind(str, Enum):
    """What a snapshot did to a scene node: a history ``Change``'s ``kind`` (Changes ``kind``)."""

    APPEARED = "appeared"
    DISAPPEARED = "disappeared"
    MOVED = "moved"
    RELABELLED = "relabelled"
    RENAMED = "renamed"


class OverlayEventKind(str, Enum):
    """What befell an operator's correction or addition, in the scene's timeline beside the Change events
    (Changes ``kind``)."""

    #: Its node left the scene.
    CORRECTION_RETIRED = "correction retired"
    #: Its node came back, and the correction with it.
    CORRECTION_RETURNED = "correction returned"
    ADDITION_ADDED = "addition added"
    #: A perceived object stood in for it long enough.
    ADDITION_REPLACED = "addition replaced"
    #: The object that replaced it disappeared.
    ADDITION_RETURNED = "addition returned"
