"""The longest test files go out first in a parallel run, so no worker starts a long one last (a pytest plugin).

pytest-xdist hands each worker a file at a time (``--dist loadfile``). By default it sends the files with
the most tests first, which sent the slowest ones (a few long tests: ``test_up.py``, the colcon build)
out near the end, and the whole run then waited on one or two workers. With ``--no-loadscope-reorder``
it keeps the collection's order, which this plugin sets in each worker: files by the seconds they took
in a recorded parallel run (``file_seconds.json``, or ``--file-seconds PATH``), longest first; a file
not recorded counts as its tests times the recorded seconds per test. pytest-randomly's shuffle stands
within a file and between files recorded alike.

``--file-seconds-out PATH`` writes what each file took in this parallel run (every phase of each test,
as its worker measured it) into PATH, keeping what PATH holds for files this run did not run.
"""
from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path

import pytest

FILE_SECONDS = Path(__file__).with_name("file_seconds.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--file-seconds", metavar="PATH", default=str(FILE_SECONDS),
        help="the recorded seconds per test file that order a parallel run (default: %(default)s)",
    )
    parser.addoption(
        "--file-seconds-out", metavar="PATH", default=None,
        help="write each test file's seconds in this parallel run into PATH (JSON; refreshes file_seconds.json)",
    )


def read_file_seconds(path: Path) -> dict[str, float]:
    """Seconds per test file, by its path from the repository root ({} when there is no record)."""
    if not path.is_file():
        return {}
    try:
        recorded = json.loads(path.read_text())
    except ValueError as e:
        raise pytest.UsageError(f"{path}: not JSON ({e})") from e
    if not isinstance(recorded, dict) or not all(isinstance(s, (int, float)) for s in recorded.values()):
        raise pytest.UsageError(f"{path}: expected a JSON object of test file paths to seconds")
    return {str(name): float(seconds) for name, seconds in recorded.items()}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def expected_seconds(nodeids: list[str], recorded: dict[str, float]) -> dict[str, float]:
    """Each file's expected seconds: as recorded, else its tests times the recorded seconds per test."""
    counts = Counter(_file_of(nodeid) for nodeid in nodeids)
    known = [name for name in counts if name in recorded]
    per_test = sum(recorded[name] for name in known) / max(1, sum(counts[name] for name in known))
    return {name: recorded.get(name, counts[name] * per_test) for name in counts}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # only a parallel run's order decides when a file starts
        return
    recorded = read_file_seconds(Path(config.getoption("file_seconds")))
    expected = expected_seconds([item.nodeid for item in items], recorded)
    items.sort(key=lambda item: -expected[_file_of(item.nodeid)])  # stable: files stay whole, in shuffled order


class _Recorder:
    """A parallel run's controller: sums each file's seconds from its workers' reports, writes them at the end."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_file_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.seconds:
            return
        root = session.config.rootpath
        kept = {name: s for name, s in read_file_seconds(self.out).items() if (root / name).is_file()}
        merged = {**kept, **{name: round(s, 1) for name, s in self.seconds.items()}}
        self.out.write_text(json.dumps(dict(sorted(merged.items())), indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    out = config.getoption("file_seconds_out")
    controller = getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput")
    if out is not None and controller:
        config.pluginmanager.register(_Recorder(Path(out)), "heracles_file_seconds")
