"""Run the ``heracles`` command in-process and read what it printed."""
from __future__ import annotations

import json
from typing import Any

import pytest

from heracles_ros.cli import main


def heracles(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """(exit status, stdout parsed as JSON if it is, stderr)."""
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    try:
        return status, json.loads(out), err
    except json.JSONDecodeError:
        return status, out, err
