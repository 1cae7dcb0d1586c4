"""``heracles demo``: the whole system on the bundled example scene (``./run.sh demo``; docs/desk.md)."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from heracles_ros.cli.common import add_model_options, print_json
from heracles_ros.demo.language import choose_language_model
from heracles_ros.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the whole system on the example scene with a simulated Spot",
        description="Start the database, mirror the bundled example scene, bring up the nodes with the "
        "simulated Spot, then ask a question and execute a command in plain language through the language "
        "server, with the configured language model or, without one, SCRIPTED model turns (labelled as such). "
        "Prints every step and writes a picture of the scene with the path walked.",
    )
    parser.add_argument("--db", default=None, metavar="URI",
                        help="graph database (default: an embedded FalkorDB under --out); the demo writes the "
                        "example scene into its graph 'heracles_demo'")
    add_model_options(parser, without="the scripted model turns, labelled as such")
    parser.add_argument("--out", type=Path, default=Path("out") / "demo", metavar="DIR",
                        help="where the picture (and the embedded database) go (default: ./out/demo)")
    parser.add_argument("--time-scale", type=float, default=10.0, metavar="X",
                        help="simulated seconds per wall-clock second of the simulated Spot (default: 10)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from heracles_ros.demo.run import DemoOptions, run_demo

    language = choose_language_model(args.llm, args.model, args.base_url)
    if args.time_scale <= 0:
        raise ConfigError(f"--time-scale must be > 0, got {args.time_scale}")
    if not args.verbose:  # the demo prints every step itself; library chatter (ours, HTTP clients') would interleave
        logging.getLogger().setLevel(logging.WARNING)
    options = DemoOptions(out_dir=args.out.expanduser().resolve(), db_uri=args.db, language=language,
                          time_scale=args.time_scale, verbose=args.verbose)
    # With --json the narrative goes to stderr and stdout holds one JSON document, as for every command.
    report = run_demo(options, out=sys.stderr if args.json else None)
    if args.json:
        print_json(report.to_dict())
    return 0 if report.success else 1
