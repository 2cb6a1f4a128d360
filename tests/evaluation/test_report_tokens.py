"""Tokens per query and the cumulative-token curve in reports: the tokens/q and tokens p95
columns, break-even notes under the table, the JSON that redraws the curve, and the
curve's PNG, drawn headless."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

from hopindex.evaluation.build_tokens import BuildTokens, BuildTokensSource
from hopindex.evaluation.charts import write_curve_chart, write_token_curve
from hopindex.evaluation.report import (
    EvalReport,
    LlmCostPerQuery,
    MethodReport,
    read_json,
    render_markdown,
    render_table,
    write_json,
)
from hopindex.evaluation.token_curve import TokenCurve, break_evens, needs_log_scale

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PAYBACK = "compactrag/compactrag pays back its build against indexrag/ircot after 1,358 queries"


def llm(prompt: float, completion: float, p95: float | None,
        calls: float = 2.0) -> LlmCostPerQuery:
    return LlmCostPerQuery(calls_mean=calls, calls_p95=calls, prompt_tokens_mean=prompt,
                           prompt_tokens_p95=prompt * 1.5, completion_tokens_mean=completion,
                           completion_tokens_p95=completion * 1.5, cache_hits=0,
                           tokens_p95=p95)


def row(method: str, index_method: str, cost: LlmCostPerQuery, build_tokens: int,
        source: BuildTokensSource = BuildTokensSource.BUILD) -> MethodReport:
    return MethodReport(method=method, n_questions=50, recall={5: 0.8}, latency_p50_ms=100.0,
                        latency_p95_ms=200.0, tpq_s=0.12, llm=cost, index_method=index_method,
                        build_tokens=BuildTokens(index=f"hq-{index_method}",
                                                 tokens=build_tokens, source=source,
                                                 jobs=1 if source is BuildTokensSource.BUILD
                                                 else 4))


def curve_report() -> EvalReport:
    """CompactRAG's costly build and cheap queries, an iterative method on a cheaper
    index, and a free retrieval-only method on an index built without an LLM."""
    return EvalReport(
        dataset="hotpotqa-100", index="hq", created_at="2026-11-21T10:00:00+00:00", ks=(5,),
        methods=[row("compactrag", "compactrag", llm(250.0, 50.0, 420.0), 1_000_000),
                 row("ircot", "indexrag", llm(900.0, 100.0, 2_400.0), 50_000,
                     BuildTokensSource.JOBS),
                 row("naive", "extractive", llm(0.0, 0.0, 0.0, calls=0.0), 0)])


def test_table_shows_tokens_per_query_and_notes_where_a_build_pays_back() -> None:
    """tokens/q is the mean prompt + completion tokens and tokens p95 its 95th percentile;
    under the table, where CompactRAG's build pays back against the iterative method
    (950,000 / 700 -> 1,358 queries) and whose build tokens came from job records."""
    lines = render_table(curve_report()).splitlines()
    header = lines[1]
    assert "tokens/q" in header and "tokens p95" in header
    assert header.index("tokens/q") < header.index("tokens p95") < header.index("cache hits")
    # compl p95, tokens/q, tokens p95, cache hits.
    assert lines[3].split()[-4:] == ["75", "300", "420", "0"]
    assert lines[4].split()[-4:] == ["150", "1000", "2400", "0"]
    assert lines[6:] == [
        f"note: {PAYBACK}",
        "note: build tokens of hq-indexrag: 50,000, summed from the records of its 4 "
        "finished jobs"]


def test_markdown_carries_the_token_columns_and_the_break_even_note() -> None:
    """The Markdown table has the same tokens/q and tokens p95 columns and lists the
    break-even point under it."""
    lines = render_markdown(curve_report()).splitlines()
    assert "| compl p95 | tokens/q | tokens p95 | cache hits |" in lines[2]
    assert lines[4].endswith("| 75 | 300 | 420 | 0 |")
    assert f"- {PAYBACK}" in lines


def test_no_llm_use_means_no_token_columns_and_no_curve_notes() -> None:
    """A run where no method used an LLM keeps its table: no token columns and no notes,
    even though its rows know their (zero) build tokens."""
    report = curve_report()
    del report.methods[:2]
    lines = render_table(report).splitlines()
    assert "tokens/q" not in lines[1]
    assert len(lines) == 4


def test_json_round_trips_and_holds_what_redraws_the_curve(tmp_path: Path) -> None:
    """Each row's build tokens and tokens p95 are stored and read back equal; tokens/q
    per row and the curve section (default horizon, each curve's build and slope, each
    break-even point) are written for readers and recomputed on reading."""
    report = curve_report()
    assert EvalReport.from_dict(report.to_dict()) == report
    path = tmp_path / "run.json"
    write_json(report, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    first = data["methods"][0]
    assert first["build_tokens"] == {"index": "hq-compactrag", "tokens": 1_000_000,
                                     "source": "build", "jobs": 1}
    assert (first["llm"]["tokens_mean"], first["llm"]["tokens_p95"]) == (300.0, 420.0)
    assert data["token_curve"]["default_horizon"] == 2_000
    assert data["token_curve"]["curves"] == [
        {"method": "compactrag/compactrag", "build_tokens": 1_000_000.0,
         "tokens_per_query": 300.0},
        {"method": "indexrag/ircot", "build_tokens": 50_000.0, "tokens_per_query": 1_000.0},
        {"method": "extractive/naive", "build_tokens": 0.0, "tokens_per_query": 0.0}]
    (point,) = data["token_curve"]["break_even"]
    assert (point["method"], point["against"], point["queries"]) == (
        "compactrag/compactrag", "indexrag/ircot", 1_358)
    loaded = read_json(path)
    assert loaded == report
    assert render_table(loaded) == render_table(report)


def test_a_report_from_before_tokens_were_recorded_still_loads() -> None:
    """LLM cost without tokens_p95 and rows without build tokens load as None: tokens/q is
    still derived from the stored means, tokens p95 shows '-', and there is no curve."""
    data = curve_report().to_dict()
    for method in data["methods"]:
        del method["llm"]["tokens_p95"], method["llm"]["tokens_mean"], method["build_tokens"]
    del data["token_curve"]
    report = EvalReport.from_dict(data)
    assert report.methods[0].llm is not None and report.methods[0].llm.tokens_p95 is None
    assert report.methods[0].build_tokens is None
    assert report.token_curves() == []
    lines = render_table(report).splitlines()
    assert lines[3].split()[-4:] == ["75", "300", "-", "0"]
    assert not any(line.startswith("note:") for line in lines)
    assert report.to_dict()["token_curve"] == {"default_horizon": 1_000, "curves": [],
                                               "break_even": []}


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header chunk, after checking it is a complete PNG:
    the signature, IHDR first and IEND last."""
    assert data.startswith(PNG_MAGIC)
    assert data[12:16] == b"IHDR"
    assert data[-8:-4] == b"IEND"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_curve_chart_is_a_complete_png_up_to_the_default_horizon(tmp_path: Path) -> None:
    """write_curve_chart draws every row's curve (a free row at zero among them) up to the
    default horizon past the last break-even point, into a complete PNG, its folder made
    on the way."""
    path = tmp_path / "charts" / "curve.png"
    assert write_curve_chart(curve_report(), path) == 2_000
    width, height = png_size(path.read_bytes())
    assert (width, height) == (960, 600)
    assert path.stat().st_size > 10_000


