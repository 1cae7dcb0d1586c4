"""The outcome words the code uses are exactly the words the frozen interfaces document."""
from __future__ import annotations

import re
from enum import Enum
from pathlib import Path

import pytest

from heracles_ros.outcomes import (
    SUCCESSFUL_COMMANDS,
    ChangeKind,
    CommandOutcome,
    DispatchStatus,
    OverlayEventKind,
    RecordStatus,
    RejectionCode,
    StepState,
)

ROOT = Path(__file__).resolve().parents[1]


def documented_words(interface: str, field: str) -> list[str]:
    """The ``a | b | c`` comment right above ``string <field>`` in an interface file."""
    text = (ROOT / interface).read_text()
    match = re.search(rf"^# ([\w| ]+)\nstring {field}$", text, re.M)
    assert match, f"{interface} documents no words for {field}"
    return [word.strip() for word in match.group(1).split("|")]


@pytest.mark.parametrize(("interface", "field", "enum"), [
    ("action/ExecuteCommand.action", "outcome", CommandOutcome),
    ("msg/DispatchResult.msg", "status", DispatchStatus),
    ("msg/DispatchProgress.msg", "state", StepState),
    ("msg/CommandRejection.msg", "code", RejectionCode),
])
def test_each_enum_is_the_documented_vocabulary_in_order(interface: str, field: str, enum: type[Enum]) -> None:
    assert [member.value for member in enum] == documented_words(interface, field)


def test_a_dispatched_plan_ends_the_command_under_the_same_word() -> None:
    """The language server passes the dispatcher's status through as the command's outcome."""
    for status in DispatchStatus:
        assert CommandOutcome(status.value).value == status.value


def test_only_succeeded_and_planned_are_successful_and_compare_as_words() -> None:
    assert {"succeeded", "planned"} == SUCCESSFUL_COMMANDS
    assert "succeeded" in SUCCESSFUL_COMMANDS and CommandOutcome.SUCCEEDED in SUCCESSFUL_COMMANDS
    assert "cancelled" not in SUCCESSFUL_COMMANDS


def listed_words(interface: str, before: str) -> list[str]:
    """The ``(a | b | c)`` list right after ``before`` in an interface file's comments (it may span comment lines)."""
    text = " ".join(line.lstrip("# ") for line in (ROOT / interface).read_text().splitlines())
    match = re.search(re.escape(before) + r" \(([\w| ]+)\)", text)
    assert match, f"{interface} lists no words after {before!r}"
    return [word.strip() for word in match.group(1).split("|")]


def test_the_record_and_history_words_are_those_the_services_document() -> None:
    """The words are stored in the database and sent as they are: ManageCorrections lists a record's status,
    Changes a history event's kind and the corrections' events beside them."""
    listed = [status.value for status in RecordStatus if status is not RecordStatus.CLAIMED]  # never listed
    assert listed == listed_words("srv/ManageCorrections.srv", "status")
    assert [kind.value for kind in ChangeKind] == listed_words("srv/Changes.srv", "kind")
    changes = " ".join(line.lstrip("# ") for line in (ROOT / "srv/Changes.srv").read_text().splitlines())
    corrections = OverlayEventKind.CORRECTION_RETIRED.value, OverlayEventKind.CORRECTION_RETURNED.value
    assert "kind {} | {}".format(*corrections) in changes


def test_the_words_are_distinct_across_the_timeline() -> None:
    """One timeline holds the Change events and the overlay's: no word may mean two things in it."""
    words = [kind.value for kind in ChangeKind] + [kind.value for kind in OverlayEventKind]
    assert len(words) == len(set(words))
