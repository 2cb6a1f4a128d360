"""Evaluation reports: one run's figures as a terminal table, JSON, Markdown and a bar chart.

matplotlib is imported only inside ``write_bar_chart``: the CLI imports this
module on every start, and matplotlib costs a noticeable fraction of a second.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

_MISSING = "-"


@dataclass
class MethodReport:
    method: str
    n_questions: int
    recall: dict[int, float]
    latency_p50_ms: float
    latency_p95_ms: float
    extra: dict[str, float] = field(default_factory=dict)


@dataclass
class EvalReport:
    dataset: str
    index: str
    created_at: str
    methods: list[MethodReport]
    ks: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ks"] = list(self.ks)
        # JSON keys are strings; keep "5" rather than letting json.dumps coerce silently.
        for method in data["methods"]:
            method["recall"] = {str(k): v for k, v in method["recall"].items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalReport:
        methods = [MethodReport(method=m["method"], n_questions=m["n_questions"],
                                recall={int(k): v for k, v in m["recall"].items()},
                                latency_p50_ms=m["latency_p50_ms"],
                                latency_p95_ms=m["latency_p95_ms"],
                                extra=dict(m.get("extra", {})))
                   for m in data["methods"]]
        return cls(dataset=data["dataset"], index=data["index"], created_at=data["created_at"],
                   methods=methods, ks=tuple(data["ks"]))


def _extra_keys(report: EvalReport) -> list[str]:
    keys: dict[str, None] = {}
    for method in report.methods:
        keys.update(dict.fromkeys(method.extra))
    return list(keys)


def _header(report: EvalReport) -> list[str]:
    return ["method", "n", *(f"R@{k}" for k in report.ks), "p50 ms", "p95 ms",
            *_extra_keys(report)]


def _rows(report: EvalReport) -> list[list[str]]:
    extras = _extra_keys(report)
    rows = []
    for method in report.methods:
        recalls = [f"{method.recall[k]:.3f}" if k in method.recall else _MISSING
                   for k in report.ks]
        extra = [f"{method.extra[key]:.3f}" if key in method.extra else _MISSING
                 for key in extras]
        rows.append([method.method, str(method.n_questions), *recalls,
                     f"{method.latency_p50_ms:.1f}", f"{method.latency_p95_ms:.1f}", *extra])
    return rows


def render_table(report: EvalReport) -> str:
    """A plain-text table: method left-aligned, figures right-aligned, one row per method."""
    header = _header(report)
    rows = _rows(report)
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join((first, *rest)).rstrip()

    title = f"{report.dataset} · index {report.index} · {report.created_at}"
    rule = "-" * len(line(header))
    return "\n".join([title, line(header), rule, *(line(row) for row in rows)])


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: EvalReport) -> str:
    header = _header(report)
    lines = [
        f"**Dataset:** {report.dataset} · **Index:** {report.index} · "
        f"**Date:** {report.created_at}",
        "",
        "| " + " | ".join(_markdown_cell(cell) for cell in header) + " |",
        "|" + "|".join([":---", *["---:"] * (len(header) - 1)]) + "|",
    ]
    lines.extend("| " + " | ".join(_markdown_cell(cell) for cell in row) + " |"
                 for row in _rows(report))
    return "\n".join(lines) + "\n"


def _prepare(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_json(report: EvalReport, path: Path) -> None:
    _prepare(path).write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n",
                              encoding="utf-8")


def read_json(path: Path) -> EvalReport:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return EvalReport.from_dict(data)


def write_markdown(report: EvalReport, path: Path) -> None:
    _prepare(path).write_text(render_markdown(report), encoding="utf-8")


def write_bar_chart(report: EvalReport, path: Path) -> None:
    """Grouped bars: one group per k, one bar per method, the value printed on each bar."""
    # The object API with the Agg canvas: no pyplot global state and no GUI
    # backend, so this is safe in servers, threads and headless CI.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n_methods = max(len(report.methods), 1)
    group_width = 0.8
    bar_width = group_width / n_methods
    figure = Figure(figsize=(max(6.0, 1.2 + len(report.ks) * (0.6 + 0.5 * n_methods)), 4.5),
                    dpi=120)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = list(range(len(report.ks)))
    for offset, method in enumerate(report.methods):
        shift = -group_width / 2 + bar_width * (offset + 0.5)
        present = [(x, method.recall[k]) for x, k in zip(positions, report.ks, strict=True)
                   if k in method.recall]
        bars = axes.bar([x + shift for x, _ in present], [v for _, v in present],
                        width=bar_width, label=method.method)
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
    figure.savefig(_prepare(path), format="png")


def write_all(report: EvalReport, out_base: Path) -> tuple[Path, Path, Path]:
    """Write ``<base>.json``, ``<base>.md`` and ``<base>.png``; return the three paths."""
    # Append rather than with_suffix: a base such as "run-1.5" must keep its ".5".
    json_path, md_path, png_path = (out_base.with_name(out_base.name + suffix)
                                    for suffix in (".json", ".md", ".png"))
    write_json(report, json_path)
    write_markdown(report, md_path)
    write_bar_chart(report, png_path)
    return json_path, md_path, png_path
