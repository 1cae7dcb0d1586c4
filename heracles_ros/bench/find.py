"""``heracles bench find``: the resolver's speed, first use and memory at the kilometre-scale scene, and its
accuracy on the shipped query set.

The large synthetic scene is mirrored into a throwaway embedded FalkorDB. First use is a fresh embedder and
resolver answering one text (the model's load, the scene's words embedded, the live read); then ``--calls``
texts of the query set are resolved in turn and timed in-process (latency p50 / p95 / max). Memory is the
RSS the model's load adds to a fresh interpreter, and the bench's peak. "Things like this one" is timed on
random 512-d features given to every object. Accuracy: each vocabulary of ``data/meaning/find_queries.yaml`` is
mirrored (the two synthetic scenes, one object per class for the labelspaces) and each phrasing counts as
right when one of its classes is among the three best distinct classes (and, for top-1, the best); the
same without the lexicon shows what it adds.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from heracles_ros.embedded.server import temporary_server
from heracles_ros.errors import ConfigError
from heracles_ros.graphdb import open_store
from heracles_ros.meaning.embeddings import CachedEmbedder, WordLlamaEmbedder
from heracles_ros.meaning.lexicon import Lexicon
from heracles_ros.meaning.resolver import Resolver
from heracles_ros.meaning.text import normalise
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import SceneTables, extract_tables, id_of, symbol_of
from heracles_ros.schema import Layer

QUERIES = Path(str(resources.files("heracles_ros") / "data" / "meaning" / "find_queries.yaml"))
#: The issue's targets: p95 in-process at the kilometre-scale scene, and first use.
TARGET_P95_S = 0.020
TARGET_FIRST_USE_S = 2.0
#: Vocabularies that are synthetic scenes (the others are labelspaces, mirrored one object per class).
_SCENES = ("small", "large")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: 0)")
    parser.add_argument("--scale", type=float, default=1.0, help="scale of the large scene (default: 1)")
    parser.add_argument("--calls", type=int, default=300, help="timed resolver calls (default: 300)")
    parser.add_argument("--feature-dim", type=int, default=512, help="width of the random features (default: 512)")
    parser.add_argument("--skip-accuracy", action="store_true", help="measure speed and memory only")


#: What loading the model adds to a fresh interpreter's RSS, MB (in this process an earlier load's freed memory
#: would be reused and hide it).
_MODEL_RSS = ("import psutil; from heracles_ros.meaning.embeddings import WordLlamaEmbedder; "
              "p = psutil.Process(); before = p.memory_info().rss; WordLlamaEmbedder().load(); "
              "print((p.memory_info().rss - before) / 2**20)")


def _model_rss_mb() -> float:
    done = subprocess.run([sys.executable, "-c", _MODEL_RSS], capture_output=True, text=True, timeout=120,
                          check=False)
    if done.returncode != 0:
        raise ConfigError(f"the model's memory could not be measured: {done.stderr.strip()[-500:]}")
    return round(float(done.stdout.split()[-1]), 1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.calls < 1 or args.feature_dim < 1:
        raise ConfigError("--calls and --feature-dim must be at least 1")
    queries = yaml.safe_load(QUERIES.read_text(encoding="utf-8"))
    texts = [text for half in ("held_out", "development") for text, _ in queries[half]["large"]]
    figures: dict[str, Any] = {}
    with temporary_server("heracles-bench-find-") as uri:
        store = open_store(uri, graph="large")
        scene = extract_tables(generate_scene("large", args.seed, scale=args.scale))
        _give_features(scene, args.feature_dim, args.seed)
        Mirror(store).reconcile(scene)
        objects = sum(1 for row in scene.nodes.values() if row[0] is Layer.OBJECT)
        model = WordLlamaEmbedder()
        started = time.perf_counter()
        resolver = Resolver(store, CachedEmbedder(model))
        resolver.find(texts[0])
        first_use = time.perf_counter() - started
        figures.update({
            "objects": objects, "model": model.model_id, "model_load_s": round(model.load_s or 0.0, 3),
            "first_use_s": round(first_use, 3), "first_use_target_s": TARGET_FIRST_USE_S,
            "rss_model_mb": _model_rss_mb(),
        })
        figures.update(_latency("find", [lambda t=t: resolver.find(t) for t in texts], args.calls))
        symbols = sorted(symbol_of(i) for i in scene.features)
        figures.update(_latency("like", [lambda s=s: resolver.like(s) for s in symbols], args.calls))
        figures["find_p95_target_ms"] = TARGET_P95_S * 1e3
        if not args.skip_accuracy:
            figures["accuracy"] = _accuracy(uri, queries, resolver.embedder, args.seed)
        store.close()
    figures["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return figures


def _give_features(scene: SceneTables, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for node_id, row in scene.nodes.items():
        if row[0] is Layer.OBJECT:
            scene.features[node_id] = rng.standard_normal(dim).astype(np.float32)


def _latency(name: str, calls: list[Any], count: int) -> dict[str, float]:
    seconds = []
    for index in range(count):
        started = time.perf_counter()
        calls[index % len(calls)]()
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    return {f"{name}_p50_ms": round(statistics.median(seconds) * 1e3, 2),
            f"{name}_p95_ms": round(seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))] * 1e3, 2),
            f"{name}_max_ms": round(seconds[-1] * 1e3, 2)}


def _accuracy(uri: str, queries: dict[str, Any], embedder: Any, seed: int) -> dict[str, Any]:
    """Per vocabulary and half: right class among the best 3 distinct classes (top3) and first (top1), of n;
    the same without the lexicon (name only)."""
    table: dict[str, Any] = {}
    for vocabulary, classes in queries["vocabularies"].items():
        store = open_store(uri, graph=f"accuracy_{vocabulary}")
        Mirror(store).reconcile(extract_tables(generate_scene(vocabulary, seed)) if vocabulary in _SCENES
                                else _one_of_each(classes))
        with_lexicon = Resolver(store, embedder)
        bare = Resolver(store, embedder, Lexicon({}))
        for half in ("held_out", "development"):
            items = queries[half].get(vocabulary, [])
            table[f"{vocabulary}.{half}"] = {
                "n": len(items), **_score(with_lexicon, items), "without_lexicon": _score(bare, items),
            }
        store.close()
    return table


def _score(resolver: Resolver, items: list[Any]) -> dict[str, Any]:
    top1 = top3 = 0
    misses = []
    for text, right in items:
        ranked = [term for term, _ in resolver.rank_terms(text)]
        wanted = {normalise(c) for c in right}
        top1 += ranked[0] in wanted
        top3 += bool(wanted & set(ranked[:3]))
        if not wanted & set(ranked[:3]):
            misses.append(f"{text} -> {', '.join(ranked[:3])}")
    return {"top1": top1, "top3": top3, "misses": misses}


def _one_of_each(classes: list[str]) -> SceneTables:
    tables = SceneTables()
    for index, cls in enumerate(classes):
        x = float(index)
        tables.nodes[id_of(f"O{index}")] = (Layer.OBJECT, cls, f"{cls} {index}", x, 0.0, 0.0, x, 0.0, 0.0,
                                            1.0, 1.0, 1.0)
    return tables
