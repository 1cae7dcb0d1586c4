"""Reads that see one whole scene snapshot, never half of a reconcile.

A reconcile is several statements (the diff, then corrections and history),
and FalkorDB runs read queries on worker threads between the statements of a
MULTI/EXEC (
docs/known-issues.md#falkordb-readers-inside-multi-exec), so a reader could see objects removed but not yet re-added, or
none in a room. The mirror therefore publishes its progress on the MirrorMeta
node like a sequence lock: ``writing`` is set before the first statement of a
reconcile and cleared by the generation bump after the last. A reader reads
that stamp before and after its query; equal stamps, not writing, mean no
reconcile statement ran in between (each statement is atomic for readers on
both backends), so the query saw one snapshot. Otherwise it runs again once
the reconcile is over (looking every 5 to 20 ms), for at most ``wait_s``; then its rows come back marked
as possibly mixed (a full load of a large scene takes longer than that).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from heracles_ros.graphdb.cypher.mirror import READ_STAMP
from heracles_ros.graphdb.store import GraphStore

T = TypeVar("T")

#: Seconds a read waits for a reconcile in progress by default: a 1 % change of the
#: kilometre-scale scene takes ~0.3 s, a first load of it ~1.5 s.
DEFAULT_WAIT_S = 3.0
#: Longest pause between two looks at the stamp: short, so a reader catches the gap between two
#: reconciles (a stamp read costs well under a millisecond).
POLL_MAX_S = 0.02


@dataclass(frozen=True)
class Stamp:
    generation: object
    writing: bool


@dataclass(frozen=True)
class WholeRead(Generic[T]):
    """A read's result and whether it is known to come from one snapshot."""

    value: T
    whole: bool
    #: Times the read ran (more than once when a reconcile overlapped it).
    attempts: int


def read_stamp(store: GraphStore) -> Stamp:
    rows = store.query(READ_STAMP)
    if not rows:  # nothing mirrored yet: no reconcile can be in progress that a stamp would show
        return Stamp(None, False)
    return Stamp(rows[0].get("generation"), rows[0].get("writing") is True)


def read_whole(store: GraphStore, read: Callable[[], T], *, wait_s: float = DEFAULT_WAIT_S) -> WholeRead[T]:
    """Run ``read`` (queries on ``store``) until no reconcile overlapped it, for at most ``wait_s``."""
    deadline = time.monotonic() + wait_s
    delay = 0.005
    attempts = 0
    last: tuple[T] | None = None
    while True:
        before = read_stamp(store)
        if not before.writing:
            attempts += 1
            last = (read(),)
            if read_stamp(store) == before:
                return WholeRead(last[0], True, attempts)
        if time.monotonic() >= deadline:
            if last is None:  # a reconcile ran the whole time (or a writer died mid-way): read anyway
                attempts += 1
                last = (read(),)
            return WholeRead(last[0], False, attempts)
        time.sleep(delay)
        delay = min(2 * delay, POLL_MAX_S)
