"""``heracles`` as a whole: one output style, ``--json`` on every command."""
from __future__ import annotations

import argparse

from support.cli import heracles

from heracles_ros.cli import build_parser

Leaf = tuple[tuple[str, ...], argparse.ArgumentParser]


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[Leaf]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser)]
    return [leaf for name, sub in subs[0].choices.items() for leaf in _leaves(sub, (*path, name))]


def test_every_command_but_the_long_running_servers_takes_json():
    """``up`` and ``console`` serve until stopped and print a log, not a result."""
    servers = {("up",), ("console",)}
    missing = [" ".join(path) for path, parser in _leaves(build_parser())
               if path not in servers and not any("--json" in a.option_strings for a in parser._actions)]
    assert missing == []


def test_a_data_command_prints_one_json_document_with_json(small_store, db_uri, graph_name, capsys):
    code, out, err = heracles(capsys, "summary", "--db", db_uri, "--graph", graph_name, "--json")
    assert code == 0 and isinstance(out, dict) and out["database"], err


def test_a_data_command_prints_text_by_default_and_the_same_figures_as_json(small_store, db_uri, graph_name, capsys):
    _, as_json, _ = heracles(capsys, "summary", "--db", db_uri, "--graph", graph_name, "--json")
    code, text, err = heracles(capsys, "summary", "--db", db_uri, "--graph", graph_name)
    assert code == 0 and isinstance(text, str), err  # not JSON
    assert f"nodes: {as_json['nodes']}\n" in text and f"database: {as_json['database']}\n" in text


def test_query_rows_print_as_a_table_with_a_header(small_store, db_uri, graph_name, capsys):
    query = "MATCH (r:Room) RETURN r.nodeSymbol AS room ORDER BY room LIMIT 2"
    _, rows, _ = heracles(capsys, "cypher", "--json", query, "--db", db_uri, "--graph", graph_name)
    code, text, err = heracles(capsys, "cypher", query, "--db", db_uri, "--graph", graph_name)
    assert code == 0 and len(rows) == 2, err
    assert text.splitlines() == ["room", *(row["room"] for row in rows)]
