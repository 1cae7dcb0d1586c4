"""The README is what newcomers follow: its two commands and parameter tables must stay true."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
CI = Path(__file__).resolve().parents[1] / ".ci" / "run"


def _rows(node: str) -> dict[str, str]:
    """parameter -> default cell of the README's table for ``node``."""
    text = README.read_text()
    section = text.split(f"#### `{node}`", 1)[1].split("\n\n", 2)[1]
    return {m[1]: m[2] for m in re.finditer(r"^\| `([a-z0-9_]+)` \| `([^`]*)` \|", section, re.MULTILINE)}


@pytest.mark.parametrize("node", ["dsg_mirror", "language_server", "dispatcher"])
def test_every_declared_parameter_is_documented_with_its_default(node: str) -> None:
    specs = importlib.import_module(f"heracles_ros.nodes.{node}").PARAMETERS
    rows = _rows(node)
    assert set(rows) == {spec.name for spec in specs}
    for spec in specs:
        default = spec.default
        shown = (str(default).lower() if isinstance(default, bool) else f'"{default}"' if isinstance(default, str)
                 else "[" + ", ".join(map(str, default)) + "]" if isinstance(default, list) else str(default))
        assert rows[spec.name] == shown, spec.name


def test_the_two_commands_are_the_ones_ci_runs() -> None:
    text = README.read_text()
    block = text.split("## The two commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["./run.sh demo", "./run.sh test"]
    assert "./run.sh test" in CI.read_text()