def test_the_curve_chart_takes_a_horizon_and_tolerates_no_curves(tmp_path: Path) -> None:
    """A horizon short of the break-even point draws without its marker; a report with no
    curves (older, or no rows) still draws an empty chart."""
    assert write_curve_chart(curve_report(), tmp_path / "short.png", horizon=100) == 100
    empty = curve_report()
    empty.methods.clear()
    assert write_curve_chart(empty, tmp_path / "empty.png") == 1_000
    for name in ("short.png", "empty.png"):
        png_size((tmp_path / name).read_bytes())


def test_curves_spanning_decades_draw_on_a_log_axis_zero_or_not(tmp_path: Path) -> None:
    """Curves spanning more than two decades draw on a log axis, with a curve at zero
    (symlog keeps it) or without one (log)."""
    spread = [TokenCurve("a", 1_000_000, 30), TokenCurve("b", 200, 100)]
    for name, curves in (("log.png", spread), ("symlog.png", [*spread, TokenCurve("c", 0, 0)])):
        assert needs_log_scale(curves, 1_000)
        write_token_curve(curves, break_evens(curves), tmp_path / name, horizon=1_000,
                          title=name)
        png_size((tmp_path / name).read_bytes())


def test_the_curve_chart_draws_headless_without_pyplot_or_a_gui(tmp_path: Path) -> None:
    """In a fresh interpreter with no display and a GUI backend asked for, the chart is
    still written: it uses the Agg canvas alone, never pyplot nor a GUI toolkit."""
    path = tmp_path / "headless.png"
    code = ("import sys\n"
            "from pathlib import Path\n"
            "from hopindex.evaluation.charts import write_token_curve\n"
            "from hopindex.evaluation.token_curve import TokenCurve\n"
            "write_token_curve([TokenCurve('a', 1e6, 300), TokenCurve('b', 0, 1000)], [],\n"
            f"                  Path({str(path)!r}), horizon=2000, title='t')\n"
            "print(sorted(m for m in ('matplotlib.pyplot', 'tkinter', 'PyQt5', 'PySide6',\n"
            "                         'gi', 'wx') if m in sys.modules))\n"
            "print('matplotlib.backends.backend_agg' in sys.modules)\n")
    env = {key: value for key, value in os.environ.items()
           if key not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["MPLBACKEND"] = "TkAgg"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, check=True)
    assert result.stdout.splitlines() == ["[]", "True"]
    png_size(path.read_bytes())


def test_importing_the_report_and_chart_modules_does_not_import_matplotlib() -> None:
    """The CLI imports these on every start: matplotlib loads only when a chart is drawn."""
    code = ("import sys, hopindex.evaluation.report, hopindex.evaluation.charts, "
            "hopindex.evaluation.token_curve, hopindex.evaluation.build_tokens; "
            "print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
