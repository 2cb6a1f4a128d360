"""Every LLM index method holds up against replies as real providers give them.

The test server answers in each reply style real models and gateways use (fenced,
wrapped in prose, after a ``<think>`` block, ``reasoning_content``, ``response_format``
refused, ``json_schema`` refused, numbers as strings, 0-1 scores, extra nulls, cut at
the token budget), and a style changes the form of a reply, never its content. So a
build of the first 20 HotpotQA-100 documents through any mix of styles must hold
exactly the units (kind and text) of the same build through bare JSON: anything
missing or extra is a reply the client or a method's reader lost or misread. The
response cache is off, so every reply is read as the provider gave it.

One clean build per method (module scope) is the reference; builds take about a
second each (sirerag's first pays UMAP's compile), with embeddings from the test
server (vectors do not change which units are written).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.resources import as_file, files
from pathlib import Path

import pytest

from hopindex.core.models import Job, JobState
from hopindex.methods.base import QueryResult
from hopindex.methods.kgbridge.links import list_links
from hopindex.readers import RawDocument, read_paths
from hopindex.testing.llm_server import LlmServerConfig, LlmTestServer
from hopindex.testing.reply_styles import ALL_STYLES, ReplyStyle
from tests.conftest import ingest_documents, llm_settings, local_client

pytestmark = pytest.mark.integration

INDEX = "hotpot20"
METHODS = ("indexrag", "compactrag", "sirerag", "kgbridge")
# Each style alone on at least one method, spread so that each lands where it matters:
# 0-1 scores and numbers as strings on kgbridge (its link verdicts carry a 0-10 score),
# nulls on a method with lists of items, truncation on the method with most calls.
ALONE = (
    ("indexrag", ReplyStyle.FENCED), ("indexrag", ReplyStyle.PROSE),
    ("indexrag", ReplyStyle.THINK), ("compactrag", ReplyStyle.REASONING_CONTENT),
    ("compactrag", ReplyStyle.FORMAT_REFUSED), ("sirerag", ReplyStyle.NULL_ELEMENTS),
    ("sirerag", ReplyStyle.SCHEMA_REFUSED), ("kgbridge", ReplyStyle.NUMBERS_AS_STRINGS),
    ("kgbridge", ReplyStyle.UNIT_SCORES), ("kgbridge", ReplyStyle.TRUNCATED),
)
UnitSet = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Build:
    data_dir: Path
    job: Job
    units: UnitSet
    links: frozenset[tuple[str, float]]
    # Replies the server gave in each style (a style with nothing to change in a reply,
    # numbers as strings in a reply without numbers, counts as bare).
    styles: dict[str, int]


def first_documents(count: int = 20) -> list[RawDocument]:
    with as_file(files("hopindex") / "sample" / "hotpotqa-100" / "corpus.json") as corpus:
        read = read_paths([Path(corpus)], max_document_bytes=2_000_000)
    return read.documents[:count]


def build(method: str, data_dir: Path, styles: tuple[ReplyStyle, ...] = ()) -> Build:
    """Index the 20 documents with ``method`` through a server answering in ``styles``
    (none: bare JSON), cache off."""
    server = LlmTestServer(LlmServerConfig(reply_styles=styles)).start_in_thread()
    client = local_client(llm_settings(data_dir, server, llm_cache="off",
                                       embedder_url=f"openai://{server.config.embedding_model}"))
    try:
        job = ingest_documents(client, INDEX, first_documents(), method=method)
        state = client.service.backends.state
        doc_ids = sorted(state.document_hashes(INDEX))
        units = frozenset((u.kind.value, u.text)
                          for u in state.units_of_documents(INDEX, doc_ids))
        links = (frozenset((str(link["link_id"]), float(link["s_llm"]))
                           for link in list_links(state, INDEX))
                 if method == "kgbridge" else frozenset())
        return Build(data_dir=data_dir, job=job, units=units, links=links,
                     styles=dict(server.stats.by_style))
    finally:
        client.close()
        server.stop()


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Build]]:
    yield {method: build(method, tmp_path_factory.mktemp(f"clean-{method}"))
           for method in METHODS}


def describe(expected: UnitSet, got: UnitSet) -> str:
    missing, extra = expected - got, got - expected
    return json.dumps({"missing": sorted(missing)[:5], "extra": sorted(extra)[:5],
                       "counts": [len(expected), len(got), len(missing), len(extra)]},
                      indent=1)


def test_the_clean_builds_succeed(clean: dict[str, Build]) -> None:
    """The reference builds themselves: every document indexed, units of each method."""
    for method, reference in clean.items():
        assert reference.job.state is JobState.SUCCEEDED, (method, reference.job.reason)
        assert reference.units, method
    assert clean["kgbridge"].links, "kgbridge links nothing: the scores are not exercised"


@pytest.mark.parametrize("method", METHODS)
def test_styles_mixed_build_the_clean_unit_set(method: str, clean: dict[str, Build],
                                               tmp_path: Path) -> None:
    """Every style mixed by the server's seed: the same units, and for kgbridge the same
    links with the same LLM scores, as the clean build; the job has no failed item."""
    got = build(method, tmp_path, ALL_STYLES)
    # The mix really mixed: most forms met this method's replies (which ones depends on
    # what its replies hold: numbers, scores, lists).
    assert len(set(got.styles) - {ReplyStyle.BARE.value}) >= 5, got.styles
    assert got.job.state is JobState.SUCCEEDED, got.job.errors
    assert got.units == clean[method].units, describe(clean[method].units, got.units)
    assert got.links == clean[method].links


@pytest.mark.parametrize(("method", "style"), ALONE, ids=[f"{m}-{s.value}" for m, s in ALONE])
def test_each_style_alone_builds_the_clean_unit_set(method: str, style: ReplyStyle,
                                                    clean: dict[str, Build],
                                                    tmp_path: Path) -> None:
    """One style for every reply; what reading forgave is on the job record."""
    got = build(method, tmp_path, (style,))
    assert got.styles.get(style.value, 0) > 0, got.styles  # else the test is vacuous
    assert got.job.state is JobState.SUCCEEDED, got.job.errors
    assert got.units == clean[method].units, describe(clean[method].units, got.units)
    assert got.links == clean[method].links
    total = got.job.llm_total
    if style is ReplyStyle.NUMBERS_AS_STRINGS:
        assert total.coerced > 0
    if style is ReplyStyle.NULL_ELEMENTS:
        assert total.dropped > 0
    if style is ReplyStyle.UNIT_SCORES:
        assert total.rescaled > 0
    if style is ReplyStyle.TRUNCATED:
        assert total.repairs > 0 and total.truncated > 0


# Query methods and the clean index each reads; the questions are HotpotQA's, about the
# first documents. Every reply style but truncation: a query takes a cut answer as it is
# (marked) and makes no second request, so a cut reply changes its outcome by design.
QUERIES = (("indexrag", "indexrag"), ("ircot", "indexrag"), ("bridgerag", "indexrag"),
           ("compactrag", "compactrag"), ("sirerag", "sirerag"), ("kgbridge", "kgbridge"))
QUERY_STYLES = tuple(s for s in ALL_STYLES if s is not ReplyStyle.TRUNCATED)
QUESTIONS = ("Which magazine was started first, Arthur's Magazine or First for Women?",
             "Who directed the film in which Anne Hathaway played Selina Kyle?")


def answers(build_dir: Path, tmp_path: Path, method: str,
            styles: tuple[ReplyStyle, ...]) -> list[QueryResult]:
    """The questions asked of a copy of a clean index through a server in ``styles``."""
    data_dir = tmp_path / f"q-{len(styles)}"
    shutil.copytree(build_dir, data_dir)
    server = LlmTestServer(LlmServerConfig(reply_styles=styles)).start_in_thread()
    client = local_client(llm_settings(data_dir, server, llm_cache="off",
                                       embedder_url=f"openai://{server.config.embedding_model}"))
    try:
        return [client.query(INDEX, question, method=method, k=5) for question in QUESTIONS]
    finally:
        client.close()
        server.stop()


@pytest.mark.parametrize(("method", "index_method"), QUERIES, ids=[m for m, _ in QUERIES])
def test_queries_through_every_style_answer_as_through_bare_json(
        method: str, index_method: str, clean: dict[str, Build], tmp_path: Path) -> None:
    """The same answers and passages, nothing degraded, and the trace saying what was
    read leniently (BridgeRAG's judge scores given on 0-1, say)."""
    bare = answers(clean[index_method].data_dir, tmp_path, method, ())
    styled = answers(clean[index_method].data_dir, tmp_path, method, QUERY_STYLES)
    for plain, got in zip(bare, styled, strict=True):
        assert got.degraded == plain.degraded == []
        assert got.answer == plain.answer
        assert [p.doc_id for p in got.passages] == [p.doc_id for p in plain.passages]


def test_judge_scores_given_on_0_1_rank_as_on_0_10_and_the_trace_says_so(
        clean: dict[str, Build], tmp_path: Path) -> None:
    """BridgeRAG's judge asked for 0-10 and answered 0-1: rescaled per reply, the same
    ranking, and the query's trace and usage say a reply was rescaled."""
    bare = answers(clean["indexrag"].data_dir, tmp_path, "bridgerag", ())
    scaled = answers(clean["indexrag"].data_dir, tmp_path, "bridgerag",
                     (ReplyStyle.UNIT_SCORES,))
    for plain, got in zip(bare, scaled, strict=True):
        assert [p.doc_id for p in got.passages] == [p.doc_id for p in plain.passages]
        assert got.as_dict()["trace"]["llm_replies"]["rescaled"] == 1
        assert got.usage.replies["rescaled"] == 1 and not plain.usage.replies
