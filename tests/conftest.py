"""Shared fixtures: services over embedded backends in a temporary data dir."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hopindex.api.service import Hopindex
from hopindex.core.settings import Settings
from hopindex.readers import RawDocument

ServiceFactory = Callable[..., Hopindex]


@pytest.fixture
def make_service(tmp_path: Path) -> Iterator[ServiceFactory]:
    """Open services over fresh embedded backends; models load once per process."""
    opened: list[Hopindex] = []

    def factory(name: str = "data", **overrides: object) -> Hopindex:
        settings = Settings(data_dir=tmp_path / name, **overrides).resolved()  # type: ignore[arg-type]
        service = Hopindex(settings)
        opened.append(service)
        return service

    yield factory
    for service in opened:
        service.close()


def raw(title: str, text: str, doc_id: str | None = None) -> RawDocument:
    return RawDocument(doc_id=doc_id, title=title, text=text, metadata={}, origin=title)


CURIE_CORPUS = [
    raw("Marie Curie", "Marie Curie was a physicist and chemist born in Warsaw. She worked at "
        "the University of Paris and shared the Nobel Prize with Pierre Curie."),
    raw("Pierre Curie", "Pierre Curie was a French physicist. He married Marie Curie in 1895 "
        "and taught at the University of Paris."),
    raw("Warsaw", "Warsaw is the capital and largest city of Poland. Marie Curie was born "
        "in Warsaw in 1867."),
    raw("University of Paris", "The University of Paris was a university in Paris, France. "
        "Pierre Curie and Marie Curie both taught there."),
    raw("Poland", "Poland is a country in Central Europe. Its capital is Warsaw."),
    raw("Nobel Prize in Physics", "The Nobel Prize in Physics is awarded by the Royal Swedish "
        "Academy of Sciences. Pierre Curie received it in 1903."),
]
