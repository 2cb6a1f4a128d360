"""Evaluation reports: one run's figures as a terminal table, JSON, Markdown and a bar chart.

Recall and latency (p50, p95 and TPQ, the mean) are always shown; answer scores and LLM
cost only when some method in the run has them, so a retrieval-only run reads as it
always did; the retrieval pool's size and TPER (``efficiency``) only when some method
reports its pool. A run over several index methods adds an index-method column; every
run that knows how its indexes were built shows their build cost per phase
(``build_cost``) and notes the methods it skipped because they cannot read an index.
Rows that know their index's build tokens make cumulative-token curves (``token_curve``):
where one pays back its build against another is noted under the table.

Charts are drawn in ``charts``, which imports matplotlib only when it draws;
``report_files`` writes a report's three files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hopindex.evaluation.build_cost import BUILD_HEADER, BuildCost, build_rows
from hopindex.evaluation.build_tokens import BuildTokens, BuildTokensSource
from hopindex.evaluation.efficiency import EfficiencyRow, Tper, assign_tper
from hopindex.evaluation.token_curve import TokenCurve, break_evens, default_horizon

_MISSING = "-"
# Columns of names, left-aligned; every other column holds figures.
_TEXT_COLUMNS = frozenset({"index method", "method", "index", "build", "phase"})
_T = TypeVar("_T")


@dataclass
class AnswerScores:
    """Mean EM, token F1 and accuracy over all of a method's questions, an unanswered
    question scoring 0, and how many questions it answered."""

    answered: int
    exact_match: float
    f1: float
    accuracy: float

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerScores:
        return cls(answered=data["answered"], exact_match=data["exact_match"], f1=data["f1"],
                   accuracy=data["accuracy"])


@dataclass
class LlmCostPerQuery:
    """LLM use per question (mean and 95th percentile) and cache hits over the whole run."""

    calls_mean: float
    calls_p95: float
    prompt_tokens_mean: float
    prompt_tokens_p95: float
    completion_tokens_mean: float
    completion_tokens_p95: float
    cache_hits: int
    # 95th percentile of a question's prompt + completion tokens: not derivable from the
    # two percentiles above. None only in reports written before it was recorded.
    tokens_p95: float | None = None

    @property
    def tokens_mean(self) -> float:
        """Mean prompt + completion tokens per question: the mean of sums is the sum of
        the means, so it is derived rather than stored."""
        return self.prompt_tokens_mean + self.completion_tokens_mean

    @property
    def used(self) -> bool:
        # Counts are never negative, so a zero mean means no question used the LLM;
        # a run served wholly from the cache has no calls but does have hits.
        return bool(self.calls_mean or self.prompt_tokens_mean
                    or self.completion_tokens_mean or self.cache_hits)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LlmCostPerQuery:
        return cls(calls_mean=data["calls_mean"], calls_p95=data["calls_p95"],
                   prompt_tokens_mean=data["prompt_tokens_mean"],
                   prompt_tokens_p95=data["prompt_tokens_p95"],
                   completion_tokens_mean=data["completion_tokens_mean"],
                   completion_tokens_p95=data["completion_tokens_p95"],
                   cache_hits=data["cache_hits"], tokens_p95=data.get("tokens_p95"))


@dataclass
class MethodReport:
    method: str
    n_questions: int
    recall: dict[int, float]
    latency_p50_ms: float
    latency_p95_ms: float
    # Time per query: mean seconds. None only in reports written before it was recorded.
    tpq_s: float | None = None
    extra: dict[str, float] = field(default_factory=dict)
    # None when the method gave no answer at all (retrieval only): shown as "-", not 0.
    answers: AnswerScores | None = None
    # None only in reports written before LLM cost was recorded.
    llm: LlmCostPerQuery | None = None
    # The index method of the index the method ran on; "" in reports written before.
    index_method: str = ""
    # Units the method retrieved from, median over the questions; None when it names none.
    pool_size: float | None = None
    # What building the index it queried cost in tokens; None in reports written before.
    build_tokens: BuildTokens | None = None

    @property
    def label(self) -> str:
        return f"{self.index_method}/{self.method}" if self.index_method else self.method

    @property
    def query_method(self) -> str:
        # ``method`` is the spec label, METHOD[:TOKENS] (specs.py): rows of one query
        # method under different parameters share a TPER baseline.
        return self.method.partition(":")[0].strip()


@dataclass
class SkippedMethod:
    """A query method not run on one index of the run: it cannot read that index."""

    method: str
    index_method: str
    reason: str

    @property
    def note(self) -> str:
        return f"{self.method} skipped on the {self.index_method} index: {self.reason}"


@dataclass
class EvalReport:
    dataset: str
    index: str  # the --index given; each build names the index it evaluated
    created_at: str
    methods: list[MethodReport]
    ks: tuple[int, ...]
    builds: list[BuildCost] = field(default_factory=list)
    skipped: list[SkippedMethod] = field(default_factory=list)

    @property
    def index_methods(self) -> list[str]:
        return list(dict.fromkeys(m.index_method for m in self.methods if m.index_method))

    def tper(self) -> list[Tper | None]:
        """Each row's TPER against the smallest pool of its query method on its index."""
        # A run has one index per index method, so the index method stands for the index.
        return assign_tper([EfficiencyRow(group=(m.index_method, m.query_method),
                                          tpq_s=m.tpq_s, pool_size=m.pool_size)
                            for m in self.methods])

    def token_curves(self) -> list[TokenCurve]:
        """A cumulative-token curve per row that knows its build tokens and its LLM use
        (reports from before either was recorded have none), named as the table names it."""
        return [TokenCurve(label=name, build_tokens=float(m.build_tokens.tokens),
                           tokens_per_query=m.llm.tokens_mean)
                for name, m in zip(_row_names(self), self.methods, strict=True)
                if m.build_tokens is not None and m.llm is not None]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ks"] = list(self.ks)
        # JSON keys are strings; keep "5" rather than letting json.dumps coerce silently.
        for method in data["methods"]:
            method["recall"] = {str(k): v for k, v in method["recall"].items()}
        # Derived from the rows, written for readers of the JSON; from_dict recomputes it.
        for method, ratio in zip(data["methods"], self.tper(), strict=True):
            method["tper"] = None if ratio is None else ratio.value
            method["tper_baseline"] = (None if ratio is None
                                       else self.methods[ratio.baseline].method)
        for method, row in zip(data["methods"], self.methods, strict=True):
            if row.llm is not None:
                method["llm"]["tokens_mean"] = row.llm.tokens_mean
        # Everything a reader needs to redraw the curves; from_dict recomputes it.
        curves = self.token_curves()
        data["token_curve"] = {
            "default_horizon": default_horizon(curves),
            "curves": [{"method": c.label, "build_tokens": c.build_tokens,
                        "tokens_per_query": c.tokens_per_query} for c in curves],
            "break_even": [{"method": p.payer, "against": p.against, "at": p.at,
                            "queries": p.queries} for p in break_evens(curves)]}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalReport:
        methods = [MethodReport(method=m["method"], n_questions=m["n_questions"],
                                recall={int(k): v for k, v in m["recall"].items()},
                                latency_p50_ms=m["latency_p50_ms"],
                                latency_p95_ms=m["latency_p95_ms"],
                                tpq_s=m.get("tpq_s"),
                                extra=dict(m.get("extra", {})),
                                # .get: reports from before these figures lack the keys.
                                answers=_optional(AnswerScores.from_dict, m.get("answers")),
                                llm=_optional(LlmCostPerQuery.from_dict, m.get("llm")),
                                index_method=m.get("index_method", ""),
                                pool_size=m.get("pool_size"),
                                build_tokens=_optional(BuildTokens.from_dict,
                                                       m.get("build_tokens")))
                   for m in data["methods"]]
        return cls(dataset=data["dataset"], index=data["index"], created_at=data["created_at"],
                   methods=methods, ks=tuple(data["ks"]),
                   builds=[BuildCost.from_dict(b) for b in data.get("builds", [])],
                   skipped=[SkippedMethod(method=s["method"], index_method=s["index_method"],
                                          reason=s["reason"])
                            for s in data.get("skipped", [])])


