"""A long document through extractive's stages: stage 1 finds its passages and entities
from its start to its end (the analysis runs in pieces), and stage 2's search of its
sentences for each bridge entity finds what a plain scan of every sentence finds."""

from __future__ import annotations

import pytest

from hopindex.backends.nlp import SpacyAnalyzer
from hopindex.core.ids import content_hash
from hopindex.core.models import Document, Sentence, TextAnalysis
from hopindex.core.text import normalize_entity
from hopindex.methods.extractive.stage1 import extract_document
from hopindex.methods.extractive.stage2 import DocumentSentences
from tests.backends.test_spacy_pieces import CLOSING, long_text


def document(text: str, title: str = "Long") -> Document:
    return Document(doc_id="long", index="t", title=title, text=text,
                    content_hash=content_hash(title, text))


@pytest.mark.integration
def test_long_document_passages_and_entities_reach_its_end() -> None:
    """A 60,000-character document (analysed in pieces of 10,000 characters) yields
    passages from its first to its last characters and the entities of its last
    paragraph, as a short document's would."""
    text = long_text(60_000)
    doc = document(text)
    analysis = SpacyAnalyzer().analyze_texts([text])[0]
    output = extract_document(doc, analysis)
    bodies = [u.text.removeprefix("Long\n") for u in output.units]
    assert len(bodies) >= 30
    assert text.startswith(bodies[0]) and bodies[-1].endswith(CLOSING)
    entities = {m.entity for m in output.mentions}
    assert {"marie curie", "stockholm"} <= entities


def _scan(entity: str, text: str, analysis: TextAnalysis) -> list[str]:
    """The definition: every sentence whose lower-cased or normalised text holds it."""
    found = []
    for sentence in analysis.sentences:
        body = text[sentence.start:sentence.end].strip()
        if entity in body.lower() or entity in normalize_entity(body):
            found.append(body)
    return found


def test_sentence_search_matches_a_scan_of_every_sentence() -> None:
    """Searching a document's prepared sentences finds, for each key, the sentences a
    scan of every sentence finds, in order and once each: matches in the lower-cased or
    the normalised text, several in one sentence, none across two, an empty key in all,
    a key holding the joining character, a document without sentences."""
    parts = ["The Louvre\u2019s Hall", "Paris  is   big; PARIS again", "",
             "Nothing here", "the end. Louvre", "x\x00y marks"]
    text = " ".join(parts)
    sentences, start = [], 0
    for part in parts:
        sentences.append(Sentence(start, start + len(part)))
        start += len(part) + 1
    analysis = TextAnalysis(sentences=tuple(sentences), entities=())
    prepared = DocumentSentences(document(text), analysis)
    for key in ("louvre", "paris is big", "paris", "the end", "hall", "e", "", "absent",
                "x\x00y", "y marks", "big paris"):
        assert prepared.mentioning(key) == _scan(key, text, analysis), key
    empty = DocumentSentences(document(""), TextAnalysis(sentences=(), entities=()))
    assert empty.mentioning("paris") == []
