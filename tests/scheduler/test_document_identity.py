"""Records a program hands over (the Python and HTTP APIs' documents) are told apart by
the same rule as records read from files (``readers/identity.py``)."""

from __future__ import annotations

from hopindex.core.ids import doc_id_from_title
from hopindex.readers import RawDocument
from hopindex.scheduler.submit import validate_documents


def record(title: str, text: str, doc_id: str | None = None, origin: str = "api") -> RawDocument:
    return RawDocument(doc_id=doc_id, title=title, text=text, metadata={}, origin=origin)


def test_paragraphs_under_one_title_are_documents_of_their_own() -> None:
    """Two texts under one title are two documents (the second under the title's id with
    #2); the same title and text again is refused naming the first; a repeated id too."""
    documents, errors = validate_documents("i", [
        record("Korean War", "It began in 1950.", origin="documents[0]"),
        record("Korean War", "An armistice ended it in 1953.", origin="documents[1]"),
        record("Korean War", " It began  in 1950.", origin="documents[2]"),
        record("Other", "x", doc_id="a", origin="documents[3]"),
        record("Else", "y", doc_id="a", origin="documents[4]")], 1_000)
    title_id = doc_id_from_title("Korean War")
    assert [(d.doc_id, d.title) for d in documents] == [
        (title_id, "Korean War"), (f"{title_id}#2", "Korean War"), ("a", "Other")]
    assert [(e.where, e.reason) for e in errors] == [
        ("documents[2]", "duplicate record: title 'Korean War' with the same text was first "
                         "seen at documents[0]; kept that one"),
        ("documents[4]", "duplicate id 'a': first seen at documents[3]; kept that one")]


def test_a_refused_record_does_not_claim_its_id() -> None:
    """A record refused for another reason (an empty text) leaves its id to the next."""
    documents, errors = validate_documents("i", [
        record("T", "  ", doc_id="a", origin="documents[0]"),
        record("T", "kept", doc_id="a", origin="documents[1]")], 1_000)
    assert [d.text for d in documents] == ["kept"]
    assert [e.reason for e in errors] == ["field 'text' is empty"]
