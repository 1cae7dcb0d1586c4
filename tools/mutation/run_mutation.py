"""Mutation score of the core modules with cosmic-ray: how many plausible bugs their tests catch.

For each module of tools/mutation/modules.toml: copy the source tree to a scratch
directory (cosmic-ray edits files in place; the worktree is never touched),
check its tests pass unmutated, let cosmic-ray list every mutant, keep a
deterministic sample of them (the ``--sample`` with the smallest hash of
their position and operator, the same on every run), run the module's tests
against each, and print killed / survived per module. A survivor listed in
tools/mutation/equivalent.toml (it cannot change behaviour; the entry says why)
counts apart, as does one that only changes a type annotation (never
evaluated in a module with ``from __future__ import annotations``, and
refused by mypy); the score is killed / (killed + the other survivors).
Those others' diffs go to ``out/mutation/<module>.txt`` for review.

    ./run.sh mutation                       every module, 25 mutants each
    ./run.sh mutation --sample 0            every mutant (hours on 2 cores)
    ./run.sh mutation --only mirror/reconcile --tree /tmp/old-checkout
    ./run.sh mutation --recheck --only mirror/corrections
    ./run.sh mutation --behavioural --only nodes/dispatcher

``--recheck`` runs the tests again against only the survivors the last run
wrote to ``out/mutation/<module>.txt`` (minutes, not hours): each survivor's
diff is applied to the current source, so one whose line has since changed
is reported as no longer applying, not counted.

``--behavioural`` runs the hand-written bugs of tools/mutation/behavioural.toml
instead of cosmic-ray's operators: each is one text change in a module
(a dropped condition, a stale value, a bound ignored), applied alone; the
module's tests should kill every one but those marked as known gaps.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import tomllib
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
_IGNORED = shutil.ignore_patterns(".venv*", ".git", "__pycache__", ".*_cache", "out", "build", "*.egg-info")


@dataclass(frozen=True)
class MutationData:
    """The three data files: the modules with their tests, the equivalent survivors, the hand-written bugs."""

    modules: dict[str, dict]
    equivalents: list[dict]
    bugs: list[dict]


def load_data(folder: Path = HERE) -> MutationData:
    return MutationData(
        modules=tomllib.loads((folder / "modules.toml").read_text())["modules"],
        equivalents=tomllib.loads((folder / "equivalent.toml").read_text()).get("equivalent", []),
        bugs=tomllib.loads((folder / "behavioural.toml").read_text())["mutant"],
    )


def stale_quotes(data: MutationData, tree: Path) -> list[str]:
    """What the data quotes that ``tree`` no longer holds, a line each: a module or test file that is gone, an
    entry naming no module of modules.toml, an equivalent's ``old`` that is no line of its module (it would never
    match a survivor: :func:`_is_equivalent`), a bug's ``old`` that is not in its module exactly once (it would
    no longer apply: :func:`_behavioural_module`)."""
    problems: list[str] = []
    sources: dict[str, str] = {}
    for name, spec in data.modules.items():
        path = tree / spec["path"]
        if path.is_file():
            sources[name] = path.read_text()
        else:
            problems.append(f"modules.toml: {name}'s path {spec['path']} is gone")
        gone = [test for test in spec["tests"] if not (tree / test).is_file()]
        problems += [f"modules.toml: {name}'s test {test} is gone" for test in gone]
    lines = {name: {line.strip() for line in source.splitlines()} for name, source in sources.items()}
    for entry in data.equivalents:
        if entry["module"] not in data.modules:
            problems.append(f"equivalent.toml: no module {entry['module']!r} in modules.toml")
        elif entry["module"] in lines and entry["old"].strip() not in lines[entry["module"]]:
            problems.append(f"equivalent.toml: {entry['module']} has no line {entry['old'].strip()!r}")
    for bug in data.bugs:
        if bug["module"] not in data.modules:
            problems.append(f"behavioural.toml: no module {bug['module']!r} in modules.toml ({bug['bug']})")
        elif bug["module"] in sources and (found := sources[bug["module"]].count(bug["old"])) != 1:
            problems.append(f"behavioural.toml: {bug['module']} holds the old text of {bug['bug']!r} {found} times, "
                            "not once")
    return problems


def _identity(item: object) -> str:
    [m] = item.mutations  # type: ignore[attr-defined]
    return f"{m.module_path}:{m.start_pos}:{m.end_pos}:{m.operator_name}:{m.occurrence}"


def _sample(session: Path, keep: int) -> int:
    """Mark all but ``keep`` mutants skipped, chosen by hash (stable across runs); returns how many there were."""
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = sorted(db.work_items, key=lambda it: hashlib.sha256(_identity(it).encode()).hexdigest())
        if keep > 0:
            skipped = WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="left out of the sample")
            db.set_multiple_results([it.job_id for it in items[keep:]], skipped)
        return len(items)


def _changed(diff: str) -> tuple[list[str], list[str]]:
    """The lines a mutant's diff removes and adds, as they are in the source."""
    lines = diff.splitlines()
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    return removed, added


