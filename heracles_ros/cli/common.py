"""Options several sub-commands share."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

DEFAULT_DB = os.environ.get("HERACLES_DB", "embedded")
#: The graph the nodes use unless told otherwise (their graph_name parameter's default).
DEFAULT_GRAPH = "heracles"


def add_db_options(parser: argparse.ArgumentParser, graph_help: str | None = "graph name on FalkorDB") -> None:
    """``--db`` and, unless ``graph_help`` is None, ``--graph`` (default ``heracles``, the nodes' graph_name)."""
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        metavar="URI",
        help="graph database: embedded[:DATA_DIR] (default), falkordb://host:port, "
        "neo4j://host:port or bolt://host:port (env HERACLES_DB)",
    )
    if graph_help is not None:
        parser.add_argument("--graph", default=DEFAULT_GRAPH, help=f"{graph_help} (default: {DEFAULT_GRAPH})")


def add_model_options(parser: argparse.ArgumentParser, *, without: str) -> None:
    """``--llm``, ``--model`` and ``--base-url`` of a command that starts the system: by default the provider the
    environment names, else ``without`` (what the language server gets when no model is configured)."""
    from heracles_ros.agent.llm import PROVIDERS

    parser.add_argument("--llm", choices=PROVIDERS, default=None,
                        help="language model provider (default: openai if OPENAI_API_KEY or --base-url is set, "
                        f"ollama if OLLAMA_HOST is set, else {without})")
    parser.add_argument("--model", default=None, help="model name (default: the provider's default)")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="OpenAI-compatible endpoint, or the Ollama host with --llm ollama")


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def print_report(args: argparse.Namespace, value: Any) -> None:
    """A data command's result: readable text by default, the same data as one JSON document with ``--json``."""
    if getattr(args, "json", False):
        print_json(value)
    else:
        sys.stdout.write(as_text(value) + "\n")


def as_text(value: Any) -> str:
    """``key: value`` lines for a mapping (nested ones indented), a column table for a list of rows."""
    if isinstance(value, dict):
        return "\n".join(_mapping_lines(value, "")) or "(nothing)"
    if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
        return _table(value)
    if isinstance(value, list):
        return "\n".join(_scalar(item) for item in value) or "(none)"
    return _scalar(value)


def _mapping_lines(mapping: dict[Any, Any], indent: str) -> list[str]:
    lines: list[str] = []
    for key, item in mapping.items():
        if isinstance(item, dict) and item:
            lines.append(f"{indent}{key}:")
            lines += _mapping_lines(item, indent + "  ")
        elif isinstance(item, list) and any(isinstance(row, (dict, list)) for row in item):
            lines.append(f"{indent}{key}:")
            lines += [f"{indent}  - {_inline(row)}" for row in item]
        else:
            lines.append(f"{indent}{key}: {_inline(item)}")
    return lines


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{key}={_inline(item)}" for key, item in value.items()) or "-"
    if isinstance(value, list):
        return ", ".join(_inline(item) for item in value) or "-"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_inline(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    lines = ["  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in cells]
    return "\n".join(lines)
