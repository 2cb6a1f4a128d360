"""Every bad input fails alone with an error naming its file, line or field; the rest lands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hopindex.core.errors import InvalidIndexNameError
from hopindex.core.models import JobState, Stage, UnitKind
from tests.conftest import ClientFactory, ingest_documents

pytestmark = pytest.mark.integration

GOOD = {"id": "good-1", "title": "Warsaw", "text": "Warsaw is the capital of Poland."}


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_one_bad_input_of_each_kind_fails_alone(make_client: ClientFactory,
                                                tmp_path: Path) -> None:
    """Malformed line, missing text, duplicate id, bad UTF-8, unknown type, oversize document:
    each is named on the job record and every good document is still ingested."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        json.dumps(GOOD),
        '{"id": "broken", "title": "x", "text": ',  # line 2: malformed JSON
        json.dumps({"id": "no-text", "title": "Empty"}),  # line 3: no text
        json.dumps({"id": "good-1", "title": "Again", "text": "A duplicate id."}),  # line 4
        json.dumps({"id": "good-2", "title": "Poland", "text": "Poland is in Europe."}),
    ])
    bad_utf8 = tmp_path / "latin1.jsonl"
    bad_utf8.write_bytes(b'{"id": "l1", "title": "Caf\xe9", "text": "caf\xe9"}\n'
                         + json.dumps({"id": "good-3", "title": "Paris",
                                       "text": "Paris is in France."}).encode() + b"\n")
    unknown = tmp_path / "slides.pptx"
    unknown.write_bytes(b"PK\x03\x04")
    huge = write_jsonl(tmp_path / "huge.jsonl", [
        json.dumps({"id": "huge", "title": "Huge", "text": "word " * 1_000_000}),  # 5 MB
        json.dumps({"id": "good-4", "title": "Vistula", "text": "The Vistula flows north."}),
    ])
    # A limit below the huge record's 5 MB: the default (20 MB) would ingest it.
    client = make_client(max_document_bytes=2_000_000)
    job = client.ingest("mixed", [corpus, bad_utf8, unknown, huge])

    assert job.state is JobState.SUCCEEDED
    state = client.service.backends.state
    stored = state.document_hashes("mixed")
    assert sorted(stored) == ["good-1", "good-2", "good-3", "good-4"]
    assert state.count_units("mixed")[UnitKind.PASSAGE] == 4
    reasons = {e.where or e.item: e.reason for e in job.errors}
    assert all(e.stage == Stage.VALIDATE for e in job.errors)
    messages = " || ".join(f"{where}: {reason}" for where, reason in reasons.items())
    assert "corpus.jsonl:2" in messages and "JSON" in messages
    assert "corpus.jsonl:3" in messages and "text" in messages
    assert "corpus.jsonl:4" in messages and "duplicate" in messages.lower()
    assert "latin1.jsonl:1" in messages and "UTF-8" in messages
    assert "slides.pptx" in messages
    assert "huge.jsonl:1" in messages and "HOPINDEX_MAX_DOCUMENT_BYTES=2,000,000" in messages
    assert len(job.errors) == 6
    assert job.counts[Stage.VALIDATE].failed == 6
    # The record stays readable later: the job store returns the same errors.
    assert client.jobs.get_job(job.job_id).errors == job.errors


def test_index_name_with_path_characters_is_refused(make_client: ClientFactory,
                                                    tmp_path: Path) -> None:
    """An index name that could escape the data folder is refused before anything is read."""
    client = make_client()
    path = write_jsonl(tmp_path / "c.jsonl", [json.dumps(GOOD)])
    with pytest.raises(InvalidIndexNameError, match="index"):
        client.ingest("../escape", [path])
    assert not (tmp_path / "escape").exists()
    assert client.indexes.list_indexes() == []


def test_document_left_pending_is_redone_by_the_next_ingest(make_client: ClientFactory) -> None:
    """A document whose job died before finalizing keeps an empty hash, so the next
    ingest indexes it instead of skipping it as unchanged."""
    from dataclasses import replace

    from tests.conftest import raw

    client = make_client()
    first = ingest_documents(client, "retry", [raw("Warsaw", "Warsaw is a city.")])
    state = client.service.backends.state
    (doc_id, stored_hash), = state.document_hashes("retry").items()
    assert stored_hash, "a finished document carries its content hash"
    (document,) = state.get_documents("retry", [doc_id])
    # What submit_ingest leaves behind when the process dies before stage 1 ends.
    state.put_documents([replace(document, content_hash="")])
    again = ingest_documents(client, "retry", [raw("Warsaw", "Warsaw is a city.")])
    assert first.counts["extractive.stage1"].done == 1
    assert again.counts["extractive.stage1"].done == 1
    assert again.counts["extractive.stage1"].skipped == 0
    assert state.document_hashes("retry")[doc_id] == stored_hash
