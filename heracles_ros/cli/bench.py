"""``heracles bench mirror|plan|db|read-path|limits|stop|cypher-parse|console|find``: measure, print figures.

``--json`` prints them as one object, for scripts.
"""
from __future__ import annotations

import argparse
import importlib
from typing import Any

from heracles_ros.cli.common import print_json

#: Sub-command -> module under heracles_ros.bench, and its one-line help.
BENCHMARKS = {
    "mirror": "decode, diff and write costs of the mirror on the kilometre-scale scene",
    "plan": "goal text to expanded plan on the kilometre-scale scene, and the naive encoding for contrast",
    "db": "restart time and data directory size of the embedded database after many loads of changing snapshots",
    "read-path": "expensive model queries on the read replica next to mirror reconciles and trivial reads",
    "limits": "hostile queries, a 3,000,000-row result, a 1,000-deep and a 5,000-atom goal against the limits",
    "stop": "from 'heracles stop' starting to the simulated robot standing still, with the CLI's own start-up",
    "cypher-parse": "FalkorDB's parse time against nesting depth per construct, and the worst the query guard admits",
    "console": "the console's map on the kilometre-scale scene: full message, one object moved, the page's first paint",
    "find": "heracles find at the kilometre-scale scene: latency, first use, memory, and accuracy on the query set",
    "as-of": "the scene as of a time at the kilometre-scale scene after an hour of churn: latency to the horizon",
    "search": "search for a hidden thing on seeded floors against nearest-room-first: found within 5 rooms, distance",
}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("bench", help="run a benchmark and print its figures")
    kinds = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name, help_text in BENCHMARKS.items():
        bench = kinds.add_parser(name, help=help_text)
        bench.add_argument("--json", action="store_true", help="print the figures as one JSON object")
        importlib.import_module(_module(name)).add_arguments(bench)
        bench.set_defaults(func=_run)


def _module(benchmark: str) -> str:
    return f"heracles_ros.bench.{benchmark.replace('-', '_')}"


def _run(args: argparse.Namespace) -> int:
    module = importlib.import_module(_module(args.benchmark))
    figures: dict[str, Any] = module.run(args)
    if args.json:
        print_json(figures)
    else:
        width = max(len(k) for k in figures) if figures else 0
        for key, value in figures.items():
            shown = f"{value:.4g}" if isinstance(value, float) else value
            print(f"{key:<{width}}  {shown}")
    return 0
