"""Small record builders shared by the ``StateStore`` contract modules."""

from __future__ import annotations

import time

from hopindex.core.ids import content_hash, job_id, unit_id
from hopindex.core.models import (
    Document,
    EntityMention,
    EntitySpan,
    Job,
    JobKind,
    MentionSource,
    Sentence,
    TextAnalysis,
    Unit,
    UnitKind,
)

NER, TITLE, LEXICON = MentionSource.NER, MentionSource.TITLE, MentionSource.LEXICON


def doc(index: str, doc_id: str, text: str = "Paris is in France.",
        title: str = "Paris") -> Document:
    return Document(doc_id=doc_id, index=index, title=title, text=text,
                    content_hash=content_hash(title, text), metadata={"source": "test", "n": 1})


def unit(index: str, key: str, *, kind: UnitKind = UnitKind.PASSAGE, text: str | None = None,
         docs: tuple[str, ...] = ("d1",), entities: tuple[str, ...] = ()) -> Unit:
    """A unit whose id depends on the key only, so a new text under one key is an update."""
    return Unit(unit_id=unit_id(index, kind.value, key, ""), index=index, kind=kind,
                text=f"text of {key}" if text is None else text, source_doc_ids=docs,
                method="test", source_key=key, entities=entities, level=1,
                metadata={"key": key, "nested": [1, 2]})


def analysis(n: int) -> TextAnalysis:
    return TextAnalysis(sentences=(Sentence(0, 10), Sentence(11, 20 + n)),
                        entities=(EntitySpan("Paris", "GPE", 0, 5),
                                  EntitySpan(f"Entity {n}", "ORG", 11, 19)))


def mention(entity: str, doc_id: str, source: MentionSource = NER, count: int = 1) -> EntityMention:
    return EntityMention(entity=entity, doc_id=doc_id, source=source, count=count)


def new_job(index: str, created_at: float | None = None) -> Job:
    return Job(job_id=job_id(), index=index, kind=JobKind.INGEST,
               created_at=time.time() if created_at is None else created_at)


def ids_of(units: list[Unit]) -> list[str]:
    return [u.unit_id for u in units]