def _optional(parse: Callable[[dict[str, Any]], _T], data: dict[str, Any] | None) -> _T | None:
    return None if data is None else parse(data)


def _extra_keys(report: EvalReport) -> list[str]:
    keys: dict[str, None] = {}
    for method in report.methods:
        keys.update(dict.fromkeys(method.extra))
    return list(keys)


_ANSWER_HEADER = ("EM", "F1", "Acc", "answered")
_LLM_HEADER = ("LLM calls", "calls p95", "prompt tok", "prompt p95", "compl tok",
               "compl p95", "tokens/q", "tokens p95", "cache hits")
_POOL_HEADER = ("pool", "TPER")


def _has_answers(report: EvalReport) -> bool:
    return any(method.answers is not None for method in report.methods)


def _has_llm(report: EvalReport) -> bool:
    # Retrieval-only runs keep the table they always had: no columns of zeros.
    return any(method.llm is not None and method.llm.used for method in report.methods)


def _has_pool(report: EvalReport) -> bool:
    # Only methods that retrieve from a pool of units report one: others keep their table.
    return any(method.pool_size is not None for method in report.methods)


def _by_index_method(report: EvalReport) -> bool:
    # One index keeps the table it always had; several need saying which row is which.
    return len(report.index_methods) > 1


def _header(report: EvalReport) -> list[str]:
    return [*(["index method"] if _by_index_method(report) else []), "method", "n",
            *(f"R@{k}" for k in report.ks), "p50 ms", "p95 ms", "TPQ s",
            *(_POOL_HEADER if _has_pool(report) else ()),
            *(_ANSWER_HEADER if _has_answers(report) else ()),
            *(_LLM_HEADER if _has_llm(report) else ()),
            *_extra_keys(report)]


