"""``heracles bench limits``: hostile input against the read path, the tool, the parsers and the planner.

On a throwaway embedded FalkorDB holding the small scene (and the kilometre-scale
one for the goal):

- a corpus of hostile queries (the comment-in-a-procedure-name crashers found
  by fuzzing, then seeded random token soup) goes through the model's tool;
  the server must still be the same process and answer afterwards;
- ``UNWIND range(1,3000000) AS x RETURN x`` runs through the tool in a fresh
  process, whose peak RSS is reported (target: under 200 MB);
- a goal nested 1,000 deep is checked (target: a one-line error), and a
  5,000-atom goal is planned in a fresh process (target: refused, or planned
  within 30 s and 1.5 GB, Fast Downward included).
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from heracles_ros.errors import ConfigError

#: Texts that crashed FalkorDB 4.16 when sent unsanitized (found by fuzzing;
#: docs/known-issues.md#falkordb-comment-crash).
KNOWN_CRASHERS = (
    "CALL db./**/labels()",
    "CALL db.// comment\nlabels()",
    "CALL `db`./**/labels()",
    "CALL db/**/.labels()",
    "CALL algo./**/SPpaths({})",
    "CALL dbms./**/procedures()",
    "CALL db.idx./**/fulltext.queryNodes('Object', 'x')",
    "CALL db.FROM/**/.SPpathsWCC<> (n:A) SETn",
)
_VOCABULARY = (
    "MATCH", "RETURN", "CALL", "YIELD", "WITH", "WHERE", "UNWIND", "AS", "ORDER BY", "LIMIT", "UNION", "db", "algo",
    "labels", "propertyKeys", "procedures", "idx", "fulltext", "SPpaths", "(", ")", "[", "]", "{", "}", ".", ",",
    ":", ";", "-", "->", "*", "..", "=", "$p", "`a`", "`", "'s'", "'", '"', "\\", "/*", "*/", "//", "/**/", "\n",
    "0", "1e999", "null", "count(*)", "collect(", "(n)", "(n:Object)", "-[e]->", "[*1..2]", "CREATE", "DELETE",
)
_PREFIXES = ("", "CALL ", "MATCH (n) ", "RETURN ", "CALL db.", "CALL algo.", "UNWIND [1] AS x ")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="scene and corpus seed (default: 0)")
    parser.add_argument("--fuzz", type=int, default=2000, help="random hostile queries after the known ones")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from heracles_ros.embedded.server import temporary_server

    if args.fuzz < 0:
        raise ConfigError("--fuzz must be 0 or more")
    figures: dict[str, Any] = {}
    with temporary_server("heracles-bench-limits-") as uri:
        figures.update(_hostile_queries(uri, args.seed, args.fuzz))
        figures.update(_in_fresh_process("_huge_result", uri))
        figures.update(_in_fresh_process("_goal_limits", uri, str(args.seed)))
    return figures


def _in_fresh_process(function: str, *args: str) -> dict[str, Any]:
    """Run one measuring function of this module in a new interpreter: its peak RSS is then the figure."""
    code = (
        f"import json, sys; from heracles_ros.bench.limits import {function}; "
        f"print(json.dumps({function}(*sys.argv[1:])))"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ConfigError(f"bench step {function} failed: {done.stderr.strip()[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def corpus(seed: int, count: int) -> list[str]:
    """The known crashers, then ``count`` seeded random token soups."""
    rng = random.Random(seed)
    def soup() -> str:
        words = (rng.choice(_VOCABULARY) + rng.choice(("", " ")) for _ in range(rng.randint(1, 14)))
        return rng.choice(_PREFIXES) + "".join(words)

    soups = [soup() for _ in range(count)]
    return [*KNOWN_CRASHERS, *soups]


def _hostile_queries(uri: str, seed: int, count: int) -> dict[str, Any]:
    from heracles_ros.agent.tool import CypherTool
    from heracles_ros.embedded.server import EmbeddedServer
    from heracles_ros.graphdb import open_store
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.scene.synthetic import generate_scene

    server = EmbeddedServer(Path(uri.split(":", 1)[1]))
    with open_store(uri, graph="small", timeout_s=120.0) as store:
        Mirror(store).reconcile(generate_scene("small", seed))
        before = server.running()
        tool = CypherTool(store, timeout_s=2.0)
        texts = corpus(seed, count)
        started = time.perf_counter()
        outcomes = {"rows": 0, "refused": 0, "error": 0}
        for text in texts:
            out = tool.run(text)
            refused = out.text.startswith("ERROR: the query was not sent")
            outcomes["rows" if not out.error else "refused" if refused else "error"] += 1
        seconds = time.perf_counter() - started
        after = server.running()
        answers = store.query("MATCH (o:Object) RETURN count(o) AS n")[0]["n"] > 0
    return {
        "hostile_queries": len(texts),
        "hostile_known_crashers": len(KNOWN_CRASHERS),
        "hostile_answered_rows": outcomes["rows"],
        "hostile_refused_before_sending": outcomes["refused"],
        "hostile_database_errors": outcomes["error"],
        "hostile_seconds": seconds,
        "server_same_pid": before is not None and after is not None and before.pid == after.pid,
        "server_answers_after": answers,
    }


def _peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024


def _huge_result(uri: str) -> dict[str, Any]:
    from heracles_ros.agent.tool import CypherTool
    from heracles_ros.graphdb import open_store

    with open_store(uri, graph="small", timeout_s=60.0) as store:
        tool = CypherTool(store, timeout_s=60.0)
        tool.run("RETURN 1 AS warm")
        before = _peak_rss_mb()
        started = time.perf_counter()
        out = tool.run("UNWIND range(1,3000000) AS x RETURN x")
        seconds = time.perf_counter() - started
    return {
        "huge_result_rows": out.rows,
        "huge_result_rows_shown": out.rows_shown,
        "huge_result_s": seconds,
        "huge_result_rss_before_mb": before,
        "huge_result_peak_rss_mb": _peak_rss_mb(),
        "huge_result_target_mb": 200,
    }


def _goal_limits(uri: str, seed: str) -> dict[str, Any]:
    from heracles_ros.errors import GoalError
    from heracles_ros.formats.pddl_goal import parse_goal
    from heracles_ros.graphdb import open_store
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.planning.planner import Planner
    from heracles_ros.scene.synthetic import generate_scene

    deep = "(not " * 1000 + "(visited-place P1)" + ")" * 1000
    try:
        parse_goal(deep)
        deep_error = ""
    except GoalError as exc:
        deep_error = str(exc)
    with open_store(uri, graph="large", timeout_s=120.0) as store:
        Mirror(store).reconcile(generate_scene("large", int(seed)))
        places = [r["s"] for r in store.query("MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s LIMIT 5000")]
        huge = "(and " + " ".join(f"(visited-place {p})" for p in places) + ")"
        started = time.perf_counter()
        result = Planner(store, timeout_s=30.0).plan(huge)
        seconds = time.perf_counter() - started
    return {
        "deep_goal_error": deep_error,
        "deep_goal_error_lines": len(deep_error.splitlines()),
        "big_goal_atoms": len(places),
        "big_goal_status": result.status.value,
        "big_goal_reason": result.reason,
        "big_goal_s": seconds,
        "big_goal_peak_rss_mb": max(_peak_rss_mb(), _peak_rss_mb(resource.RUSAGE_CHILDREN)),
    }
