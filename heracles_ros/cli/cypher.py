"""``heracles cypher "QUERY"``: a read-only query, rows printed as JSON objects keyed by the RETURN aliases."""
from __future__ import annotations

import argparse
import sys

from heracles_ros.cli.common import add_db_options, print_report
from heracles_ros.graphdb import open_store


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "cypher", help="run a read-only Cypher query and print the rows (a table; --json: a JSON list)",
        description="The database itself refuses writes (GRAPH.RO_QUERY on FalkorDB, a READ session on Neo4j). "
        "On an error the database's message is printed and the exit status is 1. Rows past --max-rows "
        "are not read (a note on stderr says how many the query produced).",
    )
    parser.add_argument("query", help="Cypher text, e.g. \"MATCH (o:Object) RETURN o.class AS c, count(*) AS n\"")
    add_db_options(parser)
    parser.add_argument("--timeout", type=float, default=30.0, metavar="S", help="query time limit in seconds")
    parser.add_argument(
        "--max-rows", type=_positive_int, default=10_000, metavar="N", help="print at most N rows (default: 10000)"
    )
    parser.set_defaults(func=_run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of rows, 1 or more, got {text!r}")
    return value


def _run(args: argparse.Namespace) -> int:
    with open_store(args.db, graph=args.graph, timeout_s=args.timeout) as store:
        result = store.query_capped(args.query, max_rows=args.max_rows, timeout_s=args.timeout)
    print_report(args, result.rows)
    if result.graph_missing:
        print(f"note: {store.description} does not exist yet: nothing has been mirrored into it "
              "(--graph names another)", file=sys.stderr)
    if not result.complete:
        why = result.cut_by_size or f"--max-rows {args.max_rows}"
        print(f"note: {len(result.rows)} of {result.total} rows printed ({why})", file=sys.stderr)
    return 0
