"""Reports: terminal table, JSON, Markdown and PNG chart carry every method's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hopindex.evaluation.build_cost import BuildCost, BuildSource, PhaseCost
from hopindex.evaluation.charts import write_bar_chart
from hopindex.evaluation.report import (
    AnswerScores,
    EvalReport,
    LlmCostPerQuery,
    MethodReport,
    SkippedMethod,
    read_json,
    render_markdown,
    render_table,
    write_json,
    write_markdown,
)
from hopindex.evaluation.report_files import write_all

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def sample_report() -> EvalReport:
    return EvalReport(
        dataset="hotpotqa-100", index="hp100", created_at="2026-11-21T10:00:00+00:00",
        ks=(2, 5),
        methods=[
            MethodReport(method="naive", n_questions=100, recall={2: 0.655, 5: 0.81},
                         latency_p50_ms=12.25, latency_p95_ms=30.5, tpq_s=0.01425,
                         extra={"f1": 0.4321}),
            MethodReport(method="extractive|v2", n_questions=100, recall={2: 0.702, 5: 0.874},
                         latency_p50_ms=20.0, latency_p95_ms=41.75, tpq_s=0.0225, extra={}),
        ],
    )


def test_render_table_aligns_columns_and_shows_every_figure() -> None:
    """The terminal table has a title, a header, a rule and one row per method; figure
    columns line up on their right edge; a missing extra shows as '-'."""
    table = render_table(sample_report())
    title, header, rule, naive, extractive = table.splitlines()
    assert "hotpotqa-100" in title
    assert "hp100" in title
    assert header.split() == ["method", "n", "R@2", "R@5", "p50", "ms", "p95", "ms", "TPQ", "s",
                              "f1"]
    assert set(rule) == {"-"}
    assert naive.split() == ["naive", "100", "0.655", "0.810", "12.2", "30.5", "0.014",
                             "0.432"]
    assert extractive.split() == ["extractive|v2", "100", "0.702", "0.874", "20.0", "41.8",
                                  "0.022", "-"]
    # Right-aligned: each R@5 value ends where the R@5 header ends.
    end = header.index("R@5") + len("R@5")
    assert naive[:end].endswith("0.810")
    assert extractive[:end].endswith("0.874")


def test_write_json_round_trips_every_figure(tmp_path: Path) -> None:
    """The JSON holds each method's recall per k, latencies and extras, and reads back equal."""
    report = sample_report()
    path = tmp_path / "out" / "report.json"
    write_json(report, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["dataset"] == "hotpotqa-100"
    assert data["ks"] == [2, 5]
    assert data["methods"][0]["recall"] == {"2": 0.655, "5": 0.81}
    assert data["methods"][1]["latency_p95_ms"] == 41.75
    assert data["methods"][1]["tpq_s"] == 0.0225
    assert data["methods"][0]["extra"] == {"f1": 0.4321}
    assert read_json(path) == report


def test_write_markdown_has_header_line_and_a_row_per_method(tmp_path: Path) -> None:
    """The Markdown names dataset, index and date on one line, then a table with each method's
    figures; a '|' in a method name is escaped so the table keeps its columns."""
    path = tmp_path / "report.md"
    write_markdown(sample_report(), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == ("**Dataset:** hotpotqa-100 · **Index:** hp100 · "
                        "**Date:** 2026-11-21T10:00:00+00:00")
    assert lines[2] == "| method | n | R@2 | R@5 | p50 ms | p95 ms | TPQ s | f1 |"
    assert lines[3] == "|:---|---:|---:|---:|---:|---:|---:|---:|"
    assert lines[4] == "| naive | 100 | 0.655 | 0.810 | 12.2 | 30.5 | 0.014 | 0.432 |"
    assert lines[5] == "| extractive\\|v2 | 100 | 0.702 | 0.874 | 20.0 | 41.8 | 0.022 | - |"


def test_write_bar_chart_is_a_png(tmp_path: Path) -> None:
    """The chart is a real PNG file of non-trivial size."""
    path = tmp_path / "chart.png"
    write_bar_chart(sample_report(), path)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 5_000


def test_write_bar_chart_tolerates_missing_k_and_no_methods(tmp_path: Path) -> None:
    """A method without a value for some k, or a report without methods, still draws."""
    report = sample_report()
    del report.methods[1].recall[5]
    write_bar_chart(report, tmp_path / "a.png")
    report.methods.clear()
    write_bar_chart(report, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes().startswith(PNG_MAGIC)
    assert (tmp_path / "b.png").read_bytes().startswith(PNG_MAGIC)


def test_write_all_writes_three_files_keeping_dots_in_the_base(tmp_path: Path) -> None:
    """write_all appends .json/.md/.png to the base name, even when the base contains a dot."""
    base = tmp_path / "reports" / "run-1.5"
    paths = write_all(sample_report(), base)
    assert [p.name for p in paths] == ["run-1.5.json", "run-1.5.md", "run-1.5.png"]
    json_path, md_path, png_path = paths
    assert "0.874" in md_path.read_text(encoding="utf-8")
    assert json.loads(json_path.read_text(encoding="utf-8"))["index"] == "hp100"
    assert png_path.read_bytes().startswith(PNG_MAGIC)


NO_LLM = LlmCostPerQuery(calls_mean=0.0, calls_p95=0.0, prompt_tokens_mean=0.0,
                         prompt_tokens_p95=0.0, completion_tokens_mean=0.0,
                         completion_tokens_p95=0.0, cache_hits=0, tokens_p95=0.0)


def llm_report() -> EvalReport:
    """A retrieval-only method beside an answering LLM method, as the new runner writes."""
    return EvalReport(
        dataset="hotpotqa-100", index="hp100", created_at="2026-11-21T10:00:00+00:00",
        ks=(5,),
        methods=[
            MethodReport(method="naive", n_questions=100, recall={5: 0.785},
                         latency_p50_ms=12.0, latency_p95_ms=30.0, tpq_s=0.015, llm=NO_LLM),
            MethodReport(method="ircot", n_questions=100, recall={5: 0.9},
                         latency_p50_ms=2500.0, latency_p95_ms=6100.0, tpq_s=2.875,
                         answers=AnswerScores(answered=98, exact_match=0.4512, f1=0.5834,
                                              accuracy=0.5),
                         llm=LlmCostPerQuery(calls_mean=3.42, calls_p95=6.0,
                                             prompt_tokens_mean=2310.4,
                                             prompt_tokens_p95=4102.0,
                                             completion_tokens_mean=61.6,
                                             completion_tokens_p95=120.0, cache_hits=17,
                                             tokens_p95=4210.0)),
        ],
    )


def test_table_shows_answer_and_llm_columns_when_a_method_has_them() -> None:
    """With an answering method in the run, the table gains EM/F1/Acc/answered and the LLM
    cost columns, tokens per query (prompt + completion: 2310.4 + 61.6 = 2372) and their
    p95 among them; the retrieval-only row shows '-' for answers and zero LLM use."""
    _, header, _, naive, ircot = render_table(llm_report()).splitlines()
    assert header.split() == ["method", "n", "R@5", "p50", "ms", "p95", "ms", "TPQ", "s",
                              "EM", "F1", "Acc", "answered",
                              "LLM", "calls", "calls", "p95", "prompt", "tok", "prompt", "p95",
                              "compl", "tok", "compl", "p95", "tokens/q", "tokens", "p95",
                              "cache", "hits"]
    assert naive.split() == ["naive", "100", "0.785", "12.0", "30.0", "0.015", "-", "-", "-", "-",
                             "0.0", "0.0", "0", "0", "0", "0", "0", "0", "0"]
    assert ircot.split() == ["ircot", "100", "0.900", "2500.0", "6100.0", "2.875",
                             "0.451", "0.583", "0.500", "98",
                             "3.4", "6.0", "2310", "4102", "62", "120", "2372", "4210", "17"]


def test_retrieval_only_run_keeps_the_old_columns() -> None:
    """When no method answered or used the LLM, neither the answer nor the LLM columns
    appear, in the table or in the Markdown."""
    report = llm_report()
    del report.methods[1]
    header = render_table(report).splitlines()[1]
    assert header.split() == ["method", "n", "R@5", "p50", "ms", "p95", "ms", "TPQ", "s"]
    assert render_markdown(report).splitlines()[2] == ("| method | n | R@5 | p50 ms | p95 ms | "
                                                       "TPQ s |")


def test_markdown_shows_answer_and_llm_columns() -> None:
    """The Markdown table carries the same answer and LLM columns as the terminal table, a
    report from older code (no LLM figures) showing '-' in them."""
    report = llm_report()
    report.methods[0].llm = None
    lines = render_markdown(report).splitlines()
    assert lines[2] == ("| method | n | R@5 | p50 ms | p95 ms | TPQ s | EM | F1 | Acc | "
                        "answered | "
                        "LLM calls | calls p95 | prompt tok | prompt p95 | compl tok | "
                        "compl p95 | tokens/q | tokens p95 | cache hits |")
    assert lines[3] == "|:---|" + "---:|" * 18
    assert lines[4] == "| naive | 100 | 0.785 | 12.0 | 30.0 | 0.015 |" + " - |" * 13
    assert lines[5] == ("| ircot | 100 | 0.900 | 2500.0 | 6100.0 | 2.875 | 0.451 | 0.583 | "
                        "0.500 | "
                        "98 | 3.4 | 6.0 | 2310 | 4102 | 62 | 120 | 2372 | 4210 | 17 |")


def test_answer_and_llm_figures_round_trip_through_json(tmp_path: Path) -> None:
    """The JSON holds answers (null for a retrieval-only method) and LLM cost per method,
    and reads back equal, also through to_dict/from_dict alone."""
    report = llm_report()
    assert EvalReport.from_dict(report.to_dict()) == report
    path = tmp_path / "report.json"
    write_json(report, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["methods"][0]["answers"] is None
    assert data["methods"][1]["answers"] == {"answered": 98, "exact_match": 0.4512,
                                             "f1": 0.5834, "accuracy": 0.5}
    assert data["methods"][1]["llm"]["calls_p95"] == 6.0
    assert data["methods"][1]["llm"]["cache_hits"] == 17
    assert read_json(path) == report


def test_report_written_before_answer_and_llm_figures_still_loads() -> None:
    """A method entry without the answers, llm, tpq_s and pool_size keys (older code) loads
    with each None and renders as before, TPQ shown as '-'."""
    old = {"dataset": "hotpotqa-100", "index": "hp100",
           "created_at": "2026-11-21T10:00:00+00:00", "ks": [5],
           "methods": [{"method": "naive", "n_questions": 100, "recall": {"5": 0.785},
                        "latency_p50_ms": 12.0, "latency_p95_ms": 30.0, "extra": {}}]}
    report = EvalReport.from_dict(old)
    assert report.methods[0].answers is None
    assert report.methods[0].llm is None
    assert report.methods[0].recall == {5: 0.785}
    assert report.methods[0].index_method == "" and not report.builds and not report.skipped
    assert report.methods[0].tpq_s is None and report.methods[0].pool_size is None
    table = render_table(report).splitlines()
    assert table[1].split() == ["method", "n", "R@5", "p50", "ms", "p95", "ms", "TPQ", "s"]
    assert table[3].split() == ["naive", "100", "0.785", "12.0", "30.0", "-"]


def test_write_all_carries_answer_and_llm_figures(tmp_path: Path) -> None:
    """The files write_all produces hold the answer and LLM figures: JSON and Markdown."""
    json_path, md_path, png_path = write_all(llm_report(), tmp_path / "run")
    assert json.loads(json_path.read_text(encoding="utf-8"))["methods"][1]["answers"][
        "answered"] == 98
    markdown = md_path.read_text(encoding="utf-8")
    assert "| EM | F1 | Acc | answered |" in markdown
    assert "| 3.4 | 6.0 | 2310 |" in markdown
    assert png_path.read_bytes().startswith(PNG_MAGIC)


def test_importing_report_does_not_import_matplotlib() -> None:
    """The report module stays cheap to import: matplotlib loads only when a chart is drawn."""
    code = ("import sys, hopindex.evaluation.report, hopindex.evaluation.metrics, "
            "hopindex.evaluation.datasets; print('matplotlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def comparison_report() -> EvalReport:
    """Two index methods, a method skipped on one of them, and each index's build cost."""
    report = llm_report()
    report.methods[0].index_method = "plain"
    report.methods[1].index_method = "smart"
    report.builds = [
        BuildCost(index_method="plain", index="hp100-plain", source=BuildSource.BUILT,
                  documents=10, wall_s=1.25, job_id="j1", job_state="succeeded",
                  phases=[PhaseCost(phase="plain.stage1", kind="documents", done=10)]),
        BuildCost(index_method="smart", index="hp100-smart", source=BuildSource.REUSED,
                  documents=10, wall_s=8.5, job_id="j2", job_state="succeeded",
                  phases=[PhaseCost(phase="smart.stage1", kind="documents", done=10,
                                    llm_calls=10, prompt_tokens=900, completion_tokens=90),
                          PhaseCost(phase="smart.stage2", kind="groups", done=3,
                                    llm_calls=3, cache_hits=2)])]
    report.skipped = [SkippedMethod(method="naive", index_method="smart",
                                    reason="it reads passage units, the index holds aku")]
    return report


def test_comparison_table_names_each_rows_index_method_and_each_build() -> None:
    """With two index methods the table leads with an index-method column, notes the
    skipped method, and ends with the build cost of each index, phase by phase."""
    lines = render_table(comparison_report()).splitlines()
    assert lines[1].split()[:3] == ["index", "method", "method"]
    assert lines[3].split()[:2] == ["plain", "naive"]
    assert lines[4].split()[:2] == ["smart", "ircot"]
    assert lines[5] == ("note: naive skipped on the smart index: it reads passage units, "
                        "the index holds aku")
    build = lines[lines.index("build cost per index method") + 1:]
    assert build[0].split()[:4] == ["index", "method", "index", "build"]
    assert build[2].split() == ["plain", "hp100-plain", "built", "by", "job", "j1", "10",
                                "-", "1.25", "plain.stage1", "10", "0", "0", "0", "0", "0",
                                "0", "-", "-", "-"]
    assert build[3].split() == ["total", "0", "0", "0", "0", "-", "-", "-"]
    assert build[4].split()[:7] == ["smart", "hp100-smart", "reused;", "cost", "of", "job",
                                    "j2"]
    assert build[5].split() == ["smart.stage2", "3", "0", "0", "3", "0", "0", "2", "-", "-",
                                "-"]
    assert build[6].split() == ["total", "13", "900", "90", "2", "-", "-", "-"]
    assert len(build) == 7


def test_one_index_method_keeps_the_method_column_first() -> None:
    """A run over one index shows no index-method column, whatever its rows record."""
    report = comparison_report()
    report.methods[1].index_method = "plain"
    assert render_table(report).splitlines()[1].split()[0] == "method"


def test_comparison_round_trips_and_reaches_markdown_and_chart(tmp_path: Path) -> None:
    """Builds, skipped methods and each row's index method survive JSON; the Markdown
    carries the build table and the note; the chart labels bars by index method."""
    report = comparison_report()
    json_path, md_path, png_path = write_all(report, tmp_path / "cmp")
    assert read_json(json_path) == report
    assert json.loads(json_path.read_text(encoding="utf-8"))["builds"][1]["source"] == "reused"
    markdown = md_path.read_text(encoding="utf-8")
    assert "| index method | method | n |" in markdown
    assert "- naive skipped on the smart index" in markdown
    assert ("| smart | hp100-smart | reused; cost of job j2 | 10 | - | 8.50 | smart.stage1 "
            "| 10 | 0 | 0 | 10 | 900 | 90 | 0 | - | - | - |") in markdown
    assert png_path.read_bytes().startswith(PNG_MAGIC)
    assert [m.label for m in report.methods] == ["plain/naive", "smart/ircot"]


def pool_report() -> EvalReport:
    """SiReRAG's comparison on its index: both trees, the similarity tree alone (the
    smaller pool, so the baseline), and a method that reports no pool."""
    def row(method: str, tpq_s: float, pool_size: float | None) -> MethodReport:
        return MethodReport(method=method, n_questions=50, recall={5: 0.8},
                            latency_p50_ms=tpq_s * 900, latency_p95_ms=tpq_s * 1800,
                            tpq_s=tpq_s, index_method="sirerag", pool_size=pool_size)

    return EvalReport(dataset="musique-50", index="mq", created_at="2026-11-21T10:00:00+00:00",
                      ks=(5,), methods=[row("sirerag", 0.5, 3000.0),
                                        row("sirerag:pool=similarity", 0.4, 2000.0),
                                        row("naive", 0.05, None)])


def test_table_shows_pool_and_tper_with_the_baseline_at_one() -> None:
    """Rows with a pool gain pool and TPER columns after TPQ: both trees (0.5 s, 3000
    units) against the similarity pool (0.4 s, 2000 units) is (0.5/0.4)/(1.5) = 0.83; the
    baseline reads 1.00 and a note names it; the row without a pool shows '-'."""
    lines = render_table(pool_report()).splitlines()
    assert lines[1].split() == ["method", "n", "R@5", "p50", "ms", "p95", "ms", "TPQ", "s",
                                "pool", "TPER"]
    assert lines[3].split() == ["sirerag", "50", "0.800", "450.0", "900.0", "0.500", "3000",
                                "0.83"]
    assert lines[4].split() == ["sirerag:pool=similarity", "50", "0.800", "360.0", "720.0",
                                "0.400", "2000", "1.00"]
    assert lines[5].split() == ["naive", "50", "0.800", "45.0", "90.0", "0.050", "-", "-"]
    assert lines[6] == ("note: TPER = (TPQ / TPQ_B) / (pool / pool_B), "
                        "B = sirerag:pool=similarity (pool 2000)")
    assert len(lines) == 7


def test_markdown_shows_pool_and_tper_and_names_the_baseline() -> None:
    """The Markdown table carries the same pool and TPER columns, and the baseline note in
    the list under it."""
    lines = render_markdown(pool_report()).splitlines()
    assert lines[2] == "| method | n | R@5 | p50 ms | p95 ms | TPQ s | pool | TPER |"
    assert lines[3] == "|:---|" + "---:|" * 7
    assert lines[4] == "| sirerag | 50 | 0.800 | 450.0 | 900.0 | 0.500 | 3000 | 0.83 |"
    assert lines[5] == ("| sirerag:pool=similarity | 50 | 0.800 | 360.0 | 720.0 | 0.400 | "
                        "2000 | 1.00 |")
    assert lines[6] == "| naive | 50 | 0.800 | 45.0 | 90.0 | 0.050 | - | - |"
    assert lines[8] == ("- TPER = (TPQ / TPQ_B) / (pool / pool_B), "
                        "B = sirerag:pool=similarity (pool 2000)")


def test_a_lone_pool_shows_its_size_and_no_tper() -> None:
    """One row with a pool has nothing to compare with: its pool shows, TPER is '-', and no
    baseline is noted; a pool that changed mid-run shows its half-unit median."""
    report = pool_report()
    del report.methods[1]
    report.methods[0].pool_size = 2999.5
    lines = render_table(report).splitlines()
    assert lines[3].split()[-2:] == ["2999.5", "-"]
    assert not any(line.startswith("note:") for line in lines)


def test_runs_without_pools_have_no_pool_columns() -> None:
    """No row reports a pool: neither pool nor TPER appears, in the table or the Markdown."""
    report = pool_report()
    for method in report.methods:
        method.pool_size = None
    assert render_table(report).splitlines()[1].split()[-2:] == ["TPQ", "s"]
    assert render_markdown(report).splitlines()[2].endswith("| TPQ s |")


def test_pools_on_different_indexes_are_not_compared() -> None:
    """In a run over two index methods, the same query method on each index is compared only
    with rows on that index: one pool per index means no TPER anywhere."""
    report = pool_report()
    report.methods[1].index_method = "other"
    lines = render_table(report).splitlines()
    assert lines[1].split()[:3] == ["index", "method", "method"]
    assert lines[3].split()[-2:] == ["3000", "-"]
    assert lines[4].split()[-2:] == ["2000", "-"]
    assert report.tper() == [None, None, None]


def test_tpq_pool_and_tper_round_trip_through_json(tmp_path: Path) -> None:
    """TPQ and pool size are stored per row and read back equal; TPER and its baseline are
    written for readers of the JSON (null where there is none) and recomputed on reading."""
    report = pool_report()
    assert EvalReport.from_dict(report.to_dict()) == report
    path = tmp_path / "pool.json"
    write_json(report, path)
    methods = json.loads(path.read_text(encoding="utf-8"))["methods"]
    assert [m["tpq_s"] for m in methods] == [0.5, 0.4, 0.05]
    assert [m["pool_size"] for m in methods] == [3000.0, 2000.0, None]
    assert methods[0]["tper"] == pytest.approx(5 / 6)
    assert [m["tper"] for m in methods[1:]] == [1.0, None]
    assert [m["tper_baseline"] for m in methods] == ["sirerag:pool=similarity",
                                                     "sirerag:pool=similarity", None]
    loaded = read_json(path)
    assert loaded == report
    assert render_table(loaded) == render_table(report)
