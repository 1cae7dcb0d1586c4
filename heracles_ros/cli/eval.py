"""``heracles eval DATASET.yaml``: run a dataset through the agent and report success, tokens, tool calls.

Each ``--method`` (the paper's agentic Cypher, single-query and context-window
methods) runs every item; commands are judged on their goal alone (no planning:
a correct goal need not have a feasible plan). Writes a text table, a PNG plot
and a JSON results file into ``--out``.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

from heracles_ros.agent.llm import PROVIDERS
from heracles_ros.agent.prompt import METHODS
from heracles_ros.agent.results import AskResult, CommandResult
from heracles_ros.cli.common import add_db_options, print_json
from heracles_ros.errors import ConfigError
from heracles_ros.eval.dataset import KINDS, Dataset, SceneRef, load_dataset
from heracles_ros.eval.report import summarize, write_report
from heracles_ros.eval.runner import ItemResult, run_dataset

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    parser = sub.add_parser("eval", help="evaluate the agent on a dataset of questions and commands",
                            description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="dataset YAML (e.g. heracles_ros/data/eval/small_scene.yaml)")
    parser.add_argument("--method", action="append", choices=METHODS,
                        help="agentic (default), single or context; repeat to compare methods")
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for the table, plot and JSON (default: eval_<dataset>_<UTC time>)")
    add_db_options(parser)
    parser.add_argument("--load-scene", action="store_true",
                        help="mirror the dataset's scene into the graph first (synthetic kind/seed or file)")
    parser.add_argument("--verify-gold", action="store_true",
                        help="first check every gold answer against the database (stop if any disagrees)")
    parser.add_argument("--llm", choices=PROVIDERS, default="openai", help="model provider")
    parser.add_argument("--model", default="", help="model name (default: the provider's default)")
    parser.add_argument("--base-url", default=None,
                        help="OpenAI-compatible base URL or Ollama host (default: provider / env default)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per model call (default 120)")
    parser.add_argument("--max-tool-calls", type=int, default=5,
                        help="tool calls per request, every tool counted (default 5)")
    parser.add_argument("--ids", default="", help="comma-separated item ids to run (default: all)")
    parser.add_argument("--kind", choices=KINDS, action="append", help="only ask or only command items")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--json", action="store_true", help="print the summary rows as JSON instead of the table")
    parser.set_defaults(func=run)


class _GoalOnly:
    """The agent as the runner sees it: commands are grounded to a goal but not planned."""

    def __init__(self, agent: Any):
        self.agent = agent

    def ask(self, question: str, answer_type: str | None = None) -> AskResult:
        result: AskResult = self.agent.ask(question, answer_type)
        return result

    def command(self, instruction: str) -> CommandResult:
        result: CommandResult = self.agent.command(instruction)
        return result


def run(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.dataset)
    ids = [i.strip() for i in args.ids.split(",") if i.strip()]
    dataset = dataset.select(ids=ids or None, kinds=args.kind)
    if not dataset.items:
        raise ConfigError(f"{dataset.name}: no items left to run after --ids / --kind")
    methods = list(dict.fromkeys(args.method or ["agentic"]))
    out_dir = args.out or Path(f"eval_{dataset.name}_{time.strftime('%Y%m%d_%H%M%SZ', time.gmtime())}")

    from heracles_ros.agent.factory import make_llm
    from heracles_ros.agent.llm import LLMSettings
    from heracles_ros.agent.loop import Agent
    from heracles_ros.agent.settings import AgentSettings
    from heracles_ros.graphdb import open_store

    settings = LLMSettings(provider=args.llm, model=args.model, timeout_s=args.timeout,
                           max_tool_calls=args.max_tool_calls, base_url=args.base_url)
    store = open_store(args.db, graph=args.graph)
    results: list[ItemResult] = []
    try:
        if args.load_scene:
            _load_scene(store, dataset.scene)
        if args.verify_gold:
            _verify_gold(dataset, store)
        for method in methods:
            llm = make_llm(settings)
            try:
                agent = _GoalOnly(Agent(store, llm, AgentSettings(method=method)))
                results.extend(run_dataset(dataset, agent, method, progress=not args.no_progress))
            finally:
                llm.close()
    finally:
        store.close()
    meta = {
        "dataset": dataset.name,
        "dataset_path": str(args.dataset),
        "scene": dataset.scene.describe(),
        "methods": methods,
        "provider": settings.provider,
        "model": settings.model_name,
        "max_tool_calls": settings.max_tool_calls,
        "database": getattr(store, "description", args.db),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    files = write_report(results, out_dir, meta)
    if args.json:
        print_json({"summary": [row.__dict__ for row in summarize(results)], "files": files.__dict__})
    else:
        sys.stdout.write(files.table.read_text(encoding="utf-8"))
        print(f"wrote {files.table}, {files.plot}, {files.results}")
    return 0


def _load_scene(store: Any, scene: SceneRef) -> None:
    from heracles_ros.mirror.reconcile import Mirror

    if scene.file is not None:
        from heracles_ros.scene.io import load_scene

        graph = load_scene(scene.file)
    elif scene.kind is not None:
        from heracles_ros.scene.synthetic import generate_scene

        graph = generate_scene(scene.kind, seed=scene.seed)
    else:
        raise ConfigError("--load-scene: the dataset names no scene (add scene: {kind: small, seed: 0})")
    report = Mirror(store).reconcile(graph)
    log.info("mirrored %s: %s", scene.describe(), report)


def _verify_gold(dataset: Dataset, store: Any) -> None:
    from heracles_ros.eval.gold import verify_gold

    problems = verify_gold(dataset, store)
    if problems:
        raise ConfigError(f"{dataset.name}: gold answers disagree with the database:\n- " + "\n- ".join(problems))
    log.info("all %d gold answers agree with the database", len(dataset.items))
