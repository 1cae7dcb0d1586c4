"""What changed in the scene since a time, as one timeline: the history's events (appeared, moved, ...),
the corrections that left the scene with their node or came back with it, and the objects the operator
added (and which perceived object replaced one).

``heracles changes`` and the dsg_mirror node's ``changes`` service both answer from here, so they
say the same thing: an operator's correction that stopped holding must not pass unnoticed in either.
"""
from __future__ import annotations

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.additions import AdditionEvent, Additions
from heracles_ros.mirror.corrections import CorrectionEvent, Corrections
from heracles_ros.mirror.history import ChangeEvent, read_changes

TimelineEvent = ChangeEvent | CorrectionEvent | AdditionEvent


def read_timeline(
    store: GraphStore, *, since: float, room: str | None = None, limit: int = 1000
) -> list[TimelineEvent]:
    """Events at or after ``since`` (epoch seconds), oldest first (the scene's before a correction's at the same
    time), at most ``limit``. A correction has no room: with ``room`` only the scene's own events and the additions
    in that room are listed."""
    events: list[TimelineEvent] = list(read_changes(store, since=since, room=room, limit=limit))
    if not room:
        events += Corrections(store).events(since=since)
    events += [event for event in Additions(store).events(since=since) if not room or event.record.room == room]
    return sorted(events, key=lambda event: event.t)[:limit]
