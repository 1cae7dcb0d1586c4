"""The mutation data still quotes the source as it is: an edit that moves or changes a quoted line fails here,
instead of silently turning an equivalent survivor into a counted one or a hand-written bug into one that no
longer applies (tools/mutation/run_mutation.py reads the data the same way)."""
from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def _run_mutation() -> ModuleType:
    """tools/mutation/run_mutation.py, loaded from its file (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location("run_mutation", REPO / "tools" / "mutation" / "run_mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_every_module_test_and_quoted_line_of_the_mutation_data_is_in_the_tree() -> None:
    mutation = _run_mutation()
    data = mutation.load_data()
    assert data.modules and data.equivalents and data.bugs
    assert mutation.stale_quotes(data, REPO) == []


def test_a_changed_line_a_doubled_bug_and_a_gone_test_are_each_named(tmp_path: Path) -> None:
    """The check itself, on a small tree whose quotes have gone stale each in its own way."""
    mutation = _run_mutation()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "walk.py").write_text("LIMIT_S = 2.0\nif stale:\n    stop()\nif stale:\n    stop()\n")
    (tmp_path / "test_walk.py").write_text("")
    modules = {"walk": {"path": "pkg/walk.py", "tests": ["test_walk.py", "test_gone.py"]},
               "gone": {"path": "pkg/gone.py", "tests": []}}
    equivalents = [{"module": "walk", "old": "  LIMIT_S = 2.0", "new": "LIMIT_S = 3.0"},
                   {"module": "walk", "old": "LIMIT_S = 1.0", "new": "LIMIT_S = 3.0"},
                   {"module": "run", "old": "LIMIT_S = 2.0", "new": "LIMIT_S = 3.0"}]
    bugs = [{"module": "walk", "bug": "stop skipped", "old": "if stale:\n    stop()", "new": "pass"},
            {"module": "walk", "bug": "limit doubled", "old": "LIMIT_S = 2.0", "new": "LIMIT_S = 4.0"}]

    problems = mutation.stale_quotes(mutation.MutationData(modules, equivalents, bugs), tmp_path)

    assert problems == [
        "modules.toml: walk's test test_gone.py is gone",
        "modules.toml: gone's path pkg/gone.py is gone",
        "equivalent.toml: walk has no line 'LIMIT_S = 1.0'",
        "equivalent.toml: no module 'run' in modules.toml",
        "behavioural.toml: walk holds the old text of 'stop skipped' 2 times, not once",
    ]