class _NoAnnotations(ast.NodeTransformer):
    """Drops every annotation: what is left is what the module does when annotations are never evaluated."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AnnAssign:
        node.annotation = ast.Constant(None)
        self.generic_visit(node)
        return node


def _behaviour(source: str) -> str:
    return ast.dump(_NoAnnotations().visit(ast.parse(source)))


def _only_annotations(source: str, line: int, diff: str) -> bool:
    """Whether the one-line mutant at ``line`` of ``source`` changes nothing but a type annotation.

    The line it removes is looked for nearest ``line``: a recheck applies old survivors to a source
    whose lines may have moved.
    """
    if "from __future__ import annotations" not in source:
        return False
    removed, added = _changed(diff)
    lines = source.splitlines()
    at = [i for i, text in enumerate(lines) if len(removed) == 1 and text == removed[0]]
    if len(added) != 1 or not at:
        return False
    index = min(at, key=lambda i: abs(i + 1 - line))
    mutated = "\n".join([*lines[:index], added[0], *lines[index + 1 :]])
    try:
        return _behaviour(mutated) == _behaviour(source)
    except SyntaxError:
        return False


def _is_equivalent(name: str, diff: str, equivalents: list[dict]) -> bool:
    removed, added = ([line.strip() for line in lines] for lines in _changed(diff))
    return any(
        entry["module"] == name and entry["old"].strip() in removed and entry["new"].strip() in added
        for entry in equivalents
    )


def _test_command(tests: list[str], tree: Path) -> str:
    """The module's tests, stopping at the first failure (a mutant is killed by one), on FalkorDB only, on
    the suite's parallel workers (HERACLES_TEST_WORKERS, default 2; tests spread one by one, since a
    module's tests are a file or two).

    Their temporary directories go next to the mutated tree, so the servers a timed-out run leaves can be
    found by their working directory (:func:`_stop_leftover_servers`).
    """
    basetemp = shlex.quote(str(tree.parent / "pytest"))
    workers = int(os.environ.get("HERACLES_TEST_WORKERS", "2"))
    return (
        f"{shlex.quote(sys.executable)} -m pytest -x -q -p no:cacheprovider --basetemp={basetemp} -k 'not bolt' "
        f"-n {workers} --dist load " + " ".join(tests)
    )


#: Longest a mutant's test run may take in a recheck or a behavioural run (the slowest module's file takes ~3 min).
_MUTANT_TIMEOUT_S = 900


def _tests_fail(command: str, tree: Path) -> bool:
    """Whether the tests fail against the mutated ``tree``; a run past the timeout counts as failing, as
    cosmic-ray counts it (killed)."""
    try:
        run = subprocess.run(command, shell=True, cwd=tree, capture_output=True, timeout=_MUTANT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return True
    return run.returncode != 0


def _stop_leftover_servers(scratch: Path) -> int:
    """Kill the processes working in ``scratch``: embedded servers of test runs cosmic-ray killed at its timeout
    (a server runs in its own session, so it outlives the test process). Returns how many."""
    if not scratch.is_dir():
        return 0
    stopped = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if proc.joinpath("cwd").resolve().is_relative_to(scratch) and int(proc.name) != os.getpid():
                os.kill(int(proc.name), signal.SIGKILL)
                stopped += 1
        except (OSError, ValueError):
            continue  # gone meanwhile, or not ours to read
    return stopped


def _run_module(
    name: str, spec: dict, tree: Path, out: Path, sample: int, label: str, equivalents: list[dict]
) -> dict | None:
    tests = [t for t in spec["tests"] if (tree / t).is_file()]
    if not tests:
        print(f"{name}: no tests in {tree}, skipped", flush=True)
        return None
    command = _test_command(tests, tree)
    started = time.monotonic()
    baseline = subprocess.run(command, shell=True, cwd=tree, capture_output=True, text=True)
    took = time.monotonic() - started
    if baseline.returncode != 0:
        print(f"{name}: tests fail without any mutation, skipped\n{baseline.stdout[-2000:]}", flush=True)
        return None
    safe = name.replace("/", "_")
    config = tree / f"mutation_{safe}.toml"
    session = tree / f"mutation_{safe}.sqlite"
    config.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{spec["path"]}"\n'
        f"timeout = {max(60.0, 4 * took):.0f}\n"
        "excluded-modules = []\n"
        f"test-command = {command!r}\n"
        '[cosmic-ray.distributor]\nname = "local"\n'
    )
    subprocess.run(["cosmic-ray", "init", str(config), str(session)], cwd=tree, check=True)
    total = _sample(session, sample)
    subprocess.run(["cosmic-ray", "exec", str(config), str(session)], cwd=tree, check=True)
    killed, equivalent, survivors = 0, 0, []
    source = (tree / spec["path"]).read_text()
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome is not WorkerOutcome.NORMAL:
                continue  # skipped (outside the sample) or the mutant did not run
            if result.test_outcome is TestOutcome.SURVIVED:
                [mutation] = item.mutations
                diff = result.diff or ""
                if _is_equivalent(name, diff, equivalents) or _only_annotations(source, mutation.start_pos[0], diff):
                    equivalent += 1
                else:
                    survivors.append((_identity(item), result.diff or ""))
            elif result.test_outcome is TestOutcome.KILLED:
                killed += 1
    (out / f"{safe}{'-' + label if label else ''}.txt").write_text(
        f"{name}: {killed} killed, {len(survivors)} survived, {equivalent} equivalent, of {total} mutants\n\n"
        + "\n".join(f"--- {ident}\n{diff}" for ident, diff in sorted(survivors))
    )
    return {
        "module": name, "mutants": total, "killed": killed, "survived": len(survivors), "equivalent": equivalent,
        "test_s": round(took, 1),
    }


def _survivor_diffs(text: str) -> list[tuple[str, str]]:
    """(identity, unified diff) of each survivor in a survivors file written by ``_run_module``."""
    blocks = text.split("\n--- heracles_ros")[1:]
    return [
        ("heracles_ros" + head.strip(), diff.strip("\n") + "\n")
        for head, _, diff in (block.partition("--- mutation diff ---") for block in blocks)
    ]


def _recheck_module(name: str, spec: dict, tree: Path, out: Path, equivalents: list[dict]) -> None:
    """Apply each recorded survivor to the current source, run the module's tests, and say what they do now."""
    safe = name.replace("/", "_")
    recorded = out / f"{safe}.txt"
    if not recorded.is_file():
        print(f"{name}: no survivors file {recorded}; run it whole first", flush=True)
        return
    command = _test_command(spec["tests"], tree)
    source = (tree / spec["path"]).read_text()
    killed, equivalent, stale, survivors = 0, 0, 0, []
    for ident, diff in _survivor_diffs(recorded.read_text()):
        applied = subprocess.run(
            ["patch", "-p1", "--forward", "--no-backup-if-mismatch", "-r", "-"], cwd=tree, input=diff, text=True,
            capture_output=True,
        )
        if applied.returncode != 0:
            stale += 1
            (tree / spec["path"]).write_text(source)
            continue
        try:
            outcome = _tests_fail(command, tree)
        finally:
            (tree / spec["path"]).write_text(source)
        line = int(ident.split(":")[1].strip("()").split(",")[0])
        if outcome:
            killed += 1
        elif _is_equivalent(name, diff, equivalents) or _only_annotations(source, line, diff):
            equivalent += 1
        else:
            survivors.append((ident, diff))
    (out / f"{safe}-recheck.txt").write_text(
        f"{name} (recheck): {killed} killed, {len(survivors)} survived, {equivalent} equivalent, "
        f"{stale} no longer apply\n\n"
        + "\n".join(f"--- {ident}\n--- mutation diff ---\n{diff}" for ident, diff in survivors)
    )
    print(f"{name}: of the recorded survivors {killed} now killed, {len(survivors)} survive, {equivalent} equivalent, "
          f"{stale} no longer apply", flush=True)


