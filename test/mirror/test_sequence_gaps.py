"""Reading Hydra's sequence numbers: gaps counted, late snapshots refused, a restarted count followed,
and nothing claimed when the sender numbers nothing."""
from __future__ import annotations

from heracles_ros.mirror.sequence_gaps import LATE_WINDOW, SequenceWatch


def verdicts(*sequences: int) -> list[tuple[bool, int, bool]]:
    watch = SequenceWatch()
    return [(v.apply, v.missed, v.detectable) for v in map(watch.see, sequences)]


def test_a_gap_is_the_count_of_numbers_skipped_and_a_late_snapshot_is_not_applied() -> None:
    assert verdicts(1, 2, 5, 4, 6) == [(True, 0, True), (True, 0, True), (True, 2, True), (False, 0, True),
                                       (True, 0, True)]
    watch = SequenceWatch()
    for sequence in (7, 8):
        watch.see(sequence)
    gap = watch.see(11)
    assert "9..10 never arrived" in gap.note and "11" in gap.note
    assert SequenceWatch().see(8) == SequenceWatch().see(1)  # a first number is never a gap
    assert watch.see(11).apply is False  # the same one again: a repeat


def test_unnumbered_snapshots_report_no_gap_and_the_count_may_start_again() -> None:
    assert verdicts(0, 0, 0) == [(True, 0, False)] * 3  # Hydra-ROS on ROS 2: always 0
    assert verdicts(-1, 3) == [(True, 0, False), (True, 0, True)]
    # A sender that restarts at 1, or far behind, starts a new count: applied, no gap.
    assert verdicts(40, 41, 1, 2) == [(True, 0, True)] * 4
    assert verdicts(100, 100 - LATE_WINDOW, 100 - LATE_WINDOW + 1) == [(True, 0, True)] * 3
    assert verdicts(5, 6, 0, 1) == [(True, 0, True), (True, 0, True), (True, 0, False), (True, 0, True)]
