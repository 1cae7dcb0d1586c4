"""A parallel run sends its longest test files out first, and records what each took (support/file_order.py).

The end-to-end cases run pytest in a subprocess on generated test files, one worker, so the order
the worker ran them in is the order the plugin set.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.file_order import expected_seconds, read_file_seconds

TEST_DIR = Path(__file__).resolve().parent

# name -> (tests, seconds each): "many" has the most tests but the least time, so xdist's own order
# (most tests first) would run it first.
FILES = {"test_long.py": (1, 0.6), "test_many.py": (3, 0.02), "test_middle.py": (1, 0.3)}


def test_a_file_not_recorded_counts_its_tests_at_the_recorded_seconds_per_test() -> None:
    nodeids = ["a.py::x", "a.py::y", "b.py::x", "new.py::x", "new.py::y", "new.py::z", "c.py::x"]
    recorded = {"a.py": 2.0, "b.py": 10.0, "c.py": 1.0, "gone.py": 99.0}
    # Recorded: 13 s over the 4 tests collected, so the new file's 3 tests count 9.75 s; a file gone counts nothing.
    assert expected_seconds(nodeids, recorded) == {"a.py": 2.0, "b.py": 10.0, "new.py": 9.75, "c.py": 1.0}
    assert expected_seconds(["a.py::x", "a.py::y"], {}) == {"a.py": 0.0}


@pytest.mark.parametrize("content", ["[1, 2]", '{"a.py": "slow"}', "{not json"])
def test_a_record_that_is_not_an_object_of_seconds_is_refused_naming_the_file(tmp_path: Path, content: str) -> None:
    record = tmp_path / "seconds.json"
    record.write_text(content)
    with pytest.raises(pytest.UsageError, match=str(record)):
        read_file_seconds(record)


def _run(tmp_path: Path, *options: str) -> list[str]:
    """Run the generated files on one worker; the files in the order their tests ran."""
    (tmp_path / "ran.txt").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(TEST_DIR)}
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_XDIST_WORKER_COUNT"):
        env.pop(name, None)  # this test may itself run on a worker of a parallel run
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "support.file_order", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-n", "1", "--dist", "loadfile", "--no-loadscope-reorder", "-c", os.devnull, "--rootdir", str(tmp_path),
         *options, *FILES],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ran = (tmp_path / "ran.txt").read_text().split()
    return [name for i, name in enumerate(ran) if i == 0 or ran[i - 1] != name]


def test_a_recorded_run_orders_the_next_one_longest_first(tmp_path: Path) -> None:
    for name, (tests, seconds) in FILES.items():
        (tmp_path / name).write_text(textwrap.dedent(f"""
            import time
            import pytest

            @pytest.mark.parametrize("i", range({tests}))
            def test_case(i):
                time.sleep({seconds})
                with open("ran.txt", "a") as ran:
                    ran.write("{name}\\n")
        """))
    record = tmp_path / "seconds.json"
    record.write_text(json.dumps({"test_gone.py": 5.0, "test_many.py": 40.0}))

    assert _run(tmp_path, "--file-seconds", str(tmp_path / "none.json"), "--file-seconds-out", str(record)) == [
        "test_long.py", "test_many.py", "test_middle.py"]  # nothing recorded: the collection's order
    seconds = read_file_seconds(record)
    assert set(seconds) == set(FILES), "the run's files replace their old seconds; a file that is gone is dropped"
    for name, (tests, each) in FILES.items():
        assert seconds[name] >= tests * each - 0.05, (name, seconds[name])

    assert _run(tmp_path, "--file-seconds", str(record)) == ["test_long.py", "test_middle.py", "test_many.py"]