def _behavioural_module(name: str, spec: dict, tree: Path, out: Path, mutants: list[dict]) -> None:
    """Apply each hand-written bug of ``name`` alone, run the module's tests, and say which were noticed."""
    path = tree / spec["path"]
    source = path.read_text()
    command = _test_command(spec["tests"], tree)
    lines: list[str] = []
    counts = {"killed": 0, "survived": 0, "known gap": 0, "no longer applies": 0}
    for mutant in (m for m in mutants if m["module"] == name):
        if source.count(mutant["old"]) != 1:
            verdict = "no longer applies"
        else:
            path.write_text(source.replace(mutant["old"], mutant["new"]))
            try:
                killed = _tests_fail(command, tree)
            finally:
                path.write_text(source)
            verdict = "killed" if killed else "known gap" if mutant.get("gap") else "survived"
        counts[verdict] += 1
        lines.append(f"{verdict:>17}: {mutant['bug']}" + (f" ({mutant['gap']})" if verdict == "known gap" else ""))
        print(f"{name}: {lines[-1]}", flush=True)
    safe = name.replace("/", "_")
    summary = ", ".join(f"{n} {what}" for what, n in counts.items())
    (out / f"{safe}-behavioural.txt").write_text(f"{name} (behavioural): {summary}\n\n" + "\n".join(lines) + "\n")
    print(f"{name} (behavioural): {summary}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=25, help="mutants per module (0: all)")
    parser.add_argument("--only", action="append", default=[], help="module name from modules.toml (repeatable)")
    parser.add_argument("--tree", type=Path, default=REPO, help="source tree to mutate (a copy is mutated)")
    parser.add_argument("--label", default="", help="added to the survivors' file names (e.g. before)")
    parser.add_argument("--recheck", action="store_true", help="run only the last run's survivors again")
    parser.add_argument("--behavioural", action="store_true", help="run the hand-written bugs of behavioural.toml")
    args = parser.parse_args()
    data = load_data()
    modules, equivalents, bugs = data.modules, data.equivalents, data.bugs
    unknown = (set(args.only) | {bug["module"] for bug in bugs}) - set(modules)
    if unknown:
        parser.error(f"unknown module(s) {sorted(unknown)}; known: {sorted(modules)}")
    for problem in stale_quotes(data, args.tree):
        print(f"warning: {problem}", file=sys.stderr, flush=True)
    out = REPO / "out" / "mutation"
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="heracles-mutation-") as scratch:
        tree = Path(scratch) / "tree"
        shutil.copytree(args.tree, tree, ignore=_IGNORED)
        with_bugs = [name for name in modules if any(bug["module"] == name for bug in bugs)]
        for name in args.only or (with_bugs if args.behavioural else list(modules)):
            row = None
            if args.behavioural:
                _behavioural_module(name, modules[name], tree, out, bugs)
            elif args.recheck:
                _recheck_module(name, modules[name], tree, out, equivalents)
            else:
                row = _run_module(name, modules[name], tree, out, args.sample, args.label, equivalents)
            if stopped := _stop_leftover_servers(tree.parent / "pytest"):
                print(f"{name}: stopped {stopped} servers that timed-out test runs left", flush=True)
            if row is not None:
                rows.append(row)
                score = row["killed"] / max(1, row["killed"] + row["survived"])
                print(f"{name}: score {score:.0%} ({row['killed']} killed, {row['survived']} survived, "
                      f"{row['equivalent']} equivalent; sample {args.sample or 'all'} of {row['mutants']})", flush=True)
    print("\nmodule                  mutants  killed  survived  equivalent  score")
    for row in rows:
        score = row["killed"] / max(1, row["killed"] + row["survived"])
        print(f"{row['module']:<24}{row['mutants']:>7}{row['killed']:>8}{row['survived']:>10}{row['equivalent']:>12}"
              f"  {score:.0%}")
    print(f"survivors' diffs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
