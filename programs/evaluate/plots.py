"""PNG plots of evaluation reports. Every function takes `{program name: report}` and draws the programs side by
side; files are written atomically.

Figures are made with `matplotlib.figure.Figure`, not pyplot: PNGs render with Agg, no display or global pyplot
state is involved, and nothing needs closing. Every label a user wrote (a program's name, a category) is drawn
through `_label`, as the text it is.
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure

from bookrag.atomic_file import atomic_write
from bookrag.terminal_text import printable
from programs.evaluate.figures import HEADLINE

COLORS = {"answerable": "tab:blue", "must refuse": "tab:red"}


def write_plots(reports: dict[str, dict], out_dir: Path) -> list[Path]:
    paths = [score_distributions(reports, Path(out_dir) / "score_distribution.png"),
             category_accuracy(reports, Path(out_dir) / "category_accuracy.png")]
    if len(reports) > 1:
        paths.append(headline_comparison(reports, Path(out_dir) / "comparison.png"))
    return paths


def score_distributions(reports: dict[str, dict], path: Path) -> Path:
    """Per program (one row each): the top dense cosine and the gate probability, answerable vs must-refuse.

    The gate decides in probability space; its threshold is drawn there. A cosine line is drawn only when the
    gate is a single cosine cut (the baseline), where that line is exactly its decision."""
    fig = Figure(figsize=(11, 3.6 * len(reports)), layout="tight")
    axes = fig.subplots(len(reports), 2, squeeze=False)
    for (name, report), (cosine_ax, gate_ax) in zip(reports.items(), axes):
        name = _label(name)
        rows = [r for r in report["rows"] if r["top_dense"] is not None]  # selected-text questions retrieve nothing
        _histograms(cosine_ax, rows, "top_dense", bins=_bins(rows, "top_dense"))
        cut = single_cosine_cut(report["gate"])
        if cut is not None:
            cosine_ax.axvline(cut, color="black", linestyle="--", label=f"cosine cut {cut:.2f}")
            cosine_ax.set_title(f"{name}: top dense cosine (the gate cuts here)")
        else:
            cosine_ax.set_title(f"{name}: top dense cosine (one of several gate features)")
        cosine_ax.set_xlabel("cosine similarity of the best retrieved passage")
        cosine_ax.set_ylabel("questions")
        cosine_ax.legend(fontsize=8)
        gate_rows = [r for r in rows if r["gate_probability"] is not None]
        _histograms(gate_ax, gate_rows, "gate_probability", bins=[i / 20 for i in range(21)])
        threshold = report["gate"]["threshold"]
        gate_ax.axvline(threshold, color="black", linestyle="--", label=f"refuse below {threshold:.2f}")
        gate_ax.set_title(f"{name}: refusal gate P(answerable)")
        gate_ax.set_xlabel("gate probability")
        gate_ax.legend(fontsize=8)
    return _save(fig, path)


def category_accuracy(reports: dict[str, dict], path: Path) -> Path:
    """Share of questions passed per category (answered correctly, or refused when they must be)."""
    categories = sorted({c for report in reports.values() for c in report["per_category"]})
    fig = Figure(figsize=(max(7.0, len(categories) * (0.5 + 0.4 * len(reports))), 4.2), layout="tight")
    ax = fig.subplots()
    _grouped_bars(ax, categories, {name: [r["per_category"].get(c, {}).get("pass_rate", 0.0) for c in categories]
                                   for name, r in reports.items()})
    ax.set_ylabel("share passed")
    ax.set_title("Per category: answered with every key fact (answerable) or refused (must refuse)")
    return _save(fig, path)


def headline_comparison(reports: dict[str, dict], path: Path) -> Path:
    fig = Figure(figsize=(11, 4.2), layout="tight")
    ax = fig.subplots()
    _grouped_bars(ax, list(HEADLINE), {name: [r[key] for key in HEADLINE] for name, r in reports.items()})
    ax.set_title("Programs side by side (false_refusal_rate: lower is better)")
    return _save(fig, path)


def single_cosine_cut(gate_state: dict) -> float | None:
    """The cosine value a gate that reads only the top dense cosine switches at; None for a multi-feature gate."""
    weights = gate_state["weights"]
    if set(weights) != {"top_dense"} or weights["top_dense"] <= 0:
        return None
    t = gate_state["threshold"]
    logit = math.log(t / (1 - t))
    return gate_state["mean"]["top_dense"] + gate_state["scale"]["top_dense"] * (logit - gate_state["bias"]) / \
        weights["top_dense"]


def _histograms(ax, rows: list[dict], key: str, bins) -> None:
    for label, answerable in (("answerable", True), ("must refuse", False)):
        values = [r[key] for r in rows if r["answerable"] is answerable]
        ax.hist(values, bins=bins, alpha=0.55, color=COLORS[label], label=f"{label} (n={len(values)})")


def _bins(rows: list[dict], key: str) -> list[float]:
    values = [r[key] for r in rows] or [0.0, 1.0]
    low, high = min(values), max(values)
    step = max(high - low, 0.05) / 20
    return [low + i * step for i in range(21)]


def _grouped_bars(ax, labels: list[str], series: dict[str, list[float]]) -> None:
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        positions = [x + (i - (len(series) - 1) / 2) * width for x in range(len(labels))]
        bars = ax.bar(positions, values, width, label=_label(name))
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    ax.set_xticks(range(len(labels)), [_label(label) for label in labels], rotation=20, ha="right")
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=8)


def _label(text: str) -> str:
    """`text` as matplotlib draws it literally: `printable` (matplotlib warns on stderr about a glyph its font lacks,
    quoting the character raw: ESC, BEL), and each `$` escaped (two start a math formula, which may not parse)."""
    return printable(text).replace("$", r"\$")


def _save(fig: Figure, path: Path) -> Path:
    return atomic_write(path, lambda temp: fig.savefig(temp, format="png", dpi=110))
