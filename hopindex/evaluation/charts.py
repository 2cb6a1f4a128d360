"""PNG charts of a run: Recall@k as grouped bars, and cumulative tokens against queries.

matplotlib is imported inside each function: the CLI imports the report modules on every
start, and matplotlib costs a noticeable fraction of a second. Both use the object API
with the Agg canvas: no pyplot global state and no GUI backend, so drawing is safe in
servers, threads and headless CI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hopindex.evaluation.token_curve import (
    BreakEven,
    TokenCurve,
    break_evens,
    curve_points,
    default_horizon,
    needs_log_scale,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from hopindex.evaluation.report import EvalReport


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")


def write_bar_chart(report: EvalReport, path: Path) -> None:
    """Grouped bars: one group per k, one bar per method, the value printed on each bar."""
    n_methods = max(len(report.methods), 1)
    group_width = 0.8
    bar_width = group_width / n_methods
    figure = _figure(max(6.0, 1.2 + len(report.ks) * (0.6 + 0.5 * n_methods)), 4.5)
    axes = figure.add_subplot()
    positions = list(range(len(report.ks)))
    labelled = len(report.index_methods) > 1
    for offset, method in enumerate(report.methods):
        shift = -group_width / 2 + bar_width * (offset + 0.5)
        present = [(x, method.recall[k]) for x, k in zip(positions, report.ks, strict=True)
                   if k in method.recall]
        bars = axes.bar([x + shift for x, _ in present], [v for _, v in present],
                        width=bar_width, label=method.label if labelled else method.method)
        axes.bar_label(bars, fmt="%.2f", fontsize=7, padding=2)
    axes.set_xticks(positions, [f"R@{k}" for k in report.ks])
    axes.set_xlabel("k (passages retrieved)")
    axes.set_ylabel("Recall@k")
    axes.set_ylim(0, 1.1)
    axes.set_title(f"{report.dataset} — index {report.index} — {report.created_at}",
                   fontsize=10)
    if report.methods:
        # Outside the axes: any spot inside can hide a bar once recalls near 1.
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    _save(figure, path)


def write_token_curve(curves: Sequence[TokenCurve], crossings: Sequence[BreakEven],
                      path: Path, *, horizon: int, title: str) -> None:
    """One line per curve, cumulative tokens (build + N queries) against N up to
    ``horizon``, each crossing within it marked with its N; the y axis logarithmic when
    the values span more than two decades."""
    figure = _figure(8.0, 5.0)
    axes = figure.add_subplot()
    for curve in curves:
        points = curve_points(curve, horizon)
        axes.plot([n for n, _ in points], [value for _, value in points], label=curve.label,
                  linewidth=1.5)
    by_label = {curve.label: curve for curve in curves}
    for crossing in crossings:
        if crossing.at <= horizon:
            height = by_label[crossing.payer].at(crossing.at)
            axes.plot([crossing.at], [height], marker="o", color="black", markersize=4)
            axes.annotate(f"{crossing.queries:,}", (crossing.at, height), fontsize=7,
                          textcoords="offset points", xytext=(4, -10))
    if needs_log_scale(curves, horizon):
        values = [value for curve in curves for _, value in curve_points(curve, horizon)]
        if min(values) <= 0:
            # A curve at zero (no build, no LLM) has no logarithm: symlog keeps it on the
            # chart, linear up to the smallest positive value's decade and logarithmic
            # above, so no empty decades lie between zero and the other curves.
            first = math.floor(math.log10(min(value for value in values if value > 0)))
            last = math.floor(math.log10(max(values)))
            axes.set_yscale("symlog", linthresh=10.0 ** first, linscale=1.0)
            # Symlog's own ticks crowd decades below the threshold next to the 0.
            axes.set_yticks([0.0, *(10.0 ** k for k in range(first, last + 1))])
        else:
            axes.set_yscale("log")
    else:
        from matplotlib.ticker import EngFormatter

        # "1.5 M" rather than 1.5 under a detached "1e6".
        axes.yaxis.set_major_formatter(EngFormatter())
    axes.set_xlim(0, max(horizon, 1))
    axes.set_xlabel("queries served (N)")
    axes.set_ylabel("cumulative LLM tokens (index build + N queries)")
    axes.set_title(title, fontsize=10)
    if curves:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    _save(figure, path)


def write_curve_chart(report: EvalReport, path: Path, *, horizon: int | None = None) -> int:
    """Draw the rows' cumulative-token curves up to ``horizon`` queries (None: past the
    last break-even point, at least MIN_HORIZON) as a PNG; return the horizon drawn."""
    curves = report.token_curves()
    drawn = default_horizon(curves) if horizon is None else horizon
    write_token_curve(curves, break_evens(curves), path, horizon=drawn,
                      title=f"Cumulative LLM tokens — {report.dataset} — index "
                            f"{report.index} — {report.created_at}")
    return drawn
