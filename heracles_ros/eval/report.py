"""Summaries of an evaluation run: a text table, a PNG plot and a JSON results file.

Rows are per (method, kind), plus an ``all`` row per method, in the shape of
the paper's Tables I and IV: success rate, and mean input / output tokens,
tool calls and latency per item.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from heracles_ros.errors import ConfigError
from heracles_ros.eval.runner import ItemResult
from heracles_ros.extras import tool_library

KIND_ORDER = ("ask", "command", "all")


@dataclass(frozen=True)
class SummaryRow:
    method: str
    kind: str  # "ask" | "command" | "all"
    items: int
    successes: int
    errors: int
    success_rate: float
    input_tokens: float
    output_tokens: float
    tool_calls: float
    latency_s: float


@dataclass(frozen=True)
class ReportFiles:
    table: Path
    plot: Path
    results: Path


def summarize(results: Sequence[ItemResult]) -> list[SummaryRow]:
    """One row per (method, kind) present, and an ``all`` row per method; methods in first-seen order."""
    rows: list[SummaryRow] = []
    for method in dict.fromkeys(r.method for r in results):
        mine = [r for r in results if r.method == method]
        for kind in KIND_ORDER:
            group = mine if kind == "all" else [r for r in mine if r.kind == kind]
            if group and not (kind == "all" and len({r.kind for r in mine}) < 2):
                rows.append(_row(method, kind, group))
    return rows


def _row(method: str, kind: str, group: list[ItemResult]) -> SummaryRow:
    successes = sum(r.success for r in group)
    return SummaryRow(
        method=method,
        kind=kind,
        items=len(group),
        successes=successes,
        errors=sum(bool(r.error) for r in group),
        success_rate=successes / len(group),
        input_tokens=fmean(r.input_tokens for r in group),
        output_tokens=fmean(r.output_tokens for r in group),
        tool_calls=fmean(r.tool_calls for r in group),
        latency_s=fmean(r.latency_s for r in group),
    )


def format_table(rows: Sequence[SummaryRow]) -> str:
    """A fixed-width text table, one line per summary row."""
    header = ("method", "kind", "items", "success", "rate", "errors", "in tok", "out tok", "tools", "latency s")
    lines = [
        (
            r.method,
            r.kind,
            str(r.items),
            str(r.successes),
            f"{r.success_rate:.2f}",
            str(r.errors),
            f"{r.input_tokens:.0f}",
            f"{r.output_tokens:.0f}",
            f"{r.tool_calls:.1f}",
            f"{r.latency_s:.2f}",
        )
        for r in rows
    ]
    widths = [max(len(cells[i]) for cells in (header, *lines)) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs)

    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, lines)]) + "\n"


def plot_summary(rows: Sequence[SummaryRow], path: Path, title: str = "") -> Path:
    """Grouped bars per method and kind: success rate, mean input tokens, mean tool calls."""
    matplotlib = tool_library("matplotlib", "heracles eval's plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not rows:
        raise ConfigError("nothing to plot: no results")
    methods = list(dict.fromkeys(r.method for r in rows))
    kinds = [k for k in KIND_ORDER if any(r.kind == k for r in rows)]
    panels = (
        ("success_rate", "success rate"),
        ("input_tokens", "mean input tokens"),
        ("tool_calls", "mean tool calls"),
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8))
    width = 0.8 / len(kinds)
    for ax, (attr, label) in zip(axes, panels, strict=True):
        for k, kind in enumerate(kinds):
            values = [
                next((getattr(r, attr) for r in rows if r.method == method and r.kind == kind), 0.0)
                for method in methods
            ]
            positions = [m + (k - (len(kinds) - 1) / 2) * width for m in range(len(methods))]
            ax.bar(positions, values, width, label=kind)
        ax.set_xticks(range(len(methods)), methods)
        ax.set_title(label)
        if attr == "success_rate":
            ax.set_ylim(0, 1)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(kinds), frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def results_document(results: Sequence[ItemResult], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON results file's content: run facts, the summary rows, every item."""
    return {
        "meta": dict(meta or {}),
        "summary": [asdict(row) for row in summarize(results)],
        "items": [r.to_dict() for r in results],
    }


def load_results(path: Path) -> list[ItemResult]:
    """Item results back from a JSON results file (to combine or re-plot runs)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [ItemResult.from_dict(item) for item in data["items"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read results file {path}: {exc}") from exc


def write_report(
    results: Sequence[ItemResult], out_dir: Path, meta: dict[str, Any] | None = None, stem: str = "eval"
) -> ReportFiles:
    """Write ``<stem>_summary.txt``, ``<stem>.png`` and ``<stem>_results.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summarize(results)
    files = ReportFiles(out_dir / f"{stem}_summary.txt", out_dir / f"{stem}.png", out_dir / f"{stem}_results.json")
    files.table.write_text(format_table(rows), encoding="utf-8")
    plot_summary(rows, files.plot, title=str((meta or {}).get("dataset", "")))
    files.results.write_text(json.dumps(results_document(results, meta), indent=2) + "\n", encoding="utf-8")
    return files
