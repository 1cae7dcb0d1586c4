"""Run every item of a dataset through an agent and judge each result.

The agent is anything with ``ask`` and ``command`` (the language agent, or an
agent built for one of the paper's comparison methods); the method name only
labels the results. An agent failure on one item is recorded as that item's
failure and the run goes on.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from heracles_ros.agent.results import AskResult, CommandResult
from heracles_ros.errors import HeraclesError, describe
from heracles_ros.eval.compare import compare_item
from heracles_ros.eval.dataset import Dataset, EvalItem
from heracles_ros.extras import tool_library

log = logging.getLogger(__name__)


class EvalAgent(Protocol):
    def ask(self, question: str, answer_type: str | None = None) -> AskResult: ...

    def command(self, instruction: str) -> CommandResult:
        """Ground the instruction to a goal; the evaluation never executes (nor needs to plan) it."""
        ...


@dataclass
class ItemResult:
    """One item's outcome: what was asked, what came back, and what it cost."""

    id: str
    kind: str
    method: str
    input: str
    gold: str
    output: str = ""
    success: bool = False
    reason: str = ""
    error: str = ""
    answer_type: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: int = 0
    queries: list[str] = field(default_factory=list)
    #: Wall time of the agent call as the runner measured it.
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ItemResult:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


def run_item(item: EvalItem, agent: EvalAgent, method: str) -> ItemResult:
    """Ask or command the agent once and judge the result."""
    record = ItemResult(
        id=item.id, kind=item.kind, method=method, input=item.input, gold=item.gold, answer_type=item.answer_type
    )
    start = time.perf_counter()
    try:
        result: AskResult | CommandResult
        if item.kind == "ask":
            result = agent.ask(item.input, item.answer_type or None)
            record.output = result.answer
        else:
            result = agent.command(item.input)
            record.output = result.goal
    except HeraclesError as exc:
        record.latency_s = time.perf_counter() - start
        record.error = describe(exc)
        record.reason = f"agent error: {record.error}"
        return record
    record.latency_s = time.perf_counter() - start
    usage = result.usage
    record.input_tokens, record.output_tokens = usage.input_tokens, usage.output_tokens
    record.tool_calls, record.queries = usage.tool_calls, list(usage.queries)
    record.error = result.error
    verdict = compare_item(item, result)
    record.success, record.reason = verdict.success, verdict.reason
    return record


def run_dataset(dataset: Dataset, agent: EvalAgent, method: str, *, progress: bool = True) -> list[ItemResult]:
    """Every item in order, with a progress bar on stderr."""
    results: list[ItemResult] = []
    tqdm = tool_library("tqdm", "heracles eval's progress bar").tqdm
    bar = tqdm(dataset.items, desc=f"{dataset.name} [{method}]", unit="item", file=sys.stderr, disable=not progress)
    for item in bar:
        record = run_item(item, agent, method)
        results.append(record)
        bar.set_postfix(ok=sum(r.success for r in results), refresh=False)
        log.debug("%s %s: %s %s", method, item.id, "ok" if record.success else "FAIL", record.reason)
    return results
