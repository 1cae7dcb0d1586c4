"""Options several sub-commands share."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

DEFAULT_DB = os.environ.get("HERACLES_DB", "embedded")


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        metavar="URI",
        help="graph database: embedded[:DATA_DIR] (default), falkordb://host:port, "
        "neo4j://host:port or bolt://host:port (env HERACLES_DB)",
    )


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
