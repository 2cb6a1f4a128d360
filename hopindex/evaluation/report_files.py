"""A report's three files: JSON (to reload), Markdown (to read) and a recall chart."""

from __future__ import annotations

from pathlib import Path

from hopindex.evaluation.charts import write_bar_chart
from hopindex.evaluation.report import EvalReport, write_json, write_markdown


def write_all(report: EvalReport, out_base: Path) -> tuple[Path, Path, Path]:
    """Write ``<base>.json``, ``<base>.md`` and ``<base>.png``; return the three paths."""
    # Append rather than with_suffix: a base such as "run-1.5" must keep its ".5".
    json_path, md_path, png_path = (out_base.with_name(out_base.name + suffix)
                                    for suffix in (".json", ".md", ".png"))
    write_json(report, json_path)
    write_markdown(report, md_path)
    write_bar_chart(report, png_path)
    return json_path, md_path, png_path
