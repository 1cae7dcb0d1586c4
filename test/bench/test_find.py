"""``heracles bench find`` runs end to end and its accuracy table holds the issue's bar on the held-out phrasings."""
from __future__ import annotations

from support.cli import heracles


def test_bench_find_reports_speed_memory_and_accuracy(capsys) -> None:
    status, figures, err = heracles(capsys, "bench", "find", "--calls", "20", "--feature-dim", "32", "--json")
    assert status == 0, err
    assert figures["objects"] == 314 and figures["model"] == "wordllama/l2_supercat_256"
    for key in ("model_load_s", "first_use_s", "rss_model_mb", "find_p50_ms", "find_p95_ms", "like_p50_ms",
                "peak_rss_mb"):
        assert figures[key] > 0, key
    assert figures["find_p50_ms"] <= figures["find_p95_ms"] <= figures["find_max_ms"]
    accuracy = figures["accuracy"]
    assert set(accuracy) == {f"{v}.{h}" for v in ("small", "large", "paper_outdoor", "ade20k_indoor")
                             for h in ("held_out", "development")}
    for vocabulary in ("small", "large"):  # the bar: right class in the top three for >= 90 %
        row = accuracy[f"{vocabulary}.held_out"]
        assert row["n"] >= 30 and row["top3"] >= 0.9 * row["n"], row
        assert row["top1"] <= row["top3"] and len(row["misses"]) == row["n"] - row["top3"]
        assert row["without_lexicon"]["top3"] <= row["top3"]
