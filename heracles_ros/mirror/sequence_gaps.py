"""What Hydra's sequence numbers say about snapshots the transport lost or reordered.

ROS 2 may drop a large message without a word (a reliable depth-1 topic keeps only the newest), so a
``DsgUpdate`` numbered 5 after 2 means 3 and 4 never arrived; one numbered 4 after 5 came late and is
older than what is mirrored. Hydra-ROS's ROS 2 sender leaves the number at 0
(docs/known-issues.md#hydra-sequence-number): then nothing can be told, and nothing is reported.
Every snapshot is a full graph, so the one after a gap repairs whatever the missing ones changed.
"""
from __future__ import annotations

from dataclasses import dataclass

#: A snapshot numbered at most this many behind the newest came late (reordered or repeated); further
#: back, or back to 1, the sender restarted its count.
LATE_WINDOW = 16


@dataclass(frozen=True)
class SequenceVerdict:
    """What one received snapshot's number says."""

    #: False for a late one: an older graph than the newest received, not to be mirrored over it.
    apply: bool = True
    #: Numbers skipped just before this one.
    missed: int = 0
    #: False when the sender numbers nothing (0 or unset): gaps cannot be seen.
    detectable: bool = True
    #: A sentence for the status and the log ('' when in order).
    note: str = ""


class SequenceWatch:
    """Follows the numbers of the snapshots received, in the order the transport delivered them."""

    def __init__(self) -> None:
        self.newest: int | None = None

    def see(self, sequence: int) -> SequenceVerdict:
        if sequence <= 0:  # unnumbered; a numbered sender that starts again at 0 also lands here
            self.newest = None
            return SequenceVerdict(detectable=False)
        newest, self.newest = self.newest, sequence
        if newest is None or sequence == newest + 1:
            return SequenceVerdict()
        if sequence > newest:
            missed = sequence - newest - 1
            first, last = newest + 1, sequence - 1
            which = f"{first}" if missed == 1 else f"{first}..{last}"
            return SequenceVerdict(missed=missed, note=f"snapshot{'s' if missed > 1 else ''} {which} never arrived "
                                   f"(received {sequence} after {newest}); {sequence} is applied in full")
        if sequence > 1 and newest - sequence < LATE_WINDOW:
            self.newest = newest
            return SequenceVerdict(apply=False, note=f"snapshot {sequence} arrived after {newest}: older than what "
                                   "is mirrored, not applied")
        return SequenceVerdict(note=f"the sender restarted its count ({sequence} after {newest})")
