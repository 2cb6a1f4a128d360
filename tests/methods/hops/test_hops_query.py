"""``hops`` over real extractive indexes (spaCy, MiniLM, the embedded engines): a second
hop only the first one leads to is found, and an index without shared entities gets
``extractive``'s ranking with the trace saying why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hopindex.api.client.local import LocalClient
from hopindex.core.models import JobState
from hopindex.core.settings import Settings
from hopindex.methods.base import QueryOptions, Retrieval
from hopindex.readers.base import RawDocument, ReadResult
from tests.methods.indexrag.conftest import local_client

pytestmark = pytest.mark.integration

QUESTION = "Where was the director of the film Zorblax Returns born?"
FILM = "Zorblax Returns"
DIRECTOR = "Quentin Marlowe"
# Documents that look like the answer to a similarity search: film directors and
# where they were born, none of them linked to the film.
LOOKALIKES = [
    ("Hedda Brann", "Hedda Brann was a film director born in Oslo who directed comedies."),
    ("Piotr Valen", "Piotr Valen was a film director born in Riga, known for war films."),
    ("Ines Carvalho", "Ines Carvalho was a Portuguese film director born in Porto."),
    ("Tomas Ekberg", "Tomas Ekberg was a film director born in Uppsala who made dramas."),
    ("Lena Hartwig", "Lena Hartwig was a German film director born in Bremen."),
    ("Marco Sello", "Marco Sello was an Italian film director born in Genoa."),
]
HOP_CORPUS = [
    (FILM, f"{FILM} is a 1931 adventure film directed by {DIRECTOR}. It follows a "
           "sailor lost at sea."),
    (DIRECTOR, f"{DIRECTOR} grew up in Tallinn, where he was born in 1890, and painted "
               "harbours before he turned to cinema."),
    *LOOKALIKES,
]
# Three hops: the film names its director, the director's page names his wife, her
# page holds the answer. The look-alikes are wives of film directors and where they
# were born, none linked to the film: what a similarity search ranks first.
SPOUSE = "Edwige Fontanel"
THREE_HOP_QUESTION = "Where was the wife of the director of the film Zorblax Returns born?"
SPOUSE_LOOKALIKES = [
    (name, f"{name} was a stage actress born in {town}, the wife of a film director.")
    for name, town in (("Greta Lindqvist", "Malmo"), ("Paola Ricci", "Turin"),
                       ("Marthe Dubois", "Nantes"), ("Ilse Kramer", "Kassel"),
                       ("Vera Novak", "Brno"), ("Ana Ferreira", "Braga"))]
THREE_HOP_CORPUS = [
    (FILM, f"{FILM} is a 1931 adventure film directed by {DIRECTOR}. It follows a "
           "sailor lost at sea."),
    (DIRECTOR, f"{DIRECTOR} grew up in Tallinn, where he was born in 1890. He married "
               f"{SPOUSE} in 1921 and painted harbours before he turned to cinema."),
    (SPOUSE, f"{SPOUSE} came into the world in Lyon in 1895 and later sang at the "
             "opera there."),
    *SPOUSE_LOOKALIKES,
]
# No document names another's title and no name recurs: no bridge can be built.
FLAT_CORPUS = [
    ("Rainfall", "rainfall in the valley is highest in late autumn and lowest in summer."),
    ("Pottery", "pottery from the river towns was fired in open pits and left unglazed."),
    ("Bread", "bread in the hill villages is baked once a week in shared ovens."),
    ("Orchards", "orchards on the slopes grow apples, pears and a few late plums."),
]


def documents(rows: list[tuple[str, str]]) -> list[RawDocument]:
    return [RawDocument(doc_id=f"d{i}", title=title, text=text, metadata={}, origin=title)
            for i, (title, text) in enumerate(rows)]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalClient]:
    path: Path = tmp_path_factory.mktemp("hops")
    with local_client(Settings(data_dir=path).resolved()) as built:
        for index, rows in (("hop", HOP_CORPUS), ("flat", FLAT_CORPUS),
                            ("three", THREE_HOP_CORPUS)):
            job = built.ingest_read(index, ReadResult(documents=documents(rows)),
                                    method="extractive")
            assert job.state is JobState.SUCCEEDED
        yield built


def titles(client: LocalClient, index: str, method: str, k: int,
           question: str = QUESTION, **params: str | int | float) -> list[str]:
    result = client.query(index, question, method=method, k=k,
                          options=QueryOptions(params=params))
    return [p.title for p in result.passages]


def test_the_second_hop_is_found_through_the_first(client: LocalClient) -> None:
    """The director's page shares no words with the question but "born"; the look-alike
    directors outrank it by similarity, so ``naive`` misses it in the top 2, while
    ``hops`` walks from the film's page (named in the question) through the bridge of
    the director's name to his page."""
    assert DIRECTOR not in titles(client, "hop", "naive", 2)
    assert titles(client, "hop", "hops", 2) == [FILM, DIRECTOR]