def _answer_cells(answers: AnswerScores | None) -> list[str]:
    if answers is None:
        return [_MISSING] * len(_ANSWER_HEADER)
    return [f"{answers.exact_match:.3f}", f"{answers.f1:.3f}", f"{answers.accuracy:.3f}",
            str(answers.answered)]


def _llm_cells(llm: LlmCostPerQuery | None) -> list[str]:
    if llm is None:
        return [_MISSING] * len(_LLM_HEADER)
    return [f"{llm.calls_mean:.1f}", f"{llm.calls_p95:.1f}", f"{llm.prompt_tokens_mean:.0f}",
            f"{llm.prompt_tokens_p95:.0f}", f"{llm.completion_tokens_mean:.0f}",
            f"{llm.completion_tokens_p95:.0f}", f"{llm.tokens_mean:.0f}",
            _MISSING if llm.tokens_p95 is None else f"{llm.tokens_p95:.0f}",
            str(llm.cache_hits)]


def _pool_text(pool: float) -> str:
    # A median of whole numbers is whole unless the pool changed mid-run.
    return f"{pool:.0f}" if pool.is_integer() else f"{pool:.1f}"


def _pool_cells(pool: float | None, ratio: Tper | None) -> list[str]:
    return [_MISSING if pool is None else _pool_text(pool),
            _MISSING if ratio is None or ratio.value is None else f"{ratio.value:.2f}"]


