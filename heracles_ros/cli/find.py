"""``heracles find``: the scene's objects that the words name, best first, offline.

Ranks live objects by how well their class and name match the text (and the room, when the text names
one: "the bag in the road"), with word vectors from the offline model (no network, no API key), or a
provider's embeddings with ``--embeddings``. ``--like SYMBOL`` ranks objects by Hydra's own feature
instead, where the snapshots carried ``semantic_feature``. ``--live`` asks the running language server's
``find`` service instead (its resolver, its word vectors: the ``embeddings`` parameters), the same resolver
the model's ``find_objects`` tool asks.
"""
from __future__ import annotations

import argparse
from typing import Any

from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.cli.live import add_live_options
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.meaning.embeddings import KINDS, open_embedder
from heracles_ros.meaning.resolver import MAX_K, Resolution, Resolver


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "find", help="the objects some words name ('something to sit on'), best first, offline",
        description="Ranks the scene's objects by how well their class and name match the words (synonyms, kinds "
        "and descriptions of use included), read live from the database. 'uncertain' marks a weak match.",
    )
    parser.add_argument("text", nargs="?", default=None, metavar="TEXT", help="what to find, in words")
    parser.add_argument("--k", type=int, default=10, metavar="N", help=f"at most N objects (1 to {MAX_K:,}; "
                        "default: 10)")
    parser.add_argument("--like", default=None, metavar="SYMBOL",
                        help="instead of words: the objects most like this one by Hydra's semantic_feature")
    parser.add_argument("--json", action="store_true", help="print the objects as a JSON list")
    add_db_options(parser)
    parser.add_argument("--embeddings", default="wordllama", choices=KINDS,
                        help="word vectors: wordllama (offline, default), openai or ollama")
    parser.add_argument("--embedding-model", default="", metavar="NAME",
                        help="the provider's embedding model (e.g. text-embedding-3-small, nomic-embed-text)")
    parser.add_argument("--base-url", default=None, metavar="URL",
                        help="the provider's server (OpenAI-compatible URL, or the Ollama host)")
    add_live_options(parser, what="language server (its find service)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if (args.text is None) == (args.like is None):
        raise ConfigError("give either TEXT or --like SYMBOL")
    if args.live:
        objects, header = _live(args), []
    else:
        found = _here(args)
        objects, header = [f.to_json() for f in found.objects], _header(found)
    if args.json:
        print_json(objects)
    else:
        print(_text(objects, header, args))
    return 0


def _here(args: argparse.Namespace) -> Resolution:
    from heracles_ros.graphdb.scene_presence import require_scene

    embedder = open_embedder(args.embeddings, model=args.embedding_model, base_url=args.base_url)
    with open_store(args.db, graph=args.graph) as store:
        require_scene(store, reader="heracles find")
        resolver = Resolver(store, embedder)
        return resolver.like(args.like, k=args.k) if args.like else resolver.find(args.text, k=args.k)


def _live(args: argparse.Namespace) -> list[dict[str, Any]]:
    from heracles_ros.client import HeraclesClient

    with HeraclesClient(args.namespace, node_name="heracles_cli", find_timeout_s=args.server_timeout,
                        short_lease=False) as client:
        return client.find(args.text or "", like_symbol=args.like or "", k=args.k)


def _header(found: Resolution) -> list[str]:
    if not found.terms:
        return []
    words = ", ".join(f"{term} {score:.2f}" for term, score in found.terms)
    return [f"best words: {words}" + (f"; in {', '.join(found.rooms)}" if found.rooms else "")]


def _text(objects: list[dict[str, Any]], header: list[str], args: argparse.Namespace) -> str:
    lines = list(header)
    if objects and objects[0].get("uncertain"):
        lines.append("uncertain: a weak match; say it another way, or name the class")
    if not objects:
        lines.append("no object matches" if args.text else f"no other object has a feature like {args.like}'s")
    for f in objects:
        lines.append(f"{f['symbol']:<8} {_cell(f['class']):<16} {f['score']:6.3f}  ({_xyz(f)})  {_cell(f['room'])}")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def _xyz(f: dict[str, Any]) -> str:
    return ", ".join("-" if f[key] is None else f"{f[key]:.2f}" for key in ("x", "y", "z"))
