"""Retrieval does not depend on the index's name: one corpus built under two names ranks
every question alike, passage for passage and score for score.

Unit ids hash the index's name, so any ranking that broke ties on them (equal fused
scores are common: dense rank 2 and keyword rank 5 against dense 5 and keyword 2) or
on an engine's storage order would differ between the two.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from tests.conftest import local_client

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).resolve().parents[2] / "hopindex" / "sample" / "hotpotqa-100"
NAMES = ("alpha", "zz-other-name")
QUESTIONS = 12


def _sample() -> tuple[list[dict[str, str]], list[str]]:
    """The first questions of HotpotQA-100 and the paragraphs of their contexts."""
    questions = json.loads((SAMPLE / "questions.json").read_text())[:QUESTIONS]
    corpus = json.loads((SAMPLE / "corpus.json").read_text())
    titles = dict.fromkeys(title for q in questions for title, _ in q["context"])
    return ([{"title": t, "text": "".join(corpus[t])} for t in titles],
            [q["question"] for q in questions])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalClient, list[str]]]:
    documents, questions = _sample()
    data = tmp_path_factory.mktemp("names")
    corpus = data / "corpus.json"
    corpus.write_text(json.dumps(documents))
    with local_client(Settings(data_dir=data / "data").resolved()) as client:
        for name in NAMES:
            job = client.ingest(name, [corpus], method="extractive")
            assert job.state is JobState.SUCCEEDED
        yield client, questions


@pytest.mark.parametrize("method", ["naive", "extractive", "hops"])
def test_two_names_rank_one_corpus_alike(built: tuple[LocalClient, list[str]],
                                         method: str) -> None:
    client, questions = built
    for question in questions:
        first, second = (
            [(p.doc_id, p.text, round(p.score, 9))
             for p in client.query(name, question, method=method, k=20).passages]
            for name in NAMES)
        assert first == second, question