def _rows(report: EvalReport) -> list[list[str]]:
    extras = _extra_keys(report)
    show_answers = _has_answers(report)
    show_llm = _has_llm(report)
    ratios = report.tper() if _has_pool(report) else None
    rows = []
    for n, method in enumerate(report.methods):
        recalls = [f"{method.recall[k]:.3f}" if k in method.recall else _MISSING
                   for k in report.ks]
        answers = _answer_cells(method.answers) if show_answers else []
        llm = _llm_cells(method.llm) if show_llm else []
        pool = _pool_cells(method.pool_size, ratios[n]) if ratios is not None else []
        tpq = _MISSING if method.tpq_s is None else f"{method.tpq_s:.3f}"
        extra = [f"{method.extra[key]:.3f}" if key in method.extra else _MISSING
                 for key in extras]
        first = [method.index_method] if _by_index_method(report) else []
        rows.append([*first, method.method, str(method.n_questions), *recalls,
                     f"{method.latency_p50_ms:.1f}", f"{method.latency_p95_ms:.1f}", tpq,
                     *pool, *answers, *llm, *extra])
    return rows


def _row_names(report: EvalReport) -> list[str]:
    return [m.label if _by_index_method(report) else m.method for m in report.methods]


def _tper_notes(report: EvalReport) -> list[str]:
    """One line per baseline: the baseline shows TPER 1.00, this says which row it is."""
    baselines = {r.baseline: r.baseline_pool for r in report.tper() if r is not None}
    names = _row_names(report)
    return [f"TPER = (TPQ / TPQ_B) / (pool / pool_B), B = {names[n]} (pool {_pool_text(pool)})"
            for n, pool in baselines.items()]


def _token_notes(report: EvalReport) -> list[str]:
    """Where each row pays back its build against another, soonest first, and whose build
    tokens were summed from job records; nothing when no row used an LLM."""
    if not _has_llm(report):
        return []
    summed = {m.build_tokens.index: m.build_tokens for m in report.methods
              if m.build_tokens is not None
              and m.build_tokens.source is BuildTokensSource.JOBS}
    return ([point.note for point in break_evens(report.token_curves())]
            + [tokens.note for tokens in summed.values()])


def _notes(report: EvalReport) -> list[str]:
    return [*_tper_notes(report), *(skipped.note for skipped in report.skipped),
            *_token_notes(report)]


def _aligned(header: list[str], rows: list[list[str]], left: Collection[str]) -> list[str]:
    """Header, rule and rows; the columns named in ``left`` left-aligned, the rest right."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(width) if name in left else cell.rjust(width)
                         for name, cell, width in zip(header, cells, widths, strict=True)
                         ).rstrip()

    return [line(header), "-" * len(line(header)), *(line(row) for row in rows)]


def render_table(report: EvalReport) -> str:
    """A plain-text table: method left-aligned, figures right-aligned, one row per method;
    then each TPER baseline, skipped methods, break-even points and the build cost of
    each index."""
    title = f"{report.dataset} · index {report.index} · {report.created_at}"
    lines = [title, *_aligned(_header(report), _rows(report), _TEXT_COLUMNS)]
    lines.extend(f"note: {note}" for note in _notes(report))
    if report.builds:
        lines.extend(["", "build cost per index method",
                      *_aligned(list(BUILD_HEADER), build_rows(report.builds),
                                _TEXT_COLUMNS)])
    return "\n".join(lines)


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(report: EvalReport) -> str:
    header = _header(report)
    lines = [
        f"**Dataset:** {report.dataset} · **Index:** {report.index} · "
        f"**Date:** {report.created_at}",
        "",
        _markdown_row(header),
        _markdown_rule(header),
    ]
    lines.extend(_markdown_row(row) for row in _rows(report))
    notes = _notes(report)
    if notes:
        lines.append("")
        lines.extend(f"- {_markdown_cell(note)}" for note in notes)
    if report.builds:
        lines.extend(["", "**Build cost per index method**", "",
                      _markdown_row(list(BUILD_HEADER)),
                      _markdown_rule(list(BUILD_HEADER))])
        lines.extend(_markdown_row(row) for row in build_rows(report.builds))
    return "\n".join(lines) + "\n"


def _markdown_rule(header: list[str]) -> str:
    return "|" + "|".join(":---" if name in _TEXT_COLUMNS else "---:" for name in header) + "|"


def _markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(_markdown_cell(cell) for cell in cells) + " |"


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