def test_the_trace_says_how_each_passage_ranks(client: LocalClient) -> None:
    """The trace names the seeds, the bridge walked (the director's name, from the film
    to his page) and each passage's rank in each list. One seed besides the named film:
    in this small corpus hop 1 already ranks the director second, and a seed is not
    walked to."""
    result = client.query("hop", QUESTION, method="hops", k=2,
                          options=QueryOptions(params={"seeds": 1}))
    trace = result.trace
    film_id, director_id = "d0", "d1"
    assert film_id in trace["seeds"] and film_id in trace["named"]
    step = next(s for s in trace["walk"] if director_id in s["to"])
    assert step["entity"] == DIRECTOR.lower() and film_id in step["from"]
    ranks = {entry["doc_id"]: entry["lists"] for entry in trace["ranks"]}
    assert ranks[director_id]["walk"] == 1
    assert ranks[film_id]["named"] == 1
    assert trace["degraded"] == []


def test_an_index_without_entities_ranks_as_extractive_and_says_so(
        client: LocalClient) -> None:
    """No bridges to walk: the same passages as ``extractive``, and the trace says the
    walk found nothing."""
    question = "When are the ovens used for baking bread?"
    hops = client.query("flat", question, method="hops", k=4)
    extractive = client.query("flat", question, method="extractive", k=4)
    assert [p.doc_id for p in hops.passages] == [p.doc_id for p in extractive.passages]
    assert any("no bridge units" in d.reason for d in hops.degraded)
    assert hops.trace["degraded"] == [{"step": "walk", "reason": d.reason}
                                      for d in hops.degraded]
    assert hops.trace["walk"] == []


def test_keyword_only_retrieval_has_no_walk_and_says_so(client: LocalClient) -> None:
    """Keyword retrieval embeds nothing, so there is no vector to score bridges with:
    the walk is skipped, named in the trace, and hop 1 still answers."""
    result = client.query("hop", QUESTION, method="hops", k=2,
                          options=QueryOptions(retrieval=Retrieval.KEYWORD))
    assert [d.step for d in result.degraded] == ["walk"]
    assert "keyword-only" in result.degraded[0].reason
    assert result.passages[0].title == FILM


def test_the_third_hop_is_found_only_through_the_second(client: LocalClient) -> None:
    """The wife's page shares nothing with the question but "born"-like words, and the
    look-alike wives outrank it by similarity: ``naive`` misses it in the top 3, and so
    does ``hops`` stopped after the second hop (``chain=off``). The chain walks on from
    the director's page, which hop 2 reached, through the bridge of her name."""
    assert SPOUSE not in titles(client, "three", "naive", 3, THREE_HOP_QUESTION)
    assert SPOUSE not in titles(client, "three", "hops", 3, THREE_HOP_QUESTION, chain="off")
    assert titles(client, "three", "hops", 3, THREE_HOP_QUESTION) == [FILM, DIRECTOR, SPOUSE]
    trace = client.query("three", THREE_HOP_QUESTION, method="hops", k=3).trace
    assert [step["hop"] for step in trace["chain"]] == [3]
    assert trace["chain"][0]["seeds"] == ["d1"]  # the director's page


def test_a_two_hop_question_is_not_diluted_by_a_third_hop(client: LocalClient) -> None:
    """Asked for the director's birthplace, the answer stays second: the third hop's
    list (the wife's page) enters the fusion too lightly to pass it or the film."""
    assert titles(client, "three", "hops", 2) == [FILM, DIRECTOR]
    assert titles(client, "three", "hops", 2) == titles(client, "three", "hops", 2,
                                                        chain="off")
