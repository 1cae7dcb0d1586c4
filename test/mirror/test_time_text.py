"""Times as an operator writes them: durations ago, ISO times (UTC unless zoned), epoch seconds."""
from __future__ import annotations

import pytest
from support.zone import local_zone

from heracles_ros.errors import ConfigError
from heracles_ros.mirror.time_text import parse_time

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def test_durations_times_and_epochs() -> None:
    assert parse_time("10m", what="--since", now=1000.0) == 400.0
    assert parse_time("1.5h", what="--at", now=10_000.0) == 4600.0
    assert parse_time(" 30 s ", what="--at", now=100.0) == 70.0
    assert parse_time("2d", what="--at", now=T0) == T0 - 2 * 86400
    assert parse_time("1800000000", what="--since") == T0
    assert parse_time("2027-01-15T08:00:00", what="--since") == T0
    assert parse_time("2027-01-15T09:00:00+01:00", what="--since") == T0
    assert parse_time("2027-01-15T08:00:00.250Z", what="--at") == T0 + 0.25  # as the history prints it


def test_a_time_without_a_zone_is_utc_whatever_the_machines_zone() -> None:
    with local_zone():
        assert parse_time("2027-01-15T08:00:00", what="--at") == T0
        assert parse_time("2027-01-15T13:30:00+05:30", what="--at") == T0


@pytest.mark.parametrize("text", ["yesterday", "10 minutes", "", "2027-13-01"])
def test_an_unreadable_time_is_an_error_naming_the_option_and_the_text(text: str) -> None:
    with pytest.raises(ConfigError, match=f"--at {text!r} is neither a duration"):
        parse_time(text, what="--at")


@pytest.mark.parametrize("text", ["nan", "inf", "-inf"])
def test_a_time_that_is_not_finite_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=f"--since {text!r}: epoch seconds must be a finite number"):
        parse_time(text, what="--since")
